"""The sharded store over embedded stores (fast; the same store over two real Neo4j servers is
tests/graphstore/test_sharded_neo4j.py): the conformance suite sync and async, the hash, id routing
without fan-out on the hot path, moves (crash at every step, resume, abort, writes that wait, a
stale writer caught), ring changes, a down shard, and ``ripple shards``."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

import graphstore._shardmove as shardmove
from graphstore import AsyncGraphStore, GraphStore, SupportsShards, open_store, store_exists
from graphstore._routing import DIRECTORY_KEY, DIRECTORY_USER, Routing, rendezvous
from graphstore._shardmove import fingerprint
from graphstore.records import EDGE_MENTIONS, EDGE_NEXT, DocumentRecord, EdgeRecord, WriteBatch
from graphstore.sharded import AsyncShardedStore, ShardedStore, parse_sharded_uri
from graphstore.sqlite import SQLiteStore
from graphstore.testing import BlockingStore, GraphStoreConformance, ThreadedAsyncStore, make_entity, make_memory, unit_vector
from ripple.errors import ConfigError, StoreError, StoreUnavailable

NAMES = ["a", "b"]  # the conformance suite's users: u1 hashes to shard a, u2 to shard b


def sharded(root: Path, names: list[str] = NAMES, **options: Any) -> ShardedStore:
    options.setdefault("refresh", 0.05)
    options.setdefault("grace", 0.15)
    return ShardedStore([SQLiteStore(root / n) for n in names], names=names, **options)


def shard_store(store: ShardedStore, name: str) -> GraphStore:
    """One shard, behind the sharded store's back."""
    return store._shard(name)


def users_of(store: ShardedStore, name: str) -> list[str]:
    return shard_store(store, name).users()


class TestShardedStore(GraphStoreConformance):
    """The whole contract over two SQLite shards; the suite's two users live on different shards."""

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[GraphStore]:
        assert (rendezvous("u1", NAMES), rendezvous("u2", NAMES)) == ("a", "b")
        s = sharded(tmp_path)
        yield s
        s.close()

    @pytest.fixture
    def reopen(self, tmp_path: Path) -> Callable[[], GraphStore]:
        return lambda: sharded(tmp_path)


class TestAsyncShardedStore(GraphStoreConformance):
    """The async twin runs the same plans: the suite through BlockingStore, shards in worker threads."""

    @staticmethod
    def _open(root: Path) -> GraphStore:
        shards = [ThreadedAsyncStore(SQLiteStore(root / n)) for n in NAMES]
        return BlockingStore(AsyncShardedStore(shards, names=NAMES, refresh=0.05, grace=0.15))  # type: ignore[return-value]

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[GraphStore]:
        s = self._open(tmp_path)
        yield s
        s.close()

    @pytest.fixture
    def reopen(self, tmp_path: Path) -> Callable[[], GraphStore]:
        return lambda: self._open(tmp_path)


# -- the hash ------------------------------------------------------------------------------------------------
def test_the_hash_is_stable_across_processes_and_versions() -> None:
    """Routing must never change silently: these placements were computed once and are fixed forever."""
    ring = ["db1:7687", "db2:7687", "db3:7687"]
    got = {u: rendezvous(u, ring) for u in ("alice", "bob", "张伟", "u1", "\udcff")}
    assert got == {"alice": "db2:7687", "bob": "db2:7687", "张伟": "db3:7687", "u1": "db2:7687",
                   "\udcff": "db3:7687"}


def test_users_spread_evenly_and_a_new_shard_takes_only_its_share() -> None:
    users = [f"user-{i}" for i in range(3000)]
    three = ["a:1", "b:1", "c:1"]
    counts = {n: sum(rendezvous(u, three) == n for u in users) for n in three}
    assert all(900 <= c <= 1100 for c in counts.values()), counts
    four = [*three, "d:1"]
    changed = [u for u in users if rendezvous(u, three) != rendezvous(u, four)]
    assert 600 <= len(changed) <= 900  # about a quarter
    assert all(rendezvous(u, four) == "d:1" for u in changed)  # and every one of them goes to the new shard


def test_uri_forms() -> None:
    assert parse_sharded_uri("bolt+s+shards://db1, db2:7700/") == (
        ["db1:7687", "db2:7700"], ["bolt+s://db1:7687", "bolt+s://db2:7700"])
    for bad in ("neo4j+shards://", "neo4j+shards://u:p@db1", "http+shards://db1", "shards:", "neo4j+shards://a/b"):
        with pytest.raises(ConfigError):
            parse_sharded_uri(bad)
    with pytest.raises(ConfigError, match="distinct"):
        open_store("shards:memory://;memory://")


def test_open_store_opens_sharded_stores(tmp_path: Path) -> None:
    s = open_store(f"shards:{tmp_path / 'a'};sqlite://{tmp_path / 'b'}", refresh=0.5)
    assert isinstance(s, ShardedStore) and isinstance(s, SupportsShards) and isinstance(s, GraphStore)
    assert s.refresh == 0.5
    assert s.names == (str(tmp_path / "a"), f"sqlite://{tmp_path / 'b'}")
    s.close()
    a = open_store(f"shards:{tmp_path / 'a'};{tmp_path / 'b'}", asynchronous=True)
    assert isinstance(a, AsyncShardedStore) and isinstance(a, AsyncGraphStore)



def test_a_store_that_must_exist_creates_no_shard(tmp_path: Path) -> None:
    """``create=False`` (read commands) reaches every shard: a typo in a sharded URI is an error naming the
    path, and nothing is created; the store exists once every shard does."""
    uri = f"shards:{tmp_path / 'a'};{tmp_path / 'b'}"
    assert not store_exists(uri)
    s = open_store(uri, create=False)
    with pytest.raises(StoreUnavailable, match="no ripple store at"):
        s.users()
    s.close()
    assert not tmp_path.joinpath("a").exists() and not tmp_path.joinpath("b").exists()
    s = open_store(uri)
    s.write(WriteBatch(memories=[make_memory("m1", "u1", "用户一的记忆"), make_memory("m2", "u2", "memory of u2")]))
    s.close()
    assert store_exists(uri) and not store_exists(f"{uri};{tmp_path / 'c'}")
    s = open_store(uri, create=False)
    assert sorted(s.users()) == ["u1", "u2"]
    s.close()

# -- routing by id: one shard on the hot path ------------------------------------------------------------------
class Counting:
    """A shard that counts the protocol calls it answers."""

    def __init__(self, store: GraphStore) -> None:
        self.store, self.calls = store, []
        self.uri = store.uri

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.store, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return attr(*args, **kwargs)

        return counted


def _counting(root: Path) -> tuple[ShardedStore, dict[str, Counting]]:
    shards = {n: Counting(SQLiteStore(root / n)) for n in NAMES}
    return ShardedStore(list(shards.values()), names=NAMES, refresh=60.0), shards  # type: ignore[list-item]


def test_a_recall_asks_only_the_users_shard(tmp_path: Path) -> None:
    """Memory.add / recall / get / forget on a sharded store: every call of user u2 goes to u2's shard,
    including the id-only ones (get_memories, token_vectors, entity_names, touch, set_status)."""
    from extractors import GazetteerExtractor
    from ripple import Memory
    from ripple.embedding import HashEmbedder

    store, shards = _counting(tmp_path)
    gaz = GazetteerExtractor({"Dana": "PERSON", "Northwind": "ORG", "张伟": "PERSON"})
    with Memory(store=store, embedder=HashEmbedder(64), extractor=gaz) as mem:
        mem.add("Dana runs procurement at Northwind.", user_id="u2", session_id="s")
        mem.add("张伟在北京的Northwind工作。", user_id="u2", session_id="s")
        before = len(shards["a"].calls)
        res = mem.recall("who runs procurement?", user_id="u2", k=2)
        assert res.hits and res.hits[0].memory.text.startswith("Dana")
        got = mem.get(res.hits[0].memory.id)
        mem.forget(got.id)
        assert shards["a"].calls[before:] == []  # the other shard saw nothing
        assert {"get_memories", "touch", "set_status"} <= set(shards["b"].calls)
    # a fresh process has not seen the id: it asks every shard once, then knows
    again, shards = _counting(tmp_path)
    assert again.get_memories([got.id])[0].user_id == "u2"
    assert shards["a"].calls.count("get_memories") == 1
    again.get_memories([got.id])
    again.token_vectors([got.id])
    assert shards["a"].calls.count("get_memories") == 1 and "token_vectors" not in shards["a"].calls
    again.close()


def test_id_calls_across_shards_and_unknown_ids(tmp_path: Path) -> None:
    with sharded(tmp_path) as s:
        s.write(WriteBatch(memories=[make_memory("m_a", user="u1"), make_memory("m_b", user="u2")],
                           entities=[make_entity("e_a", user="u1"), make_entity("e_b", user="u2", key="张伟")]))
        assert users_of(s, "a") == ["u1"] and users_of(s, "b") == ["u2"]
    with sharded(tmp_path) as s:  # a new process: nothing known by id
        assert [m.id for m in s.get_memories(["m_b", "nope", "m_a", "m_b"])] == ["m_b", "m_a", "m_b"]
        assert s.entity_names(["e_b", "e_a", "nope"]) == {"e_b": "张伟", "e_a": "A"}
        assert set(s.token_vectors(["m_a", "m_b"])) == {"m_a", "m_b"}
        assert s.set_status(["m_a", "m_b", "nope"], "invalidated") == 2
        s.touch(["m_a", "m_a"], 5.0)
        assert s.get_memories(["m_a"])[0].access_count == 2
        assert s.delete_memories(["m_a", "m_b", "nope"])["memories"] == 2
        assert s.delete_memories(["nope"]) == {"memories": 0, "edges": 0}


# -- a down shard ------------------------------------------------------------------------------------------------------
def _down() -> GraphStore:
    raise StoreUnavailable("cannot reach Neo4j at bolt://down:7687 (is the server running?)")


def test_a_down_shard_fails_only_its_users(tmp_path: Path) -> None:
    with sharded(tmp_path) as s:  # the deployment ran once with both shards up: the table exists on both
        s.write(WriteBatch(memories=[make_memory("m_a", user="u1"), make_memory("m_b", user="u2")]))
    b_down = ShardedStore([SQLiteStore(tmp_path / "a"), _down], names=NAMES, refresh=0.05)
    assert [m.id for m in b_down.list_memories("u1")] == ["m_a"]
    b_down.write(WriteBatch(memories=[make_memory("m_a2", user="u1")]))
    with pytest.raises(StoreUnavailable, match="bolt://down"):
        b_down.list_memories("u2")
    with pytest.raises(StoreUnavailable):
        b_down.users()  # needs every shard
    assert [m.id for m in b_down.get_memories(["m_a"])] == ["m_a"]  # known id: only its shard is asked
    b_down.close()
    # the directory shard down: the table is read from the other shard's copy
    a_down = ShardedStore([_down, SQLiteStore(tmp_path / "b")], names=NAMES, refresh=0.05)
    assert [m.id for m in a_down.list_memories("u2")] == ["m_b"]
    with pytest.raises(StoreUnavailable):
        a_down.list_memories("u1")
    a_down.close()


def test_a_shard_that_was_down_is_opened_when_it_comes_back(tmp_path: Path) -> None:
    state = {"up": False}

    def flaky() -> GraphStore:
        if not state["up"]:
            _down()
        return SQLiteStore(tmp_path / "b")

    s = ShardedStore([SQLiteStore(tmp_path / "a"), flaky], names=NAMES, refresh=0.05)
    with pytest.raises(StoreUnavailable):
        s.has_memories("u2")
    state["up"] = True
    assert s.has_memories("u2") is False
    s.close()


# -- moves ------------------------------------------------------------------------------------------------------------
def _user_graph(user: str, n: int = 30) -> WriteBatch:
    mems = [make_memory(f"m_{user}_{i}", user=user, text=f"记忆 {i} about tea {i % 3}", at=float(i),
                        vec=unit_vector(1, i / n), terms=("tea", f"t{i % 3}", "记忆")) for i in range(n)]
    ents = [make_entity(f"e_{user}_{j}", user=user, key=f"entity {j}", aliases=(f"alias {j}",), vec=unit_vector(j, 1))
            for j in range(5)]
    edges = [EdgeRecord(m.id, EDGE_MENTIONS, ents[i % 5].id, user, 1.0) for i, m in enumerate(mems)]
    edges += [EdgeRecord(a.id, EDGE_NEXT, b.id, user, 1.0) for a, b in zip(mems, mems[1:])]
    return WriteBatch(memories=mems, entities=ents, edges=edges)


def _everything(store: GraphStore, user: str) -> str:
    return fingerprint(list(store.export(user)), store.documents(user))


def _seeded(root: Path, names: list[str] = NAMES) -> ShardedStore:
    s = sharded(root, names)
    s.write(_user_graph("u1"))
    s.write(_user_graph("u2", 5))
    for key, versions in (("wm/task", 3), ("画像", 1)):
        for v in range(versions):
            s.put_document("u1", key, json.dumps({"v": v}), expected_version=v, at=float(v))
    return s


def test_move_keeps_everything_and_switches_routing(tmp_path: Path) -> None:
    s = _seeded(tmp_path)
    before = _everything(s, "u1")
    recall_before = s.nearest_memories("u1", unit_vector(1, 0.3), 5)
    report = s.move_user("u1", "b", batch_size=7)
    assert (report.source, report.target, report.memories, report.entities, report.documents) == ("a", "b", 30, 5, 2)
    assert report.edges == 59 and report.checked_reads >= 8 and not report.resumed
    assert s.shard_of("u1") == "b" and users_of(s, "a") == [] and sorted(users_of(s, "b")) == ["u1", "u2"]
    assert _everything(s, "u1") == before
    assert s.nearest_memories("u1", unit_vector(1, 0.3), 5) == recall_before
    assert s.get_document("u1", "wm/task")[0] == 3  # type: ignore[index]
    assert s.put_document("u1", "wm/task", "{}", expected_version=2, at=9.0) == (False, 3)  # versions went along
    s.close()
    with sharded(tmp_path) as other:  # another process sees the move
        assert other.shard_of("u1") == "b" and other.users() == ["u1", "u2"]
        assert other.stats()["memories"] == 35 and other.stats("u1")["memories"] == 30
        report = other.shards_report()
        assert [(x.name, x.users, x.memories) for x in report.shards] == [("a", 0, 0), ("b", 2, 35)]
        assert report.pinned_users == 1 and report.moves == ()
        with pytest.raises(ConfigError, match="already on shard b"):
            other.move_user("u1", "b")
        other.move_user("u1", "0")  # back to its hash owner: by position; the pin goes
        assert other.shard_of("u1") == "a" and other.shards_report().pinned_users == 0
        assert _everything(other, "u1") == before


STEPS = ["marked", "copying", "copied", "switched", "deleted"]


class Crash(Exception):
    pass


def crash_at(step: str, error: type[BaseException] = Crash) -> Callable[[str], None]:
    """A move checkpoint that stops the move at ``step``, as a crash would (nothing is cleaned up)."""
    def hook(at: str) -> None:
        if at == step:
            raise error(at)

    return hook


@pytest.mark.parametrize("step", STEPS)
def test_a_move_that_crashes_at_any_step_loses_nothing_and_resumes(tmp_path: Path, step: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    s = _seeded(tmp_path)
    before = _everything(s, "u1")

    monkeypatch.setattr(shardmove, "checkpoint", crash_at(step))
    with pytest.raises(Crash):
        s.move_user("u1", "b", batch_size=7)
    s.close()
    monkeypatch.setattr(shardmove, "checkpoint", lambda at: None)
    with sharded(tmp_path) as other:  # another process, after the crash: one shard serves all of u1
        served = other.shard_of("u1")
        assert served == ("a" if STEPS.index(step) < STEPS.index("switched") else "b")
        assert _everything(shard_store(other, served), "u1") == before == _everything(other, "u1")
        assert [m.user_id for m in other.shards_report().moves] == ["u1"]
        report = other.move_user("u1", "b")  # run again: resumes
        assert report.resumed and other.shard_of("u1") == "b" and users_of(other, "a") == []
        assert _everything(other, "u1") == before and other.shards_report().moves == ()


@pytest.mark.parametrize("step", ["marked", "copying", "copied"])
def test_a_move_that_has_not_switched_rolls_back(tmp_path: Path, step: str, monkeypatch: pytest.MonkeyPatch) -> None:
    s = _seeded(tmp_path)
    before = _everything(s, "u1")
    monkeypatch.setattr(shardmove, "checkpoint", crash_at(step, Crash))
    with pytest.raises(Crash):
        s.move_user("u1", "b")
    with pytest.raises(ConfigError, match="unfinished move to shard b"):
        s.move_user("u1", "a")
    gone = s.abort_move("u1")
    assert (gone.source, gone.target) == ("a", "b")
    assert s.shard_of("u1") == "a" and users_of(s, "b") == ["u2"] and s.documents("u1") == shard_store(s, "a").documents("u1")
    assert _everything(s, "u1") == before and s.shards_report().moves == ()
    with pytest.raises(ConfigError, match="no move"):
        s.abort_move("u1")
    s.close()


def test_a_switched_move_cannot_roll_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = _seeded(tmp_path)
    monkeypatch.setattr(shardmove, "checkpoint", crash_at("switched", Crash))
    with pytest.raises(Crash):
        s.move_user("u1", "b")
    with pytest.raises(ConfigError, match="already switched"):
        s.abort_move("u1")
    s.close()


def test_writes_wait_for_a_move_and_land_on_the_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process writing to the user while it is copied waits, then writes to the new shard."""
    s = _seeded(tmp_path)
    copied, release = threading.Event(), threading.Event()

    def hold(at: str) -> None:
        if at == "copied":
            copied.set()
            release.wait(10)

    monkeypatch.setattr(shardmove, "checkpoint", hold)
    mover = threading.Thread(target=s.move_user, args=("u1", "b"))
    mover.start()
    assert copied.wait(10)
    writer = sharded(tmp_path)
    done: list[float] = []

    def write() -> None:
        writer.write(WriteBatch(memories=[make_memory("m_late", user="u1", text="写在搬家时")]))
        done.append(time.monotonic())

    w = threading.Thread(target=write)
    w.start()
    time.sleep(0.3)
    assert not done  # waiting
    assert [m.id for m in writer.get_memories(["m_u1_0"])] == ["m_u1_0"]  # reads go on, from the source
    release.set()
    mover.join(10)
    w.join(10)
    assert done and writer.shard_of("u1") == "b"
    assert [m.user_id for m in shard_store(writer, "b").get_memories(["m_late"])] == ["u1"]
    assert shard_store(writer, "a").users() == []
    writer.close()
    s.close()


def test_a_write_that_waits_too_long_fails_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = _seeded(tmp_path)
    monkeypatch.setattr(shardmove, "checkpoint", crash_at("copied", Crash))
    with pytest.raises(Crash):
        s.move_user("u1", "b")
    impatient = sharded(tmp_path, move_wait=0.2)
    with pytest.raises(StoreUnavailable, match="being moved from shard a to b.*retry later"):
        impatient.put_document("u1", "k", "1", expected_version=None, at=1.0)
    impatient.write(WriteBatch(memories=[make_memory("m_other", user="u2")]))  # other users are not held
    impatient.touch(["m_u1_0", "m_other"], 50.0)  # a recall's access count does not wait: u1's is not counted
    assert [m.access_count for m in impatient.get_memories(["m_u1_0", "m_other"])] == [0, 1]
    impatient.close()
    s.close()


def test_a_stale_writer_after_the_switch_is_caught_before_deletion(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A process whose table is older than the move (it never refreshed) writes to the source after
    the switch: the move refuses to delete the source, so the write is not lost."""
    s = _seeded(tmp_path)
    stale = sharded(tmp_path, refresh=3600.0)
    assert stale.shard_of("u1") == "a"  # its table, from before the move, never refreshes

    def late_write(at: str) -> None:
        if at == "switched":
            stale.write(WriteBatch(memories=[make_memory("m_stale", user="u1")]))

    monkeypatch.setattr(shardmove, "checkpoint", late_write)
    with pytest.raises(StoreError, match="changed after the move switched"):
        s.move_user("u1", "b")
    assert [m.id for m in shard_store(s, "a").get_memories(["m_stale"])] == ["m_stale"]
    assert s.shard_of("u1") == "b"
    stale.close()
    s.close()


def test_a_move_between_processes_with_concurrent_readers(tmp_path: Path) -> None:
    """Readers in another process see the user complete before, during and after the move."""
    s = _seeded(tmp_path)
    reader = sharded(tmp_path)
    stop = threading.Event()
    seen: list[int] = []

    def read() -> None:
        while not stop.is_set():
            seen.append(len(reader.list_memories("u1")))

    t = threading.Thread(target=read)
    t.start()
    s.move_user("u1", "b")
    time.sleep(0.2)
    stop.set()
    t.join()
    assert seen and set(seen) == {30}
    reader.close()
    s.close()


# -- ring changes ----------------------------------------------------------------------------------------------------
def test_adding_a_shard_moves_nobody_until_rebalance(tmp_path: Path) -> None:
    users = sorted(f"user{i}" for i in range(24))
    two = sharded(tmp_path)
    for u in users:
        two.write(WriteBatch(memories=[make_memory(f"m_{u}", user=u)]))
        two.put_document(u, "k", json.dumps(u), expected_version=0, at=1.0)
    two.close()
    three = sharded(tmp_path, names=["a", "b", "c"])
    assert three.shards_report().ring == ("a", "b")  # c is configured, but not in the ring yet
    assert users_of(three, "c") == []
    parked = three.change_ring(["a", "b", "c"])
    expected = {u for u in users if rendezvous(u, ["a", "b", "c"]) == "c"}
    assert set(parked) == expected and expected
    assert three.users() == users and all(three.get_document(u, "k")[1] == json.dumps(u) for u in users)  # type: ignore[index]
    report = three.shards_report()
    assert report.ring == ("a", "b", "c") and report.parked_users == len(expected) and users_of(three, "c") == []
    three.write(WriteBatch(memories=[make_memory("m_new", user="newcomer")]))
    assert three.shard_of("newcomer") == rendezvous("newcomer", ["a", "b", "c"])  # new users follow the new ring
    moved = three.rebalance(limit=1)
    assert len(moved) == 1 and three.shards_report().parked_users == len(expected) - 1
    three.rebalance()
    assert set(users_of(three, "c")) == expected | ({"newcomer"} if three.shard_of("newcomer") == "c" else set())
    assert three.shards_report().parked_users == 0 and three.users() == sorted([*users, "newcomer"])
    # and back: remove c, its users are parked there, rebalance empties it
    three.change_ring(["a", "b"])
    three.rebalance()
    assert users_of(three, "c") == [] and three.users() == sorted([*users, "newcomer"])
    assert all(three.get_document(u, "k")[1] == json.dumps(u) for u in users)  # type: ignore[index]
    three.close()


def test_ring_change_holds_writes_of_users_changing_shard(tmp_path: Path) -> None:
    s = sharded(tmp_path, names=["a", "b", "c"], move_wait=0.1)
    s.write(WriteBatch(memories=[make_memory("m", user="u")]))
    s._drive(s._plan_update_routing(lambda r: Routing(ring=("a", "b"))))  # as if c was added to the URI later
    changes = next(u for u in (f"x{i}" for i in range(100)) if rendezvous(u, "ab") != rendezvous(u, "abc"))
    stays = next(u for u in (f"x{i}" for i in range(100)) if rendezvous(u, "ab") == rendezvous(u, "abc"))
    s._drive(s._plan_update_routing(lambda r: r.start_ring_change(["a", "b", "c"])))
    with pytest.raises(StoreUnavailable, match="ring is changing"):
        s.write(WriteBatch(memories=[make_memory("m1", user=changes)]))
    s.write(WriteBatch(memories=[make_memory("m2", user=stays)]))
    s.change_ring(["a", "b", "c"])  # finishes the change under way
    s.write(WriteBatch(memories=[make_memory("m1", user=changes)]))
    assert s.shard_of(changes) == rendezvous(changes, "abc")
    s.close()


def test_the_routing_table_is_a_document_on_every_shard(tmp_path: Path) -> None:
    s = _seeded(tmp_path)
    s.move_user("u1", "b")
    copies = [Routing.from_json(shard_store(s, n).get_document(DIRECTORY_USER, DIRECTORY_KEY)[1]) for n in NAMES]  # type: ignore[index]
    assert copies[0] == copies[1] and copies[0].pins == {"u1": "b"}
    assert "\x00ripple" not in s.users()
    # the directory shard loses the table (replaced, restored from an old backup): it comes back from the
    # other shard's copy, with a serial that still grows, so processes holding a copy take it
    shard_store(s, "a").put_document(DIRECTORY_USER, DIRECTORY_KEY, None, expected_version=None, at=0.0)
    with sharded(tmp_path) as other:
        assert other.shard_of("u1") == "b"
        other.move_user("u1", "a")
    time.sleep(0.1)
    assert s.shard_of("u1") == "a" and s._routing is not None and s._routing.serial > copies[0].serial
    s.close()


def test_documents_move_with_their_versions(tmp_path: Path) -> None:
    s = sharded(tmp_path)
    s.restore_documents([DocumentRecord("u1", "k", 41, '"x"', 1.0), DocumentRecord("u2", "k", 7, '"y"', 2.0)])
    assert shard_store(s, "a").documents("u1")[0].version == 41 and shard_store(s, "b").documents("u2")[0].version == 7
    s.move_user("u1", "b")
    assert shard_store(s, "b").documents("u1") == [DocumentRecord("u1", "k", 41, '"x"', 1.0)]
    s.close()


# -- the command ------------------------------------------------------------------------------------------------------------
def test_cli_status_move_abort_add_rebalance(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from ripple.cli.__main__ import main

    paths = [str(tmp_path / n) for n in NAMES]  # (a shards: URI names each shard by its URI)
    with ShardedStore([SQLiteStore(p) for p in paths], names=paths) as s:
        s.write(_user_graph("u1"))
        s.put_document("u1", "k", "1", expected_version=0, at=1.0)
        s.put_document("u1", "画像", "2", expected_version=0, at=1.0)
        s.write(_user_graph("u2", 5))
        other = "1" if s.shard_of("u1") == paths[0] else "0"
    uri = f"shards:{paths[0]};{paths[1]}"
    assert main(["--store", uri, "shards", "status", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert sum(s["users"] for s in report["shards"]) == 2 and report["moves"] == []
    # another order, and a new first shard (the directory): the table is taken from the others' copies
    assert main(["--store", f"shards:{tmp_path / 'x'};{paths[1]};{paths[0]}", "shards", "status", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [s["users"] for s in report["shards"]][0] == 0 and sum(s["users"] for s in report["shards"]) == 2
    assert report["ring"] == paths
    assert main(["--store", f"shards:{paths[0]}", "shards", "status"]) == 2  # a ripple error exits 2
    assert "does not list" in capsys.readouterr().err  # a shard of the ring is missing from the URI
    monkeypatch.setattr(shardmove, "checkpoint", crash_at("copied", KeyboardInterrupt))
    assert main(["--store", uri, "shards", "move", "--user", "u1", "--to", other]) == 130
    monkeypatch.setattr(shardmove, "checkpoint", lambda at: None)
    capsys.readouterr()
    assert main(["--store", uri, "shards", "status"]) == 0
    out = capsys.readouterr().out
    assert "move under way: u1" in out and "(copying)" in out
    assert main(["--store", uri, "shards", "move", "--user", "u1", "--abort"]) == 0
    assert "stays on" in capsys.readouterr().out
    assert main(["--store", uri, "shards", "move", "--user", "u1", "--to", other, "--json"]) == 0
    moved = json.loads(capsys.readouterr().out)
    assert moved["memories"] == 30 and moved["documents"] == 2
    assert main(["--store", str(tmp_path / "plain"), "shards", "status"]) == 2
    assert "not sharded" in capsys.readouterr().err
    uri3 = f"{uri};{tmp_path / 'c'}"
    assert main(["--store", uri3, "shards", "add", "2"]) == 0
    assert "users stay where they are" in capsys.readouterr().out
    assert main(["--store", uri3, "shards", "rebalance"]) == 0
    assert "users moved" in capsys.readouterr().out
    assert main(["--store", uri3, "shards", "add", "2"]) == 2
    assert "already in the ring" in capsys.readouterr().err


def test_the_async_store_moves_and_reports_with_the_same_plans(tmp_path: Path) -> None:
    import asyncio

    _seeded(tmp_path).close()

    async def main() -> None:
        store = AsyncShardedStore([ThreadedAsyncStore(SQLiteStore(tmp_path / n)) for n in NAMES], names=NAMES,
                                  refresh=0.05, grace=0.15)
        before = fingerprint([r async for r in store.export("u1")], await store.documents("u1"))
        report = await store.move_user("u1", "b", batch_size=4)
        assert (report.source, report.target, report.memories, report.documents) == ("a", "b", 30, 2)
        assert await store.shard_of("u1") == "b"
        assert fingerprint([r async for r in store.export("u1")], await store.documents("u1")) == before
        status = await store.shards_report()
        assert [(s.name, s.users) for s in status.shards] == [("a", 0), ("b", 2)]
        await store.aclose()

    asyncio.run(main())


def test_a_resumed_move_takes_over_and_the_old_run_cannot_switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two runs of one move (the first was thought dead, but lives): the second takes the move over; the
    first stops at its next step instead of switching, and the user is moved once, whole."""
    s = _seeded(tmp_path)
    before = _everything(s, "u1")
    copied, release = threading.Event(), threading.Event()
    first_error: list[BaseException] = []

    def hold(at: str) -> None:
        if at == "copied" and threading.current_thread().name == "first":
            copied.set()
            release.wait(10)

    monkeypatch.setattr(shardmove, "checkpoint", hold)

    def first() -> None:
        try:
            s.move_user("u1", "b")
        except ConfigError as exc:
            first_error.append(exc)

    t = threading.Thread(target=first, name="first")
    t.start()
    assert copied.wait(10)
    with sharded(tmp_path) as second:
        assert second.move_user("u1", "b").resumed
    release.set()
    t.join(10)
    assert first_error and "taken over" in str(first_error[0])
    assert s.shard_of("u1") == "b" and _everything(s, "u1") == before and users_of(s, "a") == []
    s.close()
