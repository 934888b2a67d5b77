"""The agent layer's pure cores: summariser, context packer, traces and OpenTelemetry, patrol scoring, access."""

from __future__ import annotations

import pytest

from ripple.agent.context import Card, ContextParts, pack
from ripple.agent.patrol import (CooldownLog, Evidence, amounts, is_question, parse_forbidden, parse_limits,
                                 score_candidates, select)
from ripple.agent.scopes import Access, Role
from ripple.agent.summary import ExtractiveSummariser, LLMSummariser, SummaryState, split_sentences
from ripple.agent.tokens import EstimateTokenizer
from ripple.agent.trace import Tracer, timeline
from ripple.agent.window import Window
from ripple.errors import InvalidInput, PermissionDenied

TOK = EstimateTokenizer()


def _turns(pairs: list[tuple[str, str]]):  # type: ignore[no-untyped-def]
    w = Window(100_000, count=TOK.count, overhead=5)
    out = []
    for role, text in pairs:
        t = w.make_turn(role, text, at=0.0)
        w.admit(t)
        out.append(t)
    return out


# -- summariser ------------------------------------------------------------------------------------
EN = [("user", "We decided to hold the offsite in Lisbon."), ("assistant", "Great choice."),
      ("user", "The budget must stay under 60k."), ("user", "ok thanks"),
      ("user", "Remember to send the agenda to Priya by Friday."), ("user", "The venue quote was 45k.")]
ZH = [("user", "我们决定把年会放在杭州。"), ("assistant", "好的。"), ("user", "预算不能超过五万。"),
      ("user", "记得周五之前把议程发给李明。"), ("user", "好的")]


@pytest.mark.parametrize("pairs,decision,constraint", [(EN, "Lisbon", "60k"), (ZH, "杭州", "五万")])
def test_extractive_summary_names_the_decision_and_the_constraint(pairs, decision, constraint) -> None:  # type: ignore[no-untyped-def]
    state = ExtractiveSummariser()(SummaryState(), _turns(pairs), 400, TOK.count)
    text = state.render()
    sections = {i.section: i.text for i in state.items}
    assert decision in sections["decisions"] and constraint in sections["constraints"]
    assert "ok thanks" not in text and "好的。" not in text.split("\n", 1)[1]
    assert state.covers == (1, len(pairs)) and text.splitlines()[0].endswith(")") or "轮" in text


def test_summary_merges_incrementally_and_keeps_newer_figures_and_its_cap() -> None:
    s = ExtractiveSummariser()
    first = s(SummaryState(), _turns([("user", "The venue quote was 45k.")]), 400, TOK.count)
    w = Window(100_000, count=TOK.count, overhead=5)
    w.next_seq = 10
    t = w.make_turn("user", "The venue quote was 52k now.", at=1.0)
    second = s(first, [t], 400, TOK.count)
    figures = [i.text for i in second.items if i.section == "numbers"]
    assert figures == ["The venue quote was 52k now."] and second.covers == (1, 10)
    long = _turns([("user", f"We decided on option {i} for the supplier number {i}.") for i in range(40)])
    capped = s(SummaryState(), long, 80, TOK.count)
    assert TOK.count(capped.render()) <= 80 and capped.dropped > 0


def test_llm_summariser_is_pluggable_and_capped() -> None:
    calls = []

    def fn(previous: str, messages: list[dict], max_tokens: int) -> str:
        calls.append((previous, len(messages), max_tokens))
        return "Summary: " + " ".join(m["content"] for m in messages) * 20

    state = LLMSummariser(fn)(SummaryState(), _turns(EN), 60, TOK.count)
    assert calls == [("", len(EN), 60)] and TOK.count(state.render()) <= 60 and state.dropped == 1


def test_split_sentences_keeps_decimals() -> None:
    assert split_sentences("The rate is 4.5%. Next item! 预算五万。好的") == ["The rate is 4.5%.", "Next item!",
                                                                              "预算五万。", "好的"]


# -- context packer ----------------------------------------------------------------------------------
def _parts(**kw):  # type: ignore[no-untyped-def]
    turns = _turns([("user", "old question about the venue"), ("assistant", "old answer about the venue"),
                    ("user", "Where should we eat on Friday?")])
    base = dict(pins=[("p1", "Allergic to peanuts")], profile=[("name", "- Name: Dana")], working=["- goal: offsite"],
                summary="Summary of earlier turns (1-9)\nDecisions: Lisbon", language="en",
                cards=[Card("m1", "Satay House serves peanut sauce", "2026-05-01", "s1", 0.9),
                       Card("m2", "old answer about the venue", "2026-05-01", "s1", 0.5)], turns=turns)
    base.update(kw)
    return ContextParts(**base)


CAPS = {"pins": 100, "profile": 80, "working": 80, "summary": 120, "recalled": 120, "window": 500}


def test_pack_orders_sections_and_drops_cards_that_repeat_the_window() -> None:
    ctx = pack(_parts(), caps=CAPS, budget=1000, max_tokens=None, count=TOK.count, overhead=5, max_cards=8)
    contents = [m["content"] for m in ctx.messages]
    assert contents[0].startswith("Pinned facts") and "Allergic to peanuts" in contents[0]
    assert contents[1].startswith("About the user") and contents[2].startswith("Current task")
    assert contents[3].startswith("Summary") and contents[4].startswith("Possibly relevant")
    assert [m["role"] for m in ctx.messages[5:]] == ["user", "assistant", "user"]
    assert [c.memory_id for c in ctx.cards] == ["m1"]
    assert ("m2", "repeats the window") in ctx.ledger.sections["recalled"].dropped
    assert ctx.tokens <= 1000 and ctx.ledger.total == sum(s.tokens for s in ctx.ledger.sections.values())


def test_pack_gives_way_in_order_under_max_tokens_and_never_drops_pins_or_the_last_round() -> None:
    full = pack(_parts(), caps=CAPS, budget=1000, max_tokens=None, count=TOK.count, overhead=5, max_cards=8)
    small = pack(_parts(), caps=CAPS, budget=1000, max_tokens=full.tokens - 10, count=TOK.count, overhead=5,
                 max_cards=8)
    assert small.tokens <= full.tokens - 10 and not small.cards and "Allergic" in small.messages[0]["content"]
    tiny = pack(_parts(), caps=CAPS, budget=1000, max_tokens=40, count=TOK.count, overhead=5, max_cards=8)
    assert tiny.messages[0]["content"].startswith("Pinned") and tiny.messages[-1]["content"].startswith("Where")
    assert tiny.tokens <= 40
    with pytest.raises(InvalidInput, match="cannot hold the pinned facts"):
        pack(_parts(), caps=CAPS, budget=1000, max_tokens=15, count=TOK.count, overhead=5, max_cards=8)


def test_pack_chinese_headers() -> None:
    ctx = pack(_parts(language="zh"), caps=CAPS, budget=1000, max_tokens=None, count=TOK.count, overhead=5,
               max_cards=8)
    assert ctx.messages[0]["content"].startswith("固定事实")


# -- traces --------------------------------------------------------------------------------------------
def test_trace_json_timeline_and_otel_export() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import StatusCode

    from ripple.agent.otel import otel_exporter

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = Tracer(attrs={"session.id": "s1"}, exporters=[otel_exporter(provider)])  # type: ignore[list-item]
    root = tracer.start("session.add", role="user")
    child = root.child("store.add", memories=1)
    child.finish()
    root.event("evicted", turns=[1, 2], reason="over budget")
    tracer.done(root)
    failed = tracer.start("job.summary")
    tracer.done(failed, RuntimeError("summariser down"))
    data = root.to_json()
    assert data["attrs"]["role"] == "user" and data["children"][0]["name"] == "store.add"
    assert data["events"][0]["attrs"]["turns"] == [1, 2]
    text = timeline(tracer.traces())
    assert "session.add" in text and "· evicted" in text and "ERROR RuntimeError: summariser down" in text
    spans = {s.name: s for s in memory.get_finished_spans()}
    assert set(spans) == {"session.add", "store.add", "job.summary"}
    assert spans["store.add"].parent.span_id == spans["session.add"].context.span_id
    assert spans["session.add"].attributes["session.id"] == "s1"
    assert spans["session.add"].attributes["ripple.role"] == "user"
    assert spans["session.add"].events[0].name == "evicted"
    assert spans["job.summary"].status.status_code == StatusCode.ERROR
    assert spans["session.add"].start_time == int(root.start * 1e9)


# -- patrol ----------------------------------------------------------------------------------------------
def test_patrol_parsers_en_zh() -> None:
    assert [x.amount for x in parse_limits("Our offsite budget is capped at 60k.")] == [60000]
    assert [x.amount for x in parse_limits("预算控制在五万以内。")] == [50000]
    assert parse_limits("We had 3 meetings about it.") == []
    assert (80000.0, "") in amounts("The plan costs 80k in total.")
    assert parse_forbidden("I'm allergic to peanuts and shellfish.") == ["peanut", "shellfish"]
    assert parse_forbidden("我对花生过敏。") == ["花生"]
    assert is_question("What is the budget?") and is_question("预算是多少？") and not is_question("Lisbon it is.")


def _ev(mid: str, text: str, **kw):  # type: ignore[no-untyped-def]
    return Evidence(mid, text, kw.pop("at", 1000.0), **kw)


@pytest.mark.parametrize("turn,evidence,kind", [
    ("The plan costs 80k in total.", [_ev("m1", "Our offsite budget is capped at 60k.")], "conflict"),
    ("方案总共要花八万。", [_ev("m1", "预算控制在五万以内。")], "conflict"),
    ("Let's get peanut noodles tonight.", [_ev("p1", "The user is allergic to peanuts.", source="pin")], "conflict"),
    ("我们去吃宫保鸡丁吧，多放花生。", [_ev("p1", "我对花生过敏。", source="pin")], "conflict"),
    ("Book dinner at Satay House.", [_ev("m1", "I'm allergic to peanuts."),
                                     _ev("m2", "Satay House puts peanut sauce on everything.")], "conflict"),
    ("Is Priya coming to the review?", [_ev("m1", "Remember to send the agenda to Priya.")], "todo"),
])
def test_patrol_scores_conflicts_and_todos_above_the_alert_threshold(turn, evidence, kind) -> None:  # type: ignore[no-untyped-def]
    cands = score_candidates(turn, evidence, now=2000.0, language="zh" if "的" in turn or "吧" in turn else "en")
    assert cands and max(c.score for c in cands) >= 0.8 and max(cands, key=lambda c: c.score).kind == kind


def test_patrol_chit_chat_and_safe_plans_raise_nothing() -> None:
    ev = [_ev("m1", "Our offsite budget is capped at 60k."), _ev("p1", "Allergic to peanuts.", source="pin")]
    for turn in ("haha the weather is lovely today", "The plan costs 55k in total.", "Peanut-free menu please.",
                 "今天天气不错。"):
        assert not [c for c in score_candidates(turn, ev, now=2000.0) if c.score >= 0.8], turn


def test_patrol_repeat_question_and_cold_memories() -> None:
    asked = [_ev(f"q{i}", "What is the offsite budget?", dense=0.93, at=1000.0 + i) for i in range(3)]
    cands = score_candidates("What's the offsite budget again?", asked, now=2000.0)
    assert any(c.kind == "repeat" and c.score >= 0.8 for c in cands)
    twice = score_candidates("What's the offsite budget again?", asked[:2], now=2000.0)
    assert not any(c.kind == "repeat" for c in twice)
    old = score_candidates("What's the offsite budget again?", asked, now=1000.0 + 8 * 86400)
    assert not any(c.kind == "repeat" for c in old)  # outside the 7-day window
    cold = [_ev("m1", "Our offsite budget is capped at 60k.", tier="cold")]
    assert not score_candidates("The plan costs 80k in total.", cold, now=2000.0)


def test_patrol_select_one_alert_per_turn_with_cooldown() -> None:
    ev = [_ev("m1", "Our offsite budget is capped at 60k."), _ev("p1", "Allergic to peanuts.", source="pin")]
    cands = score_candidates("The plan costs 80k, with peanut satay for lunch.", ev, now=2000.0)
    log = CooldownLog()
    first = select(cands, log, turn=1, alert_threshold=0.8, log_threshold=0.6, cooldown_turns=5)
    assert len(first.alerts) == 1 and first.logged and "one alert per turn" in first.logged[0].reason
    again = select(cands, log, turn=2, alert_threshold=0.8, log_threshold=0.6, cooldown_turns=5)
    assert again.alerts[0].dedupe_key != first.alerts[0].dedupe_key  # the first is cooling down
    later = select(cands, log, turn=9, alert_threshold=0.8, log_threshold=0.6, cooldown_turns=5)
    assert later.alerts[0].dedupe_key == first.alerts[0].dedupe_key


# -- access ------------------------------------------------------------------------------------------------
def test_access_roles_and_partitions() -> None:
    solo = Access("u1", "s1", "bot")
    assert solo.role("user") is Role.CURATOR and solo.scope("agent").partition == "agent:bot"
    team = Access("u1", "s1", "helper", {"user": "reader", "team:acme": "writer"})
    assert team.turn_scope().partition == "session:u1:s1"
    assert [str(s) for s in team.readable()] == ["user", "team:acme", "session"]
    with pytest.raises(PermissionDenied, match="curator"):
        team.require("user", Role.CURATOR, "pinning a fact")
    with pytest.raises(PermissionDenied):
        team.require("team:other", Role.READER, "recalling")
    with pytest.raises(InvalidInput, match="reserved"):
        Access("team:acme", "s1", None)
    with pytest.raises(InvalidInput, match="unknown role"):
        Access("u1", "s1", None, {"user": "admin"})
