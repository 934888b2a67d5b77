"""The sharded store over TWO real Neo4j servers: the conformance suite, Memory and AsyncMemory
end to end with users spread over both servers, ``ripple shards move`` (and a move killed with
SIGKILL in the middle, then resumed), and a shard whose server is down.

The servers are ``$RIPPLE_TEST_NEO4J_URI`` and ``$RIPPLE_TEST_NEO4J_URI2`` (``scripts/test.sh``
starts both); a missing one skips these tests, or fails them under ``RIPPLE_REQUIRE_ALL=1``.
The store URI is ``neo4j+shards://``: each shard goes through the routing driver (``neo4j://``),
as it would against a cluster.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from graphstore import Credentials, GraphStore, open_store
from graphstore._shardmove import fingerprint
from graphstore.sharded import ShardedStore
from graphstore.testing import GraphStoreConformance
from ripple.errors import StoreUnavailable
from tests.conftest import need
from tests.graphstore.test_neo4j import wipe

pytestmark = pytest.mark.neo4j

URI = os.environ.get("RIPPLE_TEST_NEO4J_URI", "bolt://127.0.0.1:7687")
URI2 = os.environ.get("RIPPLE_TEST_NEO4J_URI2", "bolt://127.0.0.1:7688")
PASSWORD = os.environ.get("RIPPLE_TEST_NEO4J_PASSWORD", "ripple-dev-password")
ROOT = Path(__file__).resolve().parents[2]
HOSTS = [u.split("://", 1)[1] for u in (URI, URI2)]
SHARDED = "neo4j+shards://" + ",".join(HOSTS)
CREDS = Credentials(password=PASSWORD)


@pytest.fixture(scope="module")
def drivers() -> Iterator[list[Any]]:
    """Plain drivers to both servers, for wiping and for checks behind the store's back."""
    import neo4j

    out = []
    for uri in (URI, URI2):
        drv = neo4j.GraphDatabase.driver(uri, auth=("neo4j", PASSWORD), connection_timeout=5,
                                         notifications_min_severity="OFF")
        try:
            drv.verify_connectivity()
        except Exception as exc:  # noqa: BLE001 - any failure means: no usable server
            drv.close()
            for d in out:
                d.close()
            need(f"no Neo4j server at {uri} ({type(exc).__name__}: {exc}); the sharded tests need two"
                 " (scripts/test.sh starts them; RIPPLE_TEST_NEO4J_URI2 names the second)")
        out.append(drv)
    yield out
    for d in out:
        d.close()


@pytest.fixture
def clean(drivers: list[Any]) -> Iterator[list[Any]]:
    for d in drivers:
        wipe(d)
    yield drivers
    for d in drivers:
        wipe(d)


def connect(**options: Any) -> ShardedStore:
    options.setdefault("refresh", 0.05)
    options.setdefault("grace", 0.15)
    return open_store(SHARDED, credentials=CREDS, **options)  # type: ignore[return-value]


def users_on(drv: Any) -> list[str]:
    with drv.session() as s:
        return sorted(r["u"] for r in s.run("MATCH (m:Memory) RETURN DISTINCT m.user_id AS u"))


class TestShardedNeo4jStore(GraphStoreConformance):
    @pytest.fixture
    def store(self, clean: Any) -> Iterator[GraphStore]:
        s = connect()
        yield s
        s.close()

    @pytest.fixture
    def reopen(self) -> Callable[[], GraphStore]:
        return connect


def _spread_users(store: ShardedStore, per_shard: int) -> list[str]:
    """User ids, ``per_shard`` on each server (which ids go where depends on the servers' ports)."""
    picked: dict[str, list[str]] = {n: [] for n in store.names}
    for i in range(1000):
        user = f"用户{i}" if i % 2 else f"user{i}"
        bucket = picked[store.shard_of(user)]
        if len(bucket) < per_shard:
            bucket.append(user)
        if all(len(b) == per_shard for b in picked.values()):
            return [u for b in picked.values() for u in b]
    raise AssertionError("the hash put every user on one shard")


FACTS = [
    ("Dana Whitfield runs procurement at Northwind.", "who runs procurement?"),
    ("我叫张伟，在北京的阿里巴巴工作。", "张伟在哪里工作"),
    ("The boiler was serviced in March by Acme Heating.", "when was the boiler serviced?"),
]


@pytest.mark.slow
def test_memory_end_to_end_with_users_on_both_servers(clean: list[Any], embedder: Any, extractor: Any) -> None:
    from ripple import Memory

    store = connect(refresh=1.0)  # the production default: the routing table is not re-read on every call
    users = _spread_users(store, 1)  # one user per server: the end-to-end path, kept short
    with Memory(store=store, embedder=embedder, extractor=extractor) as mem:
        for n, user in enumerate(users):
            for text, _q in FACTS:
                mem.add(f"{text} ({user})", user_id=user, session_id="s")
            mem.add(f"{user} likes green tea number {n}.", user_id=user, session_id="s")
        assert sorted(users_on(clean[0]) + users_on(clean[1])) == sorted(users)
        assert users_on(clean[0]) and users_on(clean[1])  # both servers hold users
        assert mem.stats()["memories"] == 4 * len(users) and store.users() == sorted(users)
        for user in users:
            for text, query in FACTS:
                res = mem.recall(query, user_id=user, k=3)
                assert res.hits[0].memory.text == f"{text} ({user})", (user, query)
                assert all(h.memory.user_id == user for h in res.hits)
            got = mem.get(res.hits[0].memory.id)
            assert got.user_id == user
    store.close()


@pytest.mark.slow
def test_async_memory_on_two_servers(clean: list[Any], embedder: Any, extractor: Any) -> None:
    from ripple import AsyncMemory

    async def main() -> None:
        store = open_store(SHARDED, asynchronous=True, credentials=CREDS, refresh=0.05)
        async with AsyncMemory(store=store, embedder=embedder, extractor=extractor) as mem:
            users = ["alice", "张伟", "bob", "李娜"]
            await asyncio.gather(*(mem.add(f"{u} keeps the spare key under the blue pot.", user_id=u) for u in users))
            results = await asyncio.gather(*(mem.recall("where is the spare key?", user_id=u, k=1) for u in users))
            assert [r.hits[0].memory.user_id for r in results] == users
            assert sorted(await store.users()) == sorted(users)
        await store.aclose()

    asyncio.run(main())
    assert users_on(clean[0]) or users_on(clean[1])


def _cli(args: list[str], env: dict[str, str] | None = None, **kwargs: Any) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", *args], cwd=ROOT, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, **kwargs)


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), RIPPLE_NEO4J_PASSWORD=PASSWORD, HF_HUB_OFFLINE="1")


_MOVE = """
import sys, time
import graphstore._shardmove as m
from ripple.cli.__main__ import main
def hold(step):
    if step == "copying":
        print("COPYING", flush=True)
        time.sleep(600)
m.checkpoint = hold
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_move_killed_in_the_middle_then_resumed(clean: list[Any], capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """``ripple shards move`` is SIGKILLed while it copies: the user is still served whole by its source;
    running the command again finishes the move; nothing is lost (same data, same recall)."""
    from graphstore.records import WriteBatch
    from graphstore.testing import make_entity, make_memory, unit_vector
    from ripple.cli.__main__ import main

    store = connect()
    user = next(u for u in (f"user{i}" for i in range(100)) if store.shard_of(u) == store.names[0])
    mems = [make_memory(f"m{i:03d}", user=user, text=f"记忆 {i}", vec=unit_vector(1, i / 100), at=float(i),
                        terms=("记忆", f"t{i % 7}")) for i in range(40)]
    store.write(WriteBatch(memories=mems, entities=[make_entity("e_zw", user=user, key="张伟")]))
    store.put_document(user, "wm/task", '{"step": 3}', expected_version=0, at=1.0)
    before = fingerprint(list(store.export(user)), store.documents(user))
    near = store.nearest_memories(user, unit_vector(1, 0.5), 5)

    proc = _cli([_MOVE, "--store", SHARDED, "shards", "move", "--user", user, "--to", "1", "--batch-size", "10"],
                env=_env())
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "COPYING", proc.stderr.read() if proc.stderr else ""
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    assert 0 < len(users_on(clean[1])) and user in users_on(clean[1])  # a partial copy on the target...
    reader = connect()
    assert reader.shard_of(user) == store.names[0]  # ...which nobody reads: the source serves the user whole
    assert fingerprint(list(reader.export(user)), reader.documents(user)) == before
    assert reader.nearest_memories(user, unit_vector(1, 0.5), 5) == near
    report = reader.shards_report()
    assert [(m.user_id, m.state) for m in report.moves] == [(user, "copying")]

    monkeypatch.setenv("RIPPLE_NEO4J_PASSWORD", PASSWORD)
    assert main(["--store", SHARDED, "shards", "move", "--user", user, "--to", "1", "--json"]) == 0
    moved = json.loads(capsys.readouterr().out)
    assert moved["resumed"] and moved["memories"] == 40 and moved["documents"] == 1 and moved["checked_reads"] >= 8
    assert users_on(clean[0]) == [] and users_on(clean[1]) == [user]
    again = connect()
    assert again.shard_of(user) == again.names[1]
    assert fingerprint(list(again.export(user)), again.documents(user)) == before
    assert again.nearest_memories(user, unit_vector(1, 0.5), 5) == near
    assert main(["--store", SHARDED, "shards", "status", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert [s["users"] for s in status["shards"]] == [0, 1] and status["moves"] == [] and status["pinned_users"] == 1
    for s in (store, reader, again):
        s.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_down_server_fails_only_its_users(clean: list[Any]) -> None:
    """One shard's server is down (nothing listens on its port): its users get StoreUnavailable, quickly;
    the users of the other server are served."""
    dead = f"127.0.0.1:{_closed_port()}"
    # (a retry budget of 1 s, the public setting: each call on the dead shard waited out the default 8 s;
    # that a budget bounds the wait is tests/faults/test_neo4j_outage.py's to check)
    store = open_store(f"neo4j+shards://{HOSTS[0]},{dead}", credentials=CREDS, refresh=0.05, retry_seconds=1.0)
    live = next(u for u in (f"u{i}" for i in range(100)) if store.shard_of(u) == HOSTS[0])
    gone = next(u for u in (f"u{i}" for i in range(100)) if store.shard_of(u) == dead)
    from graphstore.records import WriteBatch
    from graphstore.testing import make_memory

    store.write(WriteBatch(memories=[make_memory("m_live", user=live)]))
    assert [m.id for m in store.list_memories(live)] == ["m_live"]
    started = time.monotonic()
    with pytest.raises(StoreUnavailable, match=dead):
        store.list_memories(gone)
    assert time.monotonic() - started < 20
    with pytest.raises(StoreUnavailable):
        store.write(WriteBatch(memories=[make_memory("m_gone", user=gone)]))
    report = store.shards_report()
    assert [s.error is None for s in report.shards] == [True, False] and report.shards[0].users == 1
    store.close()


# -- cluster routing (neo4j://): reads on followers, writes on the leader ---------------------------------------
def test_reads_run_in_read_transactions_and_writes_in_write_transactions(clean: list[Any],
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Through a ``neo4j://`` routing driver a read transaction goes to a follower (or read replica) and a
    write transaction to the leader.  Every read method of the protocol must therefore run only read
    transactions, and every write method a write transaction.  (The transaction functions are observed,
    not replaced: everything runs on the real server.  The async store runs the same plans.)"""
    import neo4j

    from graphstore.neo4j import Neo4jStore
    from graphstore.records import EDGE_MENTIONS, WriteBatch
    from graphstore.testing import make_entity, make_memory, unit_vector

    kinds: list[str] = []
    original = neo4j.Neo4jDriver.session  # (the store runs each transaction, with its retries, in a session
    # whose default access mode the routing driver routes by: readers for READ_ACCESS, the leader for WRITE)

    def observed(self: Any, *args: Any, **kw: Any) -> Any:
        kinds.append("execute_read" if kw.get("default_access_mode") == neo4j.READ_ACCESS else "execute_write")
        return original(self, *args, **kw)

    monkeypatch.setattr(neo4j.Neo4jDriver, "session", observed)
    store = Neo4jStore(URI.replace("bolt://", "neo4j://", 1), password=PASSWORD)
    store.write(WriteBatch(memories=[make_memory("m_1"), make_memory("m_2", text="张伟 北京")],
                           entities=[make_entity("e_zw", key="张伟", vec=unit_vector(1))]))
    reads: dict[str, Callable[[], Any]] = {
        "get_memories": lambda: store.get_memories(["m_1"], with_vectors=True),
        "list_memories": lambda: store.list_memories("u1"), "has_memories": lambda: store.has_memories("u1"),
        "last_memory_in_session": lambda: store.last_memory_in_session("u1", "s1"),
        "get_entities": lambda: store.get_entities("u1", ["张伟"]), "entity_names": lambda: store.entity_names(["e_zw"]),
        "users": store.users, "nearest_memories": lambda: store.nearest_memories("u1", unit_vector(1), 3),
        "nearest_entities": lambda: store.nearest_entities("u1", unit_vector(1), 3),
        "lexical_stats": lambda: store.lexical_stats("u1", ["memory"]), "postings": lambda: store.postings("u1", ["memory"]),
        "token_vectors": lambda: store.token_vectors(["m_1"]),
        "related_edges": lambda: store.related_edges("u1", ["e_zw"], ["x"]),
        "expand": lambda: store.expand("u1", ["m_1"], [EDGE_MENTIONS]), "export": lambda: list(store.export("u1")),
        "stats": store.stats, "get_document": lambda: store.get_document("u1", "k"),
        "documents": lambda: store.documents("u1"), "cypher": lambda: store.cypher("MATCH (n) RETURN count(n)"),
    }
    writes: dict[str, Callable[[], Any]] = {
        "write": lambda: store.write(WriteBatch(memories=[make_memory("m_3")])),
        # (a touch is written beside the caller: the read after it waits for it)
        "touch": lambda: (store.touch(["m_1"], 5.0), store.get_memories(["m_1"])),
        "set_status": lambda: store.set_status(["m_1"], "invalidated"),
        "put_document": lambda: store.put_document("u1", "k", "1", expected_version=None, at=1.0),
        "delete_memories": lambda: store.delete_memories(["m_3"]), "delete_user": lambda: store.delete_user("u1"),
    }
    for name, call in reads.items():
        kinds.clear()
        call()
        assert kinds and set(kinds) == {"execute_read"}, name
    for name, call in writes.items():
        kinds.clear()
        call()
        assert "execute_write" in kinds, name
    store.close()
