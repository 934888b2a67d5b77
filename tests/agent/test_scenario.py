"""The scripted multi-session scenario of issue 15, in English and Chinese, on both stores.

Session 1 states a budget, an allergy (pinned), a decision and a detail; then hundreds of turns
of ordinary conversation push everything out of the window.  The checks: the window never
exceeds its budget; an evicted detail is still recallable; the summary names the decision and
the constraint; the pinned allergy is in every context; the budget conflict raises an alert and
a chit-chat turn raises none; a stale task-state write is refused; a non-curator agent cannot
write a pin; a restart keeps the working memory.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from ripple import PermissionDenied, VersionConflict
from tests.agent.conftest import open_memory

pytestmark = pytest.mark.slow

DAY = 86400.0
T0 = time.time() - 10 * DAY  # the store's clock is real: session 2 happens about now

SCRIPT = {
    "en": {
        "budget": "For the offsite, the budget is capped at 60k, that's a hard limit.",
        "allergy": "I'm allergic to peanuts, so keep them away from anything you book.",
        "pin": "The user is allergic to peanuts.",
        "decision": "We decided to hold the offsite in Lisbon in September.",
        "detail": "The keynote speaker will be Dr. Amara Osei from the Accra lab.",
        "detail_q": "Who is the keynote speaker at the offsite?",
        "detail_word": "Osei",
        "decision_word": "Lisbon",
        "constraint_word": "60k",
        "allergy_word": "peanut",
        "filler": ["How was your weekend?", "I had a long walk by the river this morning.",
                   "The coffee machine on the third floor is broken again.", "Did you see the football last night?",
                   "My cat knocked a plant off the shelf.", "The train was late by ten minutes today."],
        "reply": "Sounds good, tell me more.",
        "conflict": "Here is the plan: the venue and catering cost 80k in total.",
        "chitchat": "Haha, the weather is lovely today.",
        "task": "Plan the offsite",
    },
    "zh": {
        "budget": "年会的预算控制在六万以内，这是硬性上限。",
        "allergy": "我对花生过敏，订餐的时候一定要避开。",
        "pin": "用户对花生过敏。",
        "decision": "我们决定把年会放在杭州，时间定在九月。",
        "detail": "主讲嘉宾是来自深圳研究院的欧阳明博士。",
        "detail_q": "年会的主讲嘉宾是谁？",
        "detail_word": "欧阳明",
        "decision_word": "杭州",
        "constraint_word": "六万",
        "allergy_word": "花生",
        "filler": ["周末过得怎么样？", "今天早上我在河边散步了很久。", "三楼的咖啡机又坏了。", "昨晚的球赛你看了吗？",
                   "我家的猫把花盆从架子上碰掉了。", "今天地铁晚点了十分钟。"],
        "reply": "好的，继续说。",
        "conflict": "方案出来了：场地加餐饮总共要花八万。",
        "chitchat": "哈哈，今天天气真好。",
        "task": "筹备年会",
    },
}


def _scenario(kind: str, tmp_path: Path, embedder: Any, extractor: Any, lang: str, turns: int) -> None:
    S = SCRIPT[lang]
    clock = [T0]
    mem = open_memory(kind, tmp_path, embedder, extractor)
    try:
        # -- session 1: the facts that must survive --------------------------------------------------
        s1 = mem.session("u1", "s1", agent_id="planner", context_window=1600, clock=lambda: clock[0])
        for text in (S["budget"], S["allergy"], S["decision"], S["detail"]):
            s1.add("user", text, at=clock[0])
            s1.add("assistant", S["reply"], at=clock[0])
            clock[0] += 60
        s1.pins.add(S["pin"])
        wm = s1.working("offsite")
        state = wm.state().state.model_copy(update={"goal": S["task"], "plan": ["venue", "catering"], "step": 1})
        v1 = wm.save(state, expected_version=0)
        wm.note(S["decision"])
        # -- a non-curator agent cannot write a pin ------------------------------------------------------
        helper = mem.session("u1", "s1h", agent_id="helper", access={"user": "writer"}, clock=lambda: clock[0])
        with pytest.raises(PermissionDenied):
            helper.pins.add(S["pin"])
        # -- a stale task-state write is refused ------------------------------------------------------------
        wm.save(state.model_copy(update={"step": 2}), expected_version=v1.version)
        with pytest.raises(VersionConflict):
            wm.save(state.model_copy(update={"step": 5}), expected_version=v1.version)
        # -- hundreds of ordinary turns: the window never exceeds its budget --------------------------------
        budget = s1.window.budget
        added = 8
        n = 0
        while added < turns:
            clock[0] += 30
            s1.add("user", f"{S['filler'][n % len(S['filler'])]} ({n})", at=clock[0])
            s1.add("assistant", S["reply"], at=clock[0])
            added += 2
            n += 1
            assert s1.window.tokens <= budget, (added, s1.window.tokens, budget)
            if n % 50 == 0:  # the pinned allergy is in every context
                assert S["allergy_word"] in s1.context().messages[0]["content"]
        assert s1.flush() == []
        assert all(t.seq > 8 for t in s1.window.turns)  # the opening facts were evicted ...
        hits = s1.recall(S["detail_q"], k=5)
        assert any(S["detail_word"] in h.hit.memory.text for h in hits)  # ... and stay recallable
        summary = s1.summary_text
        assert S["decision_word"] in summary and S["constraint_word"] in summary, summary
        ctx = s1.context(S["detail_q"])
        assert S["allergy_word"] in ctx.messages[0]["content"] and ctx.tokens <= s1.cfg.budget
        s1.close()
        # -- session 2, a week later: the budget conflict alerts, chit-chat does not -----------------------
        clock[0] += 7 * DAY
        s2 = mem.session("u1", "s2", agent_id="planner", context_window=1600, clock=lambda: clock[0])
        r = s2.add("user", S["chitchat"], at=clock[0])
        assert not s2.patrol().alerts
        r = s2.add("user", S["conflict"], at=clock[0] + 5)
        alert = s2.patrol().alert
        assert alert is not None and alert.kind == "conflict" and alert.score >= 0.8, alert
        assert alert.evidence and alert.dedupe_key.startswith("limit:")
        assert S["allergy_word"] in s2.context(S["chitchat"]).messages[0]["content"]
        s2.close()
    finally:
        mem.close()
    # -- a restart keeps the working memory ----------------------------------------------------------------
    again = open_memory(kind, tmp_path, embedder, extractor)
    try:
        s3 = again.session("u1", "s3", agent_id="planner")
        back = s3.working("offsite").state()
        assert back.state.goal == S["task"] and back.state.step == 2 and back.version == 2
        assert [x.text for x in s3.working("offsite").notes()] == [S["decision"]]
        resumed = again.session("u1", "s1", agent_id="planner", context_window=1600)
        assert resumed.context().ledger.sections["window"].kept  # the session's window came back too
        assert S["decision_word"] in resumed.summary_text
    finally:
        again.close()


# One long run, where the length is the point: the window stays within its budget, the summary keeps the
# decision and the constraint, and the pin stays in the context over 500 turns (every 50th round checks it).
# The other runs prove the same checks in their language or on their store once the opening facts have
# been evicted from the 1600-token window, which 160 turns do (the Neo4j runs always used 160); 500 turns
# cost about three times as much (the Chinese run: 49 CPU-seconds at 500 turns on the test machine).
LONG = {"en": 500, "zh": 160}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_scenario_embedded(tmp_path: Path, embedder: Any, extractor: Any, lang: str) -> None:
    _scenario("sqlite", tmp_path, embedder, extractor, lang, turns=LONG[lang])


# On Neo4j the scenario runs once, in Chinese: the store under the agent layer is proven by the conformance
# suite (graphstore/testing.py, English and Chinese ids) and every layer by tests/agent/test_layers.py on
# both stores; this run is the whole stack end to end on the server, and Chinese is the language whose
# text, ids and token estimates are the more likely to go wrong there.  The English run on Neo4j repeated
# the same store calls with other text and cost 98 s of the suite's 2,254 (a loaded run, Dec 2).
@pytest.mark.neo4j
@pytest.mark.parametrize("lang", ["zh"])
def test_scenario_neo4j(tmp_path: Path, embedder: Any, extractor: Any, lang: str, neo4j_driver: Any) -> None:
    from tests.graphstore.test_neo4j import wipe

    wipe(neo4j_driver)
    try:
        _scenario("neo4j", tmp_path, embedder, extractor, lang, turns=160)
    finally:
        wipe(neo4j_driver)
