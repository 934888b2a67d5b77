"""Spreading activation: invariants and agreement with the per-path reference."""

from __future__ import annotations

import random

import pytest

from ripple.recall.activation import Edge, spread, spread_reference


def _neighbors(graph: dict[str, list[Edge]]):
    calls: list[list[str]] = []

    def fn(frontier):
        calls.append(list(frontier))
        return [e for n in frontier for e in graph.get(n, [])]

    return fn, calls


def _undirected(pairs: list[tuple[str, str, float]], degree: dict[str, int] | None = None) -> dict[str, list[Edge]]:
    g: dict[str, list[Edge]] = {}
    for a, b, w in pairs:
        g.setdefault(a, []).append(Edge(a, b, w, (degree or {}).get(a, 1)))
        g.setdefault(b, []).append(Edge(b, a, w, (degree or {}).get(b, 1)))
    return g


def test_empty_graph_gives_empty_activation() -> None:
    fn, _ = _neighbors({})
    assert spread(fn, {"a": 1.0}).activation == {}
    assert spread(fn, {}).activation == {}


def test_activation_decays_with_distance_and_one_call_per_hop() -> None:
    g = _undirected([("s", "a", 1.0), ("a", "b", 1.0), ("b", "c", 1.0)])
    fn, calls = _neighbors(g)
    res = spread(fn, {"s": 1.0}, max_hops=3, decay=0.5, damping=0.0)
    assert res.activation["a"] > res.activation["b"] > res.activation["c"] > 0
    assert len(calls) == 3  # batched: one neighbour request per hop
    assert "s" not in res.activation  # seeds are not re-activated
    assert res.parent["c"].source == "b" and res.parent["b"].source == "a"


def test_hub_damping_divides_by_degree() -> None:
    hub = _undirected([("s", "hub", 1.0)] + [("hub", f"m{i}", 1.0) for i in range(10)], {"hub": 11})
    fn, _ = _neighbors(hub)
    damped = spread(fn, {"s": 1.0}, max_hops=2, decay=1.0, damping=1.0)
    plain = spread(fn, {"s": 1.0}, max_hops=2, decay=1.0, damping=0.0)
    assert damped.activation["m0"] == pytest.approx(plain.activation["m0"] / 11)


def test_max_aggregation_keeps_strongest_path() -> None:
    g = _undirected([("s1", "x", 1.0), ("s2", "x", 1.0)])
    fn, _ = _neighbors(g)
    assert spread(fn, {"s1": 1.0, "s2": 0.5}, max_hops=1, decay=1.0, aggregate="max").activation["x"] == 1.0
    assert spread(fn, {"s1": 1.0, "s2": 0.5}, max_hops=1, decay=1.0).activation["x"] == 1.5


@pytest.mark.parametrize("seed", range(5))
def test_matches_reference_on_random_graphs(seed: int) -> None:
    rng = random.Random(seed)
    nodes = [f"n{i}" for i in range(12)]
    pairs = {(a, b) for a in nodes for b in nodes if a < b and rng.random() < 0.25}
    deg = {n: sum(n in p for p in pairs) for n in nodes}
    g = _undirected([(a, b, rng.uniform(0.2, 1.0)) for a, b in sorted(pairs)], deg)
    seeds = {"n0": 1.0, "n1": 0.4}
    fn, _ = _neighbors(g)
    fast = spread(fn, seeds, max_hops=3, decay=0.5, damping=1.0, threshold=0.0, frontier_cap=10_000)
    ref = spread_reference(g, seeds, max_hops=3, decay=0.5, damping=1.0)
    assert fast.activation == pytest.approx(ref)
    assert all(0 <= a for a in fast.activation.values())
