from __future__ import annotations

import math

import pytest

from benchmarks.metrics import METRIC_DEPTH, METRICS, aggregate, latency_percentiles, register, score_row


def test_registry_names() -> None:
    assert list(METRICS) == ["recall@2", "recall@5", "recall@10", "recall@25", "recall_all@10", "ndcg@10", "mrr"]
    assert METRIC_DEPTH["recall@25"] == 25 and METRIC_DEPTH["mrr"] is None


RANKED = ["x1", "g1", "x2", "x3", "x4", "g2", "x5", "x6", "x7", "x8", "g3", "x9"]
GOLD = ("g1", "g2", "g3")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("recall@2", 1 / 3),
        ("recall@5", 1 / 3),
        ("recall@10", 2 / 3),
        ("recall@25", 1.0),
        ("recall_all@10", 0.0),
        ("mrr", 0.5),
        # DCG = 1/log2(3) + 1/log2(7); IDCG = 1 + 1/log2(3) + 1/log2(4)
        ("ndcg@10", (1 / math.log2(3) + 1 / math.log2(7)) / (1 + 1 / math.log2(3) + 0.5)),
    ],
)
def test_metrics_hand_computed(name: str, expected: float) -> None:
    assert METRICS[name](RANKED, GOLD) == pytest.approx(expected)


def test_metric_edge_cases() -> None:
    assert METRICS["recall@10"]([], ("a",)) == 0.0
    assert METRICS["recall@10"](["a"], ()) == 0.0
    assert METRICS["recall_all@10"](["b", "a"], ("a", "b")) == 1.0
    assert METRICS["ndcg@10"](["a", "b"], ("a", "b")) == pytest.approx(1.0)
    assert METRICS["ndcg@10"](["a"], ("a",) + tuple(f"g{i}" for i in range(20))) < 1.0
    # more gold than k: a top-10 made only of gold ids is a perfect nDCG@10
    assert METRICS["ndcg@10"]([f"g{i}" for i in range(10)], tuple(f"g{i}" for i in range(12))) == pytest.approx(1.0)
    assert METRICS["mrr"](["x", "y"], ("a",)) == 0.0
    # duplicates in a ranking do not count twice nor push gold out of the top k
    assert METRICS["recall@2"](["a", "a", "b"], ("a", "b")) == 1.0


def test_score_row_skips_metrics_deeper_than_run() -> None:
    row = score_row(["a", "b"], ("b",), k=10)
    assert "recall@25" not in row and row["recall@10"] == 1.0 and row["mrr"] == 0.5
    assert set(score_row(["a"], ("a",))) == set(METRICS)


def test_register_rejects_duplicates() -> None:
    with pytest.raises(ValueError):
        register("mrr", None)(lambda r, g: 0.0)


def test_aggregate() -> None:
    rows = [
        {"category": "a", "recall@10": 1.0, "mrr": 1.0},
        {"category": "a", "recall@10": 0.0, "mrr": 0.5},
        {"category": "b", "recall@10": 0.5, "mrr": 0.0},
    ]
    agg = aggregate(rows)
    assert list(agg) == ["a", "b", "overall"]
    assert agg["a"] == {"n": 2, "recall@10": 0.5, "mrr": 0.75}
    assert agg["b"]["n"] == 1
    assert agg["overall"]["n"] == 3
    assert agg["overall"]["recall@10"] == pytest.approx(0.5)
    assert agg["overall"]["mrr"] == pytest.approx(0.5)
    assert aggregate([]) == {}
    assert list(aggregate(rows, by=None)) == ["overall"]


def test_latency_percentiles() -> None:
    vals = list(range(1, 101))  # 1..100
    p = latency_percentiles(vals)
    assert p["p50"] == pytest.approx(50.5)
    assert p["p95"] == pytest.approx(95.05)
    assert p["p99"] == pytest.approx(99.01)
    assert p["mean"] == pytest.approx(50.5) and p["max"] == 100
    assert latency_percentiles([3.0])["p99"] == 3.0
    assert math.isnan(latency_percentiles([])["p50"])
