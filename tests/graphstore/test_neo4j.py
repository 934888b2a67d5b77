"""The Neo4j store against a real server: the shared conformance suite, parity with the
SQLite store on a generated graph, the async twin, routing URIs, errors and ``ripple cypher``.

The server is ``$RIPPLE_TEST_NEO4J_URI`` (default ``bolt://127.0.0.1:7687``, started by
``scripts/neo4j.sh start`` or ``scripts/test.sh``); every test starts and ends with an
empty database.  Without a server the tests skip, or fail under ``RIPPLE_REQUIRE_ALL=1``.
"""

from __future__ import annotations

import inspect
import json
import os
import random
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pytest

import graphstore.neo4j
from graphstore import open_store, retries
from graphstore.neo4j import AsyncNeo4jStore, Neo4jStore
from graphstore.protocol import ACTIVE, INVALIDATED, SUPERSEDED, GraphStore
from graphstore.records import EDGE_MENTIONS, EDGE_NEXT, EDGE_RELATED, EdgeRecord, EntityRecord, StoredMemory, WriteBatch
from graphstore.sqlite import SQLiteStore
from graphstore.testing import (
    BlockingStore,
    GraphStoreConformance,
    entity_degrees,
    make_entity,
    make_memory,
    unit_vector,
    user_entities,
)
from ripple.errors import StoreError, StoreUnavailable
from tests.conftest import check_own_server, need

pytestmark = pytest.mark.neo4j

URI = os.environ.get("RIPPLE_TEST_NEO4J_URI", "bolt://127.0.0.1:7687")
PASSWORD = os.environ.get("RIPPLE_TEST_NEO4J_PASSWORD", "ripple-dev-password")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    """A plain driver to the test server, for wiping and for checks behind the store's back."""
    import neo4j

    drv = neo4j.GraphDatabase.driver(URI, auth=("neo4j", PASSWORD), connection_timeout=5,
                                     notifications_min_severity="OFF")
    try:
        drv.verify_connectivity()
    except Exception as exc:  # noqa: BLE001 - any failure means: no usable server
        drv.close()
        need(f"no Neo4j server at {URI} ({type(exc).__name__}: {exc}); run scripts/neo4j.sh start")
    yield drv
    drv.close()


def wipe(drv: Any) -> None:
    """Empty the database, in batches (a benchmark may have left a graph too big for one transaction)."""
    check_own_server()
    with drv.session() as session:
        session.run("MATCH ()-[r]->() CALL (r) { DELETE r } IN TRANSACTIONS OF 20000 ROWS").consume()
        session.run("MATCH (n) CALL (n) { DELETE n } IN TRANSACTIONS OF 20000 ROWS").consume()


@pytest.fixture
def clean(driver: Any) -> Iterator[Any]:
    """An empty database before and after the test."""
    wipe(driver)
    yield driver
    wipe(driver)


def connect(uri: str = URI, **options: Any) -> Neo4jStore:
    return Neo4jStore(uri, password=PASSWORD, **options)


class TestNeo4jStore(GraphStoreConformance):
    @pytest.fixture
    def store(self, clean: Any) -> Iterator[GraphStore]:
        s = connect()
        yield s
        s.close()

    @pytest.fixture
    def reopen(self) -> Callable[[], GraphStore]:
        return connect


class TestNeo4jStoreWithoutNearCache(GraphStoreConformance):
    """The server's own searches, as every search ran before the near cache (``near_cache_mb=0``)."""

    @pytest.fixture
    def store(self, clean: Any) -> Iterator[GraphStore]:
        s = connect(near_cache_mb=0)
        yield s
        s.close()

    @pytest.fixture
    def reopen(self) -> Callable[[], GraphStore]:
        return lambda: connect(near_cache_mb=0)


class TestAsyncNeo4jStore(GraphStoreConformance):
    @pytest.fixture
    def store(self, clean: Any) -> Iterator[GraphStore]:
        s = BlockingStore(AsyncNeo4jStore(URI, password=PASSWORD))
        yield s  # type: ignore[misc]
        s.close()

    @pytest.fixture
    def reopen(self) -> Callable[[], GraphStore]:
        return lambda: BlockingStore(AsyncNeo4jStore(URI, password=PASSWORD))  # type: ignore[return-value]


# -- parity with the embedded store -------------------------------------------------------------------
PARITY_DIM = 32


def _generated_graph(seed: int = 5) -> tuple[list[WriteBatch], list[str], list[str]]:
    """A few hundred memories of two users with random vectors and terms, entities and all edge kinds,
    in several batches (so upserts, accumulating RELATED weights and alias merges happen)."""
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(60)] + ["北京", "张伟", "上海"]

    def vec() -> np.ndarray:
        v = nrng.standard_normal(PARITY_DIM).astype(np.float32)
        return v / np.linalg.norm(v)

    batches: list[WriteBatch] = []
    memory_ids: list[str] = []
    entity_ids: list[str] = []
    for user, n_mem, n_ent in (("alice", 260, 30), ("bob", 60, 8)):
        ents = [f"e_{user}_{i}" for i in range(n_ent)]
        entity_ids += ents
        batch = WriteBatch(entities=[
            EntityRecord(id=e, user_id=user, name=f"Name {i}", key=f"key {i}", label=rng.choice(["PERSON", "ORG"]),
                         aliases=tuple(f"alias {i}.{j}" for j in range(rng.randint(0, 2))),
                         embedding=vec().tobytes() if rng.random() < 0.8 else None)
            for i, e in enumerate(ents)
        ])
        prev: dict[str, str] = {}
        for i in range(n_mem):
            mid = f"m_{user}_{i:03d}"
            memory_ids.append(mid)
            session = f"s{i % 4}"
            # every memory has terms: SQLite counts a term-less memory in n_docs twice when it is upserted
            terms = tuple(rng.choices(vocab, k=rng.randint(1, 9)))
            status = rng.choices([ACTIVE, SUPERSEDED, INVALIDATED], [0.8, 0.1, 0.1])[0]
            batch.memories.append(StoredMemory(
                id=mid, user_id=user, text=" ".join(terms), at=float(1000 + i // 3), created_at=float(5000 + i),
                agent_id=rng.choice([None, "agent"]), session_id=session, kind="message",
                importance=round(rng.random(), 3), status=status, metadata_json=json.dumps({"i": i, "中": "文"}),
                terms=terms, embedding=vec().tobytes() if rng.random() < 0.95 else None,
                token_vectors=nrng.integers(-127, 127, (2, 4), dtype=np.int8).tobytes(),
            ))
            for e in rng.sample(ents, rng.randint(0, 3)):
                batch.edges.append(EdgeRecord(mid, EDGE_MENTIONS, e, user, 1.0, at=float(i)))
            if session in prev:
                batch.edges.append(EdgeRecord(prev[session], EDGE_NEXT, mid, user, 1.0, at=float(i)))
            prev[session] = mid
            if rng.random() < 0.5:
                a, b = rng.sample(ents, 2)
                batch.edges.append(EdgeRecord(a, EDGE_RELATED, b, user, round(rng.uniform(0.1, 1.0), 2),
                                              predicate=rng.choice(["co_mention", "works_at"]), evidence=mid))
            if len(batch.memories) == 50:
                batches.append(batch)
                batch = WriteBatch()
        batches.append(batch)
    # a second pass: upserts with changed text and status, alias merges, repeated RELATED edges
    again = WriteBatch()
    for mid in rng.sample(memory_ids, 20):
        user = mid.split("_")[1]
        terms = tuple(rng.choices(vocab, k=4))
        again.memories.append(StoredMemory(id=mid, user_id=user, text="updated", at=2000.0, created_at=6000.0,
                                           session_id="s9", terms=terms, embedding=vec().tobytes(),
                                           status=rng.choice([ACTIVE, SUPERSEDED])))
    for e in rng.sample(entity_ids, 6):
        user = e.split("_")[1]
        again.entities.append(EntityRecord(id=e, user_id=user, name="ignored", key="merged key", label="ORG",
                                           aliases=("extra alias",)))
        again.edges.append(EdgeRecord(e, EDGE_RELATED, e.rsplit("_", 1)[0] + "_1", user, 0.25, predicate="co_mention"))
    batches.append(again)
    return batches, memory_ids, entity_ids


def _apply(store: GraphStore, batches: list[WriteBatch], memory_ids: list[str]) -> None:
    for b in batches:
        store.write(b)
    store.set_status(memory_ids[:15], INVALIDATED)
    store.set_status(memory_ids[10:20], ACTIVE)
    store.touch(memory_ids[:5] + memory_ids[:2], 9_999.0)
    store.delete_memories(memory_ids[100:104])
    store.write(WriteBatch(edges=[EdgeRecord(memory_ids[30], EDGE_MENTIONS, "e_alice_2", "alice", 1.0)]),
                replace_mentions_of=[memory_ids[30], memory_ids[31]])


def test_parity_with_sqlite(clean: Any, tmp_path: Path) -> None:
    """The same graph written to both stores reads back the same through every query."""
    batches, memory_ids, entity_ids = _generated_graph()
    lite = SQLiteStore(tmp_path / "db")
    neo = connect()
    try:
        _apply(lite, batches, memory_ids)
        _apply(neo, batches, memory_ids)
        rng = np.random.default_rng(1)
        vocab = [f"w{i}" for i in range(60)] + ["北京", "张伟", "上海", "absent"]
        for user in ("alice", "bob"):
            assert list(neo.export(user)) == list(lite.export(user))
            lite_stats = lite.stats(user)
            lite_stats.pop("bytes_on_disk", None)
            assert neo.stats(user) == lite_stats
            for _ in range(5):
                q = rng.standard_normal(PARITY_DIM).astype(np.float32)
                q /= np.linalg.norm(q)
                for statuses in ((ACTIVE,), (ACTIVE, INVALIDATED)):
                    a, b = lite.nearest_memories(user, q, 10, statuses=statuses), neo.nearest_memories(user, q, 10, statuses=statuses)
                    assert [h[0] for h in b] == [h[0] for h in a]
                    assert [h[1] for h in b] == pytest.approx([h[1] for h in a], abs=1e-5)
                a, b = lite.nearest_entities(user, q, 5), neo.nearest_entities(user, q, 5)
                assert [h[0] for h in b] == [h[0] for h in a]
                assert [h[1] for h in b] == pytest.approx([h[1] for h in a], abs=1e-5)
            n1, avg1, df1 = lite.lexical_stats(user, vocab)
            n2, avg2, df2 = neo.lexical_stats(user, vocab)
            assert (n2, df2) == (n1, df1) and avg2 == pytest.approx(avg1)
            assert sorted(neo.postings(user, vocab)) == sorted(lite.postings(user, vocab))
            assert neo.list_memories(user, statuses=[ACTIVE], limit=7, offset=3) == lite.list_memories(
                user, statuses=[ACTIVE], limit=7, offset=3)
            assert neo.list_memories(user, session_id="s1") == lite.list_memories(user, session_id="s1")
            assert neo.last_memory_in_session(user, "s2") == lite.last_memory_in_session(user, "s2")
            assert user_entities(neo, user) == user_entities(lite, user)
            keys = ["key 1", "alias 3.0", "merged key", "extra alias", "nope"]
            assert neo.get_entities(user, keys) == lite.get_entities(user, keys)
            frontiers = [memory_ids[:40], entity_ids[:12], memory_ids[200:230] + entity_ids[30:]]
            for frontier in frontiers:
                for types in ([EDGE_MENTIONS, EDGE_NEXT, EDGE_RELATED], [EDGE_RELATED], [EDGE_MENTIONS]):
                    for cap in (None, 3, 0):
                        a_set = set(lite.expand(user, frontier, types, max_degree=cap))
                        b_list = neo.expand(user, frontier, types, max_degree=cap)
                        assert len(b_list) == len(set(b_list)) and set(b_list) == a_set
        assert neo.get_memories(memory_ids[:30], with_vectors=True) == lite.get_memories(memory_ids[:30], with_vectors=True)
        assert neo.token_vectors(memory_ids[95:110]) == lite.token_vectors(memory_ids[95:110])
        assert entity_degrees(neo, entity_ids) == entity_degrees(lite, entity_ids)
        assert neo.entity_names(entity_ids) == lite.entity_names(entity_ids)
        assert neo.users() == lite.users()
        assert neo.delete_memories(memory_ids[50:60]) == lite.delete_memories(memory_ids[50:60])
        assert neo.delete_user("alice") == lite.delete_user("alice")
        assert list(neo.export("bob")) == list(lite.export("bob"))
    finally:
        lite.close()
        neo.close()


def test_small_user_in_a_large_store_is_found_exactly(clean: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Big users go through the vector index, small ones are scanned exactly, and a filter that
    empties the index's candidates widens the search, then falls back to an exact scan."""
    monkeypatch.setattr(graphstore.neo4j, "_EXACT_SCAN_BELOW", 500)
    monkeypatch.setattr(graphstore.neo4j, "_MAX_CANDIDATES", 600)
    rng = np.random.default_rng(3)
    big = rng.standard_normal((1_500, 8)).astype(np.float32)
    big /= np.linalg.norm(big, axis=1, keepdims=True)
    store = connect(near_cache_mb=0)  # (the server's searches: a near cache would search exactly)
    try:
        store.write(WriteBatch(memories=[make_memory(f"m_big_{j}", user="big", vec=big[j], terms=("x",))
                                         for j in range(len(big))]))
        store.write(WriteBatch(memories=[make_memory("m_small_1", user="small", vec=unit_vector(-1, 0)),
                                         make_memory("m_small_2", user="small", vec=unit_vector(0, -1))]))
        q = unit_vector(1, 0)
        assert [h[0] for h in store.nearest_memories("small", q, 5)] == ["m_small_2", "m_small_1"]
        exact = big @ q
        order = np.argsort(-exact)
        got = store.nearest_memories("big", q, 10)  # through the vector index: approximate candidates
        assert len({h[0] for h in got} & {f"m_big_{i}" for i in order[:10]}) >= 8
        for mid, score in got:
            assert score == pytest.approx(float(exact[int(mid.rsplit("_", 1)[1])]), abs=1e-5)
        store.set_status([f"m_big_{i}" for i in order[:700]], INVALIDATED)
        got = store.nearest_memories("big", q, 10)  # every candidate the index can give is filtered out
        assert [h[0] for h in got] == [f"m_big_{i}" for i in order[700:710]]
    finally:
        store.close()


def test_vector_dimension_is_fixed_while_vectors_remain(clean: Any) -> None:
    store = connect()
    try:
        store.write(WriteBatch(memories=[make_memory("m_1")]))
        wide = np.ones(16, dtype=np.float32) / 4
        with pytest.raises(StoreError, match="dimension"):
            store.write(WriteBatch(memories=[make_memory("m_2", vec=wide)]))
        assert store.get_memories(["m_2"]) == []
        with pytest.raises(StoreError, match="dimensions"):
            store.nearest_memories("u1", wide, 3)
        store.delete_user("u1")
        store.write(WriteBatch(memories=[make_memory("m_2", vec=wide)]))
        assert store.nearest_memories("u1", wide, 3) == [("m_2", pytest.approx(1.0, abs=1e-6))]
    finally:
        store.close()


def test_index_left_by_earlier_data_does_not_block_a_new_dimension(clean: Any) -> None:
    """After earlier data is gone, its index's dimension must not break searches of a new embedder."""
    store = connect()
    try:
        store.write(WriteBatch(memories=[make_memory("m_1")], entities=[make_entity("e_a", vec=unit_vector(1.0))]))
        store.delete_user("u1")
        wide = np.ones(16, dtype=np.float32) / 4
        assert store.nearest_entities("u1", wide, 3) == []
        assert store.nearest_memories("u1", wide, 3) == []
    finally:
        store.close()


def test_a_failing_batch_writes_nothing(clean: Any) -> None:
    """An edge to a missing node fails the whole batch (SQLite would store a dangling edge)."""
    store = connect()
    try:
        batch = WriteBatch(memories=[make_memory("m_1")], entities=[make_entity("e_a")],
                           edges=[EdgeRecord("m_1", EDGE_MENTIONS, "e_a", "u1"),
                                  EdgeRecord("m_1", EDGE_MENTIONS, "e_missing", "u1")])
        with pytest.raises(StoreError, match="e_missing"):
            store.write(batch)
        assert store.stats()["memories"] == 0 and store.users() == []
        assert store.lexical_stats("u1", ["memory"]) == (0, 0.0, {})
        with pytest.raises(StoreError, match="unknown edge type"):
            store.write(WriteBatch(edges=[EdgeRecord("m_1", "LIKES", "e_a", "u1")]))
    finally:
        store.close()


def test_concurrent_writers_lose_nothing(clean: Any) -> None:
    """Writers sharing terms and entities of one user (deadlocks are retried by the driver)."""
    store = connect()
    errors: list[BaseException] = []
    store.write(WriteBatch(entities=[make_entity("e_hub")]))

    def writer(t: int) -> None:
        try:
            for i in range(15):
                mid = f"m_{t}_{i}"
                store.write(WriteBatch(memories=[make_memory(mid, session=f"s{t}", at=float(i), terms=("shared", f"t{t}"))],
                                       edges=[EdgeRecord(mid, EDGE_MENTIONS, "e_hub", "u1")]))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    try:
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert not errors
        assert store.stats("u1")["memories"] == 60
        assert store.lexical_stats("u1", ["shared"]) == (60, 2.0, {"shared": 60})
        assert entity_degrees(store, ["e_hub"]) == {"e_hub": 60}
    finally:
        store.close()


def _deadlocks_of(threads: int, work: Callable[[int], None]) -> list[str]:
    """Run ``work(t)`` in ``threads`` threads at once; the deadlocks their store calls met (each a retry)."""
    seen: list[str] = []
    errors: list[BaseException] = []
    start = threading.Barrier(threads)

    def run(t: int) -> None:
        with retries.recording() as mine:
            try:
                start.wait()
                work(t)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)
            seen.extend(r.error for r in mine if "DeadlockDetected" in r.error)

    pool = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    assert not errors, errors[0]
    return seen


def test_concurrent_writers_of_one_user_meet_no_deadlock(clean: Any) -> None:
    """Adds of one user at once, shaped as ripple's are (shared terms, entities seen again with a new alias,
    MENTIONS, RELATED, a session's NEXT chain; in English and Chinese): every transaction queues on the
    user's Lexicon node and none is chosen as a deadlock victim (issue 18's serve-load saw 31 deadlocks
    in 800 adds, each a retry; the totals' ``x.n = x.n + ...`` on the locked node was the cause)."""
    store = connect()
    names = ["e_alice", "e_bob", "e_北京", "e_张伟"]
    store.write(WriteBatch(entities=[make_entity(e) for e in names]))
    threads, per = 4, 8

    def writer(t: int) -> None:
        for i in range(per):
            mid = f"m_{t}_{i}"
            ents = [names[(t + i) % 4], names[(t + i + 1) % 4]]
            edges = [EdgeRecord(mid, EDGE_MENTIONS, e, "u1") for e in ents]
            edges.append(EdgeRecord(min(ents), EDGE_RELATED, max(ents), "u1", 0.5, predicate="co_mention", evidence=mid))
            if i:
                edges.append(EdgeRecord(f"m_{t}_{i - 1}", EDGE_NEXT, mid, "u1"))
            store.write(WriteBatch(
                memories=[make_memory(mid, session=f"s{t}", at=float(i), terms=("shared", "北京", f"t{t}"))],
                entities=[make_entity(e, aliases=(f"~{t}",)) for e in ents], edges=edges))

    try:
        deadlocks = _deadlocks_of(threads, writer)
        assert deadlocks == [], f"{len(deadlocks)} deadlocks in {threads * per} writes; first: {deadlocks[0]}"
        n = threads * per
        assert store.stats("u1")["memories"] == n
        assert store.lexical_stats("u1", ["shared", "北京"]) == (n, 3.0, {"shared": n, "北京": n})
        assert sum(entity_degrees(store, names).values()) == 2 * n
        with clean.session() as session:  # one revision per write, none lost
            assert session.run("MATCH (x:Lexicon {user_id: 'u1'}) RETURN x.rev AS rev").single()["rev"] == 1 + n
    finally:
        store.close()


def test_concurrent_touches_meet_no_deadlock(clean: Any) -> None:
    """Recalls touching the same memories in different orders (and one twice) lock them in one order:
    no deadlock, and every access is counted."""
    store = connect()
    ids = [f"m_{j:02d}" for j in range(12)]
    store.write(WriteBatch(memories=[make_memory(m) for m in ids]))
    threads, rounds = 4, 6

    def toucher(t: int) -> None:
        order = random.Random(t)
        for _ in range(rounds):
            shuffled = order.sample(ids, len(ids))
            store.touch(shuffled + shuffled[:1], 5.0)

    try:
        deadlocks = _deadlocks_of(threads, toucher)
        assert deadlocks == [], f"{len(deadlocks)} deadlocks in {threads * rounds} touches; first: {deadlocks[0]}"
        counts = {m.id: m.access_count for m in store.get_memories(ids)}
        assert sum(counts.values()) == threads * rounds * (len(ids) + 1)
        assert min(counts.values()) >= threads * rounds
    finally:
        store.close()


def test_large_user_is_deleted_in_bounded_transactions(clean: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(graphstore.neo4j, "_DELETE_BATCH", 300)
    store = connect()
    try:
        n = 1_000
        store.write(WriteBatch(memories=[make_memory(f"m_{j}", terms=("a", "b", f"t{j}")) for j in range(n)],
                               edges=[EdgeRecord(f"m_{j}", EDGE_NEXT, f"m_{j + 1}", "u1") for j in range(n - 1)]))
        counts = store.delete_user("u1")
        assert counts == {"memories": n, "entities": 0, "edges": n - 1, "index_entries": 3 * n + n + 2}
        assert store.stats() == {"memories": 0, "entities": 0, "users": 0, "edges_mentions": 0,
                                 "edges_related": 0, "edges_next": 0, "edges_supersedes": 0, "edges_retracts": 0,
                                 "edges_conflicts": 0}
    finally:
        store.close()


# -- connecting ------------------------------------------------------------------------------------------
def test_routing_uri_works(clean: Any) -> None:
    """neo4j:// (client-side routing, reads to followers) against the single server."""
    routed = URI.replace("bolt://", "neo4j://", 1)
    store = open_store(routed, password=PASSWORD)
    try:
        assert isinstance(store, Neo4jStore) and store.uri == routed
        store.write(WriteBatch(memories=[make_memory("m_1")]))
        assert [m.id for m in store.list_memories("u1")] == ["m_1"]
    finally:
        store.close()


def test_wrong_password_is_store_unavailable(driver: Any) -> None:
    with pytest.raises(StoreUnavailable, match="credentials"):
        Neo4jStore(URI, password="not-the-password")


def test_down_server_is_store_unavailable() -> None:
    # (a short retry budget: the default 8 s would be waited out here; tests/faults/test_neo4j_outage.py
    # checks that a budget bounds the wait)
    with pytest.raises(StoreUnavailable, match=r"cannot reach Neo4j.*retry budget 0.5 s"):
        Neo4jStore("bolt://127.0.0.1:9", password="x", connection_timeout=2, retry_seconds=0.5)


def test_a_transient_error_past_the_budget_does_not_say_the_server_is_down() -> None:
    """A deadlock met after a long wait in a lock queue (the budget spent) is a server that answers."""
    import neo4j.exceptions as nx

    from graphstore.neo4j import _Neo4jCore

    core = _Neo4jCore("bolt://h:7687", user="neo4j", password="x", database=None, retry_seconds=0,
                      maintenance=False, near_cache_mb=0)
    with pytest.raises(StoreUnavailable, match=r"kept failing with a transient error: deadlock.*retry budget 0 s") as c:
        core._after_failure(nx.TransientError("deadlock detected"), core._retry.start())
    assert "is the server running" not in str(c.value)
    with pytest.raises(StoreUnavailable, match=r"cannot reach Neo4j.*is the server running"):
        core._after_failure(nx.ServiceUnavailable("connection refused"), core._retry.start())


def _driver_errors() -> list[type[BaseException]]:
    import neo4j.exceptions as nx

    return [c for c in vars(nx).values() if inspect.isclass(c) and issubclass(c, (nx.Neo4jError, nx.DriverError))]


@pytest.mark.parametrize("error", _driver_errors(), ids=lambda c: c.__name__)
def test_every_driver_error_becomes_a_ripple_error(error: type[BaseException]) -> None:
    import neo4j.exceptions as nx

    from graphstore.neo4j import _map_errors
    from ripple.errors import RippleError

    with pytest.raises(RippleError) as caught:
        with _map_errors("bolt://h:7687"):
            raise error("boom")
    assert caught.value.__cause__ is not None and isinstance(caught.value.__cause__, error)
    unreachable = (nx.ServiceUnavailable, nx.SessionExpired, nx.AuthError, nx.DatabaseUnavailable,
                   nx.ConnectionAcquisitionTimeoutError)
    assert isinstance(caught.value, StoreUnavailable) == issubclass(error, unreachable)


def test_driver_loads_only_for_a_neo4j_store() -> None:
    code = ("import sys, graphstore, graphstore.neo4j, ripple; assert 'neo4j' not in sys.modules;"
            " from graphstore import open_store; open_store(':memory:').close(); assert 'neo4j' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


# -- async -------------------------------------------------------------------------------------------------
@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_async_round_trip(clean: Any) -> None:
    """Written through the async store, read back through both; errors map the same way."""
    seed = _Recorder()
    GraphStoreConformance()._seed_graph(seed)  # type: ignore[arg-type]
    async with AsyncNeo4jStore(URI, password=PASSWORD) as store:
        for batch in seed.batches:
            await store.write(batch)
        assert await store.users() == ["u1", "u2"]
        hits = await store.nearest_memories("u1", unit_vector(1, 0.1), 2)
        assert [h[0] for h in hits] == ["m_1", "m_3"]
        assert await store.lexical_stats("u1", ["dana"]) == (3, pytest.approx(10 / 3), {"dana": 2})
        got = {(n.source, n.target) for n in await store.expand("u1", ["e_dana"], [EDGE_MENTIONS])}
        assert got == {("e_dana", "m_1"), ("e_dana", "m_2")}
        exported = [r async for r in store.export("u1")]
        sync = connect()
        try:
            assert exported == list(sync.export("u1"))
            assert await store.stats("u1") == sync.stats("u1")
        finally:
            sync.close()
        assert await store.set_status(["m_1"], INVALIDATED) == 1
        assert (await store.delete_user("u1"))["memories"] == 3
    bad = AsyncNeo4jStore(URI, password="not-the-password")
    with pytest.raises(StoreUnavailable, match="credentials"):
        await bad.open()
    await bad.aclose()


class _Recorder:
    """Stands in for a store to capture the suite's seed batches."""

    def __init__(self) -> None:
        self.batches: list[WriteBatch] = []

    def write(self, batch: WriteBatch, **_: Any) -> None:
        self.batches.append(batch)


# -- ripple cypher -------------------------------------------------------------------------------------------
def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from ripple.cli.__main__ import main

    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_cypher(clean: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIPPLE_NEO4J_PASSWORD", PASSWORD)
    monkeypatch.delenv("RIPPLE_STORE", raising=False)
    store = connect()
    try:
        GraphStoreConformance()._seed_graph(store)
    finally:
        store.close()
    code, out, _ = _cli(["--store", URI, "cypher",
                         "MATCH (m:Memory {user_id: $user}) RETURN m.id AS id, m.text AS text ORDER BY id",
                         "--param", "user=u1"], capsys)
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["id", "text"] and len(lines) == 6 and lines[-1] == "(3 rows)"
    assert lines[2].startswith("m_1 ") and "张伟在北京工作" in lines[4]
    code, out, _ = _cli(["--store", URI, "cypher", "--json", "--param", 'ids=["m_2", "m_9"]', "--param", "n=2",
                         "UNWIND $ids AS id MATCH (m:Memory {id: id}) RETURN m.id AS id, $n AS n, m.terms AS terms"],
                        capsys)
    assert code == 0
    assert [json.loads(x) for x in out.splitlines()] == [
        {"id": "m_2", "n": 2, "terms": ["dana", "sign", "invoice", "invoice"]},
        {"id": "m_9", "n": 2, "terms": ["dana", "cat"]},
    ]
    code, _, err = _cli(["--store", URI, "cypher", "CREATE (:Scratch {x: 1})"], capsys)
    assert code == 2 and "--write" in err
    code, out, _ = _cli(["--store", URI, "cypher", "--write", "CREATE (s:Scratch {x: 1}) RETURN s"], capsys)
    assert code == 0 and "Scratch" in out
    code, out, _ = _cli(["--store", URI.replace("bolt://", "neo4j://", 1), "cypher", "--json",
                         "MATCH (s:Scratch) RETURN count(s) AS n"], capsys)
    assert code == 0 and json.loads(out) == {"n": 1}


def test_cli_cypher_needs_a_neo4j_store(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RIPPLE_STORE", raising=False)
    code, _, err = _cli(["--store", str(tmp_path), "cypher", "RETURN 1"], capsys)
    assert code == 2 and "no ripple store at" in err  # a read command never creates a store
    assert _cli(["--store", str(tmp_path), "add", "--user", "u1", "Anna lives in Lisbon."], capsys)[0] == 0
    code, _, err = _cli(["--store", str(tmp_path), "cypher", "RETURN 1"], capsys)
    assert code == 2 and "bolt://" in err and "neo4j://" in err


def test_batch_search_through_the_vector_index_matches_single_searches(clean: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the exact-scan threshold lowered, batch searches go through the HNSW index in one statement
    and give what one search per vector gives (memories with a status filter, and entities)."""
    monkeypatch.setattr(graphstore.neo4j, "_EXACT_SCAN_BELOW", 1)
    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(60, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    store = connect(near_cache_mb=0)  # (the server's searches: a near cache would search exactly)
    try:
        store.write(WriteBatch(
            memories=[make_memory(f"m_{j:02d}", vec=vecs[j], status=INVALIDATED if j % 7 == 0 else ACTIVE)
                      for j in range(60)],
            entities=[make_entity(f"e_{j:02d}", key=f"k{j}", vec=vecs[j]) for j in range(60)],
        ))
        queries = vecs[:5] + 0.05
        batch = store.nearest_memories_batch("u1", queries, 4)
        assert batch == [store.nearest_memories("u1", q, 4) for q in queries]
        assert all(len(b) == 4 and not any(int(i[2:]) % 7 == 0 for i, _ in b) for b in batch)
        assert store.nearest_entities_batch("u1", queries, 3) == [store.nearest_entities("u1", q, 3) for q in queries]
    finally:
        store.close()


def _operators(plan: Any) -> list[str]:
    return [plan["operatorType"].split("@")[0]] + [op for child in plan.get("children", []) for op in _operators(child)]


def _details(plan: Any) -> list[str]:
    return [plan.get("args", {}).get("Details", "")] + [d for child in plan.get("children", []) for d in _details(child)]


def _planned_statements() -> dict[str, Any]:
    """Every statement ``graphstore.neo4j`` plans once: the module's, the vector searches', and the
    spreading reads of the built-in channels (and of a walk over both edge types)."""
    g = graphstore.neo4j
    out = {name: value for name, value in vars(g).items() if isinstance(value, g._Planned)}
    out.update({f"_NEAREST[{label}][{kind}]": stmt for label, stmts in g._NEAREST.items() for kind, stmt in stmts.items()})
    out.update({f"_neighbourhoods({shapes})": g._neighbourhoods(shapes)
                for shapes in ((("NEXT", 2),), (("MENTIONS", 1),), (("MENTIONS|NEXT", 3),), (("NEXT", 2), ("MENTIONS", 1)))})
    return out


# the statements whose job is to read a user's nodes: a seek of the user's index on user_id is their plan
_READ_A_USER = ("_HAS_MEMORIES", "_USER_STATE", "_HAS_MULTILINGUAL", "_NEAREST_MULTILINGUAL", "_NEAREST[")


def test_statements_planned_once_find_every_node_by_a_seek(clean: Any) -> None:
    """The write path's and the recall's statements run with ``CYPHER replan=skip`` and their parameters
    in one map (``graphstore.neo4j._Planned``): the plan the server makes first, maybe on an empty store, is
    kept while the store grows.  That is only right for a plan the statistics cannot change: planned on an
    empty store, each finds its nodes by index seeks (or the vector index) and its relationships by
    expanding from them (no scan, no hash join, no relationship index), and only a statement meant to read
    a user's nodes seeks them by the index on ``user_id`` alone."""
    planned = _planned_statements()
    assert {"_WRITE_BATCH", "_EXISTING", "_REMOVE_POSTINGS", "_BUMP_REVISIONS", "_SESSION_TAILS", "_GET_ENTITIES",
            "_MEMORIES_MENTIONING", "_USER_STATE", "_LEXICAL_ROUTE", "_GET_MEMORIES", "_TOKEN_VECTORS_CHECKED",
            "_NEAREST[Memory][search]", "_neighbourhoods((('NEXT', 2),))"} <= set(planned)
    connect().close()  # (the schema: its constraints and indexes are what the plans seek in)
    with clean.session() as session:
        for name, stmt in planned.items():
            assert stmt.cypher.startswith("CYPHER replan=skip\n") and "$p." in stmt.cypher, name
            plan = session.run("EXPLAIN " + stmt.cypher, {"p": {}}).consume().plan
            ops = _operators(plan)
            # (a CartesianProduct here joins the two ends of an edge row, each a unique seek of one node)
            bad = [op for op in ops if "Scan" in op or "HashJoin" in op or "RelationshipIndex" in op]
            assert not bad, (name, bad)
            # nor a seek of a user's every node by an index on user_id alone (a unique one finds one node)
            broad = [d for d in _details(plan) if re.search(r":\w+\(user_id\)", d) and not d.startswith("UNIQUE")]
            assert not broad or name.startswith(_READ_A_USER), (name, broad)
            assert any("IndexSeek" in op or "ProcedureCall" in op for op in ops), (name, ops)
