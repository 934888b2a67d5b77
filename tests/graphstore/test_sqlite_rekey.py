"""Schema version 6 of the embedded store: edges keyed by user first, and the migration from version 5.

The migration rewrites every edge of an existing store (SQLite cannot change a primary key in place):
these tests build a store, turn it back into a version 5 file, and check that opening it keeps every
edge and answer, says what it is doing on a big store, and that a crash mid-way (an exception, and a
SIGKILL) leaves the version 5 store whole for the next open to migrate.
"""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Sequence

import pytest

from graphstore import sqliterekey
from graphstore.records import EDGE_MENTIONS, EDGE_NEXT, EDGE_RELATED, EdgeRecord, EntityRecord, WriteBatch
from graphstore.sqlite import SCHEMA_VERSION, SQLiteStore
from graphstore.testing import make_memory

ROOT = Path(__file__).resolve().parents[2]

# the edges table and its indexes as version 5 had them
_V5_EDGES = """CREATE TABLE edges (
    src TEXT NOT NULL, type TEXT NOT NULL, dst TEXT NOT NULL, predicate TEXT NOT NULL DEFAULT '',
    user_id TEXT NOT NULL, weight REAL NOT NULL, evidence TEXT, at REAL,
    PRIMARY KEY (src, type, dst, predicate)
) WITHOUT ROWID"""
_V5_INDEXES = (
    "CREATE INDEX edges_dst ON edges (dst, type, src, weight, predicate, user_id)",
    "CREATE INDEX edges_user_type ON edges (user_id, type)",
    "CREATE INDEX edges_predicate ON edges (src, predicate) WHERE type = 'RELATED'",
)


def as_version_5(path: Path) -> None:
    """Turn a closed current store back into a version 5 file (its edges under the old keys)."""
    db = sqlite3.connect(path)
    db.execute(_V5_EDGES.replace("CREATE TABLE edges", "CREATE TABLE edges_v5"))
    db.execute("INSERT INTO edges_v5 SELECT src, type, dst, predicate, user_id, weight, evidence, at FROM edges")
    db.execute("DROP TABLE edges")
    db.execute("ALTER TABLE edges_v5 RENAME TO edges")
    for stmt in _V5_INDEXES:
        db.execute(stmt)
    db.execute("DROP INDEX entities_user_id")
    db.execute("UPDATE meta SET value='5' WHERE key='schema_version'")
    db.commit()
    db.close()


def _graph(user: str, n: int) -> WriteBatch:
    """A user's memories in a chain, each mentioning two of three entities, and facts between the entities."""
    names = ["Dana", "Procurement", "上海"] if user.endswith("0") else ["Ming", "采购", "Boston"]
    ents = [EntityRecord(id=f"e_{user}_{i}", user_id=user, name=name, key=name.lower(), label="ENT")
            for i, name in enumerate(names)]
    mems = [make_memory(f"m_{user}_{i:03d}", user, f"{names[i % 3]} memory {i}", at=1_000.0 + i) for i in range(n)]
    edges = [EdgeRecord(m.id, EDGE_MENTIONS, ents[(i + j) % 3].id, user) for i, m in enumerate(mems) for j in (0, 1)]
    edges += [EdgeRecord(a.id, EDGE_NEXT, b.id, user) for a, b in zip(mems, mems[1:])]
    edges += [EdgeRecord(ents[0].id, EDGE_RELATED, ents[i].id, user, weight=0.5, predicate=p, evidence=mems[i].id)
              for i, p in ((1, "works_in"), (2, "lives_in"))]
    return WriteBatch(memories=mems, entities=ents, edges=edges)


def _answers(s: SQLiteStore, users: list[str]) -> dict[str, object]:
    out: dict[str, object] = {}
    for u in users:
        ents = [f"e_{u}_{i}" for i in range(3)]
        out[u] = (
            sorted(s.expand(u, ents, [EDGE_MENTIONS, EDGE_RELATED])),
            sorted(s.expand(u, [f"m_{u}_001"], [EDGE_NEXT, EDGE_MENTIONS], max_degree=3)),
            s.related_edges(u, [ents[0]], ["works_in", "lives_in"]),
            s.memories_mentioning(u, ents, per_entity=2),
            s.list_edges(u, [EDGE_NEXT]),
            {k: v for k, v in s.stats(u).items() if k != "bytes_on_disk"},
        )
    return out


def _build(path: Path, users: list[str], n: int = 12) -> dict[str, object]:
    s = SQLiteStore(path)
    for u in users:
        s.write(_graph(u, n))
    before = _answers(s, users)
    s.close()
    as_version_5(path)
    return before


def test_a_version_5_store_is_rekeyed_in_place_with_every_edge_and_answer(tmp_path: Path,
                                                                          caplog: pytest.LogCaptureFixture,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ripple.db"
    users = ["u0", "用户1", "u2", "u10"]
    before = _build(path, users)
    monkeypatch.setattr(sqliterekey, "_LOUD_FROM", 1)  # (a big store's progress, on a small one)
    monkeypatch.setattr(sqliterekey, "_USERS_PER_STEP", 1)
    with caplog.at_level(logging.WARNING, logger="graphstore.sqlite"):
        s = SQLiteStore(path)
    try:
        assert _answers(s, users) == before
        assert all(f.level == "ok" for f in s.check()), [f for f in s.check() if f.level != "ok"]
        s.delete_memories(["m_u0_001"])  # the rekeyed store takes deletes and writes
        assert s.stats("u0")["memories"] == 11 and _answers(s, ["u2"])["u2"] == before["u2"]
        s.write(_graph("u3", 3))
        assert all(f.level == "ok" for f in s.check())
    finally:
        s.close()
    messages = [r.getMessage() for r in caplog.records]
    assert "schema version 6" in messages[0] and "edges rewritten in" in messages[-1]
    assert any("% of the edges rewritten" in m for m in messages)
    assert any("CREATE INDEX IF NOT EXISTS edges_dst" in m for m in messages)
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (str(SCHEMA_VERSION),)
    assert [r[2] for r in db.execute("PRAGMA index_info(edges)")][:5] == ["user_id", "src", "type", "dst", "predicate"]
    assert [r[2] for r in db.execute("PRAGMA index_info(edges_dst)")][:2] == ["user_id", "dst"]
    assert not db.execute("SELECT name FROM sqlite_master WHERE name = 'edges_by_user'").fetchall()
    db.close()


def _version_and_edges(path: Path) -> tuple[str, int, list[str]]:
    db = sqlite3.connect(path)
    try:
        version = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
        n = db.execute("SELECT count(*) FROM edges").fetchone()[0]
        key = [r[2] for r in db.execute("PRAGMA index_info(edges)")]
        return version, n, key
    finally:
        db.close()


def test_a_migration_that_fails_midway_leaves_the_version_5_store_whole(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ripple.db"
    users = ["u0", "u1", "u2"]
    before = _build(path, users)
    v5 = _version_and_edges(path)
    monkeypatch.setattr(sqliterekey, "_USERS_PER_STEP", 1)
    real = sqliterekey.rekey_edges

    def fail_after_first_user(db: sqlite3.Connection, table: str, indexes: Sequence[str] = ()) -> int:
        def progress(done: int, total: int) -> None:
            raise OSError("disk gone")  # after the first batch of users is copied

        return real(db, table, indexes, progress=progress)

    monkeypatch.setattr(sqliterekey, "rekey_edges", fail_after_first_user)
    with pytest.raises(Exception, match="disk gone"):
        SQLiteStore(path)
    assert _version_and_edges(path) == v5 and v5[0] == "5"
    monkeypatch.setattr(sqliterekey, "rekey_edges", real)
    with SQLiteStore(path) as s:
        assert _answers(s, users) == before


def test_sigkill_mid_migration_leaves_the_version_5_store_whole(tmp_path: Path) -> None:
    path = tmp_path / "ripple.db"
    users = [f"u{i}" for i in range(6)]
    before = _build(path, users)
    v5 = _version_and_edges(path)
    script = textwrap.dedent(f"""
        import os, signal
        from graphstore import sqliterekey
        from graphstore.sqlite import SQLiteStore
        sqliterekey._USERS_PER_STEP = 2
        real = sqliterekey.rekey_edges
        def killed(db, table, indexes=()):
            def progress(done, total):
                if done > total // 2:
                    os.kill(os.getpid(), signal.SIGKILL)
            return real(db, table, indexes, progress=progress)
        sqliterekey.rekey_edges = killed
        SQLiteStore({str(path)!r})
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, timeout=120)
    assert proc.returncode == -9, proc.stderr.decode()
    assert _version_and_edges(path) == v5
    with SQLiteStore(path) as s:
        assert _answers(s, users) == before
