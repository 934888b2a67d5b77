"""Scoring functions against hand computations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ripple.recall.scoring import bm25, maxsim, maxsim_stacked, minmax, recency_factor, rrf, top, weighted_sum


def test_bm25_matches_hand_computation() -> None:
    rows = [("tea", "d1", 2, 4), ("tea", "d2", 1, 8), ("rotterdam", "d2", 1, 8)]
    df = {"tea": 2, "rotterdam": 1}
    got = bm25(["tea", "rotterdam"], rows, n_docs=3, avg_len=6.0, df=df, k1=1.2, b=0.75)
    idf_tea = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    idf_rot = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    d1 = idf_tea * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 4 / 6))
    d2 = idf_tea * 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 8 / 6)) + idf_rot * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 8 / 6))
    assert got == pytest.approx({"d1": d1, "d2": d2})
    assert bm25(["tea"], rows, n_docs=0, avg_len=0, df=df) == {}


def test_maxsim_is_mean_of_best_matches() -> None:
    q = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    docs = {"a": np.array([[1.0, 0.0]], dtype=np.float32), "b": np.array([[0.6, 0.8], [0.0, 1.0]], dtype=np.float32)}
    got = maxsim(q, docs)
    assert got["a"] == pytest.approx(0.5)
    assert got["b"] == pytest.approx((0.6 + 1.0) / 2)
    assert maxsim(q, {}) == {}


def test_maxsim_over_packed_blobs_equals_maxsim_over_unpacked_arrays() -> None:
    """Stored int8 token vectors, stacked once (the recall path), score as unpacking each would."""
    from ripple.embedding import TOKEN_SCALE, pack_tokens, stack_token_blobs, unpack_tokens

    rng = np.random.default_rng(3)
    unit = lambda a: a / np.linalg.norm(a, axis=1, keepdims=True)  # noqa: E731
    q = unit(rng.standard_normal((4, 16))).astype(np.float32)
    blobs = {f"m{i}": pack_tokens(unit(rng.standard_normal((n, 16)))) for i, n in enumerate((1, 5, 3, 9))}
    blobs["empty"] = b""
    ids, lengths, stacked = stack_token_blobs(blobs, 16)
    assert ids == list(blobs) and lengths.tolist() == [1, 5, 3, 9, 0] and stacked.dtype == np.int8
    got = maxsim_stacked(q, ids, lengths, stacked, scale=TOKEN_SCALE)
    want = maxsim(q, {i: unpack_tokens(b, 16) for i, b in blobs.items() if b})
    assert set(got) == set(blobs) and got["empty"] == 0.0
    for i, v in want.items():
        assert got[i] == pytest.approx(v, abs=1e-6)


def test_minmax_and_weighted_sum() -> None:
    assert minmax({"a": 2.0, "b": 4.0, "c": 3.0}) == {"a": 0.0, "b": 1.0, "c": 0.5}
    assert minmax({"a": 5.0}) == {"a": 1.0}
    fused = weighted_sum([(0.4, {"a": 1.0, "b": 3.0}), (0.6, {"b": 0.2, "c": 0.9})])
    assert fused == pytest.approx({"a": 0.0, "b": 0.4, "c": 0.6})


def test_rrf_and_top() -> None:
    fused = rrf([["a", "b"], ["b", "c"]], k=10)
    assert fused["b"] == pytest.approx(1 / 12 + 1 / 11)
    assert top(fused, 2) == ["b", "a"]
    assert top({"x": 1.0, "a": 1.0}, 2) == ["a", "x"]  # ties by id


def test_recency_halves_per_half_life() -> None:
    assert recency_factor(30, 30) == pytest.approx(0.5)
    assert recency_factor(-5, 30) == 1.0
    assert recency_factor(0, 30) == 1.0


@pytest.mark.parametrize(
    ("query", "cue"),
    [
        ("What did Melanie paint recently?", True),
        ("What is the latest budget?", True),
        ("May I see the latest plan?", True),  # "May" the verb is not a month
        ("最近在读什么书？", True),
        ("What did Mel paint in their latest project in July 2023?", False),  # latest *then*
        ("What is the latest on 3/4/2024?", False),
        ("2023年7月最新的项目是什么？", False),
        ("Where does Dana work?", False),
    ],
)
def test_recency_cue_unless_the_query_names_its_own_time(query: str, cue: bool) -> None:
    from ripple.recall.query import has_recency_cue

    assert has_recency_cue(query) is cue


@pytest.mark.parametrize(("query", "cue"), [
    ("What was the budget originally?", True),
    ("How much more rent does he pay than before?", True),
    ("How much did the rent go up?", True),
    ("苏磊的婚期原本定在哪天，后来挪到了哪天？", True),
    ("小雅家索要彩礼，从最初报价到最后敲定一共降了多少？", True),
    ("What is the budget?", False),
    ("Where does Dana work?", False),
    ("母亲为儿子的婚事亲手准备了什么？", False),
])
def test_a_question_about_a_change(query: str, cue: bool) -> None:
    from ripple.recall.query import asks_about_change

    assert asks_about_change(query) is cue


def test_top_of_a_large_map_equals_the_full_sort() -> None:
    import random

    rng = random.Random(3)
    for size, n in ((10, 3), (2_000, 50), (5_000, 200), (300, 1)):
        scores = {f"d{i}": float(rng.randint(0, 40)) for i in range(size)}  # many ties
        assert top(scores, n) == [k for k, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]
    assert top({}, 5) == [] and top({"a": 1.0}, 0) == []
