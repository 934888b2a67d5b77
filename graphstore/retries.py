"""How long a server store retries, and a record of its retries for the caller's trace.

Why a budget of our own: the Neo4j driver's managed transactions retry for up
to 30 s, and with connection timeouts on top a call to a stopped server
blocked for ~38 s before it failed (issue 18), which an agent waiting on a
recall cannot afford.  The store now runs each transaction itself and retries
what the driver calls retryable (a lost connection, a leader switch, a
deadlock) within :class:`RetryBudget` seconds (``RIPPLE_NEO4J_RETRY_SECONDS``),
then raises :class:`~ripple.errors.StoreUnavailable` saying how long it tried.

Retries that succeed are not errors, but they are why a call was slow: each is
recorded in the current context (:func:`recording`), so ripple's recall can put
them in its trace.  A context variable follows the call into ``asyncio`` tasks
and ``asyncio.to_thread`` workers without any plumbing through the protocol.
"""

from __future__ import annotations

import contextlib
import time
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Callable, Iterator

__all__ = ["RetryBudget", "RetrySchedule", "Retry", "recording", "note"]


@dataclass(frozen=True, slots=True)
class Retry:
    """One retry of one transaction: which store, which attempt failed, why, and the wait before the next."""

    store: str
    attempt: int
    error: str
    wait_s: float


@dataclass(frozen=True, slots=True)
class RetryBudget:
    """Retry for at most ``seconds`` (waits double from ``first_wait`` up to ``max_wait``); 0: never retry."""

    seconds: float = 8.0
    first_wait: float = 0.1
    max_wait: float = 1.0

    def start(self, clock: Callable[[], float] = time.monotonic) -> "RetrySchedule":
        return RetrySchedule(self, clock)


class RetrySchedule:
    """The retries of one call: ask :meth:`next_wait` after each failed attempt."""

    __slots__ = ("budget", "attempts", "_clock", "_start")

    def __init__(self, budget: RetryBudget, clock: Callable[[], float]) -> None:
        self.budget = budget
        self.attempts = 0
        self._clock = clock
        self._start = clock()

    @property
    def elapsed(self) -> float:
        return self._clock() - self._start

    def next_wait(self) -> float | None:
        """Seconds to wait before the next attempt, or None when the budget does not allow one."""
        self.attempts += 1
        wait = min(self.budget.max_wait, self.budget.first_wait * 2 ** (self.attempts - 1))
        if self.elapsed + wait > self.budget.seconds:
            return None
        return wait


_RECORD: ContextVar[list[Retry] | None] = ContextVar("graphstore_retries", default=None)


@contextlib.contextmanager
def recording() -> Iterator[list[Retry]]:
    """Collect the retries that store calls made in this context (and tasks and threads started from it)."""
    retries: list[Retry] = []
    token = _RECORD.set(retries)
    try:
        yield retries
    finally:
        _RECORD.reset(token)


def note(retry: Retry) -> None:
    """Record a retry in the current context, if someone is recording."""
    retries = _RECORD.get()
    if retries is not None:
        retries.append(retry)
