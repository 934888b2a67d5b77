"""A recall never fails because recording its use failed.

``recall(touch=True)`` (the default) counts its hits as used, a write.  When
that write cannot happen (the store is locked by another process past the
touch's 1 s wait, the disk is full, the file is read-only: see also
``test_disk_full.py``), the recall still returns its hits; the failure is a
``touch`` stage of the result's trace, and it is logged once per process.
Before issue 18 the recall raised the store's error.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path

import anyio
from tests.faults.light import batch_items, light_async_memory, light_memory


def _stage(result, name: str):  # type: ignore[no-untyped-def]
    return next((s for s in result.trace.stages if s.name == name), None)


def test_recall_returns_while_another_process_holds_the_write_lock(tmp_path: Path, caplog) -> None:  # type: ignore[no-untyped-def]
    with light_memory(str(tmp_path / "s")) as mem:
        mem.add_many(batch_items("u1", 1, 12))
        assert _stage(mem.recall("budget deadline", user_id="u1", k=3), "touch") is None  # touch works: no stage
        locker = sqlite3.connect(tmp_path / "s" / "ripple.db", isolation_level=None)
        locker.execute("BEGIN IMMEDIATE")  # another connection holds the write lock
        try:
            with caplog.at_level(logging.DEBUG, logger="ripple"):
                t0 = time.monotonic()
                first = mem.recall("budget deadline", user_id="u1", k=3)
                second = mem.recall("预算 会议", user_id="u1", k=3)
                took = time.monotonic() - t0
        finally:
            locker.execute("ROLLBACK")
            locker.close()
        assert first.hits and second.hits
        stage = _stage(first, "touch")
        assert stage is not None and stage.size == len(first.hits) and "locked" in stage.detail["error"]
        # two recalls: each touch waits about 1 s for the lock, not the 30 s a write waits (generous: loaded CI)
        assert took < 20, f"two recalls took {took:.1f} s"
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "recorded" not in r.message
                    and "as used" in r.message]
        assert len(warnings) == 1, "logged once, not on every recall"
        counts = {h.memory.id: h.memory.access_count for h in mem.recall("budget deadline", user_id="u1", k=3).hits}
        assert any(counts.values()), "touches work again once the lock is gone"


def test_async_recall_survives_a_failed_touch(tmp_path: Path) -> None:
    async def main() -> tuple[int, object]:
        async with light_async_memory(str(tmp_path / "s")) as mem:
            await mem.add_many(batch_items("u1", 2, 8))
            locker = sqlite3.connect(tmp_path / "s" / "ripple.db", isolation_level=None)
            locker.execute("BEGIN IMMEDIATE")
            try:
                res = await mem.recall("shipment warehouse", user_id="u1", k=3)
            finally:
                locker.execute("ROLLBACK")
                locker.close()
            return len(res.hits), _stage(res, "touch")

    n, stage = anyio.run(main)
    assert n and stage is not None
