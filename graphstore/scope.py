"""What a store may remember for the rest of one operation, shared by every thread the operation starts.

Why: one recall reads from several threads at once (the query encoder's thread runs the dense search
beside the plan, read-aheads run in workers, an async client's searches run as tasks), and each gets
a *copy* of the caller's context when it starts.  A store that learns something in one read which the
operation's later reads may rely on (:class:`graphstore.neo4j.Neo4jStore`: the user's revision, read
with the recall's first read, which spares its near cache a revision read before each search) needs a
place that all those copies share and that ends with the operation: a dict put in the context before
any of them starts.  The client opens one per operation (``with operation_scope():``); a store call
outside any scope finds none and remembers nothing.

A scope only saves round trips: what a store keeps in it must be something it could read again.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Any, Iterator

__all__ = ["operation_scope", "current_scope"]

_SCOPE: ContextVar[dict[Any, Any] | None] = ContextVar("graphstore_scope", default=None)


@contextlib.contextmanager
def operation_scope() -> Iterator[dict[Any, Any]]:
    """A fresh scope for the block (and the threads and tasks started from it), the enclosing one after."""
    scope: dict[Any, Any] = {}
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


def current_scope() -> dict[Any, Any] | None:
    """The scope of the operation this code runs for, or ``None`` outside one."""
    return _SCOPE.get()
