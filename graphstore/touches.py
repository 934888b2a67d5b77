"""Deferred touches: a recall's hits counted as used without the recall waiting for the write.

Why: ``Memory.recall(touch=True)`` (the default) ends with :meth:`~graphstore.GraphStore.touch`,
the access counts the forgetting tiers read.  On a server store that is a write transaction
(BEGIN and RUN, COMMIT, a forced log write on the server) at the end of every recall, which
the caller waited for although nothing in its result depends on it.  A store that defers
touches (Neo4j) hands them to a :class:`TouchWriter` (threads) or :class:`AsyncTouchWriter`
(asyncio) and returns at once; the writer sends them in the background.

What stays true:

* **Counts are exact, eventually**: every touch is written.  Touches of the same memory
  waiting together are coalesced (their counts added, the latest time kept: one row each).
* **A process reads its own touches**: the store's reads that return access counts
  (memories by id, listings, exports, raw Cypher) first wait until nothing is pending, so a
  recall, ``Memory.get`` or an export after a touch sees it, as with a synchronous touch.
  Other processes see a touch once it is written (milliseconds later).
* **Closing writes what is pending** (``close()``/``aclose()`` wait for it).
* **Bounded**: at most :data:`MAX_PENDING` distinct memories wait; a touch beyond that waits
  for the write in progress (backpressure instead of unbounded memory).
* **Errors are logged, not raised**: the recall a touch came from has already returned.  A
  write that fails (after the store's own retries) is logged at warning level with how many
  memories' counts it lost.

The I/O-free part (:class:`PendingTouches`) is shared by the two drivers, which differ only in
how they wait (a condition variable and a daemon thread, or an asyncio task).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any, Awaitable, Callable, Sequence

__all__ = ["MAX_PENDING", "PendingTouches", "TouchWriter", "AsyncTouchWriter", "touch_rows"]

#: distinct memories whose touches may wait at once (a few hundred recalls' hits)
MAX_PENDING = 10_000

Rows = list[dict[str, Any]]
_log = logging.getLogger(__name__)


def touch_rows(memory_ids: Sequence[str], at: float) -> Rows:
    """One touch call as rows ``{id, n, at}``: distinct ids in id order (writers lock memories in one
    order), each with how often it was named."""
    pending = PendingTouches()
    pending.add(memory_ids, at)
    return pending.take()


class PendingTouches:
    """Touches not yet written, coalesced per memory (no I/O)."""

    __slots__ = ("_rows",)

    def __init__(self) -> None:
        self._rows: dict[str, list[Any]] = {}  # id -> [count, latest at]

    def __len__(self) -> int:
        return len(self._rows)

    def add(self, memory_ids: Sequence[str], at: float) -> None:
        for mid in memory_ids:
            row = self._rows.get(mid)
            if row is None:
                self._rows[mid] = [1, at]
            else:
                row[0] += 1
                row[1] = max(row[1], at)

    def take(self) -> Rows:
        """Everything pending, as rows in id order; nothing is pending after."""
        rows = [{"id": mid, "n": n, "at": at} for mid, (n, at) in sorted(self._rows.items())]
        self._rows = {}
        return rows


def _lost(rows: Rows, exc: BaseException) -> None:
    _log.warning("could not write the access counts of %d memories (recall touches): %s",
                 len(rows), " ".join(f"{type(exc).__name__}: {exc}".split()))


class TouchWriter:
    """Touches written by a daemon thread through ``write(rows)`` (a blocking store call)."""

    def __init__(self, write: Callable[[Rows], None], *, name: str = "ripple-touches") -> None:
        self._write = write
        self._name = name
        self._pending = PendingTouches()
        self._cond = threading.Condition()
        self._busy = False  # a batch is being written
        self._closed = False
        self._thread: threading.Thread | None = None

    def add(self, memory_ids: Sequence[str], at: float) -> None:
        """Queue touches; returns at once unless :data:`MAX_PENDING` memories already wait."""
        if not memory_ids:
            return
        with self._cond:
            if self._closed:  # (after close: written here, so that nothing is dropped silently)
                rows = touch_rows(memory_ids, at)
            else:
                while len(self._pending) >= MAX_PENDING:
                    self._cond.wait()
                self._pending.add(memory_ids, at)
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                    self._thread.start()
                self._cond.notify_all()
                return
        self._write(rows)

    def settle(self) -> None:
        """Wait until every touch queued before this call is written (or its failure logged)."""
        with self._cond:
            while len(self._pending) or self._busy:
                self._cond.wait()

    def close(self) -> None:
        """Write what is pending and stop the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not len(self._pending) and not self._closed:
                    self._cond.wait()
                if not len(self._pending):  # closed, nothing left
                    self._thread = None
                    self._cond.notify_all()
                    return
                rows = self._pending.take()
                self._busy = True
                self._cond.notify_all()  # (room for touches that waited on MAX_PENDING)
            try:
                self._write(rows)
            except Exception as exc:  # noqa: BLE001 - logged: the recalls these came from have returned
                _lost(rows, exc)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()


class AsyncTouchWriter:
    """Touches written by an asyncio task through ``await write(rows)``."""

    def __init__(self, write: Callable[[Rows], Awaitable[None]]) -> None:
        self._write = write
        self._pending = PendingTouches()
        self._task: asyncio.Task[None] | None = None

    async def add(self, memory_ids: Sequence[str], at: float) -> None:
        """Queue touches; returns at once unless :data:`MAX_PENDING` memories already wait."""
        if not memory_ids:
            return
        while len(self._pending) >= MAX_PENDING:
            await self.settle()
        self._pending.add(memory_ids, at)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def settle(self) -> None:
        """Wait until every touch queued before this call is written (or its failure logged)."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def _run(self) -> None:
        while len(self._pending):
            rows = self._pending.take()
            try:
                await self._write(rows)
            except asyncio.CancelledError as exc:  # the loop is ending before the store was closed
                _lost(rows + self._pending.take(), exc)
                raise
            except Exception as exc:  # noqa: BLE001 - logged: the recalls these came from have returned
                _lost(rows, exc)
