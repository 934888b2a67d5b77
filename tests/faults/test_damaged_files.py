"""Damaged embedded stores: every kind of damage is a typed error naming the file, never a new empty store.

Before issue 18 a 0-byte ``ripple.db`` opened as a new, empty store (and the next
write made the loss permanent), and a dropped postings table was recreated empty
on open: BM25 found nothing, without a word.  Here each damage is made on a real
store file and must be reported (:class:`~ripple.errors.StoreDamaged`, or
:class:`~ripple.errors.SchemaError` for a file that is not a ripple store);
``ripple doctor`` names it in one line and exits 1, ``ripple reindex`` rebuilds
what is derived from the memories, exactly as the writes had kept it.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from graphstore import open_store
from graphstore.records import WriteBatch
from graphstore.sqlite import SQLiteStore
from graphstore.testing import make_entity, make_memory, mention, unit_vector
from ripple.errors import SchemaError, StoreDamaged, StoreUnavailable
from tests.faults.procs import ROOT, child_env

TERMS = ["dana", "procurement", "invoice", "张伟", "北京", "memory"]


def _store(folder: Path, n: int = 60) -> Path:
    """A closed store with memories in English and Chinese, entities, mentions; its file."""
    s = SQLiteStore(folder)
    mems = [make_memory(f"m_{i}", text=["Dana runs procurement", "张伟 在 北京", "Dana signs invoice"][i % 3]
                        + f" {i}", terms=tuple(["dana", "procurement"] if i % 3 == 0 else
                                               ["张伟", "北京"] if i % 3 == 1 else ["dana", "invoice", "invoice"]),
                        vec=unit_vector(1.0, i / n)) for i in range(n)]
    s.write(WriteBatch(memories=mems, entities=[make_entity("e_dana", aliases=("dana whitfield",)),
                                                make_entity("e_zw", key="张伟")],
                       edges=[mention(f"m_{i}", "e_dana" if i % 3 != 1 else "e_zw") for i in range(n)]))
    s.close()
    return folder / "ripple.db"


def _damage(db: Path, *statements: str) -> None:
    """Change the store file behind ripple's back (as another program, or a bad restore, would)."""
    con = sqlite3.connect(db)
    for sql in statements:
        con.execute(sql)
    con.commit()
    con.close()


def _before(folder: Path) -> tuple[object, ...]:
    s = SQLiteStore(folder)
    try:
        return _view(s)
    finally:
        s.close()


def _view(store: SQLiteStore) -> tuple[object, ...]:
    return (sorted(store.postings("u1", TERMS)), store.lexical_stats("u1", TERMS),
            [e.id for e in store.get_entities("u1", ["dana whitfield", "张伟"])],
            {k: v for k, v in store.stats("u1").items() if k != "bytes_on_disk"})


def _cli(store: Path | str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ripple.cli", "--store", str(store), *args], capture_output=True,
                          text=True, env=child_env(), cwd=ROOT, timeout=120)


def test_an_empty_file_is_damage_not_a_new_store(tmp_path: Path) -> None:
    db = _store(tmp_path)
    db.write_bytes(b"")
    with pytest.raises(StoreDamaged, match=r"ripple\.db is empty \(0 bytes\)") as caught:
        SQLiteStore(tmp_path)
    assert str(db) in str(caught.value)
    assert db.stat().st_size == 0, "opening must not write into the damaged file"
    # one line, no traceback: a command's ripple error exits 2, doctor's findings with an error exit 1
    for args, code in ((("stats",), 2), (("doctor",), 1)):
        out = _cli(tmp_path, *args)
        assert out.returncode == code and "Traceback" not in out.stderr + out.stdout
        assert "is empty (0 bytes)" in out.stderr + out.stdout


def test_a_garbage_header_and_a_truncated_file_are_damage(tmp_path: Path) -> None:
    db = _store(tmp_path / "a", n=300)
    data = db.read_bytes()
    db.write_bytes(b"\x00garbage!" * 20 + data[180:])
    with pytest.raises(StoreDamaged, match="not an SQLite database"):
        SQLiteStore(db)
    db2 = _store(tmp_path / "b", n=300)
    size = db2.stat().st_size
    with db2.open("r+b") as fh:
        fh.truncate(size // 2)
    with pytest.raises(StoreDamaged, match="truncated"):
        SQLiteStore(db2)


def test_corrupt_pages_are_damage_on_open_or_first_read(tmp_path: Path) -> None:
    db = _store(tmp_path, n=300)
    page = int.from_bytes(db.read_bytes()[16:18], "big")
    with db.open("r+b") as fh:  # every page after the first (the schema) overwritten with garbage
        size = db.stat().st_size
        for offset in range(page, size, page):
            fh.seek(offset)
            fh.write(os.urandom(page))
    with pytest.raises(StoreDamaged, match="damaged"):
        s = SQLiteStore(tmp_path)
        s.list_memories("u1")


def test_a_lost_postings_table_is_reported_then_rebuilt_exactly(tmp_path: Path) -> None:
    db = _store(tmp_path)
    before = _before(tmp_path)
    _damage(db, "DROP TABLE postings")
    with pytest.raises(StoreDamaged, match=r"lost its postings table.*ripple reindex"):
        SQLiteStore(tmp_path)
    out = _cli(tmp_path, "doctor")
    assert out.returncode == 1
    assert "error postings: the lexical postings (BM25) table is missing (fix: ripple reindex)" in out.stdout
    out = _cli(tmp_path, "reindex")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("rebuilt: postings 120, term_df 5, lexical_totals 1, aliases 3, degrees 0")
    s = SQLiteStore(tmp_path)
    assert _view(s) == before
    assert [f.line() for f in s.check() if f.level != "ok"] == []
    s.close()
    assert _cli(tmp_path, "doctor").returncode == 0


def test_a_lost_primary_table_is_loss_not_rebuilt(tmp_path: Path) -> None:
    _damage(_store(tmp_path), "DROP TABLE edges")
    with pytest.raises(StoreDamaged, match="lost its edges table.*restore the store from a backup"):
        SQLiteStore(tmp_path)
    s = SQLiteStore(tmp_path, maintenance=True)
    with pytest.raises(StoreDamaged, match="nothing to rebuild"):
        s.reindex()
    assert any(f.level == "error" and "edges" in f.message for f in s.check())
    s.close()


def test_damaged_derived_rows_are_found_and_rebuilt(tmp_path: Path) -> None:
    """Rows of every derived table deleted, changed or invented: check() names each table, reindex fixes all."""
    db = _store(tmp_path)
    before = _before(tmp_path)
    _damage(db, "DELETE FROM postings WHERE term = 'dana' AND memory_id = 'm_0'",
            "UPDATE term_df SET df = df + 3 WHERE term = '北京'", "UPDATE lexical_totals SET n_docs = 1",
            "DELETE FROM aliases WHERE alias = 'dana whitfield'", "INSERT INTO aliases VALUES ('ghost', 'x', 'e_none')",
            "UPDATE entities SET degree = 0")
    s = SQLiteStore(tmp_path)
    bad = {f.area for f in s.check() if f.level == "error"}
    assert bad == {"postings", "term_df", "lexical_totals", "aliases", "degrees"}
    counts = s.reindex()
    assert counts["orphans"] == 1 and counts["users"] == 1
    assert _view(s) == before
    assert [f for f in s.check() if f.level != "ok"] == []
    s.close()


def test_vectors_of_another_dimension_are_reported(tmp_path: Path) -> None:
    """(What a bad import left behind in issue 18: a 3-byte vector made the user's recall fail for good.)"""
    _store(tmp_path)
    s = SQLiteStore(tmp_path)
    s.write(WriteBatch(memories=[make_memory("m_odd", vec=unit_vector(1.0)[:3])]))
    (finding,) = [f for f in s.check() if f.area == "vectors"]
    assert finding.level == "error" and "m_odd" in finding.message
    s.close()


def test_not_a_ripple_store_and_a_bad_schema_version_are_schema_errors(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    _damage(other, "CREATE TABLE invoices (id INTEGER)")
    with pytest.raises(SchemaError, match="not a ripple store"):
        SQLiteStore(other)
    db = _store(tmp_path / "s")
    _damage(db, "UPDATE meta SET value = 'four' WHERE key = 'schema_version'")
    with pytest.raises(SchemaError, match="'four', not a number"):
        SQLiteStore(db)


def test_maintenance_opens_nothing_that_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailable, match="no ripple store at"):
        open_store(str(tmp_path / "nothing"), maintenance=True)
    assert not (tmp_path / "nothing" / "ripple.db").exists()


_CREATE = """
import sys
from graphstore.records import StoredMemory, WriteBatch
from graphstore.sqlite import SQLiteStore
sys.stdin.readline()  # start together
s = SQLiteStore(sys.argv[1])
s.write(WriteBatch(memories=[StoredMemory(id=f"m_{sys.argv[2]}", user_id="u1", text="x", at=1.0, created_at=1.0)]))
s.close()
"""


def test_processes_creating_one_store_at_once_share_it(tmp_path: Path) -> None:
    """A new store is created whole (under a temporary name, then linked into place), so a process that
    opens it while another creates it never sees the empty file that is now refused as damage."""
    for attempt in range(2):
        folder = tmp_path / f"new{attempt}"
        procs = [subprocess.Popen([sys.executable, "-c", _CREATE, str(folder), str(i)], stdin=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=child_env(), cwd=ROOT) for i in range(5)]
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        errors = [p.communicate(timeout=60)[1] for p in procs]
        assert [p.returncode for p in procs] == [0] * 5, errors
        s = SQLiteStore(folder)
        assert s.stats("u1")["memories"] == 5
        s.close()
        assert sorted(x.name for x in folder.iterdir() if not x.name.startswith("ripple.db")) == []
