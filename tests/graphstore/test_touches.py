"""Deferred touches (graphstore.touches): coalesced, written off the caller's path, every one
written by close, reads wait for them, failures logged.  The store side (Neo4j, SQLite) is in
tests/test_touch_counts.py; here the writers run against a plain recording function."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest

from graphstore.touches import MAX_PENDING, AsyncTouchWriter, PendingTouches, TouchWriter, touch_rows


def test_pending_touches_coalesce_per_memory_in_id_order() -> None:
    pending = PendingTouches()
    pending.add(["m_2", "记忆-1", "m_2"], 5.0)
    pending.add(["m_2", "m_1"], 3.0)
    assert len(pending) == 3
    assert pending.take() == [{"id": "m_1", "n": 1, "at": 3.0}, {"id": "m_2", "n": 3, "at": 5.0},
                              {"id": "记忆-1", "n": 1, "at": 5.0}]
    assert len(pending) == 0 and pending.take() == []
    assert touch_rows(["b", "a", "b"], 1.0) == [{"id": "a", "n": 1, "at": 1.0}, {"id": "b", "n": 2, "at": 1.0}]


def test_writer_returns_before_the_write_and_close_writes_everything() -> None:
    gate, written = threading.Event(), []

    def write(rows: list[dict[str, object]]) -> None:
        gate.wait(10)
        written.extend(rows)

    writer = TouchWriter(write)
    writer.add(["m_1", "记忆"], 1.0)  # returns although the write is held
    writer.add(["m_1"], 2.0)
    assert written == []
    gate.set()
    writer.settle()
    assert sum(r["n"] for r in written if r["id"] == "m_1") == 2 and {r["id"] for r in written} == {"m_1", "记忆"}
    writer.add(["m_3"], 4.0)
    writer.close()  # writes what is pending
    assert written[-1] == {"id": "m_3", "n": 1, "at": 4.0}
    writer.add(["m_4"], 5.0)  # after close: written at once, never dropped
    assert written[-1]["id"] == "m_4"


def test_a_failed_write_is_logged_with_what_it_lost(caplog: pytest.LogCaptureFixture) -> None:
    def write(rows: list[dict[str, object]]) -> None:
        raise RuntimeError("server gone")

    writer = TouchWriter(write)
    with caplog.at_level(logging.WARNING, logger="graphstore.touches"):
        writer.add(["m_1", "m_2"], 1.0)
        writer.settle()
        writer.close()
    assert "access counts of 2 memories" in caplog.text and "server gone" in caplog.text


def test_pending_touches_are_bounded() -> None:
    gate, sizes = threading.Event(), []

    def write(rows: list[dict[str, object]]) -> None:
        gate.wait(10)
        sizes.append(len(rows))

    writer = TouchWriter(write)
    writer.add(["first"], 1.0)  # taken by the writer, which then waits on the gate
    while not writer._busy:
        pass
    writer.add([f"m_{i}" for i in range(MAX_PENDING)], 1.0)
    blocked = threading.Thread(target=writer.add, args=(["one more"], 1.0))
    blocked.start()
    blocked.join(0.2)
    assert blocked.is_alive()  # waits for room instead of queueing without bound
    gate.set()
    blocked.join(10)
    writer.close()
    assert sum(sizes) == MAX_PENDING + 2


def test_async_writer_settles_and_logs() -> None:
    written: list[dict[str, object]] = []

    async def write(rows: list[dict[str, object]]) -> None:
        await asyncio.sleep(0.01)
        if any(r["id"] == "bad" for r in rows):
            raise RuntimeError("boom")
        written.extend(rows)

    async def main() -> None:
        writer = AsyncTouchWriter(write)
        await writer.add(["m_1", "记忆", "m_1"], 1.0)
        assert written == []  # not waited for
        await writer.settle()
        assert {(r["id"], r["n"]) for r in written} == {("m_1", 2), ("记忆", 1)}
        await writer.add(["bad"], 2.0)
        await writer.settle()  # the failure is logged, not raised here

    asyncio.run(main())
