"""The embedded SQLite store: the shared conformance suite plus crash and thread safety."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from graphstore import open_store
from graphstore.protocol import GraphStore
from graphstore.records import EDGE_NEXT, EdgeRecord, WriteBatch
from graphstore.sqlite import SQLiteStore
from graphstore.testing import BlockingStore, GraphStoreConformance, ThreadedAsyncStore, make_memory
from tests.graphstore.test_sqlite_rekey import as_version_5
from ripple.errors import ConfigError, StoreUnavailable

ROOT = Path(__file__).resolve().parents[2]


class TestSQLiteStore(GraphStoreConformance):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[GraphStore]:
        s = SQLiteStore(tmp_path / "db")
        yield s
        s.close()

    @pytest.fixture
    def reopen(self, tmp_path: Path) -> Callable[[], GraphStore]:
        return lambda: SQLiteStore(tmp_path / "db")


class TestThreadedSQLiteStore(TestSQLiteStore):
    """The suite through the async protocol, each call in a worker thread (how AsyncMemory uses SQLite)."""

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[GraphStore]:
        s = BlockingStore(ThreadedAsyncStore(SQLiteStore(tmp_path / "db")))
        yield s  # type: ignore[misc]
        s.close()

    @pytest.fixture
    def reopen(self, tmp_path: Path) -> Callable[[], GraphStore]:
        return lambda: BlockingStore(ThreadedAsyncStore(SQLiteStore(tmp_path / "db")))  # type: ignore[return-value]


def test_open_store_picks_backend(tmp_path: Path) -> None:
    s = open_store(str(tmp_path / "a"))
    assert isinstance(s, SQLiteStore) and (tmp_path / "a" / "ripple.db").exists()
    s.close()
    s = open_store(f"sqlite://{tmp_path / 'b.db'}")
    assert isinstance(s, SQLiteStore) and (tmp_path / "b.db").exists()
    s.close()
    with pytest.raises(ConfigError):
        open_store("redis://localhost")


def test_unwritable_folder_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreUnavailable):
        SQLiteStore(blocker / "sub")


def test_cache_sees_writes_from_another_connection(tmp_path: Path) -> None:
    import numpy as np

    a, b = SQLiteStore(tmp_path), SQLiteStore(tmp_path)
    a.write(WriteBatch(memories=[make_memory("m_1")]))
    vec = np.frombuffer(make_memory("m_1").embedding or b"", dtype=np.float32)
    assert [h[0] for h in b.nearest_memories("u1", vec, 5)] == ["m_1"]
    a.write(WriteBatch(memories=[make_memory("m_2")]))
    assert sorted(h[0] for h in b.nearest_memories("u1", vec, 5)) == ["m_1", "m_2"]
    a.close()
    b.close()


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path)
    errors: list[BaseException] = []

    def writer(t: int) -> None:
        try:
            for i in range(40):
                store.write(WriteBatch(memories=[make_memory(f"m_{t}_{i}", session=f"s{t}", at=float(i))]))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert store.stats("u1")["memories"] == 240
    assert store.lexical_stats("u1", ["memory"])[0] == 240
    store.close()


_KILL_SCRIPT = textwrap.dedent(
    """
    import sys
    from graphstore.records import EDGE_NEXT, EdgeRecord, WriteBatch
    from graphstore.sqlite import SQLiteStore
    from graphstore.testing import make_memory
    store = SQLiteStore(sys.argv[1])
    for b in range(100000):
        mems = [make_memory(f"m_{b}_{i}", at=float(b)) for i in range(20)]
        edges = [EdgeRecord(f"m_{b}_{i}", EDGE_NEXT, f"m_{b}_{i+1}", "u1", 1.0) for i in range(19)]
        store.write(WriteBatch(memories=mems, edges=edges))
        print(b, flush=True)
    """
)


def test_sigkill_mid_write_keeps_every_acknowledged_batch_and_no_partial_one(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-c", _KILL_SCRIPT, str(tmp_path)], stdout=subprocess.PIPE, env=env, text=True)
    assert proc.stdout is not None
    acked = -1
    deadline = time.monotonic() + 60
    while acked < 30 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        acked = int(line)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert acked >= 30, "the writer did not get going"
    store = SQLiteStore(tmp_path)
    stats = store.stats("u1")
    assert stats["memories"] % 20 == 0, "a half-written batch survived"
    assert stats["edges_next"] == stats["memories"] // 20 * 19
    assert stats["memories"] >= (acked + 1) * 20, "an acknowledged batch was lost"
    n_docs = store.lexical_stats("u1", ["memory"])[0]
    assert n_docs == stats["memories"]
    store.close()


def test_query_vector_of_another_dimension_is_a_clear_error(tmp_path: Path) -> None:
    import numpy as np

    from ripple.errors import StoreError

    store = SQLiteStore(tmp_path)
    store.write(WriteBatch(memories=[make_memory("m_1")]))
    with pytest.raises(StoreError, match="dimensions"):
        store.nearest_memories("u1", np.ones(5, dtype=np.float32), 3)
    store.close()


def test_a_version_1_store_is_migrated_in_place(tmp_path: Path) -> None:
    """A store written before the lifecycle columns (and before postings carried document lengths)
    opens, reads its memories with the defaults that describe them, scores BM25 with the right
    lengths, and takes new writes; a store from the future is refused."""
    import sqlite3

    from graphstore.sqlite import SCHEMA_VERSION
    from ripple.errors import SchemaError

    path = tmp_path / "old" / "ripple.db"
    s = SQLiteStore(path)
    s.write(WriteBatch(memories=[make_memory("m_old", text="Dana runs procurement", terms=("dana", "procurement"))]))
    s.close()
    as_version_5(path)  # (its edges under version 5's keys)
    db = sqlite3.connect(path)  # turn it back into a version 1 file
    for col in ("confidence", "mentions", "last_seen", "valid_to", "pinned"):
        db.execute(f"ALTER TABLE memories DROP COLUMN {col}")
    db.execute("ALTER TABLE postings DROP COLUMN doc_len")  # added in version 3
    db.execute("DROP INDEX edges_dst")  # version 4 widened it
    db.execute("CREATE INDEX edges_dst ON edges (dst, type, src, weight)")
    db.execute("DROP INDEX memories_multilingual")  # version 5 added the multilingual vectors
    db.execute("ALTER TABLE memories DROP COLUMN multilingual")
    db.execute("UPDATE meta SET value='1' WHERE key='schema_version'")
    db.commit()
    db.close()

    s = SQLiteStore(path)
    try:
        (m,) = s.get_memories(["m_old"])
        assert (m.confidence, m.mentions, m.last_seen, m.valid_to, m.pinned) == (1.0, 1, None, None, False)
        assert m.text == "Dana runs procurement" and s.lexical_stats("u1", ["dana"])[2] == {"dana": 1}
        assert s.postings("u1", ["dana", "procurement"]) == [("dana", "m_old", 1, 2), ("procurement", "m_old", 1, 2)]
        s.write(WriteBatch(memories=[make_memory("m_new", text="Dana signs invoices")]))
        assert {x.id for x in s.list_memories("u1")} == {"m_new", "m_old"}
        assert s.get_memories(["m_new"])[0].confidence == 1.0
    finally:
        s.close()
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (str(SCHEMA_VERSION),)
    assert [r[2] for r in db.execute("PRAGMA index_info(edges_dst)")] == ["user_id", "dst", "type", "src", "weight",
                                                                         "predicate"]
    db.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    db.commit()
    db.close()
    with pytest.raises(SchemaError):
        SQLiteStore(path)
