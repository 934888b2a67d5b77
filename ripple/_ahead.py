"""``add_many``'s CPU stage one batch ahead of its writes, for a server store.

Why: a write batch costs the client model work that does not depend on the
store (extraction, embeddings: :meth:`ripple._runtime.Runtime.prepare`) and
then the store's work (the batch's reads and its write).  On a server store
(Neo4j) the server works on its own core while the client waits for it, so
preparing batch n+1 in a worker thread while batch n is written makes a run
take about max(client, server) instead of client + server.  An in-process
store (SQLite) writes in Python holding the GIL, so there the batches stay
serial: overlapping would only make the two stages take turns on the GIL.

What stays exact: only the store-independent stage runs early.  Everything
that reads the store (entity resolution, session tails, the lifecycle's
reads, dedup) runs in :func:`ripple._ingest.ingest_plan`, in the driver, after
the previous batch's write, exactly as without the overlap.  A batch whose
preparation fails raises when its turn comes, after every batch before it is
written, and a write that fails stops the batches after it (the one being
prepared is waited for and dropped; it wrote nothing).
"""

from __future__ import annotations

import contextvars
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Protocol, Sequence

if TYPE_CHECKING:
    from ._ingest import Prepared
    from .models import AddItem

__all__ = ["PreparedBatches"]

PrepareFn = Callable[["Sequence[AddItem]"], "list[Prepared]"]


class Progress(Protocol):
    """What ``add_many`` shows progress on (a tqdm bar)."""

    def update(self, n: int) -> object: ...

    def close(self) -> None: ...


class PreparedBatches:
    """The batches of one ``add_many``, in order, each as a call that returns it prepared.

    Use it as a context manager (``with``, or ``async with`` in the async
    driver: it then waits for its worker in a thread) and iterate it; call each
    item (the sync driver directly, the async one in a worker thread) before
    writing that batch.  With ``overlap`` and more than one batch, batch n+1 is
    being prepared in one worker thread while the caller writes batch n (at
    most one batch ahead); otherwise the call prepares its batch when made.
    """

    def __init__(self, chunks: Iterable[Sequence["AddItem"]], prepare: PrepareFn, *, overlap: bool,
                 progress: "Progress | None" = None) -> None:
        self._chunks = chunks
        self._prepare = prepare
        self._overlap = overlap
        self._progress = progress  # advanced when the caller comes back for the next batch: its last one is written
        self._pool: ThreadPoolExecutor | None = None  # (started at the second batch: one batch needs no thread)
        self._pending: list[Future[list[Prepared]]] = []

    def __enter__(self) -> "PreparedBatches":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> "PreparedBatches":
        return self

    async def __aexit__(self, *exc: object) -> None:
        import anyio

        await anyio.to_thread.run_sync(self.close)

    def close(self) -> None:
        """Drop what was prepared ahead (a failed write stops the batches after it); wait for the worker."""
        for fut in self._pending:
            fut.cancel()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        if self._progress is not None:
            self._progress.close()

    def __iter__(self) -> Iterator[Callable[[], "list[Prepared]"]]:
        for size, call in self._calls():
            yield call
            if self._progress is not None:  # (the caller is back: that batch is written, not only prepared)
                self._progress.update(size)

    def _calls(self) -> Iterator[tuple[int, Callable[[], "list[Prepared]"]]]:
        chunks = iter(self._chunks)
        if not self._overlap:
            for chunk in chunks:
                yield len(chunk), partial(self._prepare, chunk)
            return
        first = next(chunks, None)
        second = None if first is None else next(chunks, None)
        if first is None or second is None:  # (one batch or none: nothing to overlap)
            if first is not None:
                yield len(first), partial(self._prepare, first)
            return
        sizes = [len(first), len(second)]
        current, following = self._submit(first), self._submit(second)
        while current is not None:
            yield sizes.pop(0), current.result
            after = next(chunks, None)
            if after is not None:
                sizes.append(len(after))
            current, following = following, self._submit(after)

    def _submit(self, chunk: Sequence["AddItem"] | None) -> "Future[list[Prepared]] | None":
        if chunk is None:
            return None
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="ripple-prepare")
        # (in a copy of the caller's context, as the query encoder's worker runs)
        fut = self._pool.submit(contextvars.copy_context().run, self._prepare, chunk)
        self._pending = [f for f in self._pending if not f.done()] + [fut]
        return fut
