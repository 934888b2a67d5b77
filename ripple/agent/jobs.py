"""Background jobs of a session, visible: a job list with status and errors, run off the caller's path.

``add`` must not wait for summarisation, and a background job must never
fail silently (LangMem #14).  Jobs run one at a time, in submission order
(summaries merge in order), on a worker thread for :class:`~ripple.agent.Session`
and on an asyncio task for :class:`~ripple.agent.AsyncSession`; both run the
same plans (see :mod:`ripple.agent.plan`).  Every job is a :class:`Job` on the
session's :class:`JobList` (pending, running, done, failed, with its error),
and its trace shows what it did.
"""

from __future__ import annotations

import asyncio
import itertools
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Job", "JobList", "ThreadWorker", "TaskWorker"]


@dataclass(slots=True)
class Job:
    id: int
    kind: str
    status: str = "pending"  # pending | running | done | failed
    created: float = field(default_factory=time.time)
    started: float | None = None
    ended: float | None = None
    error: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "status": self.status, "created": self.created,
                "started": self.started, "ended": self.ended, "error": self.error, "detail": self.detail}


class JobList:
    """The session's jobs: the last ``keep`` finished ones, every failure, and what is pending."""

    def __init__(self, keep: int = 100) -> None:
        self._ids = itertools.count(1)
        self._recent: deque[Job] = deque(maxlen=keep)
        self._lock = threading.Lock()
        self.failed: list[Job] = []

    def new(self, kind: str, **detail: Any) -> Job:
        job = Job(next(self._ids), kind, detail=dict(detail))
        with self._lock:
            self._recent.append(job)
        return job

    def started(self, job: Job) -> None:
        job.status, job.started = "running", time.time()

    def finished(self, job: Job, error: BaseException | None = None) -> None:
        job.ended = time.time()
        if error is None:
            job.status = "done"
        else:
            job.status, job.error = "failed", f"{type(error).__name__}: {error}"
            with self._lock:
                self.failed.append(job)

    def all(self) -> list[Job]:
        with self._lock:
            seen = {j.id for j in self._recent}
            return sorted([*self._recent, *(j for j in self.failed if j.id not in seen)], key=lambda j: j.id)

    def pending(self) -> list[Job]:
        with self._lock:
            return [j for j in self._recent if j.status in ("pending", "running")]


class ThreadWorker:
    """Runs submitted callables one at a time on a daemon thread; :meth:`flush` waits for all."""

    def __init__(self, name: str) -> None:
        self._queue: queue.Queue[tuple[Job, Callable[[], None]] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._name = name
        self._lock = threading.Lock()

    def submit(self, job: Job, fn: Callable[[], None]) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()
        self._queue.put((job, fn))

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                item[1]()
            finally:
                self._queue.task_done()

    def flush(self) -> None:
        self._queue.join()

    def close(self) -> None:
        with self._lock:
            thread = self._thread
        if thread is not None and thread.is_alive():
            self._queue.put(None)
            thread.join()


class TaskWorker:
    """The async twin: one consumer task per session, started on the first job; :meth:`flush` awaits all."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[tuple[Job, Callable[[], Any]] | None] | None = None
        self._task: asyncio.Task[None] | None = None

    def submit(self, job: Job, fn: Callable[[], Any]) -> None:
        if self._queue is None:
            self._queue = asyncio.Queue()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._loop())
        self._queue.put_nowait((job, fn))

    async def _loop(self) -> None:
        assert self._queue is not None
        while True:
            item = await self._queue.get()
            try:
                if item is None:
                    return
                await item[1]()
            finally:
                self._queue.task_done()

    async def flush(self) -> None:
        if self._queue is not None:
            await self._queue.join()

    async def close(self) -> None:
        if self._queue is not None and self._task is not None and not self._task.done():
            self._queue.put_nowait(None)
            await self._task
