"""The near graph (graphstore.neargraph) against the embedded store as the reference: on random graphs
with cycles, self-loops, multi-predicate RELATED edges, hubs and labels that stop a walk, a neighbourhood
read from the near graph holds exactly the nodes a walk within reach can expand, each with exactly the
rows the store's ``expand`` gives it (in :func:`~graphstore.neargraph.row_order`), and an
:class:`~graphstore.requests.ExpandWalk` over it returns what the generic route returns."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from graphstore.neargraph import WALK_TYPES, NearGraph, row_order
from graphstore.records import EDGE_MENTIONS, EDGE_NEXT, EDGE_RELATED, EdgeRecord, NeighbourhoodAsk, WriteBatch
from graphstore.requests import ExpandWalk
from graphstore.sqlite import SQLiteStore
from graphstore.testing import GenericView, entity_degrees, make_entity, make_memory
from ripple.recall.activation import spread_steps
from ripple.recall.channels import _edge, _spread_walk

LABELS = ("PERSON", "ORG", "DATE", "GPE")


def _random_graph(store: SQLiteStore, seed: int) -> dict[str, str]:
    """A user's random graph (and a few edges of another user); the entities' labels."""
    rng = random.Random(seed)
    mems = [f"m_{i:02d}" for i in range(30)]
    ents = {f"e_{i:02d}": rng.choice(LABELS) for i in range(10)}
    edges = [EdgeRecord(a, EDGE_NEXT, b, "u1", rng.choice((1.0, 0.5))) for a, b in zip(mems, mems[1:]) if rng.random() < .8]
    edges += [EdgeRecord(rng.choice(mems), EDGE_NEXT, rng.choice(mems), "u1", 0.25) for _ in range(4)]  # cycles, loops
    edges.append(EdgeRecord("m_05", EDGE_NEXT, "m_05", "u1", 0.75))
    hub = "e_00"
    edges += [EdgeRecord(m, EDGE_MENTIONS, hub, "u1", 1.0) for m in mems[::2]]
    for m in mems:
        for e in rng.sample(sorted(ents)[1:], rng.randint(0, 3)):
            edges.append(EdgeRecord(m, EDGE_MENTIONS, e, "u1", 1.0))
    for _ in range(6):
        a, b = rng.sample(sorted(ents), 2)
        for pred in rng.sample(("knows", "employs", "likes"), rng.randint(1, 2)):
            edges.append(EdgeRecord(a, EDGE_RELATED, b, "u1", rng.choice((1.0, 2.0)), predicate=pred))
    store.write(WriteBatch(
        memories=[make_memory(m, at=100.0 + i) for i, m in enumerate(mems)] + [make_memory("m_x", user="u2")],
        entities=[make_entity(e, label=lab) for e, lab in ents.items()] + [make_entity("e_x", user="u2")],
        edges=edges + [EdgeRecord("m_x", EDGE_MENTIONS, "e_x", "u2", 1.0), EdgeRecord("m_00", EDGE_NEXT, "m_x", "u2", 1.0)],
    ))
    return ents


def _near_graph(store: SQLiteStore, labels: dict[str, str]) -> NearGraph:
    degrees = entity_degrees(store, sorted(labels))
    edges = store.list_edges("u1", list(WALK_TYPES))
    return NearGraph.from_rows(((e, degrees[e], labels[e]) for e in labels),
                               ((x.src, x.type, x.dst, x.weight, x.predicate) for x in edges))


def _reachable(store: SQLiteStore, ask: NeighbourhoodAsk) -> set[str]:
    """The nodes a walk within ``ask.reach`` steps can expand, read with ``expand`` level by level."""
    level = list(dict.fromkeys(ask.sources))
    seen = set(level)
    for _ in range(ask.reach):
        nxt = []
        for r in store.expand("u1", level, ask.edge_types, max_degree=ask.max_degree):
            onward = not r.label or ask.labels is None or r.label in ask.labels
            if onward and r.target not in seen:
                seen.add(r.target)
                nxt.append(r.target)
        level = nxt
    return seen


@pytest.mark.parametrize("seed", range(6))
def test_neighbourhoods_are_the_embedded_stores_expand_rows(tmp_path: Path, seed: int) -> None:
    store = SQLiteStore(tmp_path / "db")
    try:
        labels = _random_graph(store, seed)
        graph = _near_graph(store, labels)
        rng = random.Random(seed)
        every = list(WALK_TYPES)
        for _ in range(25):
            types = rng.choice([every, [EDGE_MENTIONS], [EDGE_NEXT], [EDGE_MENTIONS, EDGE_RELATED],
                                [EDGE_MENTIONS, EDGE_NEXT], []])
            sources = rng.sample([f"m_{i:02d}" for i in range(30)] + sorted(labels) + ["m_missing"], rng.randint(1, 5))
            ask = NeighbourhoodAsk(sources, types, rng.randint(0, 3), rng.choice((None, 3, 6, 1, 0)),
                                   rng.choice((None, ("PERSON", "ORG"), ())))
            got = graph.neighbourhood(ask)
            assert set(got) == _reachable(store, ask) | set(sources), ask
            for node, rows in got.items():
                want = sorted(store.expand("u1", [node], types, max_degree=ask.max_degree), key=row_order)
                assert rows == want, (ask, node)
    finally:
        store.close()


class _NearGraphView(GenericView):
    """A store whose walks read their neighbourhood from a near graph (as a Neo4j store with its graph)."""

    def __init__(self, store: SQLiteStore, graph: NearGraph) -> None:
        super().__init__(store)  # type: ignore[arg-type]
        self.graph = graph

    def neighbourhood(self, user_id: str, sources: list[str], edge_types: list[str], *, reach: int,
                      max_degree: int | None = None, labels: tuple[str, ...] | None = None) -> dict:
        return self.graph.neighbourhood(NeighbourhoodAsk(sources, edge_types, reach, max_degree, labels))


class _OrderedRows(GenericView):
    """The embedded store's ``expand`` with each node's rows in :func:`row_order` (as a Neo4j store gives them)."""

    def expand(self, user_id: str, frontier: list[str], edge_types: list[str], *, max_degree: int | None = None) -> list:
        rows = self._store.expand(user_id, frontier, edge_types, max_degree=max_degree)
        return [r for n in dict.fromkeys(frontier) for r in sorted((r for r in rows if r.source == n), key=row_order)]


def test_spreading_over_the_near_graph_is_the_generic_spreading(tmp_path: Path) -> None:
    """The entity and session channels' walks (spreading activation, sums and best paths) over a near graph
    give what ``expand`` hop by hop gives, to the bit, when both give a node's rows in one order (a
    Neo4j store's server reads and its near graph both use :func:`row_order`)."""
    from graphstore.protocol import SupportsNeighbourhood

    store = SQLiteStore(tmp_path / "db")
    try:
        labels = _random_graph(store, 11)
        view = _NearGraphView(store, _near_graph(store, labels))
        assert isinstance(view, SupportsNeighbourhood)
        for seeds, types, hops, cap in [({"m_03": 1.0, "m_10": .7}, (EDGE_MENTIONS,), 2, 6),
                                        ({"m_05": 1.0}, (EDGE_NEXT,), 3, None),
                                        ({"m_01": 1.0, "e_03": .5}, (EDGE_MENTIONS, EDGE_RELATED), 3, 8)]:
            def walk() -> ExpandWalk:
                flow = spread_steps(seeds, _edge, max_hops=hops, decay=0.5, damping=1.0, threshold=1e-4,
                                    frontier_cap=400, aggregate="sum")
                return ExpandWalk("u1", types, _spread_walk(flow, None), hops, cap, None)

            fast, slow = walk().call(view), walk().call(_OrderedRows(store))  # type: ignore[arg-type]
            assert fast.activation and fast.activation == slow.activation and fast.parent == slow.parent
    finally:
        store.close()


def test_a_near_graph_knows_what_it_holds_and_its_size() -> None:
    graph = NearGraph.from_rows([("e_a", 2, "PERSON")], [("m_1", EDGE_MENTIONS, "e_a", 1.0, None),
                                                          ("m_2", EDGE_MENTIONS, "e_a", 1.0, None),
                                                          ("m_1", "SUPERSEDES", "m_2", 1.0, None)])
    assert graph.edges == 2 and graph.nbytes > 0
    assert graph.neighbourhood(NeighbourhoodAsk(["e_a"], [EDGE_MENTIONS], 0)) == {
        "e_a": sorted(graph.neighbourhood(NeighbourhoodAsk(["e_a"], [EDGE_MENTIONS], 0))["e_a"], key=row_order)}
    assert [r.target for r in graph.neighbourhood(NeighbourhoodAsk(["e_a"], [EDGE_MENTIONS], 0))["e_a"]] == ["m_1", "m_2"]
    assert graph.neighbourhood(NeighbourhoodAsk(["e_a"], [EDGE_MENTIONS], 0, max_degree=1)) == {"e_a": []}
    assert graph.neighbourhood(NeighbourhoodAsk([], [EDGE_MENTIONS], 2)) == {}
