"""The Neo4j store's near cache (graphstore.nearcache) against a real server: searches from this
process's copy of a user's vectors stay coherent with every write of another store object (another
client with its own cache) and of another process, give what the server's searches give, and stay
within their budget.

The server is ``$RIPPLE_TEST_NEO4J_URI`` as in ``test_neo4j.py``; every test starts and ends with an
empty database.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

from graphstore.neo4j import AsyncNeo4jStore, Neo4jStore
from graphstore.protocol import ACTIVE, INVALIDATED, SUPERSEDED
from graphstore.records import StoredMemory, WriteBatch
from graphstore.testing import DIM, GraphStoreConformance, make_entity, make_memory
from tests.graphstore.test_neo4j import PASSWORD, URI, clean, driver  # noqa: F401 - fixtures

pytestmark = pytest.mark.neo4j
ROOT = Path(__file__).resolve().parents[2]


def connect(**options: Any) -> Neo4jStore:
    return Neo4jStore(URI, password=PASSWORD, **options)


def vectors(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def tokens(value: int) -> bytes:
    return np.full((2, DIM), value, dtype=np.int8).tobytes()


def memory(mid: str, vec: np.ndarray, *, user: str = "u1", status: str = ACTIVE, tv: int = 1) -> StoredMemory:
    return dataclasses.replace(make_memory(mid, user=user, vec=vec, status=status), token_vectors=tokens(tv))


def same(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> bool:
    """The same ids in the same order, the same scores up to the server's float arithmetic."""
    return [i for i, _ in a] == [i for i, _ in b] and all(abs(x - y) < 1e-5 for (_, x), (_, y) in zip(a, b))


def test_another_clients_writes_are_seen_at_the_next_search(clean: Any) -> None:
    """A (cached) sees every acknowledged write of B (its own cache) at its next search: adds, rewrites,
    status changes, deletions, a deleted user written again; and answers as a store without a cache."""
    a, b, plain = connect(), connect(), connect(near_cache_mb=0)
    vecs = vectors(40, 1)
    q = vecs[0] + 0.1 * vecs[1]
    q /= np.linalg.norm(q)
    try:
        b.write(WriteBatch(memories=[memory(f"m_{j:02d}", vecs[j]) for j in range(30)],
                           entities=[make_entity(f"e_{j}", key=f"k{j}", vec=vecs[j]) for j in range(5)]))

        def check(statuses: tuple[str, ...] = (ACTIVE,)) -> list[tuple[str, float]]:
            got = a.nearest_memories("u1", q, 10, statuses=statuses)
            assert same(got, plain.nearest_memories("u1", q, 10, statuses=statuses))
            assert same(a.nearest_entities("u1", q, 3), plain.nearest_entities("u1", q, 3))
            return got

        assert same(check(), check())  # (a user is loaded at its second search at one revision)
        first = check()
        assert first[0][0] == "m_00" and a._near.users() == ["u1"]
        loads = a._near.loads
        assert check() == first and a._near.loads == loads  # (served from the cache: nothing reloaded)
        assert a.token_vectors(["m_00", "m_01"]) == {"m_00": tokens(1), "m_01": tokens(1)}

        b.write(WriteBatch(memories=[memory("m_new", q)]))  # an add
        assert check()[0] == ("m_new", pytest.approx(1.0, abs=1e-6))
        b.write(WriteBatch(memories=[memory("m_new", -q, tv=5)]))  # a rewrite: new vector, new token vectors
        assert "m_new" not in [i for i, _ in check()]
        assert a.token_vectors(["m_new", "m_00"]) == {"m_new": tokens(5), "m_00": tokens(1)}
        b.set_status(["m_00"], SUPERSEDED)  # a status change
        assert "m_00" not in [i for i, _ in check()]
        assert "m_00" in [i for i, _ in check((ACTIVE, SUPERSEDED))]
        b.delete_memories(["m_01"])  # a deletion
        assert "m_01" not in [i for i, _ in check((ACTIVE, SUPERSEDED, INVALIDATED))]
        assert a.token_vectors(["m_01"]) == {}
        b.write(WriteBatch(entities=[make_entity("e_q", key="kq", vec=q)]))  # an entity
        assert check()  # (check compares the entities too)
        assert a.nearest_entities("u1", q, 1)[0][0] == "e_q"

        b.delete_user("u1")
        assert a.nearest_memories("u1", q, 10) == [] and a.nearest_entities("u1", q, 3) == []
        assert a.token_vectors(["m_02"]) == {}
        # the user again, with as many writes as before the deletion (a revision must never repeat)
        b.write(WriteBatch(memories=[memory("m_again", vecs[2])]))
        assert [i for i, _ in check()] == ["m_again"]
    finally:
        a.close()
        b.close()
        plain.close()


def test_another_process_writes_are_seen(clean: Any) -> None:
    """The same with a real second process: what it wrote and deleted is what the next search sees."""
    a = connect()
    vecs = vectors(12, 2)
    try:
        a.write(WriteBatch(memories=[memory(f"m_{j}", vecs[j]) for j in range(10)]))
        for _ in range(2):
            assert [i for i, _ in a.nearest_memories("u1", vecs[3], 1)] == ["m_3"]
        assert a._near.users() == ["u1"]
        script = f"""
import numpy as np
from graphstore.neo4j import Neo4jStore
from graphstore.records import WriteBatch
from graphstore.testing import make_memory
s = Neo4jStore({URI!r}, password={PASSWORD!r})
s.write(WriteBatch(memories=[make_memory("m_other", vec=np.array({vecs[11].tolist()!r}, dtype=np.float32))]))
s.delete_memories(["m_3"])
s.close()
"""
        subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True, timeout=120,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
        assert [i for i, _ in a.nearest_memories("u1", vecs[11], 1)] == ["m_other"]
        assert "m_3" not in [i for i, _ in a.nearest_memories("u1", vecs[3], 10)]
    finally:
        a.close()


def test_own_writes_update_the_cache_in_place(clean: Any) -> None:
    """This process's writes (adds, rewrites, statuses) change its cached vectors without a reload."""
    a = connect()
    vecs = vectors(30, 3)
    try:
        a.write(WriteBatch(memories=[memory(f"m_{j:02d}", vecs[j]) for j in range(20)]))
        for _ in range(2):
            a.nearest_memories("u1", vecs[0], 5)
            a.nearest_entities("u1", vecs[0], 5)
        loads = a._near.loads
        assert loads == 2
        a.write(WriteBatch(memories=[memory(f"m_{j:02d}", vecs[j]) for j in range(20, 30)],
                           entities=[make_entity("e_a", key="ka", vec=vecs[25])]))
        assert a.nearest_memories("u1", vecs[25], 1)[0][0] == "m_25"
        assert a.nearest_entities("u1", vecs[25], 1)[0][0] == "e_a"
        a.set_status(["m_25"], INVALIDATED)
        assert a.nearest_memories("u1", vecs[25], 1)[0][0] != "m_25"
        a.write(WriteBatch(memories=[memory("m_25", vecs[3], tv=9)]))  # (active again, another vector)
        assert [i for i, _ in a.nearest_memories("u1", vecs[3], 2)] in (["m_03", "m_25"], ["m_25", "m_03"])
        assert a._near.loads == loads
        assert a.token_vectors(["m_25"]) == {"m_25": tokens(9)}
    finally:
        a.close()


def test_concurrent_writers_never_lose_a_revision(clean: Any) -> None:
    """Each write bumps the user's revision once, however many clients write at the same time."""
    stores = [connect(near_cache_mb=0) for _ in range(4)]
    vecs = vectors(40, 4)
    try:
        stores[0].write(WriteBatch(memories=[memory("m_first", vecs[0])]))
        (before,) = stores[0].cypher("MATCH (x:Lexicon {user_id: 'u1'}) RETURN x.rev")[1][0]

        def work(n: int) -> None:
            for j in range(8):
                stores[n].write(WriteBatch(memories=[memory(f"m_{n}_{j}", vecs[n * 8 + j])]))

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        (after,) = stores[0].cypher("MATCH (x:Lexicon {user_id: 'u1'}) RETURN x.rev")[1][0]
        assert after - before == 32
    finally:
        for s in stores:
            s.close()


def _size_of(store: Neo4jStore, user: str) -> int:
    size = store._near.size(user, "Memory")
    assert size is not None
    return size


def test_lru_by_bytes_admits_the_more_used_user(clean: Any) -> None:
    """With room for one user: a user searched less often than the cached one is served by the server
    (correctly) and does not evict it; once searched more often, it takes the place."""
    vecs = vectors(60, 5)
    writer = connect(near_cache_mb=0)
    writer.write(WriteBatch(memories=[memory(f"m_a{j}", vecs[j], user="a") for j in range(30)]
                 + [memory(f"m_b{j}", vecs[30 + j], user="b") for j in range(30)]))
    probe = connect()
    for _ in range(2):
        probe.nearest_memories("a", vecs[0], 1)
    one_user = _size_of(probe, "a")
    probe.close()
    a = connect(near_cache_mb=1.5 * one_user / 2**20)
    try:
        for _ in range(3):
            assert a.nearest_memories("a", vecs[0], 1)[0][0] == "m_a0"
        assert a._near.users() == ["a"]
        assert a.nearest_memories("b", vecs[31], 1)[0][0] == "m_b1"  # from the server
        assert a._near.users() == ["a"]
        for _ in range(4):
            assert a.nearest_memories("b", vecs[32], 1)[0][0] == "m_b2"
        assert a._near.users() == ["b"]
        assert a._near.nbytes <= a._near.budget
        assert a.nearest_memories("a", vecs[5], 1)[0][0] == "m_a5"
        # token vectors fill what is left and give way first
        a.token_vectors([f"m_b{j}" for j in range(30)])
        assert a._near.nbytes <= a._near.budget
    finally:
        a.close()
        writer.close()


def test_a_user_another_process_writes_all_the_time_is_not_reloaded_each_search(clean: Any) -> None:
    """Between every two searches another client writes: the user stays on the server's searches."""
    a, b = connect(), connect()
    vecs = vectors(30, 9)
    try:
        b.write(WriteBatch(memories=[memory(f"m_{j}", vecs[j]) for j in range(10)]))
        for j in range(10, 20):
            assert a.nearest_memories("u1", vecs[j - 1], 1)[0][0] == f"m_{j - 1}"
            b.write(WriteBatch(memories=[memory(f"m_{j}", vecs[j])]))
        assert a._near.loads == 0
        for _ in range(2):  # quiet again: loaded at the second search
            assert a.nearest_memories("u1", vecs[19], 1)[0][0] == "m_19"
        assert a._near.loads == 1
    finally:
        a.close()
        b.close()


def test_a_user_bigger_than_the_budget_is_searched_on_the_server(clean: Any) -> None:
    vecs = vectors(30, 6)
    a = connect(near_cache_mb=0.001)
    try:
        a.write(WriteBatch(memories=[memory(f"m_{j}", vecs[j]) for j in range(30)]))
        assert a.nearest_memories("u1", vecs[7], 1)[0][0] == "m_7"
        assert a._near.users() == [] and a._near.nbytes == 0
    finally:
        a.close()


def test_disabled_cache_keeps_nothing(clean: Any) -> None:
    a = connect(near_cache_mb=0)
    vecs = vectors(10, 7)
    try:
        a.write(WriteBatch(memories=[memory(f"m_{j}", vecs[j]) for j in range(10)]))
        assert a.nearest_memories("u1", vecs[4], 1)[0][0] == "m_4"
        assert a.token_vectors(["m_4"]) == {"m_4": tokens(1)}
        assert not a._near.enabled and a._near.users() == [] and a._near.loads == 0
    finally:
        a.close()


@pytest.mark.anyio
async def test_async_store_shares_the_cache_plans(clean: Any) -> None:
    vecs = vectors(10, 8)
    a = AsyncNeo4jStore(URI, password=PASSWORD)
    b = connect()
    try:
        await a.write(WriteBatch(memories=[memory(f"m_{j}", vecs[j]) for j in range(10)]))
        for _ in range(2):
            assert (await a.nearest_memories("u1", vecs[4], 1))[0][0] == "m_4"
        assert a._near.users() == ["u1"]
        b.delete_memories(["m_4"])
        assert (await a.nearest_memories("u1", vecs[4], 1))[0][0] != "m_4"
    finally:
        await a.aclose()
        b.close()


def _until(check: Any, seconds: float = 30.0) -> None:
    import time

    end = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < end, "the load beside never came in"
        time.sleep(0.02)


def test_a_big_user_is_loaded_beside_the_searches(clean: Any) -> None:
    """A user of at least ``near_load_beside_rows`` vectors is loaded in the background: the search that
    starts the load, and those until it is in, are the server's (and give what a store without a cache
    gives), one load at a time; then the cache answers, still coherent with writes."""
    a, plain = connect(near_load_beside_rows=20), connect(near_cache_mb=0)
    vecs = vectors(40, 11)
    started = threading.Event()
    release = threading.Event()
    load = a._plan_near_load

    def slow_load(*args: Any) -> Any:  # the load waits until the test lets it go
        started.set()
        release.wait(30)
        return (yield from load(*args))

    a._plan_near_load = slow_load  # type: ignore[method-assign]
    try:
        a.write(WriteBatch(memories=[memory(f"m_{j:02d}", vecs[j]) for j in range(30)]))
        for j in range(4):  # the second starts the load; none of them waits for it
            assert same(a.nearest_memories("u1", vecs[j], 5), plain.nearest_memories("u1", vecs[j], 5))
        assert started.wait(30) and a._loading == {("u1", "Memory")} and a._near.users() == []
        release.set()
        _until(lambda: a._near.users() == ["u1"] and not a._loading)
        assert a._near.loads == 1
        assert same(a.nearest_memories("u1", vecs[5], 5), plain.nearest_memories("u1", vecs[5], 5))
        assert a._near.loads == 1  # (from the cache)
        plain.write(WriteBatch(memories=[memory("m_new", vecs[35])]))
        assert a.nearest_memories("u1", vecs[35], 1)[0][0] == "m_new"
    finally:
        release.set()
        a.close()
        plain.close()


@pytest.mark.anyio
async def test_the_async_store_loads_a_big_user_beside_too(clean: Any) -> None:
    import anyio

    vecs = vectors(40, 12)
    a = AsyncNeo4jStore(URI, password=PASSWORD, near_load_beside_rows=20)
    plain = connect(near_cache_mb=0)
    try:
        await a.write(WriteBatch(memories=[memory(f"m_{j:02d}", vecs[j]) for j in range(30)]))
        for j in range(3):
            assert same(await a.nearest_memories("u1", vecs[j], 5), plain.nearest_memories("u1", vecs[j], 5))
        with anyio.fail_after(30):
            while a._near.users() != ["u1"] or a._loading:
                await anyio.sleep(0.02)
        assert same(await a.nearest_memories("u1", vecs[6], 5), plain.nearest_memories("u1", vecs[6], 5))
        assert a._near.loads == 1 and not a._loads
    finally:
        await a.aclose()
        plain.close()


def test_warm_loads_a_user_now_whatever_its_size(clean: Any) -> None:
    """``warm`` (SupportsWarm) loads both kinds of vectors before returning, a big user too; the next
    searches are the cache's; a user over the budget or without vectors is left alone."""
    vecs = vectors(40, 13)
    a, plain = connect(near_load_beside_rows=20), connect(near_cache_mb=0)
    try:
        a.write(WriteBatch(memories=[memory(f"m_{j:02d}", vecs[j]) for j in range(30)],
                           entities=[make_entity(f"e_{j}", key=f"k{j}", vec=vecs[j]) for j in range(5)]))
        a.warm("nobody")
        assert a._near.users() == []
        a.warm("u1")
        assert a._near.users() == ["u1"] and a._near.loads == 2 and not a._loading
        assert same(a.nearest_memories("u1", vecs[3], 5), plain.nearest_memories("u1", vecs[3], 5))
        assert same(a.nearest_entities("u1", vecs[2], 2), plain.nearest_entities("u1", vecs[2], 2))
        a.warm("u1")
        assert a._near.loads == 2  # (nothing to load again)
    finally:
        a.close()
        plain.close()
    small = connect(near_cache_mb=0.001)
    try:
        small.warm("u1")
        assert small._near.users() == []
    finally:
        small.close()


@pytest.mark.anyio
async def test_the_async_store_warms_too(clean: Any) -> None:
    vecs = vectors(10, 14)
    a = AsyncNeo4jStore(URI, password=PASSWORD, near_load_beside_rows=5)
    try:
        await a.write(WriteBatch(memories=[memory(f"m_{j}", vecs[j]) for j in range(10)]))
        await a.warm("u1")
        assert a._near.users() == ["u1"] and a._near.loads == 2  # (memories, and no entity vectors)
        assert (await a.nearest_memories("u1", vecs[4], 1))[0][0] == "m_4" and a._near.loads == 2
    finally:
        await a.aclose()


def test_the_setting_reaches_the_store(clean: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``RIPPLE_NEO4J_NEAR_CACHE_MB`` (settings) and ``open_store(near_cache_mb=...)`` size the cache."""
    from graphstore import Credentials, open_store
    from ripple import RippleSettings

    monkeypatch.setenv("RIPPLE_NEO4J_NEAR_CACHE_MB", "0")
    off = open_store(URI, **RippleSettings(neo4j_password=PASSWORD).store_options())
    on = open_store(URI, credentials=Credentials(password=PASSWORD), near_cache_mb=3)
    default = open_store(URI, credentials=Credentials(password=PASSWORD))
    try:
        assert isinstance(off, Neo4jStore) and not off._near.enabled
        assert isinstance(on, Neo4jStore) and on._near.budget == 3 * 2**20
        assert isinstance(default, Neo4jStore) and default._near.budget == 512 * 2**20
    finally:
        for s in (off, on, default):
            s.close()


def _counting(store: Neo4jStore) -> list[bool]:
    """Every transaction the store runs from now on, as its ``write`` flag (one round trip per read)."""
    runs: list[bool] = []
    inner = store._transaction

    def counted(step: Any) -> Any:
        runs.append(step.write)
        return inner(step)

    store._transaction = counted  # type: ignore[method-assign]
    return runs


@pytest.mark.parametrize("user", ["u1", "用户甲"])
def test_the_user_state_read_stands_for_the_next_searchs_revision_read(clean: Any, user: str) -> None:
    """``get_user_state`` (a recall's first read) also reads the user's revision: the user's next cached
    search in the same operation (graphstore.scope) needs no read of its own, answers as a search that
    reads, and sees every write committed before the state read (by another client too); once used, after
    this store's own write, or outside an operation's scope, a search reads the revision again."""
    from graphstore.scope import operation_scope

    a, b, plain = connect(), connect(), connect(near_cache_mb=0)
    vecs = vectors(20, 3)
    q = vecs[0] + 0.1 * vecs[1]
    q /= np.linalg.norm(q)
    try:
        b.write(WriteBatch(memories=[memory(f"m_{j:02d}", vecs[j], user=user) for j in range(12)]))
        a.nearest_memories(user, q, 5)
        a.nearest_memories(user, q, 5)  # (loaded at its second search at one revision)
        assert a._near.users() == [user]
        runs = _counting(a)
        a.get_user_state(user)
        a.nearest_memories(user, q, 5)
        assert len(runs) == 2  # (no scope: the search reads the revision)
        runs.clear()
        with operation_scope():
            state = a.get_user_state(user)
            assert state.memories and not state.multilingual and len(runs) == 1
            got = a.nearest_memories(user, q, 5)
            assert len(runs) == 1 and same(got, plain.nearest_memories(user, q, 5))  # no revision read
            a.nearest_memories(user, q, 5)
            assert len(runs) == 2  # the state read stood for one search only
        with operation_scope():
            a.nearest_memories(user, q, 5)
            assert len(runs) == 3  # (a new operation: the last one's read stands for nothing)

        with operation_scope():
            b.write(WriteBatch(memories=[memory("m_new", q, user=user)]))  # another client, before the state read
            a.get_user_state(user)
            runs.clear()
            got = a.nearest_memories(user, q, 5)
            assert got[0] == ("m_new", pytest.approx(1.0, abs=1e-6)) and same(got, plain.nearest_memories(user, q, 5))
            assert 1 <= len(runs)  # (the cached entry was behind the state read's revision: it reads)

        a.nearest_memories(user, q, 5)  # (reloaded at its second search at the new revision)
        assert a._near.users() == [user]
        with operation_scope():
            a.get_user_state(user)
            a.write(WriteBatch(memories=[memory("m_own", -q, user=user)]))  # this store, after the state read
            runs.clear()
            far = a.nearest_memories(user, -q, 1)
            assert far[0][0] == "m_own" and runs == [False]  # the revision is read again (own write moved it)
        assert a.get_user_state("nobody") == a.get_user_state("无人")
    finally:
        for s in (a, b, plain):
            s.close()


class _SlowQueries:
    """A hash embedder whose encoding takes 0.2 s and says when it starts (the model's work a recall's first
    read should overlap), and the event it says it with."""

    def __init__(self) -> None:
        from ripple.embedding import HashEmbedder

        self.encoding = threading.Event()
        encoding = self.encoding

        class Slow(HashEmbedder):
            def encode_with_tokens(self, texts: Any) -> Any:
                encoding.set()
                time.sleep(0.2)  # (long enough for the first read to come back before the dense search)
                return super().encode_with_tokens(texts)

        self.embedder = Slow(dim=DIM)


_FOUR = ["Dana from Northwind called about the invoice.", "The invoice is due Friday.",
         "Lagos office hires Dana's team.", "Northwind moved the deadline to June."]


def _watched(base: type, slow: _SlowQueries) -> Any:
    """``base`` (a Neo4j store class) counting its revision reads and, while ``watching``, noting at each user
    check whether the query's encoding had started (waiting up to 5 s for it: the old order, which reads
    first and encodes after, times out)."""

    class Watched(base):  # type: ignore[misc, valid-type]
        overlapped: list[bool] = []
        watching = False
        revision_reads = 0

        def _plan_revision(self, user_id: str) -> Any:
            Watched.revision_reads += 1
            return (yield from super()._plan_revision(user_id))

    if base is Neo4jStore:
        def get_user_state(self: Any, user_id: str) -> Any:
            if Watched.watching:
                Watched.overlapped.append(slow.encoding.wait(5.0))
            return Neo4jStore.get_user_state(self, user_id)
    else:
        async def get_user_state(self: Any, user_id: str) -> Any:
            import anyio

            if Watched.watching:
                Watched.overlapped.append(await anyio.to_thread.run_sync(slow.encoding.wait, 5.0))
            return await AsyncNeo4jStore.get_user_state(self, user_id)
    Watched.get_user_state = get_user_state
    return Watched


def _want() -> list[tuple[str, float]]:
    """The hits of the query the tests below ask, from a plain client (the old order)."""
    from ripple import Memory
    from ripple.embedding import HashEmbedder

    with Memory(store=connect(), embedder=HashEmbedder(dim=DIM)) as plain:
        for text in _FOUR:
            plain.add(text, user_id="u1", session_id="s1")
        want = plain.recall("When is the invoice due?", user_id="u1", k=3, touch=False)
    return [(h.memory.id, h.score) for h in want.hits]


def test_a_recall_with_its_model_loaded_reads_the_user_while_the_query_is_encoded(clean: Any) -> None:
    """Once the query's models are loaded, a recall starts the query's encoding before its first read (the
    user check), so that the read waits on the server while the model works; the dense search in the
    encoder's thread and the walk still stand on that read's revision (no revision read of their own); the
    hits are the old order's; and an unknown user's recall loads no model."""
    from ripple import Memory

    want = _want()
    slow = _SlowQueries()
    Watched = _watched(Neo4jStore, slow)
    with Memory(store=Watched(URI, password=PASSWORD), embedder="hash-%d" % DIM) as fresh:
        assert not fresh.recall("anything?", user_id="nobody").hits and fresh._runtime._embedder is None
    store = Watched(URI, password=PASSWORD)
    with Memory(store=store, embedder=slow.embedder) as mem:
        store.warm("u1")
        Watched.watching, Watched.revision_reads = True, 0
        slow.encoding.clear()
        got = mem.recall("When is the invoice due?", user_id="u1", k=3, touch=False)
        assert Watched.overlapped == [True] and Watched.revision_reads == 0
        assert [(h.memory.id, h.score) for h in got.hits] == want


@pytest.mark.anyio
async def test_an_async_recall_reads_the_user_while_the_query_is_encoded_too(clean: Any) -> None:
    """The same with ``AsyncMemory`` on the async store (the dense search runs on the event loop)."""
    from ripple import AsyncMemory

    want = _want()
    slow = _SlowQueries()
    Watched = _watched(AsyncNeo4jStore, slow)
    store = Watched(URI, password=PASSWORD)
    async with AsyncMemory(store=store, embedder=slow.embedder) as mem:
        await store.warm("u1")
        Watched.watching, Watched.revision_reads = True, 0
        slow.encoding.clear()
        got = await mem.recall("When is the invoice due?", user_id="u1", k=3, touch=False)
        assert Watched.overlapped == [True] and Watched.revision_reads == 0
        assert [(h.memory.id, h.score) for h in got.hits] == want


# -- the near graph (graphstore.neargraph): the walk edges of a cached user -----------------------------
class _WalksFromItsNearGraph(Neo4jStore):
    """A store that brings its near graph up to the user's revision (``warm``) before each neighbourhood
    read, so that the conformance suite's walk tests read their neighbourhoods from it."""

    answered = 0

    def neighbourhoods(self, user_id: str, asks: Any) -> Any:
        self.warm(user_id)
        key = self._near.entry_key(user_id)
        if key is not None and self._near.graph(user_id, key) is not None:
            self.answered += 1
        return super().neighbourhoods(user_id, asks)

    def neighbourhood(self, user_id: str, sources: Any, edge_types: Any, **options: Any) -> Any:
        from graphstore.records import NeighbourhoodAsk

        return self.neighbourhoods(user_id, [NeighbourhoodAsk(sources, edge_types, **options)])[0]


class TestWalksFromTheNearGraph:
    """The conformance suite's walk tests (:class:`~graphstore.testing.GraphStoreConformance`) with every
    neighbourhood read answered by the store's near graph: the same rows, in the same order, as the
    server's ``expand`` (cycles, self-loops, RELATED both ways, hubs, labels, another user)."""

    _seed_graph = GraphStoreConformance._seed_graph
    _seed_walks = GraphStoreConformance._seed_walks
    test_expand_walk_matches_expand_per_hop = GraphStoreConformance.test_expand_walk_matches_expand_per_hop
    test_expand_walks_match_each_walk = GraphStoreConformance.test_expand_walks_match_each_walk
    test_neighbourhood_rows_are_expand_rows = GraphStoreConformance.test_neighbourhood_rows_are_expand_rows
    test_walks_through_cycles_loops_and_both_ways = GraphStoreConformance.test_walks_through_cycles_loops_and_both_ways

    @pytest.fixture
    def store(self, clean: Any) -> Iterator[_WalksFromItsNearGraph]:
        s = _WalksFromItsNearGraph(URI, password=PASSWORD)
        yield s
        assert s.answered > 0  # (the walks did read the near graph)
        s.close()


def _walk_graph(store: Neo4jStore, vecs: np.ndarray, user: str = "u1") -> None:
    """Memories with vectors, a session chain, entities (one a hub, one a DATE) and RELATED edges."""
    from graphstore.records import EDGE_MENTIONS, EDGE_NEXT, EDGE_RELATED, EdgeRecord

    mems = [memory(f"m_{j:02d}", vecs[j], user=user) for j in range(12)]
    ents = [make_entity(f"e_{j}", user=user, key=f"k{j}", vec=vecs[j]) for j in range(4)]
    ents.append(dataclasses.replace(make_entity("e_day", user=user, key="monday"), label="DATE"))
    edges = [EdgeRecord(f"m_{j:02d}", EDGE_NEXT, f"m_{j + 1:02d}", user, 1.0) for j in range(11)]
    edges += [EdgeRecord(f"m_{j:02d}", EDGE_MENTIONS, f"e_{j % 4}", user, 1.0) for j in range(12)]
    edges += [EdgeRecord(f"m_{j:02d}", EDGE_MENTIONS, "e_0", user, 1.0) for j in range(1, 12, 2)]
    edges += [EdgeRecord("m_03", EDGE_MENTIONS, "e_day", user, 1.0),
              EdgeRecord("e_1", EDGE_RELATED, "e_2", user, 2.0, predicate="knows")]
    store.write(WriteBatch(memories=mems, entities=ents, edges=edges))


def _asks() -> list[Any]:
    from graphstore.records import EDGE_MENTIONS, EDGE_NEXT, EDGE_RELATED, NeighbourhoodAsk

    return [NeighbourhoodAsk(["m_00", "m_05"], [EDGE_NEXT], 2),
            NeighbourhoodAsk(["m_01", "m_02", "m_03"], [EDGE_MENTIONS], 1, 5, ("PERSON", "ORG")),
            NeighbourhoodAsk(["m_04"], [EDGE_MENTIONS, EDGE_RELATED], 2, None, None)]


def test_the_near_graph_answers_walks_at_its_revision_only(clean: Any) -> None:
    """A warmed store answers neighbourhood reads from its near graph (one revision read, no walk on the
    server) with what the server answers; another client's write is seen at the next read (the graph is
    behind: the server answers); this store's own write drops the graph, and the next recall's vectors
    current again bring it back beside the reads."""
    from graphstore.records import EDGE_MENTIONS, EdgeRecord

    vecs = vectors(20, 21)
    a, b, plain = connect(), connect(), connect(near_graph=False)
    try:
        _walk_graph(b, vecs)
        assert not a.walks_locally("u1")
        a.warm("u1")
        assert a._near.graph_loads == 1 and plain._near.graph_loads == 0
        assert a.walks_locally("u1") and not plain.walks_locally("u1") and not a.walks_locally("nobody")
        runs = _counting(a)
        assert a.neighbourhoods("u1", _asks()) == plain.neighbourhoods("u1", _asks())
        assert len(runs) == 1  # (the revision read; the walks were this process's)

        b.write(WriteBatch(edges=[EdgeRecord("m_00", EDGE_MENTIONS, "e_3", "u1", 1.0)]))  # another client
        got = a.neighbourhoods("u1", _asks())
        assert got == plain.neighbourhoods("u1", _asks())
        assert "m_00" in {r.target for r in got[1]["e_3"]}

        a.warm("u1")
        assert a._near.graph_loads == 2
        a.write(WriteBatch(edges=[EdgeRecord("m_05", EDGE_MENTIONS, "e_3", "u1", 1.0)]))  # this store
        key = a._near.entry_key("u1")
        assert key is not None and a._near.graph("u1", key) is None  # (dropped: not updated in place)
        assert not a.walks_locally("u1")
        assert a.neighbourhoods("u1", _asks()) == plain.neighbourhoods("u1", _asks())
        assert not a._loading  # (one walk at the new revision: a writer between every two walks loads nothing)
        assert a.neighbourhoods("u1", _asks()) == plain.neighbourhoods("u1", _asks())
        _until(lambda: a._near.graph_loads == 3 and not a._loading)  # (the second: loaded beside it)
        runs.clear()
        assert a.neighbourhoods("u1", _asks()) == plain.neighbourhoods("u1", _asks()) and len(runs) == 1
        loads = a._near.graph_loads
        for j in range(3):  # an agent that writes between every two recalls: no reload started for nothing
            a.write(WriteBatch(edges=[EdgeRecord(f"m_0{j}", EDGE_MENTIONS, "e_2", "u1", 1.0)]))
            assert a.neighbourhoods("u1", _asks()) == plain.neighbourhoods("u1", _asks())
        assert a._near.graph_loads == loads and not a._loading
        assert a.neighbourhoods("nobody", _asks()) == plain.neighbourhoods("nobody", _asks())
    finally:
        for s in (a, b, plain):
            s.close()


def test_recall_over_the_near_graph_is_the_servers(clean: Any) -> None:
    """Whole recalls (through ``Memory``) from a store whose walks read its near graph rank and score as
    the same store reading them on the server: hits, scores, channels and paths."""
    from ripple import Memory
    from ripple.embedding import HashEmbedder

    with Memory(store=connect(near_graph=False), embedder=HashEmbedder(dim=DIM)) as server:
        for n, text in enumerate(["Dana from Northwind called about the invoice.", "The invoice is due Friday.",
                                  "Lagos office hires Dana's team.", "Northwind moved the deadline to June.",
                                  "Friday lunch with the Lagos team.", "Dana likes the new Northwind office."]):
            server.add(text, user_id="u1", session_id="s1" if n < 3 else "s2")
        server.store.warm("u1")
        with Memory(store=connect(), embedder=HashEmbedder(dim=DIM)) as near:
            near.store.warm("u1")
            assert near.store._near.graph_loads == 1
            for q in ("When is the invoice due?", "Who is Dana?", "What happened in Lagos?"):
                want = server.recall(q, user_id="u1", k=5, touch=False)
                got = near.recall(q, user_id="u1", k=5, touch=False)
                assert [(h.memory.id, h.score, h.via, [s.target for s in h.path]) for h in got.hits] == [
                    (h.memory.id, h.score, h.via, [s.target for s in h.path]) for h in want.hits], q


@pytest.mark.anyio
async def test_the_async_store_walks_its_near_graph_too(clean: Any) -> None:
    """The async store shares the near graph's plans: ``warm`` loads it, walks read it (one revision read),
    and a walk after its own write is the server's while the graph comes back beside it."""
    from graphstore.records import EDGE_MENTIONS, EdgeRecord

    import anyio

    vecs = vectors(20, 22)
    a = AsyncNeo4jStore(URI, password=PASSWORD)
    plain = connect(near_graph=False)
    try:
        _walk_graph(plain, vecs)
        await a.warm("u1")
        assert a._near.graph_loads == 1
        assert await a.neighbourhoods("u1", _asks()) == plain.neighbourhoods("u1", _asks())
        await a.write(WriteBatch(edges=[EdgeRecord("m_07", EDGE_MENTIONS, "e_1", "u1", 1.0)]))
        for _ in range(2):  # (the second walk at the new revision starts the load)
            assert await a.neighbourhoods("u1", _asks()) == plain.neighbourhoods("u1", _asks())
        with anyio.fail_after(30):
            while a._near.graph_loads < 2 or a._loading:
                await anyio.sleep(0.02)
        assert await a.neighbourhoods("u1", _asks()) == plain.neighbourhoods("u1", _asks())
    finally:
        await a.aclose()
        plain.close()


@pytest.mark.anyio
async def test_the_async_store_builds_its_caches_off_the_event_loop(clean: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Building a near-cache part from the rows a load read (a second or more for a big user) runs in a
    worker thread: the event loop keeps serving while the async store warms (or loads beside)."""
    import time

    import anyio

    from graphstore.neargraph import NearGraph

    build = NearGraph.from_rows

    def slow_build(cls: Any, *rows: Any) -> NearGraph:
        time.sleep(0.3)  # (a big user's build, holding whatever thread runs it)
        return build(*rows)

    monkeypatch.setattr(NearGraph, "from_rows", classmethod(slow_build))
    vecs = vectors(20, 23)
    a = AsyncNeo4jStore(URI, password=PASSWORD)
    try:
        writer = connect()
        _walk_graph(writer, vecs)
        writer.close()
        gaps: list[float] = []

        async def tick() -> None:
            last = time.monotonic()
            while True:
                await anyio.sleep(0.01)
                now = time.monotonic()
                gaps.append(now - last)
                last = now

        async with anyio.create_task_group() as tg:
            tg.start_soon(tick)
            await a.warm("u1")
            await anyio.sleep(0.05)  # (the ticker's next tick: after a build that held the loop, 0.3 s late)
            tg.cancel_scope.cancel()
        assert a._near.graph_loads == 1 and max(gaps) < 0.25, max(gaps)  # (never held for the build's 0.3 s)
    finally:
        await a.aclose()
