"""An :class:`~graphstore.AsyncGraphStore` over a synchronous store: each call runs in a worker thread.

The embedded SQLite store has only a sync API; ``open_store(..., asynchronous=True)``
wraps it in this adapter so that async callers (``ripple.AsyncMemory``, the
conformance suite's async tests) see one protocol whatever the backend, and
the event loop never waits for a disk.  Only methods the wrapped store has
are forwarded, so capability checks (``isinstance(store, SupportsCypher)``,
the batch searches, :class:`~graphstore.InProcessStore`) stay true to it.
"""

from __future__ import annotations

import functools
from itertools import islice
from typing import Any, AsyncIterator, Callable

from .protocol import GraphStore
from .records import EdgeRecord, EntityRecord, StoredMemory

__all__ = ["ThreadedAsyncStore"]

_EXPORT_CHUNK = 1_000  # records fetched per worker-thread hop while exporting


class ThreadedAsyncStore:
    """``await store.method(...)`` for every method of a sync store, run with ``anyio.to_thread``."""

    def __init__(self, store: GraphStore) -> None:
        self.sync = store
        self.uri = store.uri

    def __repr__(self) -> str:
        return f"ThreadedAsyncStore({self.sync!r})"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "sync":  # (never forwarded; nor looked up before ``sync`` is set)
            raise AttributeError(name)
        attr = getattr(self.sync, name)  # AttributeError for a method the store lacks: capabilities stay honest
        if not callable(attr):
            return attr
        return functools.partial(_in_thread, attr)

    async def export(self, user_id: str) -> AsyncIterator[StoredMemory | EntityRecord | EdgeRecord]:
        """The sync export, pulled in chunks from a worker thread."""
        records = await _in_thread(lambda: iter(self.sync.export(user_id)))
        while True:
            chunk = await _in_thread(lambda: list(islice(records, _EXPORT_CHUNK)))
            if not chunk:
                return
            for rec in chunk:
                yield rec

    async def aclose(self) -> None:
        await _in_thread(self.sync.close)


async def _in_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    import anyio

    return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))
