"""The public API: :class:`Memory` (sync) and :class:`AsyncMemory` (async), two thin drivers.

Every operation is written once, as an I/O-free generator of requests
(:mod:`ripple._operations`, :mod:`ripple.recall.pipeline`, :mod:`ripple._ingest`).
A client only *drives* it: the sync one answers store requests with plain
calls, the async one awaits them (Neo4j through the driver's native async API,
the embedded store through worker threads), and both answer model work
through their :class:`~ripple._runtime.Runtime` (in a worker thread for the
async one, so the event loop never waits for a model).  The two classes have
the same public methods with the same parameters (a test checks it), and
nothing here knows which backend runs: :func:`graphstore.open_store` chooses.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Coroutine, Iterable, Iterator, Mapping, Sequence, TypeVar, cast

from graphstore import AsyncGraphStore, GraphStore, InProcessStore, as_async, open_store, retries
from graphstore.scope import operation_scope

from . import _operations as ops
from . import _validate as check
from ._blas import one_blas_thread
from ._documents import delete_document_plan, get_document_plan, put_document_plan
from ._facts import facts_plan
from ._lifecycle import LifecycleConfig
from ._ahead import PreparedBatches
from ._requests import LocalRequest, Op
from ._runtime import CallBesideFn, DenseSearchFn, Runtime, SearchHits
from ._shape import exported
from .errors import ConfigError, RippleError
from .limits import Limits
from .models import AddItem, Document, Fact, ImportReport, MemoryConflict, MemoryRecord, RecallResult
from .recall.config import RecallConfig
from .settings import RippleSettings

if TYPE_CHECKING:
    from concurrent.futures import Future

    from extractors.base import Extractor
    from graphstore.requests import StoreRequest

    from .agent import AsyncSession, Session
    from .embedding import Embedder

__all__ = ["Memory", "AsyncMemory"]

T = TypeVar("T")
_CHUNK = 256  # items per atomic write batch in add_many


class _Client:
    """What both drivers share, none of it I/O: settings, the runtime, the operation context."""

    def __init__(
        self,
        path: str | None,
        *,
        store: "str | GraphStore | AsyncGraphStore | None",
        embedder: "str | Embedder | None",
        extractor: "Extractor | None",
        config: RecallConfig | None,
        lifecycle: LifecycleConfig | None,
        settings: RippleSettings | None,
        clock: Callable[[], float] | None,
        create: bool,
        asynchronous: bool,
    ) -> None:
        self.settings = settings or RippleSettings()
        if path is not None and store is not None:
            raise ConfigError("pass either path= or store=, not both")
        spec = store if store is not None else (str(path) if path is not None else self.settings.store_uri())
        self._owns_store = isinstance(spec, str)
        opened = self._open(spec, asynchronous, create)
        in_process = isinstance(opened, InProcessStore) and opened.in_process is True
        # A server store writes on its own core: add_many prepares the next batch meanwhile (see _ahead).
        self._prepare_ahead = not in_process
        # A server store runs the plan's dense search in the query encoder's thread (see Runtime).
        beside = None if in_process else _search_beside(opened, asynchronous)
        self._runtime = Runtime(self.settings, embedder=embedder, extractor=extractor, clock=clock,
                                encode_first=in_process, search_beside=beside,
                                call_beside=None if in_process else _call_beside(opened, asynchronous))
        self._ctx = ops.OpContext(config or RecallConfig(), lifecycle or LifecycleConfig(), self._runtime.clock,
                                  self.settings.limits)
        self._opened = opened

    @property
    def config(self) -> RecallConfig:
        """The recall plan of ``mode="ripple"`` (assign a new one to change it)."""
        return self._ctx.config

    @config.setter
    def config(self, value: RecallConfig) -> None:
        self._ctx = replace(self._ctx, config=value)

    @property
    def lifecycle(self) -> LifecycleConfig:
        """What the write path does to keep memory true (assign a new one to change it)."""
        return self._ctx.lifecycle

    @lifecycle.setter
    def lifecycle(self, value: LifecycleConfig) -> None:
        self._ctx = replace(self._ctx, lifecycle=value)

    def _open(self, spec: "str | GraphStore | AsyncGraphStore", asynchronous: bool,
              create: bool) -> "GraphStore | AsyncGraphStore":
        if isinstance(spec, str):
            if asynchronous:
                return open_store(spec, asynchronous=True, create=create, **self.settings.store_options())
            return open_store(spec, create=create, **self.settings.store_options())
        if asynchronous:
            return as_async(spec)
        if isinstance(spec, AsyncGraphStore):
            raise ConfigError("Memory needs a synchronous store; use AsyncMemory for an async one")
        return spec

    @property
    def embedder(self) -> "Embedder":
        return self._runtime.embedder

    @property
    def extractor(self) -> "Extractor":
        return self._runtime.extractor

    @property
    def limits(self) -> Limits:
        """The size limits this client enforces (``settings.limits``; see :class:`ripple.Limits`)."""
        return self._ctx.limits

    def _batches(self, items: Iterable[Mapping[str, Any] | AddItem], progress: bool) -> PreparedBatches:
        """add_many's write batches, each prepared (extracted, embedded) when called; on a server
        store the next one is prepared while the current one is written (see :mod:`ripple._ahead`).
        All items are validated before the first batch; the progress bar counts written batches."""
        valid = check.items(items, self._ctx.limits)
        bar = None
        if progress and len(valid) > _CHUNK:
            from tqdm import tqdm

            bar = tqdm(total=len(valid), unit="mem", desc="ingest")
        chunks = (valid[start : start + _CHUNK] for start in range(0, len(valid), _CHUNK))
        return PreparedBatches(chunks, self._runtime.prepare, overlap=self._prepare_ahead, progress=bar)


#: The event loop an :class:`AsyncMemory` operation runs on (set by its ``_drive``; worker threads get a
#: copy of the context, so the query encoder's thread finds it): where its dense search beside runs.
_LOOP: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar("ripple_loop", default=None)


def _search_beside(store: "GraphStore | AsyncGraphStore", asynchronous: bool) -> DenseSearchFn:
    """The plan's dense search as the query encoder's thread starts it right after encoding, beside the
    lexical route the plan reads meanwhile (see :meth:`ripple._runtime.Runtime.query_vectors`).

    Sync: a plain store call, in that thread.  Async: the store's coroutine, started on the operation's
    event loop (the thread does not wait for it: the plan collects its hits with the vectors), so both
    clients overlap encoding, dense search and lexical route the same way.  Outside asyncio (trio) it
    answers ``None`` and the plan searches itself, after encoding."""

    def search(user_id: str, vector: Any, k: int, statuses: Sequence[str]) -> "SearchHits | None":
        if not asynchronous:
            return cast(GraphStore, store).nearest_memories(user_id, vector, k, statuses=statuses)
        return _on_loop(lambda: cast(AsyncGraphStore, store).nearest_memories(user_id, vector, k, statuses=statuses))

    return search


def _call_beside(store: "GraphStore | AsyncGraphStore", asynchronous: bool) -> CallBesideFn:
    """A store request as a read-ahead's worker thread answers it (see :meth:`ripple._runtime.Runtime.read_ahead`):
    sync, a plain store call in that thread; async, the store's coroutine on the operation's event loop,
    waited for in that thread.  Outside asyncio (trio) it answers ``None`` and the plan reads itself."""

    def call(request: "StoreRequest[Any]") -> Any:
        if not asynchronous:
            return request.call(cast(GraphStore, store))
        started = _on_loop(lambda: request.acall(cast(AsyncGraphStore, store)))
        return None if started is None else started.result()

    return call


def _on_loop(start: Callable[[], Coroutine[Any, Any, T]]) -> "Future[T] | None":
    """An async store's coroutine (made by ``start``) started on the operation's event loop from a
    worker thread (:data:`_LOOP`); ``None`` outside asyncio (trio), where the plan does it itself."""
    loop = _LOOP.get()
    if loop is None or loop.is_closed():
        return None
    return asyncio.run_coroutine_threadsafe(start(), loop)


def _item(text: str, user_id: str, agent_id: str | None, session_id: str | None, at: datetime | None,
          kind: str | None, importance: float | None, metadata: dict[str, Any] | None) -> dict[str, Any]:
    item: dict[str, Any] = {"text": text, "user_id": user_id, "agent_id": agent_id, "session_id": session_id,
                            "at": at, "kind": kind, "metadata": metadata if metadata is not None else {}}
    if importance is not None:
        item["importance"] = importance
    return item


class Memory(_Client):
    """Associative memory for agents, synchronous API.

    Parameters
    ----------
    path:
        Folder of the embedded store (created if missing).  Without ``path`` or
        ``store`` the folder is ``$RIPPLE_HOME`` or ``~/.ripple``.
    store:
        A store URI (``bolt://...``, ``neo4j://...``, ``sqlite://...``) or an
        open :class:`graphstore.GraphStore`.
    embedder:
        Model name or path for sentence-transformers, or an :class:`~ripple.embedding.Embedder`.
    config:
        The recall plan (:class:`ripple.RecallConfig`); defaults to ripple's tuned default.
    create:
        ``False``: an embedded store that does not exist yet is an error
        (:class:`~ripple.StoreUnavailable` naming the path) instead of a new
        empty one; read-only tools use it so that a typo is not a lost memory.

    Examples
    --------
    >>> from ripple import Memory
    >>> with Memory(path=tmp_path) as mem:                                  # doctest: +SKIP
    ...     mem.add("Dana runs procurement at Northwind.", user_id="u1", session_id="s1")
    ...     res = mem.recall("who signs off purchases?", user_id="u1", k=5)
    """

    def __init__(self, path: str | None = None, *, store: "str | GraphStore | None" = None,
                 embedder: "str | Embedder | None" = None, extractor: "Extractor | None" = None,
                 config: RecallConfig | None = None, lifecycle: LifecycleConfig | None = None,
                 settings: RippleSettings | None = None, clock: Callable[[], float] | None = None,
                 create: bool = True) -> None:
        super().__init__(path, store=store, embedder=embedder, extractor=extractor, config=config,
                         lifecycle=lifecycle, settings=settings, clock=clock, create=create, asynchronous=False)
        self._store = cast(GraphStore, self._opened)
        self._write_lock = threading.Lock()

    @property
    def store(self) -> GraphStore:
        return self._store

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the store (unless the caller passed it in); models stay cached for the process."""
        self._runtime.close()
        if self._owns_store:
            self._store.close()

    def _drive(self, op: Op[T]) -> T:
        """Run an operation: store requests as plain calls, model work here.

        A ripple error of a request is raised inside the operation, at its
        ``yield``: the operation decides (a recall survives a failed touch).
        """
        store, runtime = self._store, self._runtime
        try:
            req = next(op)
            while True:
                try:
                    value = req.run(runtime) if isinstance(req, LocalRequest) else req.call(store)
                except RippleError as exc:
                    req = op.throw(exc)
                else:
                    req = op.send(value)
        except StopIteration as stop:
            return cast(T, stop.value)

    # -- writes ------------------------------------------------------------------------------
    def add(self, text: str, *, user_id: str, agent_id: str | None = None, session_id: str | None = None,
            at: datetime | None = None, kind: str | None = None, importance: float | None = None,
            metadata: dict[str, Any] | None = None) -> list[MemoryRecord]:
        """Store one text; returns the stored memories (empty for a contentless turn like "ok")."""
        return self.add_many([_item(text, user_id, agent_id, session_id, at, kind, importance, metadata)])

    def add_many(self, items: Iterable[Mapping[str, Any] | AddItem], *, progress: bool = False) -> list[MemoryRecord]:
        """Store many texts in batches; each batch of up to 256 items is atomic.

        All items are validated before anything is written: one bad item
        raises :class:`~ripple.InvalidInput` and nothing is stored.  A batch
        that fails later (its extraction or its write) raises with the batches
        before it stored and nothing of it or after it.  On a server store
        (Neo4j) the next batch is extracted and embedded while the current one
        is written (:mod:`ripple._ahead`).
        """
        out: list[MemoryRecord] = []
        with self._batches(items, progress) as batches:
            for prepare in batches:
                prepared = prepare()
                if prepared:
                    with self._write_lock:  # NEXT chains need the session tail read and written together
                        out.extend(self._drive(ops.add_chunk(self._ctx, prepared)))
        return out

    def update(self, memory_id: str, *, text: str | None = None, metadata: dict[str, Any] | None = None,
               importance: float | None = None, at: datetime | None = None) -> MemoryRecord:
        """Change a memory in place; a new text is re-extracted and re-embedded."""
        with self._write_lock:
            return self._drive(ops.update(self._ctx, memory_id, text, metadata, importance, at))

    def delete(self, memory_id: str) -> None:
        """Delete one memory with its edges and index entries."""
        self._drive(ops.delete(self._ctx, memory_id))

    def delete_all(self, *, user_id: str) -> dict[str, int]:
        """Delete every node, edge and index entry of a user; returns counts."""
        return self._drive(ops.delete_all(self._ctx, user_id))

    def forget(self, memory_id: str | None = None, *, query: str | None = None,
               user_id: str | None = None) -> MemoryRecord:
        """Invalidate a memory: it never comes back in recall, but stays exportable until deleted.

        Name it by id, or by ``query=`` and ``user_id=`` (the user's best
        recall hit for the query is the one forgotten); returns it.
        """
        with one_blas_thread():
            return self._drive(ops.forget(self._ctx, memory_id, query, user_id))

    def pin(self, memory_id: str, pinned: bool = True) -> MemoryRecord:
        """Keep a memory at full weight in every forgetting tier (or stop doing so)."""
        with self._write_lock:
            return self._drive(ops.pin(self._ctx, memory_id, pinned))

    # -- reads -------------------------------------------------------------------------------
    def get(self, memory_id: str) -> MemoryRecord:
        """One memory by id (raises :class:`~ripple.MemoryNotFound`)."""
        return self._drive(ops.get(self._ctx, memory_id))

    def get_all(self, *, user_id: str, session_id: str | None = None, limit: int | None = None) -> list[MemoryRecord]:
        """A user's memories in event-time order."""
        return self._drive(ops.get_all(self._ctx, user_id, session_id, limit))

    def history(self, memory_id: str) -> list[MemoryRecord]:
        """Every version of a memory (what it superseded and what superseded it), oldest first."""
        return self._drive(ops.history(self._ctx, memory_id))

    def conflicts(self, *, user_id: str, limit: int | None = None,
                  memory_ids: Sequence[str] | None = None) -> list[MemoryConflict]:
        """Open conflicts of a user: pairs of active memories that may state the same thing with a
        different value, which the write path was not sure enough of to supersede ("was 50k, possibly
        now 60k").  Oldest first; each says which clauses and values were compared and why.
        ``limit``: the newest ``limit`` only; ``memory_ids``: only those involving these memories."""
        return self._drive(ops.conflicts(self._ctx, user_id, limit, memory_ids))

    def resolve_conflict(self, new_id: str, old_id: str, *, supersedes: bool) -> None:
        """Settle a conflict: ``supersedes=True`` makes the later of the two supersede the earlier
        (status, ``valid_to``, SUPERSEDES edge); ``False`` keeps both as they are.  Either way the
        conflict is no longer listed."""
        with self._write_lock:
            self._drive(ops.resolve_conflict(self._ctx, new_id, old_id, supersedes))

    def recall(self, query: str, *, user_id: str, k: int = 10, mode: str = "ripple",
               config: RecallConfig | None = None, touch: bool = True, include_history: bool | None = None,
               min_relevance: float | None = None) -> RecallResult:
        """The ``k`` memories most related to ``query``, each with its score parts and path.

        ``mode`` names a recipe (:data:`ripple.recall.recipes.RECIPES`):
        ``"ripple"`` (this client's configuration) seeds, spreads, merges and
        reranks; ``"flat"`` is plain dense top-k through the same API (the
        baseline); ``"bm25"``, ``"hybrid"`` (RRF) and ``"ppr"`` are the other
        baselines.  ``config`` runs a plan of your own instead.  Superseded
        memories are left out unless ``include_history=True``, which puts every
        version of a hit next to it, oldest first; left unset (``None``), a
        query that asks how something changed ("what was it originally?",
        "原本…后来…") gets them (``MergeConfig.history_cue``).  ``touch`` counts the hits
        as used (which keeps them in the hot forgetting tier).  Every hit has a
        calibrated ``relevance`` in [0, 1] beside its ranking ``score``;
        ``min_relevance`` drops hits below it, so an unrelated question can
        return nothing.
        """
        with one_blas_thread(), retries.recording() as retried, operation_scope():
            result = self._drive(ops.recall(self._ctx, query, user_id, k, mode, config, touch, include_history,
                                            min_relevance))
        return ops.with_store_retries(result, retried)

    def maintain(self, *, user_id: str, now: datetime | None = None) -> dict[str, int]:
        """A maintenance pass: how many of a user's memories are in each forgetting tier now.

        The tiers apply at every recall anyway (see :class:`~ripple.TierConfig`);
        this pass reports them (``ripple maintain``) and counts superseded,
        invalidated and pinned memories.
        """
        return self._drive(ops.maintain(self._ctx, user_id, now))

    # -- housekeeping ------------------------------------------------------------------------
    def export(self, *, user_id: str) -> Iterator[dict[str, Any]]:
        """Every node and edge of a user as JSON-ready dicts (see :mod:`graphstore.jsonl`), streamed."""
        for rec in self._drive(ops.export(self._ctx, user_id)):
            yield exported(rec)

    def import_records(self, records: Iterable[Mapping[str, Any] | str | bytes], *, user_id: str) -> ImportReport:
        """Load exported records as ``user_id``'s: the dicts :meth:`export` yields, or the lines of its
        JSONL file (``str`` or UTF-8 ``bytes``, e.g. an open file).

        Tenant-safe: nothing of another user is ever written.  Records of another
        ``user_id`` are imported as this user's under new ids; a memory id the
        store holds for another user is refused; entity ids are the user's own.
        Each record is validated like an :meth:`add` (limits included, vectors of
        the embedder's dimension, edges only between the user's nodes); a bad one
        is refused with its number and reason and the rest are imported, in
        transactions of ``limits.import_batch`` records.  Records already stored
        as the file has them are skipped, so importing one's own export again
        changes nothing.  See :class:`~ripple.models.ImportReport` and
        :mod:`ripple._import`.
        """
        with self._write_lock:
            return self._drive(ops.import_records(self._ctx, records, user_id))

    def stats(self, *, user_id: str | None = None) -> dict[str, int]:
        """Counts of memories, entities and edges (one user or the whole store)."""
        return self._drive(ops.stats(self._ctx, user_id))

    def users(self) -> list[str]:
        """Every user id with something stored."""
        return self._drive(ops.users())

    def warm(self, *, user_id: str) -> None:
        """Load now what the store keeps in this process for the user's recalls (its vectors; a Neo4j store
        its walk edges too), so that its first recall is as fast as the rest: a server calls it for its
        users at start.  Without it, a
        Neo4j store loads a big user beside its first recalls (those go to the server meanwhile), the
        embedded store at its first search."""
        self._drive(ops.warm(self._ctx, user_id))

    def cypher(self, query: str, params: dict[str, Any] | None = None, *, write: bool = False,
               allow_procedures: bool = False, allow_admin: bool = False) -> tuple[list[str], list[list[Any]]]:
        """Run a Cypher query on a store that runs them (Neo4j): column names and rows.

        A read transaction unless ``write=True``.  Neo4j's ``EXPLAIN`` plan of the
        query decides what it does: a query that writes needs ``write=True``, a
        procedure call ``allow_procedures=True``, and an administration or schema
        command, a ``dbms.*`` procedure or ``LOAD CSV`` ``allow_admin=True``;
        otherwise it is refused (:class:`~ripple.InvalidInput`) before it runs.
        This guards a tool; it does not isolate tenants (Neo4j's users and roles
        do: see RELIABILITY.md).  Raises :class:`~ripple.ConfigError` on the
        embedded store.
        """
        return self._drive(ops.cypher(self._ctx, query, params, write, allow_procedures, allow_admin))

    # -- facts, documents and agent sessions (logic in _facts, _documents, agent/) -----------------
    def facts(self, *, user_id: str, include_history: bool = False) -> list[Fact]:
        """The user's facts (``@self`` attributes: name, employer, budget, allergy, ...) with their evidence.

        Current facts only unless ``include_history=True`` (then superseded
        values too, each with its ``valid_to``); see :class:`ripple.models.Fact`.
        """
        return self._drive(facts_plan(check.user(user_id, self._ctx.limits), include_history=include_history))

    def get_document(self, *, user_id: str, key: str) -> Document | None:
        """A versioned JSON document of the user, or None (see :meth:`put_document`)."""
        return self._drive(get_document_plan(user_id, key, self._ctx.limits))

    def put_document(self, *, user_id: str, key: str, value: Any, expected_version: int | None) -> Document:
        """Store a JSON document if it is at ``expected_version`` (0: must not exist; None: any version).

        The check and the write are one store transaction, so of two writers
        that read the same version only the first succeeds; the other gets a
        :class:`~ripple.VersionConflict` and nothing is written.  Documents
        survive restarts and are deleted with the user.
        """
        return self._drive(put_document_plan(user_id, key, value, expected_version, self._runtime.clock(),
                                                   self._ctx.limits))

    def delete_document(self, *, user_id: str, key: str, expected_version: int | None = None) -> None:
        """Delete a document (if it is at ``expected_version``, when given)."""
        self._drive(delete_document_plan(user_id, key, expected_version, self._runtime.clock(),
                                         self._ctx.limits))

    def session(self, user_id: str, session_id: str, agent_id: str | None = None, **options: Any) -> "Session":
        """An agent session over this memory: token-budgeted window, summaries, pins, profile,
        working memory, context assembly, patrol and traces (see :mod:`ripple.agent`)."""
        from .agent import Session

        return Session(self, user_id, session_id, agent_id=agent_id, **options)


class AsyncMemory(_Client):
    """The async twin of :class:`Memory`: the same methods, awaited (``export`` is an async iterator).

    Store requests go through the backend's async API (Neo4j: the driver's
    native async sessions; the embedded store: worker threads); model
    inference always runs in a worker thread, so the event loop stays
    responsive.  The constructor does no I/O.
    """

    def __init__(self, path: str | None = None, *, store: "str | GraphStore | AsyncGraphStore | None" = None,
                 embedder: "str | Embedder | None" = None, extractor: "Extractor | None" = None,
                 config: RecallConfig | None = None, lifecycle: LifecycleConfig | None = None,
                 settings: RippleSettings | None = None, clock: Callable[[], float] | None = None,
                 create: bool = True) -> None:
        import anyio

        super().__init__(path, store=store, embedder=embedder, extractor=extractor, config=config,
                         lifecycle=lifecycle, settings=settings, clock=clock, create=create, asynchronous=True)
        self._store = cast(AsyncGraphStore, self._opened)
        self._write_lock = anyio.Lock()

    @property
    def store(self) -> AsyncGraphStore:
        return self._store

    async def __aenter__(self) -> "AsyncMemory":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the store (unless the caller passed it in); models stay cached for the process."""
        self._runtime.close()
        if self._owns_store:
            await self._store.aclose()

    async def _drive(self, op: Op[T]) -> T:
        """Run an operation: store requests awaited, model work in a worker thread (``instant`` questions here)."""
        store, runtime = self._store, self._runtime
        loop = _LOOP.set(_running_asyncio_loop())
        try:
            req = next(op)
            while True:
                try:
                    if isinstance(req, LocalRequest):
                        value = req.run(runtime) if req.instant else await _thread(req.run, runtime)
                    else:
                        value = await req.acall(store)
                except RippleError as exc:
                    req = op.throw(exc)
                else:
                    req = op.send(value)
        except StopIteration as stop:
            return cast(T, stop.value)
        finally:
            _LOOP.reset(loop)

    # -- writes ------------------------------------------------------------------------------
    async def add(self, text: str, *, user_id: str, agent_id: str | None = None, session_id: str | None = None,
                  at: datetime | None = None, kind: str | None = None, importance: float | None = None,
                  metadata: dict[str, Any] | None = None) -> list[MemoryRecord]:
        """Store one text (see :meth:`Memory.add`)."""
        return await self.add_many([_item(text, user_id, agent_id, session_id, at, kind, importance, metadata)])

    async def add_many(self, items: Iterable[Mapping[str, Any] | AddItem], *,
                       progress: bool = False) -> list[MemoryRecord]:
        """Store many texts in atomic batches (see :meth:`Memory.add_many`)."""
        out: list[MemoryRecord] = []
        async with self._batches(items, progress) as batches:
            for prepare in batches:
                prepared = await _thread(prepare)
                if prepared:
                    async with self._write_lock:
                        out.extend(await self._drive(ops.add_chunk(self._ctx, prepared)))
        return out

    async def update(self, memory_id: str, *, text: str | None = None, metadata: dict[str, Any] | None = None,
                     importance: float | None = None, at: datetime | None = None) -> MemoryRecord:
        """See :meth:`Memory.update`."""
        async with self._write_lock:
            return await self._drive(ops.update(self._ctx, memory_id, text, metadata, importance, at))

    async def delete(self, memory_id: str) -> None:
        """See :meth:`Memory.delete`."""
        await self._drive(ops.delete(self._ctx, memory_id))

    async def delete_all(self, *, user_id: str) -> dict[str, int]:
        """See :meth:`Memory.delete_all`."""
        return await self._drive(ops.delete_all(self._ctx, user_id))

    async def forget(self, memory_id: str | None = None, *, query: str | None = None,
                     user_id: str | None = None) -> MemoryRecord:
        """See :meth:`Memory.forget`."""
        with one_blas_thread():
            return await self._drive(ops.forget(self._ctx, memory_id, query, user_id))

    async def pin(self, memory_id: str, pinned: bool = True) -> MemoryRecord:
        """See :meth:`Memory.pin`."""
        async with self._write_lock:
            return await self._drive(ops.pin(self._ctx, memory_id, pinned))

    # -- reads -------------------------------------------------------------------------------
    async def get(self, memory_id: str) -> MemoryRecord:
        """See :meth:`Memory.get`."""
        return await self._drive(ops.get(self._ctx, memory_id))

    async def get_all(self, *, user_id: str, session_id: str | None = None,
                      limit: int | None = None) -> list[MemoryRecord]:
        """See :meth:`Memory.get_all`."""
        return await self._drive(ops.get_all(self._ctx, user_id, session_id, limit))

    async def history(self, memory_id: str) -> list[MemoryRecord]:
        """See :meth:`Memory.history`."""
        return await self._drive(ops.history(self._ctx, memory_id))

    async def conflicts(self, *, user_id: str, limit: int | None = None,
                        memory_ids: Sequence[str] | None = None) -> list[MemoryConflict]:
        """See :meth:`Memory.conflicts`."""
        return await self._drive(ops.conflicts(self._ctx, user_id, limit, memory_ids))

    async def resolve_conflict(self, new_id: str, old_id: str, *, supersedes: bool) -> None:
        """See :meth:`Memory.resolve_conflict`."""
        async with self._write_lock:
            await self._drive(ops.resolve_conflict(self._ctx, new_id, old_id, supersedes))

    async def recall(self, query: str, *, user_id: str, k: int = 10, mode: str = "ripple",
                     config: RecallConfig | None = None, touch: bool = True,
                     include_history: bool | None = None, min_relevance: float | None = None) -> RecallResult:
        """The ``k`` memories most related to ``query`` (see :meth:`Memory.recall`)."""
        with one_blas_thread(), retries.recording() as retried, operation_scope():
            result = await self._drive(ops.recall(self._ctx, query, user_id, k, mode, config, touch, include_history,
                                                  min_relevance))
        return ops.with_store_retries(result, retried)

    async def maintain(self, *, user_id: str, now: datetime | None = None) -> dict[str, int]:
        """See :meth:`Memory.maintain`."""
        return await self._drive(ops.maintain(self._ctx, user_id, now))

    # -- housekeeping ------------------------------------------------------------------------
    async def export(self, *, user_id: str) -> AsyncIterator[dict[str, Any]]:
        """Every node and edge of a user as JSON-ready dicts, streamed (``async for``)."""
        async for rec in await self._drive(ops.export(self._ctx, user_id)):
            yield exported(rec)

    async def import_records(self, records: Iterable[Mapping[str, Any] | str | bytes], *,
                             user_id: str) -> ImportReport:
        """See :meth:`Memory.import_records`."""
        async with self._write_lock:
            return await self._drive(ops.import_records(self._ctx, records, user_id))

    async def stats(self, *, user_id: str | None = None) -> dict[str, int]:
        """See :meth:`Memory.stats`."""
        return await self._drive(ops.stats(self._ctx, user_id))

    async def users(self) -> list[str]:
        """See :meth:`Memory.users`."""
        return await self._drive(ops.users())

    async def warm(self, *, user_id: str) -> None:
        """See :meth:`Memory.warm`."""
        await self._drive(ops.warm(self._ctx, user_id))

    async def cypher(self, query: str, params: dict[str, Any] | None = None, *, write: bool = False,
                     allow_procedures: bool = False, allow_admin: bool = False) -> tuple[list[str], list[list[Any]]]:
        """See :meth:`Memory.cypher`."""
        return await self._drive(ops.cypher(self._ctx, query, params, write, allow_procedures, allow_admin))

    # -- facts, documents and agent sessions (see Memory) ----------------------------------------------
    async def facts(self, *, user_id: str, include_history: bool = False) -> list[Fact]:
        """See :meth:`Memory.facts`."""
        return await self._drive(facts_plan(check.user(user_id, self._ctx.limits), include_history=include_history))

    async def get_document(self, *, user_id: str, key: str) -> Document | None:
        """See :meth:`Memory.get_document`."""
        return await self._drive(get_document_plan(user_id, key, self._ctx.limits))

    async def put_document(self, *, user_id: str, key: str, value: Any, expected_version: int | None) -> Document:
        """See :meth:`Memory.put_document`."""
        return await self._drive(put_document_plan(user_id, key, value, expected_version, self._runtime.clock(),
                                                         self._ctx.limits))

    async def delete_document(self, *, user_id: str, key: str, expected_version: int | None = None) -> None:
        """See :meth:`Memory.delete_document`."""
        await self._drive(delete_document_plan(user_id, key, expected_version, self._runtime.clock(),
                                               self._ctx.limits))

    def session(self, user_id: str, session_id: str, agent_id: str | None = None, **options: Any) -> "AsyncSession":
        """The async twin of :meth:`Memory.session` (the session's methods are awaited)."""
        from .agent import AsyncSession

        return AsyncSession(self, user_id, session_id, agent_id=agent_id, **options)


def _running_asyncio_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:  # another async library (trio)
        return None


async def _thread(fn: Callable[..., T], *args: Any) -> T:
    import anyio

    return await anyio.to_thread.run_sync(fn, *args)

