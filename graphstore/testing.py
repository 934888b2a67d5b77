"""One conformance suite for every store backend, and the adapters that run it on async stores.

Subclass :class:`GraphStoreConformance` in a test module and override the
``store`` fixture to yield an empty store of your backend (and ``reopen`` to
open the same data again, for durability); every test then runs against it.
A backend is done when this suite passes.  Vectors are small deterministic
arrays, so the suite needs no model.  :class:`graphstore.memory.InMemoryStore`
is the reference that passes it with the least code: read it to see what a
test expects.

The suite is written once, synchronously.  An async store
(:class:`~graphstore.AsyncGraphStore`) runs it behind :class:`BlockingStore`;
a sync store becomes an async one with :class:`ThreadedAsyncStore`, and the
two compose, so ``BlockingStore(ThreadedAsyncStore(store))`` proves that the
async protocol carries every call of the sync one unchanged.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator, Callable, Iterator

import numpy as np
import pytest

from .jsonl import from_json, to_json
from .protocol import ACTIVE, INVALIDATED, AsyncGraphStore, GraphStore
from .protocol import (SUPERSEDED, SupportsBatchMemorySearch, SupportsLexicalRoute, SupportsMaintenance,
                       SupportsNeighbourhood, SupportsNeighbourhoods)
from .threaded import ThreadedAsyncStore
from .records import (
    EDGE_CONFLICTS,
    EDGE_MENTIONS,
    EDGE_NEXT,
    EDGE_RELATED,
    EDGE_RETRACTS,
    EDGE_SUPERSEDES,
    DocumentRecord,
    EdgeRecord,
    EntityRecord,
    StoredMemory,
    Neighbor,
    NeighbourhoodAsk,
    UserState,
    WriteBatch,
    usable_terms,
)
from .requests import ExpandWalk, ExpandWalks, LexicalRoute, Walk

__all__ = ["GraphStoreConformance", "BlockingStore", "GenericView", "ThreadedAsyncStore", "unit_vector", "make_memory",
           "make_entity", "entity_degrees", "user_entities", "DIM"]

DIM = 8


def unit_vector(*values: float) -> np.ndarray:
    """A normalised ``DIM``-dimensional float32 vector from its first coordinates."""
    v = np.zeros(DIM, dtype=np.float32)
    v[: len(values)] = values
    return v / np.linalg.norm(v)


def make_memory(mid: str, user: str = "u1", text: str | None = None, *, at: float = 1_000.0,
                session: str | None = "s1", vec: np.ndarray | None = None, terms: tuple[str, ...] | None = None,
                status: str = ACTIVE, metadata: dict[str, Any] | None = None) -> StoredMemory:
    text = text if text is not None else f"memory {mid}"
    return StoredMemory(
        id=mid, user_id=user, text=text, at=at, created_at=at + 1, session_id=session,
        metadata_json=json.dumps(metadata or {"n": mid}, ensure_ascii=False), status=status,
        terms=terms if terms is not None else tuple(text.lower().split()),
        embedding=(vec if vec is not None else unit_vector(1.0)).astype(np.float32).tobytes(),
        token_vectors=np.ones((2, DIM), dtype=np.int8).tobytes(),
    )


def make_entity(eid: str, user: str = "u1", key: str | None = None, label: str = "PERSON",
                aliases: tuple[str, ...] = (), vec: np.ndarray | None = None) -> EntityRecord:
    key = key or eid.removeprefix("e_")
    return EntityRecord(id=eid, user_id=user, name=key.title(), key=key, label=label, aliases=aliases,
                        embedding=None if vec is None else vec.astype(np.float32).tobytes())


def mention(mid: str, eid: str, user: str = "u1") -> EdgeRecord:
    return EdgeRecord(mid, EDGE_MENTIONS, eid, user, 1.0)


def entity_degrees(store: GraphStore, entity_ids: list[str]) -> dict[str, int]:
    """Each entity's stored degree as recall reads it: the ``degree`` of the expansion rows that step
    into it from the memories that mention it (0 for an entity no memory mentions)."""
    wanted = set(entity_ids)
    out = {e: 0 for e in entity_ids}
    for user in store.users():
        mentioning = sorted({n.target for n in store.expand(user, entity_ids, [EDGE_MENTIONS]) if n.source in wanted})
        for n in store.expand(user, mentioning, [EDGE_MENTIONS]) if mentioning else ():
            if n.target in wanted:
                out[n.target] = n.degree
    return out


def user_entities(store: GraphStore, user_id: str) -> list[EntityRecord]:
    """A user's entities, from the export."""
    return [r for r in store.export(user_id) if isinstance(r, EntityRecord)]


def _public_attribute(adapter: Any, name: str) -> Any:
    """The wrapped store's attribute ``name``; private names are not forwarded (nor looked up
    before ``_store`` is set, which would recurse)."""
    if name.startswith("_"):
        raise AttributeError(name)
    return getattr(adapter._store, name)


class BlockingStore:
    """An async store behind the sync :class:`~graphstore.GraphStore` protocol.

    Every call runs to completion on a private event loop, and ``export``'s
    async iterator is collected into a list, so the whole conformance suite
    proves an async twin: ``BlockingStore(AsyncNeo4jStore(...))``.  For tests
    only, and never inside a running event loop.  :meth:`close` awaits the
    store's ``aclose`` and closes the loop.
    """

    def __init__(self, store: AsyncGraphStore) -> None:
        self._store = store
        self._loop = asyncio.new_event_loop()
        self.uri = store.uri

    def __getattr__(self, name: str) -> Any:
        method = _public_attribute(self, name)
        if not callable(method):
            return method
        if name == "export":
            async def collect(*args: Any) -> list[Any]:
                return [r async for r in method(*args)]

            return lambda *args: self._loop.run_until_complete(collect(*args))
        return lambda *args, **kwargs: self._loop.run_until_complete(method(*args, **kwargs))

    def close(self) -> None:
        if not self._loop.is_closed():
            self._loop.run_until_complete(self._store.aclose())
            self._loop.run_until_complete(self._loop.shutdown_default_executor())
            self._loop.close()


class GenericView:
    """A store without its optional fast paths: the methods of the read-combining capabilities
    (:class:`~graphstore.SupportsLexicalRoute`, :class:`~graphstore.SupportsNeighbourhood(s)`) are hidden,
    so the requests take their generic route through the same store.  The reference a fast path is
    held to (conformance tests, the benchmarks' with/without comparisons)."""

    HIDDEN = frozenset({"lexical_route", "neighbourhood", "neighbourhoods", "walks_locally"})

    def __init__(self, store: GraphStore) -> None:
        self._store = store
        self.uri = store.uri

    def __repr__(self) -> str:
        return f"GenericView({self._store!r})"

    def __getattr__(self, name: str) -> Any:
        if name in self.HIDDEN:
            raise AttributeError(name)
        return _public_attribute(self, name)


def _hop_rows(frontier: list[str], labels: tuple[str, ...] | None, max_hops: int) -> Walk[list[list[Neighbor]]]:
    """A walk of ``max_hops`` that keeps every hop's rows and goes on to every new node (entities only
    of ``labels``)."""
    seen = set(frontier)
    hops: list[list[Neighbor]] = []
    while frontier and len(hops) < max_hops:
        rows = yield frontier
        hops.append(rows)
        frontier = []
        for r in rows:
            if r.target not in seen and (not r.label or labels is None or r.label in labels):
                seen.add(r.target)
                frontier.append(r.target)
    return hops


class GraphStoreConformance:
    """The contract of :class:`graphstore.GraphStore`, as tests.

    Override ``store`` (an empty store; clean up after the test) and
    optionally ``reopen`` (a callable that opens the same data again).
    """

    @pytest.fixture
    def store(self) -> Iterator[GraphStore]:  # pragma: no cover - overridden
        raise NotImplementedError

    @pytest.fixture
    def reopen(self, store: GraphStore) -> Callable[[], GraphStore]:  # pragma: no cover - overridden
        raise NotImplementedError

    # -- a small graph: two memories of u1 share entity "dana"; u2 has one memory
    def _seed_graph(self, store: GraphStore) -> None:
        batch = WriteBatch(
            memories=[
                make_memory("m_1", text="Dana runs procurement", at=100.0, vec=unit_vector(1, 0), terms=("dana", "run", "procurement")),
                make_memory("m_2", text="Dana signs invoices", at=200.0, vec=unit_vector(0, 1), terms=("dana", "sign", "invoice", "invoice")),
                make_memory("m_3", text="张伟在北京工作", at=300.0, vec=unit_vector(1, 1), terms=("张伟", "北京", "工作")),
                make_memory("m_9", user="u2", text="Dana is u2's cat", at=100.0, vec=unit_vector(1, 0), terms=("dana", "cat")),
            ],
            entities=[
                make_entity("e_dana", key="dana", aliases=("dana whitfield",), vec=unit_vector(1, 0)),
                make_entity("e_nw", key="northwind", label="ORG", vec=unit_vector(0, 1)),
                make_entity("e_zw", key="张伟", vec=unit_vector(0, 0, 1)),
                make_entity("e_u2dana", user="u2", key="dana", vec=unit_vector(1, 0)),
            ],
            edges=[
                mention("m_1", "e_dana"), mention("m_2", "e_dana"), mention("m_1", "e_nw"), mention("m_3", "e_zw"),
                EdgeRecord("m_1", EDGE_NEXT, "m_2", "u1", 1.0),
                EdgeRecord("e_dana", EDGE_RELATED, "e_nw", "u1", 1.0, predicate="work_at", evidence="m_1"),
                mention("m_9", "e_u2dana", "u2"),
            ],
        )
        store.write(batch)

    # -- writes and reads ---------------------------------------------------------------------
    def test_empty_store(self, store: GraphStore) -> None:
        """A fresh store has no users and zero counts (fixtures must not leak state)."""
        assert store.users() == []
        stats = store.stats()
        assert stats["memories"] == 0 and stats["entities"] == 0
        assert store.stats("nobody")["users"] == 0

    def test_memory_round_trip(self, store: GraphStore) -> None:
        """Every field, CJK text and nested metadata come back exactly."""
        meta = {"source": "chat", "nested": {"a": [1, 2.5, None, True]}, "中文": "值"}
        rec = make_memory("m_rt", text="我叫张伟，我在北京工作。", metadata=meta, terms=("张伟", "北京", "工作"))
        store.write(WriteBatch(memories=[rec]))
        got = store.get_memories(["m_rt"], with_vectors=True)[0]
        assert got.text == rec.text and got.at == rec.at and got.created_at == rec.created_at
        assert json.loads(got.metadata_json) == meta
        assert got.terms == rec.terms and got.session_id == "s1" and got.status == ACTIVE
        assert got.embedding == rec.embedding and got.token_vectors == rec.token_vectors

    def test_lifecycle_fields_round_trip(self, store: GraphStore) -> None:
        """Confidence, mentions, last_seen, valid_to and pinned are stored and read back; a rewrite of the
        record (how the engine supersedes or reinforces a memory) changes them and the status together."""
        from dataclasses import replace

        rec = replace(make_memory("m_lc", terms=("budget", "50000")), confidence=0.45, mentions=2, last_seen=1500.0,
                      pinned=True)
        store.write(WriteBatch(memories=[rec]))
        got = store.get_memories(["m_lc"])[0]
        assert (got.confidence, got.mentions, got.last_seen, got.valid_to, got.pinned) == (0.45, 2, 1500.0, None, True)
        old = store.get_memories(["m_lc"], with_vectors=True)[0]
        store.write(WriteBatch(memories=[replace(old, status=SUPERSEDED, valid_to=2000.0)]))
        got = store.get_memories(["m_lc"], with_vectors=True)[0]
        assert got.status == SUPERSEDED and got.valid_to == 2000.0 and got.embedding == rec.embedding
        assert store.lexical_stats("u1", ["budget"])[2] == {}  # no longer indexed for recall
        assert store.nearest_memories("u1", unit_vector(1.0), 5) == []
        assert [h[0] for h in store.nearest_memories("u1", unit_vector(1.0), 5, statuses=(SUPERSEDED,))] == ["m_lc"]

    def test_a_rewrite_replaces_every_field(self, store: GraphStore) -> None:
        """An upsert stores the record whole: a memory written again without a vector is no longer
        found by vector search, even right after a search that found it."""
        from dataclasses import replace

        store.write(WriteBatch(memories=[make_memory("m_v", vec=unit_vector(1, 0))]))
        assert [h[0] for h in store.nearest_memories("u1", unit_vector(1, 0), 5)] == ["m_v"]
        store.write(WriteBatch(memories=[replace(make_memory("m_v", text="张伟"), embedding=None, token_vectors=None)]))
        assert store.nearest_memories("u1", unit_vector(1, 0), 5) == []
        (got,) = store.get_memories(["m_v"], with_vectors=True)
        assert (got.text, got.embedding, got.token_vectors) == ("张伟", None, None)
        assert store.token_vectors(["m_v"]) == {}

    def test_supersedes_and_retracts_edges(self, store: GraphStore) -> None:
        self._seed_graph(store)
        store.write(WriteBatch(
            memories=[make_memory("m_4", at=400.0), make_memory("m_5", at=500.0)],
            edges=[EdgeRecord("m_4", EDGE_SUPERSEDES, "m_1", "u1", 1.0, at=400.0),
                   EdgeRecord("m_5", EDGE_RETRACTS, "m_2", "u1", 1.0, at=500.0)],
        ))
        got = {(n.source, n.target, n.type) for n in store.expand("u1", ["m_1", "m_2"], [EDGE_SUPERSEDES, EDGE_RETRACTS])}
        assert got == {("m_1", "m_4", EDGE_SUPERSEDES), ("m_2", "m_5", EDGE_RETRACTS)}
        stats = store.stats("u1")
        assert stats["edges_supersedes"] == 1 and stats["edges_retracts"] == 1
        exported = {(r.src, r.type, r.dst) for r in store.export("u1") if isinstance(r, EdgeRecord)}
        assert {("m_4", EDGE_SUPERSEDES, "m_1"), ("m_5", EDGE_RETRACTS, "m_2")} <= exported
        assert store.delete_user("u1")["edges"] == 8

    def test_related_edges_by_predicate(self, store: GraphStore) -> None:
        """The stored values of a fact: RELATED edges of one predicate leaving a subject, with their evidence."""
        self._seed_graph(store)
        store.write(WriteBatch(
            entities=[make_entity("e_v1", key="50000", label="VALUE")],
            edges=[EdgeRecord("e_dana", EDGE_RELATED, "e_v1", "u1", 1.0, predicate="budget", evidence="m_2", at=200.0)],
        ))
        got = store.related_edges("u1", ["e_dana", "e_missing"], ["budget", "work_at"])
        assert [(e.src, e.dst, e.predicate, e.evidence) for e in got] == [
            ("e_dana", "e_v1", "budget", "m_2"), ("e_dana", "e_nw", "work_at", "m_1")]
        assert got[0].at == 200.0 and got[0].type == EDGE_RELATED
        assert store.related_edges("u1", ["e_dana"], ["role"]) == []
        assert store.related_edges("u2", ["e_dana"], ["budget"]) == []  # never another user's edges
        assert store.related_edges("u1", [], ["budget"]) == [] and store.related_edges("u1", ["e_dana"], []) == []

    def test_batch_memory_search_when_supported(self, store: GraphStore) -> None:
        self._seed_graph(store)
        if not isinstance(store, SupportsBatchMemorySearch):
            return  # optional capability: the engine falls back to nearest_memories
        vecs = np.vstack([unit_vector(1, 0), unit_vector(0, 1)])
        got = store.nearest_memories_batch("u1", vecs, 2)
        one_by_one = [store.nearest_memories("u1", v, 2) for v in vecs]
        # (the same hits; scores up to float rounding: a server store may answer one call itself and the
        # next from its near cache)
        assert [[i for i, _ in hits] for hits in got] == [[i for i, _ in hits] for hits in one_by_one]
        assert [[s for _, s in hits] for hits in got] == [pytest.approx([s for _, s in hits], abs=1e-6)
                                                          for hits in one_by_one]

    def test_has_memories(self, store: GraphStore) -> None:
        assert not store.has_memories("u1")
        self._seed_graph(store)
        assert store.has_memories("u1") and store.has_memories("u2") and not store.has_memories("u3")
        store.set_status(["m_9"], INVALIDATED)
        assert store.has_memories("u2")  # whatever the status

    def test_user_state(self, store: GraphStore) -> None:
        """``get_user_state`` is ``has_memories`` and ``has_multilingual`` in one call (a recall's first
        read), for English and Chinese user ids, whatever the memories' status."""
        from dataclasses import replace

        for user in ("u1", "用户甲"):
            assert store.get_user_state(user) == UserState(memories=False, multilingual=False)
        en = make_memory("m_en", user="u1", text="Dana signs invoices", vec=unit_vector(0, 1))
        zh = replace(make_memory("m_zh", user="用户甲", text="我对花生过敏", vec=unit_vector(1, 0), terms=("花生", "过敏")),
                     multilingual=unit_vector(0, 1).tobytes())
        store.write(WriteBatch(memories=[en, zh]))
        assert store.get_user_state("u1") == UserState(memories=True, multilingual=False)
        assert store.get_user_state("用户甲") == UserState(memories=True, multilingual=True)
        assert store.get_user_state("u2") == UserState(memories=False, multilingual=False)
        for user in ("u1", "用户甲", "u2"):  # the same answers as the two requests it folds together
            assert store.get_user_state(user) == UserState(store.has_memories(user), store.has_multilingual(user))
        store.set_status(["m_zh"], INVALIDATED)
        assert store.get_user_state("用户甲") == UserState(memories=True, multilingual=True)
        # a search right after it still sees the store as it is (a store may check a cache with it)
        assert [h[0] for h in store.nearest_memories("用户甲", unit_vector(1, 0), 2, statuses=(INVALIDATED,))] == ["m_zh"]
        store.delete_memories(["m_zh"])
        assert store.get_user_state("用户甲") == UserState(memories=False, multilingual=False)
        assert store.nearest_memories("用户甲", unit_vector(1, 0), 2) == []

    def test_missing_ids_are_skipped(self, store: GraphStore) -> None:
        self._seed_graph(store)
        assert [m.id for m in store.get_memories(["m_2", "nope", "m_1"])] == ["m_2", "m_1"]
        assert store.get_memories([]) == []

    def test_upsert_is_idempotent_and_related_weights_accumulate(self, store: GraphStore) -> None:
        self._seed_graph(store)
        before = store.stats("u1")
        store.write(WriteBatch(edges=[EdgeRecord("e_dana", EDGE_RELATED, "e_nw", "u1", 1.0, predicate="work_at")]))
        store.write(WriteBatch(memories=[make_memory("m_1", text="Dana runs procurement", at=100.0)]))
        after = store.stats("u1")
        assert before == {**after, **{k: v for k, v in before.items() if k == "bytes_on_disk"}}
        rel = [n for n in store.expand("u1", ["e_dana"], [EDGE_RELATED]) if n.target == "e_nw"]
        assert len(rel) == 1 and rel[0].weight == pytest.approx(2.0) and rel[0].predicate == "work_at"

    def test_repeated_edges_of_one_batch_apply_in_order(self, store: GraphStore) -> None:
        """One batch repeating an edge between existing nodes: RELATED weights add up, the last evidence
        and time given win (an edge row without them keeps the earlier ones), as separate writes would."""
        self._seed_graph(store)
        rows = [EdgeRecord("e_dana", EDGE_RELATED, "e_nw", "u1", w, predicate="co_mention", evidence=ev, at=at)
                for w, ev, at in ((0.5, "m_1", 10.0), (0.25, "m_2", None), (1.0, None, 30.0))]
        again = EdgeRecord("e_dana", EDGE_RELATED, "e_nw", "u1", 0.5, predicate="work_at")  # (seeded: 1.0, m_1)
        store.write(WriteBatch(edges=[*rows, again, again, mention("m_1", "e_zw"), mention("m_1", "e_zw")]))
        got = {(e.src, e.dst, e.predicate): e for e in store.list_edges("u1", [EDGE_RELATED, EDGE_MENTIONS])}
        co, work = got[("e_dana", "e_nw", "co_mention")], got[("e_dana", "e_nw", "work_at")]
        assert (co.weight, co.evidence, co.at) == (pytest.approx(1.75), "m_2", 30.0)
        assert (work.weight, work.evidence) == (pytest.approx(2.0), "m_1")
        assert got[("m_1", "e_zw", "")].weight == 1.0
        assert entity_degrees(store, ["e_zw"])["e_zw"] == 2

    def test_entities_by_key_and_alias(self, store: GraphStore) -> None:
        self._seed_graph(store)
        assert [e.id for e in store.get_entities("u1", ["dana whitfield"])] == ["e_dana"]
        assert [e.id for e in store.get_entities("u1", ["张伟", "northwind"])] == ["e_nw", "e_zw"]
        assert store.get_entities("u2", ["dana whitfield"]) == []
        store.write(WriteBatch(entities=[make_entity("e_dana", key="dana", aliases=("ms whitfield",))]))
        (dana,) = store.get_entities("u1", ["ms whitfield"])
        assert set(dana.aliases) >= {"dana whitfield", "ms whitfield"}

    def test_degrees(self, store: GraphStore) -> None:
        self._seed_graph(store)
        assert entity_degrees(store, ["e_dana", "e_nw", "e_u2dana"]) == {"e_dana": 2, "e_nw": 1, "e_u2dana": 1}
        ids = [e.id for e in user_entities(store, "u1")]
        assert entity_degrees(store, ids) == {"e_dana": 2, "e_nw": 1, "e_zw": 1}

    # -- expansion -------------------------------------------------------------------------------
    def test_expand_both_directions_one_call(self, store: GraphStore) -> None:
        self._seed_graph(store)
        out = store.expand("u1", ["m_1"], [EDGE_MENTIONS, EDGE_NEXT])
        got = {(n.source, n.target, n.type, n.degree, n.label) for n in out}
        assert got == {("m_1", "e_dana", EDGE_MENTIONS, 2, "PERSON"), ("m_1", "e_nw", EDGE_MENTIONS, 1, "ORG"),
                       ("m_1", "m_2", EDGE_NEXT, 1, "")}
        back = store.expand("u1", ["e_dana", "m_2"], [EDGE_MENTIONS, EDGE_NEXT])
        back_got = {(n.source, n.target, n.type) for n in back}
        assert back_got == {("e_dana", "m_1", EDGE_MENTIONS), ("e_dana", "m_2", EDGE_MENTIONS),
                       ("m_2", "e_dana", EDGE_MENTIONS), ("m_2", "m_1", EDGE_NEXT)}

    def test_expand_hub_cut_off(self, store: GraphStore) -> None:
        self._seed_graph(store)
        out = store.expand("u1", ["m_1", "e_dana"], [EDGE_MENTIONS], max_degree=1)
        assert {(n.source, n.target) for n in out} == {("m_1", "e_nw")}
        # a memory's degree is 1 (what Neighbor.degree says of it): a cap of 0 enters no memory either
        assert {n.target for n in store.expand("u1", ["m_1", "m_2"], [EDGE_NEXT], max_degree=1)} == {"m_1", "m_2"}
        assert store.expand("u1", ["m_1", "m_2"], [EDGE_NEXT], max_degree=0) == []

    def test_expand_hub_cut_off_over_related_edges_both_ways(self, store: GraphStore) -> None:
        self._seed_graph(store)  # e_dana (2 mentions) -RELATED-> e_nw (1 mention)
        both = (EDGE_MENTIONS, EDGE_RELATED)
        assert {(n.target, n.degree) for n in store.expand("u1", ["e_nw"], both) if n.type == EDGE_RELATED} == {("e_dana", 2)}
        assert [n for n in store.expand("u1", ["e_nw"], both, max_degree=1) if n.type == EDGE_RELATED] == []
        assert {n.target for n in store.expand("u1", ["e_nw"], both, max_degree=1)} == {"m_1"}
        assert {(n.target, n.degree) for n in store.expand("u1", ["e_dana"], both, max_degree=2) if n.type == EDGE_RELATED} == {("e_nw", 1)}

    def test_expand_never_crosses_users(self, store: GraphStore) -> None:
        self._seed_graph(store)
        assert store.expand("u2", ["m_1", "e_dana"], [EDGE_MENTIONS, EDGE_NEXT, EDGE_RELATED]) == []
        assert {n.target for n in store.expand("u2", ["e_u2dana"], [EDGE_MENTIONS])} == {"m_9"}
        assert store.expand("u1", [], [EDGE_MENTIONS]) == []

    def _seed_walks(self, store: GraphStore) -> None:
        """The small graph, a session chain m_1 - m_2 - m_4 - m_5 - m_6, a hub "我们" mentioned by four
        memories, a DATE, and RELATED edges both ways between two entities."""
        self._seed_graph(store)
        more = [make_memory(f"m_{i}", text=f"第{i}条 memory {i}", at=200.0 + i, vec=unit_vector(1, i)) for i in (4, 5, 6)]
        edges = [EdgeRecord("m_2", EDGE_NEXT, "m_4", "u1", 1.0), EdgeRecord("m_4", EDGE_NEXT, "m_5", "u1", 0.5),
                 EdgeRecord("m_5", EDGE_NEXT, "m_6", "u1", 1.0),
                 EdgeRecord("e_nw", EDGE_RELATED, "e_dana", "u1", 2.0, predicate="employs", evidence="m_2")]
        edges += [mention(m, "e_wm") for m in ("m_1", "m_3", "m_4", "m_5")]
        edges += [mention("m_4", "e_date"), mention("m_5", "e_zw"), mention("m_6", "e_dana")]
        store.write(WriteBatch(memories=more,
                               entities=[make_entity("e_wm", key="我们"), make_entity("e_date", key="monday", label="DATE")],
                               edges=edges))

    def test_lexical_route_is_stats_then_postings(self, store: GraphStore) -> None:
        """:class:`LexicalRoute` (one call where the store offers it) gives what ``lexical_stats``, the usable
        terms and ``postings`` give; a common term is left out by share or by count."""
        self._seed_graph(store)
        common = [make_memory(f"m_c{i}", text=f"常见 词{i}", terms=("常见", f"词{i}")) for i in range(6)]
        store.write(WriteBatch(memories=common + [make_memory("m_old", text="dana old", terms=("dana", "old"),
                                                              status=SUPERSEDED)]))
        n_docs, _avg, df = store.lexical_stats("u1", ["dana", "常见"])
        assert (n_docs, df) == (9, {"dana": 2, "常见": 6})
        cases = [(["dana", "invoice", "常见", "nothing", "dana"], 0.5, None, {"dana", "invoice"}),
                 (["张伟", "常见", "invoice"], 1.0, 1, {"张伟", "invoice"}),
                 (["常见", "dana"], 0.9, 1000, {"常见", "dana"}),
                 (["old"], 0.5, None, set()), ([], 0.5, None, set())]
        for terms, ratio, max_df, usable in cases:
            got = LexicalRoute("u1", terms, ratio, max_df).call(store)
            assert got == LexicalRoute("u1", terms, ratio, max_df).call(GenericView(store)), terms
            n, avg, df = store.lexical_stats("u1", terms)
            assert (got.n_docs, got.avg_len, got.df) == (n, avg, df)
            kept = usable_terms(terms, df, n, ratio, max_df)
            assert set(kept) == usable == {row[0] for row in got.postings}
            assert got.postings == (store.postings("u1", kept) if kept else [])
        assert LexicalRoute("u2", ["dana"], 0.5, None).call(store).postings == [("dana", "m_9", 1, 2)]
        assert LexicalRoute("nobody", ["dana"], 0.5, None).call(store) == LexicalRoute(
            "nobody", ["dana"], 0.5, None).call(GenericView(store))
        if isinstance(store, SupportsLexicalRoute):
            assert store.lexical_route("u1", ["dana"], max_df_ratio=0.5, max_df=None).df == {"dana": 2}

    def test_expand_walk_matches_expand_per_hop(self, store: GraphStore) -> None:
        """:class:`ExpandWalk` hands a walk, hop by hop, exactly the rows ``expand`` gives for its frontier,
        whether the store reads the neighbourhood at once or not (hub cut-off, labels, RELATED both ways)."""
        self._seed_walks(store)
        cases = [
            (("m_1",), (EDGE_NEXT,), 3, None, ()),
            (("m_2", "m_6"), (EDGE_NEXT,), 2, None, ()),
            (("m_1", "m_3"), (EDGE_MENTIONS,), 2, 3, ("PERSON", "ORG")),
            (("m_4",), (EDGE_MENTIONS,), 2, None, None),
            (("m_1",), (EDGE_MENTIONS, EDGE_RELATED), 3, 3, None),
            (("e_wm", "m_missing"), (EDGE_MENTIONS,), 2, 3, None),  # a hub seed is not left
            (("m_1", "m_5"), (EDGE_MENTIONS, EDGE_NEXT), 2, None, None),
        ]
        for seeds, types, hops, cap, labels in cases:
            want = ExpandWalk("u1", types, _hop_rows(list(seeds), labels, hops), hops, cap, labels).call(GenericView(store))
            got = ExpandWalk("u1", types, _hop_rows(list(seeds), labels, hops), hops, cap, labels).call(store)
            assert got == want, (seeds, types)
            assert want[0] == store.expand("u1", list(seeds), types, max_degree=cap)
        chain = ExpandWalk("u1", (EDGE_NEXT,), _hop_rows(["m_1"], None, 3), 3).call(store)
        assert [sorted(r.target for r in hop) for hop in chain] == [["m_2"], ["m_1", "m_4"], ["m_2", "m_5"]]
        assert ExpandWalk("u2", (EDGE_NEXT, EDGE_MENTIONS), _hop_rows(["m_1"], None, 2), 2).call(store) == [[]]

    def test_expand_walks_match_each_walk(self, store: GraphStore) -> None:
        """:class:`ExpandWalks` gives each walk the result it gets alone, whether the store reads the walks'
        neighbourhoods together or not (a walk with no sources, one over no known type, one of no
        hops, a user with nothing among them)."""
        self._seed_walks(store)
        cases = [
            (("m_1",), (EDGE_NEXT,), 3, None, ()),
            (("m_1", "m_3"), (EDGE_MENTIONS,), 2, 3, ("PERSON", "ORG")),
            ((), (EDGE_NEXT,), 2, None, None),
            (("m_1",), ("NOT_A_TYPE",), 2, None, None),
            (("m_1",), (EDGE_MENTIONS,), 0, None, None),
            (("e_wm", "m_missing"), (EDGE_MENTIONS, EDGE_RELATED), 3, 3, None),
        ]
        for user in ("u1", "u2"):
            alone = [ExpandWalk(user, types, _hop_rows(list(seeds), labels, hops), hops, cap, labels).call(store)
                     for seeds, types, hops, cap, labels in cases]
            for view in (store, GenericView(store)):
                walks = tuple(ExpandWalk(user, types, _hop_rows(list(seeds), labels, hops), hops, cap, labels)
                              for seeds, types, hops, cap, labels in cases)
                assert ExpandWalks(user, walks).call(view) == alone, (user, view)
        if isinstance(store, SupportsNeighbourhoods) and isinstance(store, SupportsNeighbourhood):
            asks = [NeighbourhoodAsk(["m_1", "e_wm"], [EDGE_MENTIONS, EDGE_NEXT], 1, 3),
                    NeighbourhoodAsk(["m_4"], [EDGE_MENTIONS], 1, None, ("PERSON",)),
                    NeighbourhoodAsk([], [EDGE_NEXT], 2), NeighbourhoodAsk(["m_1"], [], 2)]
            assert store.neighbourhoods("u1", asks) == [
                store.neighbourhood("u1", a.sources, a.edge_types, reach=a.reach, max_degree=a.max_degree,
                                    labels=a.labels) for a in asks]
            assert store.neighbourhoods("u1", []) == []

    def test_neighbourhood_rows_are_expand_rows(self, store: GraphStore) -> None:
        """A store's neighbourhood read gives each node exactly its ``expand`` rows, and holds every node
        a walk within reach can expand (the sources included, hubs with no rows)."""
        if not isinstance(store, SupportsNeighbourhood):
            return
        self._seed_walks(store)
        got = store.neighbourhood("u1", ["m_1", "e_wm"], [EDGE_MENTIONS, EDGE_NEXT], reach=1, max_degree=3)
        assert {"m_1", "e_wm", "m_2", "e_dana", "e_nw"} <= set(got) and got["e_wm"] == []
        for node, rows in got.items():
            assert rows == store.expand("u1", [node], [EDGE_MENTIONS, EDGE_NEXT], max_degree=3), node
        assert set(store.neighbourhood("u1", ["m_4"], [EDGE_MENTIONS], reach=1, labels=("PERSON",))) == {"m_4", "e_wm"}
        assert store.neighbourhood("u2", ["m_1"], [EDGE_NEXT], reach=2) == {"m_1": []}

    def test_walks_through_cycles_loops_and_both_ways(self, store: GraphStore) -> None:
        """The shapes a one-statement neighbourhood read can get wrong, walked through the fast path and the
        generic route (``expand`` per hop): a cycle (a node reached by two paths, a source reached again from
        another source), a self-loop (both halves of ``expand`` return it), nodes with edges of several types
        in both directions, a hub met halfway, labels that stop a walk.  Each walk gets the same rows both ways,
        a store's neighbourhood read holds every node a walk expands and gives each its ``expand`` rows, and
        the session walk from m_5 is the same on every backend."""
        self._seed_walks(store)
        store.write(WriteBatch(edges=[EdgeRecord("m_6", EDGE_NEXT, "m_6", "u1", 0.25),
                                      EdgeRecord("m_3", EDGE_NEXT, "m_1", "u1", 0.5),
                                      EdgeRecord("e_dana", EDGE_RELATED, "e_zw", "u1", 1.5, predicate="knows")]))
        every = (EDGE_MENTIONS, EDGE_NEXT, EDGE_RELATED)
        cases = [
            (("m_1", "m_2"), every, 3, 3, ("PERSON", "ORG")),
            (("m_5",), (EDGE_NEXT,), 3, None, ()),
            (("e_dana", "m_6"), (EDGE_MENTIONS, EDGE_RELATED), 3, None, None),
            (("m_3",), (EDGE_MENTIONS, EDGE_NEXT), 3, 3, None),
            (("e_wm",), every, 2, 3, None),
        ]
        for seeds, types, hops, cap, labels in cases:
            want = ExpandWalk("u1", types, _hop_rows(list(seeds), labels, hops), hops, cap, labels).call(GenericView(store))
            got = ExpandWalk("u1", types, _hop_rows(list(seeds), labels, hops), hops, cap, labels).call(store)
            assert got == want, (seeds, types)
            if isinstance(store, SupportsNeighbourhood):
                read = store.neighbourhood("u1", seeds, types, reach=hops - 1, max_degree=cap, labels=labels)
                walked = {r.source for hop in want for r in hop} | set(seeds)
                assert walked <= set(read), (seeds, walked - set(read))
                for node, rows in read.items():
                    assert rows == store.expand("u1", [node], types, max_degree=cap), (seeds, node)
        session = ExpandWalk("u1", (EDGE_NEXT,), _hop_rows(["m_5"], (), 3), 3).call(store)
        assert [sorted((r.source, r.target) for r in hop) for hop in session] == [
            [("m_5", "m_4"), ("m_5", "m_6")],
            [("m_4", "m_2"), ("m_4", "m_5"), ("m_6", "m_5"), ("m_6", "m_6"), ("m_6", "m_6")],
            [("m_2", "m_1"), ("m_2", "m_4")],
        ]
        assert store.expand("u1", ["e_wm"], every, max_degree=3) == []

    # -- search ------------------------------------------------------------------------------------
    def test_nearest_memories(self, store: GraphStore) -> None:
        self._seed_graph(store)
        hits = store.nearest_memories("u1", unit_vector(1, 0.1), 2)
        assert [h[0] for h in hits] == ["m_1", "m_3"]
        assert hits[0][1] == pytest.approx(float(unit_vector(1, 0.1) @ unit_vector(1, 0)), abs=1e-3)
        assert all(h[0] != "m_9" for h in store.nearest_memories("u1", unit_vector(1, 0), 10))
        store.set_status(["m_1"], INVALIDATED)
        assert "m_1" not in [h[0] for h in store.nearest_memories("u1", unit_vector(1, 0), 10)]
        assert "m_1" in [h[0] for h in store.nearest_memories("u1", unit_vector(1, 0), 10, statuses=(ACTIVE, INVALIDATED))]

    def test_multilingual_vectors_are_a_space_of_their_own(self, store: GraphStore) -> None:
        """Multilingual vectors (CJK memories only) are stored, read back, exported and searched apart
        from the sentence vectors: a search in one space never scores the other.  If this fails, check
        that the write stores ``multilingual`` and that ``nearest_multilingual`` reads only it."""
        from dataclasses import replace

        zh = replace(make_memory("m_zh", text="我对花生过敏", vec=unit_vector(1, 0), terms=("花生", "过敏")),
                     multilingual=unit_vector(0, 1).tobytes())
        en = make_memory("m_en", text="Dana signs invoices", vec=unit_vector(0, 1))
        other = replace(make_memory("m_u2", user="u2", text="我喜欢猫", vec=unit_vector(0, 1)),
                        multilingual=unit_vector(0, 1).tobytes())
        assert not store.has_multilingual("u1")
        store.write(WriteBatch(memories=[en]))
        assert not store.has_multilingual("u1") and store.nearest_multilingual("u1", unit_vector(0, 1), 5) == []
        store.write(WriteBatch(memories=[zh, other]))
        assert store.has_multilingual("u1") and store.has_multilingual("u2") and not store.has_multilingual("nobody")
        (hit,) = store.nearest_multilingual("u1", unit_vector(0, 1), 5)
        assert hit[0] == "m_zh" and hit[1] == pytest.approx(1.0, abs=1e-4)  # its multilingual vector, not its embedding
        assert store.nearest_memories("u1", unit_vector(0, 1), 1)[0][0] == "m_en"  # the sentence space is untouched
        (got,) = store.get_memories(["m_zh"], with_vectors=True)
        assert got.multilingual == zh.multilingual and got.embedding == zh.embedding
        assert store.get_memories(["m_zh"])[0].multilingual is None  # (vectors only when asked for)
        exported = {r.id: r for r in store.export("u1") if isinstance(r, StoredMemory)}
        assert exported["m_zh"].multilingual == zh.multilingual and exported["m_en"].multilingual is None
        assert from_json(to_json(exported["m_zh"])) == exported["m_zh"]
        store.set_status(["m_zh"], SUPERSEDED)
        assert store.nearest_multilingual("u1", unit_vector(0, 1), 5) == []
        assert [h[0] for h in store.nearest_multilingual("u1", unit_vector(0, 1), 5, statuses=(SUPERSEDED,))] == ["m_zh"]
        store.set_status(["m_zh"], ACTIVE)
        # rewritten in English (an update): no multilingual vector any more, even right after a search found it
        store.write(WriteBatch(memories=[replace(zh, text="I am allergic to peanuts", multilingual=None)]))
        assert store.nearest_multilingual("u1", unit_vector(0, 1), 5) == [] and not store.has_multilingual("u1")
        store.write(WriteBatch(memories=[zh]))
        assert [h[0] for h in store.nearest_multilingual("u1", unit_vector(0, 1), 5)] == ["m_zh"]
        store.delete_memories(["m_zh"])
        assert store.nearest_multilingual("u1", unit_vector(0, 1), 5) == [] and not store.has_multilingual("u1")
        assert [h[0] for h in store.nearest_multilingual("u2", unit_vector(0, 1), 5)] == ["m_u2"]

    def test_nearest_entities(self, store: GraphStore) -> None:
        self._seed_graph(store)
        assert store.nearest_entities("u1", unit_vector(0, 1), 1)[0][0] == "e_nw"
        assert store.nearest_entities("nobody", unit_vector(0, 1), 1) == []

    def test_lexical_postings_follow_status(self, store: GraphStore) -> None:
        self._seed_graph(store)
        n, avg, df = store.lexical_stats("u1", ["dana", "invoice", "北京", "zzz"])
        assert n == 3 and avg == pytest.approx(10 / 3) and df == {"dana": 2, "invoice": 1, "北京": 1}
        rows = sorted(store.postings("u1", ["dana", "invoice"]))
        assert rows == [("dana", "m_1", 1, 3), ("dana", "m_2", 1, 4), ("invoice", "m_2", 2, 4)]
        store.set_status(["m_2"], INVALIDATED)
        n, _, df = store.lexical_stats("u1", ["dana", "invoice"])
        assert n == 2 and df == {"dana": 1}
        assert store.postings("u1", ["invoice"]) == []
        store.set_status(["m_2"], ACTIVE)
        assert store.lexical_stats("u1", ["invoice"])[2] == {"invoice": 1}

    def test_rewrites_keep_postings_and_vectors_exact(self, store: GraphStore) -> None:
        """A memory written again (a lifecycle rewrite) is indexed as its new record says, whether its
        terms, status or vector changed or not (stores may skip the work of what did not change)."""
        from dataclasses import replace

        a = make_memory("m_a", text="茶 tea 北京", vec=unit_vector(1, 0))
        store.write(WriteBatch(memories=[a, make_memory("m_b", text="tea", vec=unit_vector(0, 1))]))
        before = (store.lexical_stats("u1", ["tea", "北京"]), sorted(store.postings("u1", ["tea", "北京"])))
        store.write(WriteBatch(memories=[replace(a, confidence=0.5, metadata_json='{"n": "重写"}')]))
        assert (store.lexical_stats("u1", ["tea", "北京"]), sorted(store.postings("u1", ["tea", "北京"]))) == before
        assert [h[0] for h in store.nearest_memories("u1", unit_vector(1, 0), 1)] == ["m_a"]
        (got,) = store.get_memories(["m_a"], with_vectors=True)
        assert (got.confidence, got.metadata_json, got.embedding) == (0.5, '{"n": "重写"}', a.embedding)
        store.write(WriteBatch(memories=[replace(a, status=SUPERSEDED)]))
        n, _, df = store.lexical_stats("u1", ["tea", "北京"])
        assert (n, df) == (1, {"tea": 1}) and store.postings("u1", ["北京"]) == []
        store.write(WriteBatch(memories=[replace(a, terms=("coffee", "咖啡"))]))  # active again, other terms
        n, _, df = store.lexical_stats("u1", ["tea", "北京", "coffee", "咖啡"])
        assert (n, df) == (2, {"tea": 1, "coffee": 1, "咖啡": 1})
        assert sorted(store.postings("u1", ["coffee", "tea"])) == [("coffee", "m_a", 1, 2), ("tea", "m_b", 1, 1)]
        moved = unit_vector(0.6, 0.8)
        store.write(WriteBatch(memories=[replace(a, terms=("coffee", "咖啡"), embedding=moved.tobytes())]))
        hits = store.nearest_memories("u1", moved, 2)
        assert hits[0][0] == "m_a" and hits[0][1] == pytest.approx(1.0, abs=1e-3)

    def test_lexical_totals_survive_upserts_and_duplicates(self, store: GraphStore) -> None:
        """A term-less memory counts once however often it is upserted; a repeated id counts once."""
        for _ in range(3):
            store.write(WriteBatch(memories=[make_memory("m_e", text="", terms=())]))
        store.write(WriteBatch(memories=[make_memory("m_d", terms=("tea",)), make_memory("m_d", terms=("tea",))]))
        n, avg, df = store.lexical_stats("u1", ["tea"])
        assert n == 2 and avg == pytest.approx(0.5) and df == {"tea": 1}
        store.set_status(["m_e"], INVALIDATED)
        assert store.lexical_stats("u1", ["tea"])[0] == 1

    def test_token_vectors(self, store: GraphStore) -> None:
        self._seed_graph(store)
        blobs = store.token_vectors(["m_1", "nope"])
        assert list(blobs) == ["m_1"] and len(blobs["m_1"]) == 2 * DIM

    # -- listing, sessions, touch --------------------------------------------------------------------
    def test_list_and_sessions(self, store: GraphStore) -> None:
        self._seed_graph(store)
        assert [m.id for m in store.list_memories("u1")] == ["m_1", "m_2", "m_3"]
        assert [m.id for m in store.list_memories("u1", limit=1, offset=1)] == ["m_2"]
        assert store.last_memory_in_session("u1", "s1") == "m_3"
        assert store.last_memory_in_session("u1", "nope") is None

    def test_session_tails(self, store: GraphStore) -> None:
        """Many sessions' tails in one request: the same answers as last_memory_in_session one by one
        (latest event time, then created_at, then id), sessions without memories left out."""
        self._seed_graph(store)
        store.write(WriteBatch(memories=[
            make_memory("m_a", at=50.0, session="会话-1"), make_memory("m_c", at=60.0, session="会话-1"),
            make_memory("m_b", at=60.0, session="会话-1"),  # same time as m_c: the larger id is the tail
            make_memory("m_x", at=10.0, session="evening", status=INVALIDATED),  # any status counts
            make_memory("m_y", user="u2", at=99.0, session="会话-1"),
        ]))
        sessions = ["s1", "会话-1", "nope", "evening", "s1"]
        tails = store.session_tails("u1", sessions)
        assert tails == {"s1": "m_3", "会话-1": "m_c", "evening": "m_x"}
        assert tails == {s: t for s in sessions if (t := store.last_memory_in_session("u1", s)) is not None}
        assert store.session_tails("u2", ["会话-1", "s1"]) == {"会话-1": "m_y", "s1": "m_9"}
        assert store.session_tails("u1", []) == {} and store.session_tails("nobody", ["s1"]) == {}
        assert store.users() == ["u1", "u2"]

    def test_touch_counts_access(self, store: GraphStore) -> None:
        self._seed_graph(store)
        store.touch(["m_1", "m_1", "m_2"], 5_000.0)
        got = {m.id: m for m in store.get_memories(["m_1", "m_2"])}
        assert got["m_1"].access_count == 2 and got["m_1"].last_access == 5_000.0
        assert got["m_2"].access_count == 1

    # -- deletion -------------------------------------------------------------------------------------
    def test_delete_memories(self, store: GraphStore) -> None:
        self._seed_graph(store)
        counts = store.delete_memories(["m_1", "nope"])
        assert counts["memories"] == 1 and counts["edges"] >= 3
        assert store.get_memories(["m_1"]) == []
        assert entity_degrees(store, ["e_dana"]) == {"e_dana": 1}
        assert store.lexical_stats("u1", ["procurement"])[2] == {}
        assert "m_1" not in [h[0] for h in store.nearest_memories("u1", unit_vector(1, 0), 10)]

    def test_delete_user_removes_everything_of_that_user_only(self, store: GraphStore) -> None:
        self._seed_graph(store)
        counts = store.delete_user("u1")
        assert counts["memories"] == 3 and counts["entities"] == 3 and counts["edges"] == 6
        assert store.stats("u1")["memories"] == 0 and user_entities(store, "u1") == []
        assert store.nearest_memories("u1", unit_vector(1, 0), 5) == []
        assert store.lexical_stats("u1", ["dana"]) == (0, 0.0, {})
        assert list(store.export("u1")) == []
        assert store.users() == ["u2"] and store.stats("u2")["memories"] == 1

    def test_replace_mentions(self, store: GraphStore) -> None:
        self._seed_graph(store)
        store.write(WriteBatch(edges=[mention("m_1", "e_zw")]), replace_mentions_of=["m_1"])
        assert {n.target for n in store.expand("u1", ["m_1"], [EDGE_MENTIONS])} == {"e_zw"}
        assert entity_degrees(store, ["e_dana", "e_zw"]) == {"e_dana": 1, "e_zw": 2}

    def test_degrees_follow_every_kind_of_change(self, store: GraphStore) -> None:
        """Degrees are kept up to date incrementally: after repeated, replaced and deleted mentions they
        still equal the number of MENTIONS edges into each entity."""
        import random

        rng = random.Random(7)
        ents = [f"e_{i}" for i in range(5)]
        store.write(WriteBatch(entities=[make_entity(e) for e in ents]))
        alive: list[str] = []
        for step in range(40):
            op = rng.random()
            if op < 0.5 or not alive:
                mids = [f"m_{step}_{j}" for j in range(rng.randint(1, 3))]
                edges = [mention(m, rng.choice(ents)) for m in mids for _ in range(rng.randint(1, 3))]
                store.write(WriteBatch(memories=[make_memory(m) for m in mids], edges=edges + edges[:1]))
                alive += mids
            elif op < 0.8:
                m = rng.choice(alive)
                store.write(WriteBatch(edges=[mention(m, rng.choice(ents))]), replace_mentions_of=[m])
            else:
                gone = rng.sample(alive, min(len(alive), 2))
                store.delete_memories(gone)
                alive = [m for m in alive if m not in gone]
            counted = {e: 0 for e in ents}
            for n in store.expand("u1", alive, [EDGE_MENTIONS]):
                counted[n.target] += 1
            assert entity_degrees(store, ents) == counted, f"step {step}"

    # -- maintenance (optional: SupportsMaintenance) ------------------------------------------------------
    def _derived_view(self, store: GraphStore) -> tuple[Any, ...]:
        """What recall reads of the derived indexes, for both users."""
        terms = ["dana", "run", "procurement", "sign", "invoice", "张伟", "北京", "工作", "cat", "new"]
        return tuple(
            (sorted(store.postings(u, terms)), store.lexical_stats(u, terms),
             [e.id for e in store.get_entities(u, ["dana", "dana whitfield", "northwind", "张伟", "dw"])],
             entity_degrees(store, ["e_dana", "e_nw", "e_zw", "e_u2dana"]))
            for u in ("u1", "u2")
        )

    def test_check_and_reindex_agree_with_the_write_path_when_supported(self, store: GraphStore) -> None:
        """After every kind of change the write path keeps derived indexes for (status changes, a
        rewrite with new terms, replaced mentions, a merged alias, deletions, a deleted user), check()
        finds nothing wrong, and reindex() rebuilds exactly what the writes kept (and finds it again)."""
        if not isinstance(store, SupportsMaintenance):
            return  # optional capability (the reference store keeps no derived index)
        self._seed_graph(store)
        store.set_status(["m_2"], SUPERSEDED)
        store.set_status(["m_2"], ACTIVE)
        store.set_status(["m_3"], INVALIDATED)
        store.write(WriteBatch(memories=[make_memory("m_1", text="Dana runs new procurement", at=100.0,
                                                     terms=("dana", "run", "new", "procurement"))],
                               entities=[make_entity("e_dana", key="dana", aliases=("dw",))],
                               edges=[mention("m_1", "e_zw")]), replace_mentions_of=["m_1"])
        store.write(WriteBatch(memories=[make_memory("m_tmp", user="u3", terms=("gone",))]))
        store.delete_user("u3")
        store.write(WriteBatch(memories=[make_memory("m_4", terms=("cat", "cat"))]))
        store.delete_memories(["m_4"])
        assert [f.line() for f in store.check() if f.level == "error"] == []
        before = self._derived_view(store)
        counts = store.reindex()
        assert counts["users"] == 2
        assert self._derived_view(store) == before
        assert [f.line() for f in store.check() if f.level == "error"] == []

    # -- export / durability ------------------------------------------------------------------------------
    def test_export_round_trips_through_jsonl(self, store: GraphStore) -> None:
        self._seed_graph(store)
        records = [from_json(json.loads(json.dumps(to_json(r)))) for r in store.export("u1")]
        kinds = [type(r).__name__ for r in records]
        assert kinds.count("StoredMemory") == 3 and kinds.count("EntityRecord") == 3 and kinds.count("EdgeRecord") == 6
        mem = next(r for r in records if getattr(r, "id", None) == "m_3")
        assert isinstance(mem, StoredMemory) and mem.text == "张伟在北京工作" and mem.embedding is not None
        store.delete_user("u1")
        store.write(WriteBatch(memories=[r for r in records if isinstance(r, StoredMemory)],
                               entities=[r for r in records if isinstance(r, EntityRecord)]))
        store.write(WriteBatch(edges=[r for r in records if isinstance(r, EdgeRecord)]))
        assert entity_degrees(store, ["e_dana"]) == {"e_dana": 2}
        assert [h[0] for h in store.nearest_memories("u1", unit_vector(1, 0.1), 1)] == ["m_1"]

    def test_durable_after_reopen(self, store: GraphStore, reopen: Callable[[], GraphStore]) -> None:
        self._seed_graph(store)
        store.close()
        again = reopen()
        try:
            assert [m.id for m in again.list_memories("u1")] == ["m_1", "m_2", "m_3"]
            assert entity_degrees(again, ["e_dana"]) == {"e_dana": 2}
            assert [h[0] for h in again.nearest_memories("u1", unit_vector(0, 1), 1)] == ["m_2"]
        finally:
            again.close()

    # -- documents (versioned JSON per user and key, compare-and-set) -----------------------------------
    def test_document_round_trip(self, store: GraphStore) -> None:
        """A document comes back byte for byte (CJK, nested JSON) with version 1 and its time."""
        value = json.dumps({"goal": "预算控制在五万以内", "plan": ["a", {"b": [1, 2.5, None]}]}, ensure_ascii=False)
        assert store.get_document("u1", "wm/task") is None
        assert store.put_document("u1", "wm/task", value, expected_version=0, at=10.0) == (True, 1)
        assert store.get_document("u1", "wm/task") == (1, value, 10.0)

    def test_document_compare_and_set(self, store: GraphStore) -> None:
        """A stale or create-only write is refused and changes nothing; a matching one bumps the version."""
        assert store.put_document("u1", "k", '{"v": 1}', expected_version=0, at=1.0) == (True, 1)
        assert store.put_document("u1", "k", '{"v": 9}', expected_version=0, at=2.0) == (False, 1)
        assert store.put_document("u1", "k", '{"v": 2}', expected_version=1, at=3.0) == (True, 2)
        assert store.put_document("u1", "k", '{"v": 9}', expected_version=1, at=4.0) == (False, 2)
        assert store.get_document("u1", "k") == (2, '{"v": 2}', 3.0)
        assert store.put_document("u1", "k", '{"v": 3}', expected_version=None, at=5.0) == (True, 3)
        assert store.put_document("u1", "k", None, expected_version=2, at=6.0) == (False, 3)
        assert store.put_document("u1", "k", None, expected_version=3, at=6.0) == (True, 0)
        assert store.get_document("u1", "k") is None
        assert store.put_document("u1", "gone", '{}', expected_version=4, at=7.0) == (False, 0)
        assert store.get_document("u1", "gone") is None  # a refused create leaves nothing behind

    def test_documents_are_per_user_and_go_with_the_user(self, store: GraphStore) -> None:
        self._seed_graph(store)
        store.put_document("u1", "k", '"mine"', expected_version=0, at=1.0)
        store.put_document("u2", "k", '"yours"', expected_version=0, at=1.0)
        assert store.get_document("u2", "k") == (1, '"yours"', 1.0)
        store.delete_user("u1")
        assert store.get_document("u1", "k") is None
        assert store.get_document("u2", "k") == (1, '"yours"', 1.0)

    def test_document_writers_lose_no_update(self, store: GraphStore, reopen: Callable[[], GraphStore]) -> None:
        """Read-modify-write with retry from several connections at once: every increment survives."""
        import threading

        store.put_document("u1", "counter", "0", expected_version=0, at=0.0)
        writers, rounds, refused = 4, 5, [0]
        lock = threading.Lock()

        def work() -> None:
            own = reopen()
            try:
                for _ in range(rounds):
                    while True:
                        version, value, _at = own.get_document("u1", "counter")  # type: ignore[misc]
                        ok, _now = own.put_document("u1", "counter", str(int(value) + 1), expected_version=version,
                                                    at=1.0)
                        if ok:
                            break
                        with lock:
                            refused[0] += 1
            finally:
                own.close()

        threads = [threading.Thread(target=work) for _ in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        version, value, _ = store.get_document("u1", "counter")  # type: ignore[misc]
        assert int(value) == writers * rounds and version == writers * rounds + 1

    def test_document_durable_after_reopen(self, store: GraphStore, reopen: Callable[[], GraphStore]) -> None:
        store.put_document("u1", "wm/a/t/state", '{"step": 3}', expected_version=0, at=5.0)
        store.close()
        again = reopen()
        try:
            assert again.get_document("u1", "wm/a/t/state") == (1, '{"step": 3}', 5.0)
        finally:
            again.close()

    def test_documents_list_a_users_documents_with_versions(self, store: GraphStore) -> None:
        """``documents`` returns every document of one user by key, versions included, nothing of another."""
        store.put_document("u1", "wm/b", '{"n": 1}', expected_version=0, at=1.0)
        store.put_document("u1", "wm/b", '{"n": 2}', expected_version=1, at=2.0)
        store.put_document("u1", "画像/张伟", '"喜欢绿茶"', expected_version=0, at=3.0)
        store.put_document("u2", "wm/b", '"other"', expected_version=0, at=4.0)
        store.put_document("u1", "gone", '1', expected_version=0, at=5.0)
        store.put_document("u1", "gone", None, expected_version=1, at=6.0)
        assert store.documents("u1") == [DocumentRecord("u1", "wm/b", 2, '{"n": 2}', 2.0),
                                         DocumentRecord("u1", "画像/张伟", 1, '"喜欢绿茶"', 3.0)]
        assert store.documents("nobody") == []

    def test_restored_documents_keep_their_versions(self, store: GraphStore) -> None:
        """What ``documents`` read, ``restore_documents`` writes back as it was: a compare-and-set against
        the copy then means what it meant against the original (a stale version is still refused)."""
        store.put_document("u1", "k", '{"v": 1}', expected_version=0, at=1.0)
        store.put_document("u1", "k", '{"v": 2}', expected_version=1, at=2.0)
        store.put_document("u1", "键", '"值"', expected_version=0, at=3.0)
        saved = store.documents("u1")
        store.delete_user("u1")
        assert store.documents("u1") == []
        store.restore_documents(saved)
        store.restore_documents([])
        assert store.documents("u1") == saved
        assert store.put_document("u1", "k", '{"v": 9}', expected_version=1, at=4.0) == (False, 2)
        assert store.put_document("u1", "k", '{"v": 3}', expected_version=2, at=4.0) == (True, 3)
        store.restore_documents([DocumentRecord("u1", "k", 7, '{"v": 7}', 5.0)])  # replaces, not compare-and-set
        assert store.get_document("u1", "k") == (7, '{"v": 7}', 5.0)

    # -- lifecycle questions (issue 16) ----------------------------------------------------------
    def test_memories_mentioning_latest_active_per_entity(self, store: GraphStore) -> None:
        """A new statement's candidates: the latest memories (of the statuses asked) mentioning each entity,
        newest first, never another user's; Chinese keys too."""
        self._seed_graph(store)
        store.write(WriteBatch(
            memories=[make_memory("m_4", text="Dana moved to Leeds", at=400.0),
                      make_memory("m_5", text="Dana was in Paris", at=50.0, status=SUPERSEDED),
                      make_memory("m_6", text="张伟去了上海", at=250.0)],
            edges=[mention("m_4", "e_dana"), mention("m_5", "e_dana"), mention("m_6", "e_zw")],
        ))
        got = store.memories_mentioning("u1", ["e_dana", "e_zw", "e_missing", "e_u2dana"], per_entity=2)
        assert got == [("e_dana", "m_4"), ("e_dana", "m_2"), ("e_zw", "m_3"), ("e_zw", "m_6")]
        assert store.memories_mentioning("u1", ["e_dana"], per_entity=9) == [
            ("e_dana", "m_4"), ("e_dana", "m_2"), ("e_dana", "m_1")]
        assert store.memories_mentioning("u1", ["e_dana"], statuses=(SUPERSEDED,)) == [("e_dana", "m_5")]
        assert store.memories_mentioning("u2", ["e_dana"]) == []  # never another user's edges
        assert store.memories_mentioning("u1", []) == [] and store.memories_mentioning("u1", ["e_dana"], per_entity=0) == []

    def test_conflicts_edges_listed_by_type(self, store: GraphStore) -> None:
        """CONFLICTS edges (open at weight 1, resolved at 0) round-trip, count, export and are listed by type."""
        self._seed_graph(store)
        store.write(WriteBatch(
            memories=[make_memory("m_4", at=400.0)],
            edges=[EdgeRecord("m_4", EDGE_CONFLICTS, "m_1", "u1", 1.0, at=400.0),
                   EdgeRecord("m_4", EDGE_SUPERSEDES, "m_2", "u1", 1.0, at=400.0)],
        ))
        (edge,) = store.list_edges("u1", [EDGE_CONFLICTS])
        assert (edge.src, edge.type, edge.dst, edge.weight, edge.at) == ("m_4", EDGE_CONFLICTS, "m_1", 1.0, 400.0)
        both = store.list_edges("u1", [EDGE_SUPERSEDES, EDGE_CONFLICTS])
        assert [(e.type, e.dst) for e in both] == [(EDGE_CONFLICTS, "m_1"), (EDGE_SUPERSEDES, "m_2")]
        assert store.list_edges("u2", [EDGE_CONFLICTS]) == [] and store.list_edges("u1", []) == []
        assert [e.src for e in store.list_edges("u1", [EDGE_NEXT])] == ["m_1"]
        store.write(WriteBatch(edges=[EdgeRecord("m_4", EDGE_CONFLICTS, "m_1", "u1", 0.0, at=400.0)]))
        assert [e.weight for e in store.list_edges("u1", [EDGE_CONFLICTS])] == [0.0]  # resolved: replaced, not summed
        assert store.stats("u1")["edges_conflicts"] == 1
        assert ("m_4", EDGE_CONFLICTS, "m_1") in {(r.src, r.type, r.dst) for r in store.export("u1")
                                                    if isinstance(r, EdgeRecord)}
        assert {(n.source, n.target) for n in store.expand("u1", ["m_1"], [EDGE_CONFLICTS])} == {("m_1", "m_4")}
        store.delete_memories(["m_4"])
        assert store.list_edges("u1", [EDGE_CONFLICTS]) == []

