"""Each layer of the agent's memory against a real store: the embedded one and Neo4j (``store_mem``).

The agent layer is a client of the public API; running every test here on both stores is its
conformance suite.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from ripple import LimitExceeded, PermissionDenied, StepMismatch, VersionConflict
from ripple.agent import AgentConfig, TaskState
from tests.agent.conftest import open_memory

pytestmark = pytest.mark.slow


# -- the public API the layer needs: facts and documents ------------------------------------------------
def test_facts_with_evidence_and_validity(store_mem: Any) -> None:
    store_mem.add("My name is Dana Whitfield.", user_id="u1", session_id="s1")
    store_mem.add("I work at Acme Corp as a procurement lead.", user_id="u1", session_id="s1")
    store_mem.add("Our budget is 50k.", user_id="u1", session_id="s1")
    store_mem.add("The budget is now 60k.", user_id="u1", session_id="s2")
    store_mem.add("我叫张伟。", user_id="u2", session_id="s1")
    facts = {f.predicate: f for f in store_mem.facts(user_id="u1")}
    assert facts["name"].value == "Dana Whitfield" and facts["employer"].value == "Acme Corp"
    assert facts["budget"].value == "60000" and facts["budget"].session_id == "s2" and facts["budget"].valid_to is None
    assert "Dana" in facts["name"].text and 0 < facts["name"].confidence <= 1
    history = [f for f in store_mem.facts(user_id="u1", include_history=True) if f.predicate == "budget"]
    assert [(f.value, f.status) for f in history] == [("50000", "superseded"), ("60000", "active")]
    assert history[0].valid_to is not None and history[0].valid_to == history[1].valid_from
    assert [f.value for f in store_mem.facts(user_id="u2")] == ["张伟"]
    assert store_mem.facts(user_id="nobody") == []


def test_documents_compare_and_set(store_mem: Any) -> None:
    doc = store_mem.put_document(user_id="u1", key="wm/t", value={"step": 1, "备注": "开始"}, expected_version=0)
    assert doc.version == 1 and store_mem.get_document(user_id="u1", key="wm/t").value == {"step": 1, "备注": "开始"}
    with pytest.raises(VersionConflict, match="at version 1") as err:
        store_mem.put_document(user_id="u1", key="wm/t", value={"step": 9}, expected_version=0)
    assert err.value.current == 1
    assert store_mem.put_document(user_id="u1", key="wm/t", value={"step": 2}, expected_version=1).version == 2
    store_mem.delete_document(user_id="u1", key="wm/t", expected_version=2)
    assert store_mem.get_document(user_id="u1", key="wm/t") is None


def test_async_twin_of_facts_and_documents(store_kind: str, tmp_path: Path, embedder: Any, extractor: Any) -> None:
    async def main() -> None:
        async with open_memory(store_kind, tmp_path, embedder, extractor, asynchronous=True) as mem:
            await mem.add("My name is Li Wei.", user_id="u1", session_id="s1")
            assert [f.value for f in await mem.facts(user_id="u1")] == ["Li Wei"]
            await mem.put_document(user_id="u1", key="k", value=[1, 2], expected_version=0)
            with pytest.raises(VersionConflict):
                await mem.put_document(user_id="u1", key="k", value=[3], expected_version=0)
            assert (await mem.get_document(user_id="u1", key="k")).value == [1, 2]

    asyncio.run(main())


# -- window, write-through and background summaries ---------------------------------------------------
def test_write_through_eviction_summary_and_recall(store_mem: Any) -> None:
    s = store_mem.session("u1", "s1", context_window=1200)
    s.add("user", "We decided to ship Project Bluebird to Northwind on June 14.")
    s.add("assistant", "Noted, June 14 for Bluebird.")
    s.add("user", "The budget must stay under 60k.")
    for i in range(24):
        s.add("user", f"Chatting about the espresso machine, cup number {i}.")
        s.add("assistant", f"Enjoy cup {i}.")
        assert s.window.tokens <= s.window.budget
    assert s.flush() == []
    assert s.window.turns[0].seq > 3  # the decision was evicted ...
    assert any("Bluebird" in h.hit.memory.text for h in s.recall("When does Bluebird ship?"))  # ... but is recallable
    assert "Bluebird" in s.summary_text and "60k" in s.summary_text
    jobs = [j for j in s.jobs.all() if j.kind == "summary"]
    assert jobs and all(j.status == "done" for j in jobs)
    summary_job = s.tracer.last("job.summary")
    assert summary_job is not None and summary_job.attrs["turns"] > 0
    stored = [m for m in store_mem.get_all(user_id="u1") if m.kind == "summary"]
    assert stored and stored[0].metadata["covers"][0] == 1 and stored[0].metadata["written_by"] is None
    s.close()


def test_a_failing_summariser_is_visible_and_turns_stay_recallable(store_mem: Any) -> None:
    def broken(previous: str, messages: list, max_tokens: int) -> str:
        raise RuntimeError("summariser offline")

    s = store_mem.session("u1", "s1", context_window=1000, summariser=broken)
    s.add("user", "The Lisbon venue holds 120 people.")
    for i in range(20):
        s.add("user", f"Small talk about lunch option {i}.")
    failed = s.flush()
    assert failed and "summariser offline" in failed[0].error
    assert s.tracer.last("job.summary").status == "error"
    assert "ERROR RuntimeError: summariser offline" in s.timeline()
    assert any("120 people" in h.hit.memory.text for h in s.recall("How many people fit in the Lisbon venue?"))


def test_add_does_not_wait_for_the_summariser(store_mem: Any) -> None:
    """The summariser blocks until the test releases it; adds go on meanwhile, then flush() waits for it."""
    import threading

    release = threading.Event()

    def blocked(previous: str, messages: list, max_tokens: int) -> str:
        assert release.wait(60)
        return "Summary: lunch talk."

    s = store_mem.session("u1", "s1", context_window=1000, summariser=blocked)
    i = 0
    while not any(j.kind == "summary" for j in s.jobs.all()):
        s.add("user", f"Small talk about lunch option {i} and the weather.")
        i += 1
    for n in range(3):  # the summary job is waiting on the summariser: add still returns
        s.add("user", f"More small talk {n} while the summary is being written.")
    assert any(j.kind == "summary" and j.status in ("pending", "running") for j in s.jobs.all())
    release.set()
    assert s.flush() == []
    assert s.summary_text == "Summary: lunch talk."


# -- pins ------------------------------------------------------------------------------------------------------
def test_pins_are_in_every_context_capped_and_curated(store_mem: Any) -> None:
    cfg = AgentConfig(context_window=2000, max_pins=2)
    s = store_mem.session("u1", "s1", config=cfg)
    pin = s.pins.add("The user is allergic to peanuts.")
    assert pin.memory_id and store_mem.get(pin.memory_id).pinned
    for q in ("Where should we eat?", "What's the weather like?", None):
        assert "allergic to peanuts" in s.context(q).messages[0]["content"]
    s.pins.add("Budget hard cap: 60k.")
    with pytest.raises(LimitExceeded, match="cap is 2"):
        s.pins.add("Prefers aisle seats.")
    with pytest.raises(LimitExceeded, match="tokens"):
        store_mem.session("u1", "s9", context_window=600).pins.add("x " * 400)
    helper = store_mem.session("u1", "s2", agent_id="helper", access={"user": "writer"})
    with pytest.raises(PermissionDenied, match="curator"):
        helper.pins.add("Loves durian.")
    proposer = store_mem.session("u1", "s3", agent_id="helper", access={"user": "writer"}, on_denied="pending")
    pending = proposer.pins.add("Vegetarian on Fridays.")
    assert pending.status == "pending" and [p.id for p in s.pins.pending()] == [pending.id]
    s.pins.remove(pin.id)
    accepted = s.pins.accept(pending.id)
    assert accepted.status == "active" and [p.text for p in s.pins.list()] == ["Budget hard cap: 60k.",
                                                                              "Vegetarian on Fridays."]


# -- profile -----------------------------------------------------------------------------------------------------
def test_profile_slots_commit_and_in_session_override(store_mem: Any) -> None:
    store_mem.add("I work at Acme Corp.", user_id="u1", session_id="old")
    store_mem.add("I live in Lisbon.", user_id="u1", session_id="old")
    s = store_mem.session("u1", "s1")
    slots = {x.name: x for x in s.profile.view()}
    assert slots["employer"].current[0].value == "Acme Corp" and slots["location"].current[0].value == "Lisbon"
    s.add("user", "I live in Porto now.")
    slots = {x.name: x for x in s.profile.view()}
    assert [v.value for v in slots["location"].current] == ["Porto"] and slots["location"].from_this_session
    assert "Porto" in s.profile.render(max_tokens=100)
    assert s.profile.commit() > 0
    slots = {x.name: x for x in s.profile.view()}
    assert [v.value for v in slots["location"].history] == ["Lisbon"]  # closed, not deleted
    assert slots["location"].history[0].valid_to is not None


def test_profile_shows_an_open_conflict_until_it_is_settled(store_mem: Any) -> None:
    """A supersession the write path was unsure of is shown as such ("was 50k, possibly now 60k"), in
    English and Chinese, not silently as either value; once settled, the profile says it plainly."""
    from datetime import datetime, timedelta, timezone

    t0 = datetime(2026, 3, 2, 9, tzinfo=timezone.utc)
    (old,) = store_mem.add("Our budget is 50,000 CNY.", user_id="u1", session_id="a", at=t0)
    (new,) = store_mem.add("The budget for the team dinner is 800 CNY.", user_id="u1", session_id="b",
                           at=t0 + timedelta(days=1))
    assert len(store_mem.conflicts(user_id="u1")) == 1
    s = store_mem.session("u1", "s1")
    en, zh = s.profile.render(), s.profile.render(language="zh")
    line = next(x for x in en.splitlines() if "possibly now" in x)
    assert "800" in line and "50,000" in line, en
    assert "可能已改为" in zh and "800" in zh, zh
    context = "".join(m["content"] for m in s.context("What is our budget?").messages)
    assert "possibly now" in context  # what the agent's model reads
    store_mem.resolve_conflict(new.id, old.id, supersedes=False)
    assert "possibly now" not in s.profile.render() and "unconfirmed" not in s.profile.render().lower()


def test_a_replaced_value_in_the_context_says_so(store_mem: Any) -> None:
    """A question about a change recalls the value a later statement replaced (MergeConfig.history_cue); the
    card the agent's model reads marks it, so that the old budget is not taken for the current one."""
    from datetime import datetime, timedelta, timezone

    from ripple.agent.context import make_card

    t0 = datetime(2026, 3, 2, 9, tzinfo=timezone.utc)
    (old,) = store_mem.add("Our budget is 50,000 CNY.", user_id="u1", session_id="a", at=t0)
    (new,) = store_mem.add("The budget is now 60k.", user_id="u1", session_id="b", at=t0 + timedelta(days=1))
    hits = {h.memory.id: h for h in store_mem.recall("What was the budget originally?", user_id="u1", k=5).hits}
    assert {old.id, new.id} <= set(hits)
    assert make_card(hits[old.id], scope="user", card_chars=200).line().startswith("[2026-03-02 · a · replaced]")
    assert "replaced" not in make_card(hits[new.id], scope="user", card_chars=200).line()


# -- working memory --------------------------------------------------------------------------------------------------
def test_working_memory_versions_steps_notes_and_restart(store_kind: str, tmp_path: Path, embedder: Any,
                                                         extractor: Any) -> None:
    mem = open_memory(store_kind, tmp_path, embedder, extractor)
    s = mem.session("u1", "s1", agent_id="planner")
    wm = s.working("offsite")
    got = wm.state()
    assert got.version == 0 and isinstance(got.state, TaskState)
    state = got.state.model_copy(update={"goal": "plan the offsite", "plan": ["venue", "budget", "travel"], "step": 1})
    saved = wm.save(state, expected_version=0)
    with pytest.raises(VersionConflict, match="stale task state"):
        wm.save(state.model_copy(update={"step": 3}), expected_version=0)
    wm.check_step(1)
    with pytest.raises(StepMismatch, match="expected step 3, got step 1"):
        wm.check_step(3)
    note = wm.note("Lisbon venues are cheaper in late September.")
    promoted = wm.promote(note.id)
    assert promoted.promoted_to and "cheaper" in mem.get(promoted.promoted_to).text
    assert "- goal: plan the offsite" in s.context("venue?").messages[0]["content"] + "".join(
        m["content"] for m in s.context("venue?").messages)
    s.close()
    mem.close()
    again = open_memory(store_kind, tmp_path, embedder, extractor)  # a new process, as far as ripple knows
    try:
        wm2 = again.session("u1", "s1", agent_id="planner").working("offsite")
        back = wm2.state()
        assert back.version == saved.version and back.state.goal == "plan the offsite"
        assert [n.text for n in wm2.notes()] == ["Lisbon venues are cheaper in late September."]
    finally:
        again.close()


# -- procedures --------------------------------------------------------------------------------------------------
def test_procedures_count_outcomes_and_stay_in_their_agent(store_mem: Any) -> None:
    s = store_mem.session("u1", "s1", agent_id="booker")
    steps = ["search_flights(LIS)", "hold_seat", "pay_with_card"]
    s.record_procedure("Book a flight to Lisbon", steps, "success")
    s.record_procedure("Book a flight to Lisbon", steps, "failure", error="card declined")
    p = s.record_procedure("Book a flight to Lisbon", steps, "success")
    assert (p.successes, p.failures, p.last_failure) == (2, 1, "card declined")
    card = s.procedures_core  # through the driver:
    found = s._run(card.find("book flights to Lisbon for the team"))
    assert found and "2 of 3 runs succeeded" in found[0].render() and "card declined" in found[0].render()
    ctx = s.context("Can you book flights to Lisbon for the team?")
    assert any("How this was done before" in m["content"] for m in ctx.messages)
    other = store_mem.session("u1", "s2", agent_id="writer-bot")
    assert not any("How this was done" in m["content"] for m in other.context("book flights to Lisbon").messages)


# -- relevance floor -------------------------------------------------------------------------------------------------
WORK = {
    "en": ["The Q3 roadmap review with the platform team is on Thursday.", "Dana wants the vendor contract renewed before March.",
           "Our sprint velocity dropped because two engineers were on call.", "The API latency target is 60 ms at p95."],
    "zh": ["周四和平台组开第三季度路线图评审会。", "王总希望三月前续签供应商合同。", "这周有两个工程师值班，迭代速度下降了。",
           "接口延迟的目标是p95不超过60毫秒。"],
}


@pytest.mark.parametrize("lang,unrelated,related", [
    ("en", "What is the capital of Peru?", "When is the roadmap review?"),
    ("zh", "秘鲁的首都是哪里？", "路线图评审是哪天？"),
])
def test_an_unrelated_question_injects_no_cards(store_mem: Any, lang: str, unrelated: str, related: str) -> None:
    for text in WORK[lang]:
        store_mem.add(text, user_id="u1", session_id="old")
    s = store_mem.session("u1", "s1")
    ctx = s.context(unrelated)
    assert ctx.cards == [] and ctx.ledger.sections["recalled"].tokens == 0
    event = next(e for e in s.tracer.last("session.context").events if e[0] == "recalled")
    assert event[2]["hits"] > 0 and event[2]["past_floor"] == 0
    cards = s.context(related).cards
    assert cards and ("roadmap" in cards[0].text or "路线图" in cards[0].text)


# -- the async session: the same plans, awaited ---------------------------------------------------------------
def test_async_session(store_kind: str, tmp_path: Path, embedder: Any, extractor: Any) -> None:
    async def main() -> None:
        async with open_memory(store_kind, tmp_path, embedder, extractor, asynchronous=True) as mem:
            s = mem.session("u1", "s1", agent_id="planner", context_window=1000)
            await s.add("user", "Our offsite budget is capped at 60k.")
            pin = await s.pins.add("The user is allergic to peanuts.")
            assert [p.id for p in await s.pins.list()] == [pin.id]
            for i in range(30):
                await s.add("user", f"Small talk about lunch option {i}.")
                assert s.window.tokens <= s.window.budget
            assert await s.flush() == [] and s.window.turns[0].seq > 1 and "60k" in s.summary_text
            await s.add("user", "The plan costs 80k in total.")
            alert = (await s.patrol()).alert
            assert alert is not None and alert.kind == "conflict"
            ctx = await s.context()
            assert "allergic to peanuts" in ctx.messages[0]["content"] and ctx.tokens <= s.cfg.budget
            wm = s.working("offsite")
            got = await wm.state()
            await wm.save(got.state.model_copy(update={"step": 1}), expected_version=got.version)
            with pytest.raises(VersionConflict):
                await wm.save(got.state.model_copy(update={"step": 2}), expected_version=got.version)
            hits = await s.recall("What is the budget cap?")
            assert any("60k" in h.hit.memory.text for h in hits)
            await s.close()
            assert s.tracer.last("job.summary") is not None

    asyncio.run(main())
