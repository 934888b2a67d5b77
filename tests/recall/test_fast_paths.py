"""The recall's fast paths against the readable references they replace (property tests).

Each fast path must give the *same* result, to the bit, as its reference:
``spread_steps`` (rows as the store returns them) against ``spread_flow`` over
``edges_from_rows``, and ``merge_channels`` (candidates only for the kept
memories) against ``merge_channels_reference`` (a candidate for every memory
reached), including the query signals and relevance computed after the merge.
English and Chinese ids alike (ids are opaque strings to both).
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from graphstore.records import EDGE_MENTIONS, EDGE_NEXT, Neighbor
from ripple.recall.activation import spread_flow, spread_steps
from ripple.recall.candidates import Candidate, ChannelResult, Seeded
from ripple.recall.channels import _edge, edges_from_rows, source_degrees
from ripple.recall.config import RecallConfig, RerankConfig, RerankMethod
from ripple.recall.merge import merge_channels, merge_channels_reference, path_to
from ripple.recall.query import QueryInput
from ripple.recall.relevance import assign_relevance, query_signals

MEMORIES = [f"m_{i}" for i in range(8)] + ["m_记忆一", "m_记忆二"]
ENTITIES = ["e_dana", "e_berlin", "e_北京", "e_hub"]
NODES = MEMORIES + ENTITIES
weights = st.sampled_from([0.25, 0.5, 1.0, 0.7, 1e-3, 0.3333333333333333])


@st.composite
def graphs(draw: Any) -> dict[str, list[Neighbor]]:
    """Rows per source node, as a store's expand returns them (memory -> entity carries the entity's
    degree and label; entity -> memory and NEXT steps carry degree 1)."""
    rows: dict[str, list[Neighbor]] = {}
    for m in MEMORIES:
        for e in draw(st.lists(st.sampled_from(ENTITIES), max_size=3, unique=True)):
            deg = draw(st.integers(1, 60))
            label = draw(st.sampled_from(["PERSON", "GPE", "DATE", "PROPN"]))
            rows.setdefault(m, []).append(Neighbor(m, e, EDGE_MENTIONS, draw(weights), deg, "", label))
            rows.setdefault(e, []).append(Neighbor(e, m, EDGE_MENTIONS, draw(weights), 1, "", ""))
        for other in draw(st.lists(st.sampled_from(MEMORIES), max_size=2, unique=True)):
            rows.setdefault(m, []).append(Neighbor(m, other, EDGE_NEXT, draw(weights), 1, "", ""))
    return rows


options = st.fixed_dictionaries({
    "max_hops": st.integers(1, 3),
    "decay": st.one_of(weights, st.lists(weights, min_size=1, max_size=3)),
    "damping": st.sampled_from([0.0, 0.5, 1.0]),
    "threshold": st.sampled_from([0.0, 1e-4, 0.01]),
    "frontier_cap": st.integers(1, 12),
    "aggregate": st.sampled_from(["sum", "max"]),
    "degree_offset": st.integers(0, 2),
})
seed_maps = st.dictionaries(st.sampled_from(NODES), st.floats(0.0, 1.0, allow_nan=False), max_size=5)


def _drive(flow: Any, graph: dict[str, list[Neighbor]], send: Any) -> Any:
    known: dict[str, int] = {}
    try:
        frontier = next(flow)
        while True:
            rows = [r for n in frontier for r in graph.get(n, [])]
            frontier = flow.send(send(rows, known))
    except StopIteration as stop:
        return stop.value


@settings(max_examples=300, deadline=None)
@given(graph=graphs(), seeds=seed_maps, opts=options)
def test_spread_steps_is_spread_flow_over_edges(graph: dict[str, list[Neighbor]], seeds: dict[str, float],
                                                 opts: dict[str, Any]) -> None:
    ref = _drive(spread_flow(seeds, **opts), graph, edges_from_rows)
    fast = _drive(spread_steps(seeds, _edge, **opts), graph, lambda rows, known: (rows, source_degrees(rows, known)))
    assert fast.activation == ref.activation  # (exact floats: same arithmetic, same order)
    assert list(fast.activation) == list(ref.activation)
    assert fast.parent == ref.parent
    assert fast.frontier_sizes == ref.frontier_sizes


scores = st.floats(0.0, 1.0, allow_nan=False)


@st.composite
def merges(draw: Any) -> tuple[Seeded, dict[str, ChannelResult], int, RecallConfig]:
    ids = draw(st.lists(st.sampled_from(MEMORIES + [f"m_x{i}" for i in range(40)]), max_size=30, unique=True))
    seeds = {i: Candidate(i, seed=draw(scores), late=draw(scores), dense=draw(st.floats(-0.2, 1.0)),
                          coverage=draw(scores), multilingual=draw(scores)) for i in ids}
    top_seed = max((c.seed for c in seeds.values()), default=0.0) or 1.0
    norm = {i: c.seed / top_seed for i, c in seeds.items()}
    seeded = Seeded(seeds, final=False, norm=norm, ranked=sorted(norm, key=lambda i: (-norm[i], i)), top=top_seed)
    results: dict[str, ChannelResult] = {}
    reachable = MEMORIES + [f"m_y{i}" for i in range(60)] + ids
    for name in draw(st.lists(st.sampled_from(["session", "entity"]), unique=True)):
        act = draw(st.dictionaries(st.sampled_from(reachable), st.floats(1e-4, 2.0), max_size=60))
        sources = set(ids[:3]) | {"e_dana"}
        src = sorted(sources)
        parents = {n: _edge(Neighbor(src[j % len(src)], n, EDGE_MENTIONS, 0.5, 1, "", ""), 2)
                   for j, n in enumerate(act) if n not in sources}
        results[name] = ChannelResult(act, parents, sources)
    k = draw(st.sampled_from([1, 5, 10, 25]))
    rerank = draw(st.sampled_from([RerankConfig(), RerankConfig(method=RerankMethod.NONE), RerankConfig(top_n=3)]))
    return seeded, results, k, RecallConfig(rerank=rerank)


def _facts(c: Candidate) -> tuple[Any, ...]:
    return (c.id, c.score, c.seed, c.activation, dict(c.channels), c.via, list(c.path), c.relevance)


@settings(max_examples=300, deadline=None)
@given(case=merges())
def test_merge_channels_is_the_reference(case: tuple[Seeded, dict[str, ChannelResult], int, RecallConfig]) -> None:
    seeded, results, k, config = case
    ref_seeded = copy.deepcopy(seeded)
    ref = merge_channels_reference(ref_seeded, results, config, k)
    fast = merge_channels(seeded, results, config, k)
    assert [_facts(c) for c in fast] == [_facts(c) for c in ref]
    assert seeded.scored == len(ref_seeded.cands)  # (the trace's merge size)
    # what the pipeline computes from the pool after the merge: the query's signals and each hit's relevance
    q = QueryInput("where does Dana work? 达娜在哪里工作", "u", k, "ripple", 0.0, [], None, None, 0, [])
    ref_seeded.scored = len(ref_seeded.cands)  # (the reference leaves it alone: every memory is a candidate)
    assert query_signals(q, seeded) == query_signals(q, ref_seeded)
    assign_relevance(fast[:k], seeded.cands, query_signals(q, seeded), config.relevance)
    assign_relevance(ref[:k], ref_seeded.cands, query_signals(q, ref_seeded), config.relevance)
    assert [c.relevance for c in fast[:k]] == [c.relevance for c in ref[:k]]


def test_merge_keeps_spread_only_memories_and_counts_the_rest() -> None:
    """A memory only spreading reached and kept becomes a candidate (and joins the pool); the ones
    cut are scored and counted, not built."""
    seeds = {"m_a": Candidate("m_a", seed=1.0, dense=0.4), "m_b": Candidate("m_b", seed=0.3, dense=0.3)}
    seeded = Seeded(seeds, final=False, norm={"m_a": 1.0, "m_b": 0.3}, ranked=["m_a", "m_b"], top=1.0)
    act = {f"m_{i}": 0.9 - i / 1000 for i in range(200)}
    parents = {n: _edge(Neighbor("m_a", n, EDGE_NEXT, 1.0, 1, "", ""), 1) for n in act}
    config = RecallConfig(rerank=RerankConfig(method=RerankMethod.NONE))
    kept = merge_channels(seeded, {"session": ChannelResult(act, parents, {"m_a"})}, config, 10)
    assert [c.id for c in kept[:3]] == ["m_a", "m_0", "m_1"]
    assert len(kept) == 50 and seeded.scored == 202
    assert kept[1].via == "session" and kept[1].path == [parents["m_0"]] == path_to("m_0", parents, {"m_a"})
    assert "m_0" in seeded.cands and "m_199" not in seeded.cands
