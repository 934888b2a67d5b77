"""The in-memory reference store: the shared conformance suite (sync, and async through the
adapters of ``graphstore.testing``), answers identical to SQLite's on random sequences of writes
and reads, the checks only it makes, and ripple's engine running on it."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from graphstore import AsyncGraphStore, GraphStore, open_store
from graphstore.memory import GraphTables, InMemoryStore
from graphstore.protocol import ACTIVE, INVALIDATED, STATUSES, SUPERSEDED
from graphstore.records import (
    EDGE_MENTIONS,
    EDGE_NEXT,
    EDGE_RELATED,
    EDGE_RETRACTS,
    EDGE_SUPERSEDES,
    EDGE_TYPES,
    EdgeRecord,
    EntityRecord,
    StoredMemory,
    WriteBatch,
)
from graphstore.sqlite import SQLiteStore
from graphstore.testing import (
    BlockingStore,
    GraphStoreConformance,
    ThreadedAsyncStore,
    entity_degrees,
    make_entity,
    make_memory,
    user_entities,
)
from ripple.errors import StoreError


class TestInMemoryStore(GraphStoreConformance):
    @pytest.fixture
    def tables(self) -> GraphTables:
        return GraphTables()

    @pytest.fixture
    def store(self, tables: GraphTables) -> Iterator[GraphStore]:
        s = InMemoryStore(tables)
        yield s
        s.close()

    @pytest.fixture
    def reopen(self, tables: GraphTables) -> Callable[[], GraphStore]:
        return lambda: InMemoryStore(tables)


class TestAsyncInMemoryStore(TestInMemoryStore):
    """The suite through both adapters: every call crosses the async protocol and a worker thread."""

    @pytest.fixture
    def store(self, tables: GraphTables) -> Iterator[GraphStore]:
        s = BlockingStore(ThreadedAsyncStore(InMemoryStore(tables)))
        yield s  # type: ignore[misc]
        s.close()

    @pytest.fixture
    def reopen(self, tables: GraphTables) -> Callable[[], GraphStore]:
        return lambda: BlockingStore(ThreadedAsyncStore(InMemoryStore(tables)))  # type: ignore[return-value]


def test_open_store_memory_uri_gives_a_new_empty_graph() -> None:
    a, b = open_store("memory://"), open_store("memory://")
    assert isinstance(a, InMemoryStore) and isinstance(a, GraphStore) and a.uri == "memory://"
    a.write(WriteBatch(memories=[make_memory("m_1")]))
    assert a.users() == ["u1"] and b.users() == []
    assert isinstance(ThreadedAsyncStore(a), AsyncGraphStore)
    a.close()
    with pytest.raises(StoreError, match="closed"):
        a.users()


def test_an_edge_without_its_nodes_writes_nothing() -> None:
    """The reference checks a whole batch before changing anything: an edge must join stored
    (or batched) nodes of the kinds its type joins, and its type must be known."""
    store = InMemoryStore()
    store.write(WriteBatch(memories=[make_memory("m_1")], entities=[make_entity("e_a")]))
    bad = [
        EdgeRecord("m_1", EDGE_MENTIONS, "e_missing", "u1"),
        EdgeRecord("e_a", EDGE_MENTIONS, "m_1", "u1"),  # backwards: a memory mentions an entity
        EdgeRecord("m_1", EDGE_RELATED, "e_a", "u1", predicate="knows"),
        EdgeRecord("m_1", "LIKES", "e_a", "u1"),
    ]
    for edge in bad:
        with pytest.raises(StoreError):
            store.write(WriteBatch(memories=[make_memory("m_2", text="新的记忆")],
                                   edges=[EdgeRecord("m_2", EDGE_NEXT, "m_1", "u1"), edge]))
        assert store.get_memories(["m_2"]) == [] and store.stats("u1")["edges_next"] == 0
    store.write(WriteBatch(entities=[make_entity("e_b")], edges=[EdgeRecord("m_1", EDGE_MENTIONS, "e_b", "u1")]))
    assert entity_degrees(store, ["e_a", "e_b"]) == {"e_a": 0, "e_b": 1}


# -- differential: the reference and SQLite answer alike --------------------------------------------------
USERS = ("u1", "u2")
VOCAB = ("dana", "invoice", "tea", "北京", "张伟", "工作", "w1", "w2")
KEYS = ("dana", "dana whitfield", "northwind", "张伟", "北京")
PREDICATES = ("works_at", "budget")
DIM = 8
N_MEMORY_IDS, N_ENTITY_IDS = 8, 5


class StoresAgree(RuleBasedStateMachine):
    """Random writes go to both stores; after every step, every read gives the same answer.

    Vectors come from a counter-seeded generator (distinct, so nearest-neighbour order has no
    ties); ids come from small pools per user, so upserts, alias merges, repeated RELATED
    edges and re-created ids happen often.  Edges join existing nodes of the right kinds
    (the reference refuses anything else; SQLite would store it).
    """

    def __init__(self) -> None:
        super().__init__()
        self.ref = InMemoryStore()
        self.lite = SQLiteStore(":memory:")
        self.n_vectors = 0

    def teardown(self) -> None:
        self.ref.close()
        self.lite.close()

    def _vector(self) -> bytes:
        self.n_vectors += 1
        v = np.random.default_rng(self.n_vectors).standard_normal(DIM).astype(np.float32)
        return (v / np.linalg.norm(v)).tobytes()

    def _both(self, method: str, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        return getattr(self.ref, method)(*args, **kwargs), getattr(self.lite, method)(*args, **kwargs)

    def _ids(self, user: str) -> tuple[list[str], list[str]]:
        """The user's stored memory and entity ids (asked of the reference)."""
        exported = list(self.ref.export(user))
        return ([r.id for r in exported if isinstance(r, StoredMemory)],
                [r.id for r in exported if isinstance(r, EntityRecord)])

    # -- writes ----------------------------------------------------------------------------------------
    @rule(data=st.data(), user=st.sampled_from(USERS))
    def write(self, data: st.DataObject, user: str) -> None:
        draw = data.draw
        memories = [
            StoredMemory(
                id=f"m_{user}_{i}", user_id=user, text=f"memory {i}", at=float(draw(st.integers(0, 3))),
                created_at=float(draw(st.integers(0, 3))), session_id=draw(st.sampled_from(["s0", "s1", None])),
                status=draw(st.sampled_from([ACTIVE, ACTIVE, SUPERSEDED, INVALIDATED])),
                metadata_json=json.dumps({"i": i, "中": "文"}, ensure_ascii=False),
                terms=tuple(draw(st.lists(st.sampled_from(VOCAB), max_size=5))),
                embedding=self._vector() if draw(st.integers(0, 4)) else None,
                token_vectors=bytes([i, 1, 2]) if draw(st.booleans()) else None,
            )
            for i in draw(st.lists(st.integers(0, N_MEMORY_IDS - 1), max_size=4))
        ]
        entities = [
            EntityRecord(id=f"e_{user}_{i}", user_id=user, name=f"Name {i}", key=draw(st.sampled_from(KEYS)),
                         label=draw(st.sampled_from(["PERSON", "ORG"])),
                         aliases=tuple(draw(st.lists(st.sampled_from(KEYS), max_size=2))),
                         embedding=self._vector() if draw(st.booleans()) else None)
            for i in draw(st.lists(st.integers(0, N_ENTITY_IDS - 1), max_size=3))
        ]
        stored_mems, stored_ents = self._ids(user)
        mems = sorted(set(stored_mems) | {m.id for m in memories})
        ents = sorted(set(stored_ents) | {e.id for e in entities})
        edges: list[EdgeRecord] = []
        for typ in draw(st.lists(st.sampled_from(EDGE_TYPES), max_size=6)):
            ends = {EDGE_MENTIONS: (mems, ents), EDGE_RELATED: (ents, ents)}.get(typ, (mems, mems))
            if not ends[0] or not ends[1]:
                continue
            related = typ == EDGE_RELATED
            edges.append(EdgeRecord(
                draw(st.sampled_from(ends[0])), typ, draw(st.sampled_from(ends[1])), user,
                weight=draw(st.sampled_from([0.25, 0.5, 1.0])),
                predicate=draw(st.sampled_from(PREDICATES)) if related else "",
                evidence=draw(st.sampled_from([None, *stored_mems])) if related else None,
                at=draw(st.sampled_from([None, 5.0, 6.0])),
            ))
        replaced = draw(st.lists(st.sampled_from(stored_mems), max_size=2)) if stored_mems else []
        batch = WriteBatch(memories, entities, edges)
        self.ref.write(batch, replace_mentions_of=replaced)
        self.lite.write(batch, replace_mentions_of=replaced)

    @rule(data=st.data(), status=st.sampled_from(STATUSES))
    def set_status(self, data: st.DataObject, status: str) -> None:
        ids = data.draw(st.lists(st.sampled_from([f"m_{u}_{i}" for u in USERS for i in range(N_MEMORY_IDS)]), max_size=4))
        a, b = self._both("set_status", ids, status)
        assert a == b

    @rule(data=st.data())
    def touch(self, data: st.DataObject) -> None:
        ids = data.draw(st.lists(st.sampled_from([f"m_u1_{i}" for i in range(N_MEMORY_IDS)]), max_size=4))
        self._both("touch", ids, 7.0)

    @rule(data=st.data())
    def delete_memories(self, data: st.DataObject) -> None:
        ids = data.draw(st.lists(st.sampled_from([f"m_{u}_{i}" for u in USERS for i in range(N_MEMORY_IDS)]), max_size=3))
        a, b = self._both("delete_memories", ids)
        assert a == b

    @rule(user=st.sampled_from(USERS))
    def delete_user(self, user: str) -> None:
        a, b = self._both("delete_user", user)
        assert a == b

    # -- reads ---------------------------------------------------------------------------------------------
    @invariant()
    def every_read_agrees(self) -> None:
        assert self.ref.users() == self.lite.users()
        assert self.ref.stats() == self.lite.stats()
        rng = np.random.default_rng(self.n_vectors)
        all_mems = [f"m_{u}_{i}" for u in USERS for i in range(N_MEMORY_IDS)]
        all_ents = [f"e_{u}_{i}" for u in USERS for i in range(N_ENTITY_IDS)]
        for user in USERS:
            self._same(user, rng)
        for method, args in (("get_memories", (all_mems,)), ("token_vectors", (all_mems[::-1],)),
                             ("entity_names", (all_ents,))):
            a, b = self._both(method, *args)
            assert a == b, method
        assert entity_degrees(self.ref, all_ents) == entity_degrees(self.lite, all_ents)
        assert self.ref.get_memories(all_mems, with_vectors=True) == self.lite.get_memories(all_mems, with_vectors=True)

    def _same(self, user: str, rng: np.random.Generator) -> None:
        """Every per-user read, asked of both stores."""
        ref, lite = self.ref, self.lite
        assert list(ref.export(user)) == list(lite.export(user))
        assert ref.stats(user) == lite.stats(user)
        assert ref.has_memories(user) == lite.has_memories(user)
        for kwargs in ({}, {"statuses": [ACTIVE]}, {"session_id": "s1"}, {"limit": 2, "offset": 1}):
            assert ref.list_memories(user, **kwargs) == lite.list_memories(user, **kwargs), kwargs
        for session in ("s0", "s1", "nope"):
            assert ref.last_memory_in_session(user, session) == lite.last_memory_in_session(user, session)
        assert user_entities(ref, user) == user_entities(lite, user)
        assert ref.get_entities(user, KEYS[:3]) == lite.get_entities(user, KEYS[:3])
        # BM25 material: statistics and postings of active memories only
        terms = [*VOCAB, "absent"]
        (n1, avg1, df1), (n2, avg2, df2) = ref.lexical_stats(user, terms), lite.lexical_stats(user, terms)
        assert (n1, df1) == (n2, df2) and avg1 == pytest.approx(avg2)
        assert sorted(ref.postings(user, terms)) == sorted(lite.postings(user, terms))
        # exact nearest neighbours
        q = rng.standard_normal(DIM).astype(np.float32)
        q /= np.linalg.norm(q)
        for statuses in ((ACTIVE,), (ACTIVE, SUPERSEDED, INVALIDATED)):
            a, b = ref.nearest_memories(user, q, 3, statuses=statuses), lite.nearest_memories(user, q, 3, statuses=statuses)
            assert [h[0] for h in a] == [h[0] for h in b]
            assert [h[1] for h in a] == pytest.approx([h[1] for h in b], abs=1e-5)
        a, b = ref.nearest_entities(user, q, 2), lite.nearest_entities(user, q, 2)
        assert [h[0] for h in a] == [h[0] for h in b]
        # the graph: facts, and expansion from memories, entities and both, with and without hub cut-off
        mems = [f"m_{user}_{i}" for i in range(N_MEMORY_IDS)]
        ents = [f"e_{user}_{i}" for i in range(N_ENTITY_IDS)]
        assert ref.related_edges(user, ents, PREDICATES) == lite.related_edges(user, ents, PREDICATES)
        for frontier in (mems + ents, ents):
            for types in (EDGE_TYPES, (EDGE_MENTIONS,), (EDGE_NEXT, EDGE_SUPERSEDES, EDGE_RETRACTS)):
                for cap in (None, 0, 1, 2):
                    a_list = ref.expand(user, frontier, types, max_degree=cap)
                    b_list = lite.expand(user, frontier, types, max_degree=cap)
                    assert sorted(a_list) == sorted(b_list), (frontier, types, cap)


StoresAgree.TestCase.settings = settings(
    max_examples=40, stateful_step_count=20, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestStoresAgree = StoresAgree.TestCase


# -- the engine on the reference store ------------------------------------------------------------------------
QUERIES = ["When is the deadline for the Northwind work?", "printer dealer", "Who is visiting from Lagos?"]


def _shape(hits: Any) -> list[tuple[Any, ...]]:
    """What a recall answered, without the random memory ids: text, channel, score, path."""
    return [(h.memory.text, h.via, round(h.score, 5), [(s.edge, s.label) for s in h.path]) for h in hits]


@pytest.mark.slow
def test_memory_recalls_on_the_in_memory_store_as_on_sqlite(tmp_path: Path, embedder: Any, extractor: Any) -> None:
    """``Memory(store="memory://")`` adds and recalls, in English and Chinese, with the same hits,
    scores and paths as the embedded SQLite store given the same turns."""
    from ripple import Memory
    from tests.test_api import TWO_HOP, _add_two_hop

    chinese = ["我叫张伟，在北京的阿里巴巴工作。", "周末我喜欢去颐和园散步。", "张伟下个月要去上海出差。"]
    with Memory(store="memory://", embedder=embedder, extractor=extractor) as ref, \
            Memory(path=str(tmp_path / "s"), embedder=embedder, extractor=extractor) as lite:
        assert isinstance(ref.store, InMemoryStore)
        for mem in (ref, lite):
            _add_two_hop(mem)
            mem.add_many([{"text": t, "user_id": "u2", "session_id": "c1", "at": datetime(2026, 4, 1 + i)}
                          for i, t in enumerate(chinese)])
        assert [m.text for m in ref.get_all(user_id="u1")] == [t for t, _ in TWO_HOP]
        assert TWO_HOP[1][0] in ref.recall(QUERIES[0], user_id="u1", k=3, touch=False).texts()  # two hops away
        for q, user in [*((q, "u1") for q in QUERIES), ("张伟在哪里工作？", "u2")]:
            for mode in ("ripple", "flat", "bm25", "hybrid"):
                got = ref.recall(q, user_id=user, k=5, mode=mode, touch=False)
                want = lite.recall(q, user_id=user, k=5, mode=mode, touch=False)
                assert _shape(got.hits) == _shape(want.hits), (q, mode)
        assert ref.stats(user_id="u2") == {k: v for k, v in lite.stats(user_id="u2").items() if k != "bytes_on_disk"}
        for mem in (ref, lite):
            mem.recall(QUERIES[0], user_id="u1", k=3)  # touches the hits
        assert [(m.text, m.access_count) for m in ref.get_all(user_id="u1")] == [
            (m.text, m.access_count) for m in lite.get_all(user_id="u1")]


@pytest.mark.slow
def test_async_memory_on_the_in_memory_store(embedder: Any, extractor: Any) -> None:
    """AsyncMemory on ``memory://`` (sync store, worker threads) and on the same kind of store behind
    ``ThreadedAsyncStore`` (driven as a native async store) give the same recall."""
    import anyio

    from ripple import AsyncMemory
    from tests.test_api import TWO_HOP

    items = [{"text": t, "user_id": "u1", "session_id": s, "at": datetime(2026, 3, 1 + i)}
             for i, (t, s) in enumerate(TWO_HOP)]

    async def run(store: Any) -> list[str]:
        async with AsyncMemory(store=store, embedder=embedder, extractor=extractor) as amem:
            await amem.add_many(items)
            assert len(await amem.get_all(user_id="u1")) == len(TWO_HOP)
            assert sum([r["type"] == "memory" async for r in amem.export(user_id="u1")]) == len(TWO_HOP)
            return (await amem.recall(QUERIES[0], user_id="u1", k=3, touch=False)).texts()

    threaded = ThreadedAsyncStore(InMemoryStore())
    by_uri, native = anyio.run(run, "memory://"), anyio.run(run, threaded)
    anyio.run(threaded.aclose)
    assert by_uri == native and len(by_uri) == 3
