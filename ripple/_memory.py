"""The public API: :class:`Memory` (sync) and :class:`AsyncMemory` (async).

``_BaseMemory`` holds everything that needs no I/O: validation, the CPU stage
of the write path (extraction, embeddings), query preparation and shaping
results.  The two public classes only drive the shared generators
(:func:`ripple._ingest.ingest_plan`, :func:`ripple.recall.pipeline.recall_plan`)
against a store, one with plain calls and one with ``await``; the async class
runs CPU work (models) in worker threads so the event loop never blocks.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable, Generator, Iterable, Iterator, Mapping, Sequence, TypeVar

from dataclasses import replace

from pydantic import ValidationError

from graphstore import (
    ACTIVE,
    EDGE_CONFLICTS,
    EDGE_SUPERSEDES,
    INVALIDATED,
    SUPERSEDED,
    AsyncGraphStore,
    GraphStore,
    WriteBatch,
    open_store,
)
from graphstore.records import EdgeRecord, MemoryRecord

from ._blas import one_blas_thread
from ._lifecycle import LifecycleConfig
from .errors import ConfigError, InvalidInput, MemoryNotFound, UnknownUser
from .models import (
    AddItem,
    Conflict,
    Memory as MemoryModel,
    PathStep,
    RecallHit,
    RecallResult,
    RecallTrace,
    ScoreParts,
    StageTrace,
    as_utc,
)
from .recall.config import RecallConfig
from .recall.pipeline import MODES, Call, DenseSearch, PlanResult, QueryInput, QueryVectors, dense_search, recall_plan, tier_of
from .settings import RippleSettings

if TYPE_CHECKING:
    from extractors.base import Extractor

    from ._ingest import Prepared
    from .embedding import Embedder

__all__ = ["Memory", "AsyncMemory"]

T = TypeVar("T")
_MAX_K = 1000
_CHUNK = 256  # items per atomic write batch in add_many
_MAX_VERSIONS = 50  # hops followed along SUPERSEDES edges
_PAGE = 5_000  # memories per page when a maintenance pass walks a user's memories
_BATCH_SEARCHES = {"nearest_entities_batch": "nearest_entities", "nearest_memories_batch": "nearest_memories"}
_RECENT_PARSES = 4096  # extractions kept for the write path's comparisons (a few MB)


def _ts(value: datetime) -> float:
    return as_utc(value).timestamp()


def _dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, tz=timezone.utc)


def _to_model(r: MemoryRecord) -> MemoryModel:
    return MemoryModel(
        id=r.id, user_id=r.user_id, text=r.text, at=_dt(r.at), created_at=_dt(r.created_at),  # type: ignore[arg-type]
        agent_id=r.agent_id, session_id=r.session_id, kind=r.kind, importance=r.importance,
        status=r.status, access_count=r.access_count, last_access=_dt(r.last_access),  # type: ignore[arg-type]
        language=r.language, confidence=r.confidence, mentions=r.mentions, last_seen=_dt(r.last_seen),
        valid_to=_dt(r.valid_to), pinned=r.pinned, metadata=json.loads(r.metadata_json),
    )


#: Batches of at least this many texts are embedded in a worker thread while they are extracted.
_OVERLAP_MIN_BATCH = 16


class _BaseMemory:
    """Configuration, validation and everything CPU-bound; no store I/O."""

    def __init__(
        self,
        path: str | None = None,
        *,
        store: str | GraphStore | None = None,
        embedder: "str | Embedder | None" = None,
        extractor: "Extractor | None" = None,
        config: RecallConfig | None = None,
        lifecycle: LifecycleConfig | None = None,
        settings: RippleSettings | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.settings = settings or RippleSettings()
        if path is not None and store is not None:
            raise ConfigError("pass either path= or store=, not both")
        self._store_spec: str | GraphStore = store if store is not None else (str(path) if path is not None else self.settings.store_uri())
        self._embedder_spec = embedder if embedder is not None else self.settings.embedder
        self._embedder: Embedder | None = None if isinstance(self._embedder_spec, str) else self._embedder_spec
        self._extractor = extractor
        self.config = config or RecallConfig()
        self.lifecycle = lifecycle or LifecycleConfig()
        self._clock = clock or time.time
        self._model_lock = threading.Lock()
        self._cross_encoders: dict[str, Any] = {}
        self._query_encoder: ThreadPoolExecutor | None = None
        self._recent: OrderedDict[str, tuple[Any, Any]] = OrderedDict()  # text -> (extraction, frames): see _frames

    # -- models (loaded on first use) -------------------------------------------------
    @property
    def embedder(self) -> "Embedder":
        if self._embedder is None:
            with self._model_lock:
                if self._embedder is None:
                    from .embedding import default_embedder

                    self._embedder = default_embedder(
                        str(self._embedder_spec), self.settings.device, self.settings.embed_precision
                    )
        return self._embedder

    @property
    def extractor(self) -> "Extractor":
        if self._extractor is None:
            with self._model_lock:
                if self._extractor is None:
                    from extractors import default_extractor

                    self._extractor = default_extractor()
        return self._extractor

    def _open_store(self, *, asynchronous: bool = False) -> "GraphStore | AsyncGraphStore":
        """The store the spec names; ``asynchronous`` opens Neo4j with the driver's async API
        (other stores have only a sync one)."""
        if not isinstance(self._store_spec, str):
            return self._store_spec
        from graphstore import is_neo4j_uri

        if not is_neo4j_uri(self._store_spec):
            return open_store(self._store_spec)
        opts = {"user": self.settings.neo4j_user, "password": self.settings.neo4j_password,
                "database": self.settings.neo4j_database}
        if asynchronous:
            from graphstore.neo4j import AsyncNeo4jStore

            return AsyncNeo4jStore(self._store_spec, **opts)
        return open_store(self._store_spec, **opts)

    # -- validation ----------------------------------------------------------------------
    @staticmethod
    def _items(raw: Iterable[Mapping[str, Any] | AddItem]) -> list[AddItem]:
        items: list[AddItem] = []
        for n, r in enumerate(raw):
            if isinstance(r, AddItem):
                items.append(r)
                continue
            if not isinstance(r, Mapping):
                raise InvalidInput(f"item {n} must be a mapping with text and user_id, not {type(r).__name__}")
            try:
                items.append(AddItem.model_validate(dict(r)))
            except ValidationError as exc:
                raise InvalidInput(f"item {n}: {_first_error(exc)}") from exc
        return items

    @staticmethod
    def _check_user(user_id: Any) -> str:
        if not isinstance(user_id, str) or not user_id.strip():
            raise InvalidInput("user_id must be a non-empty string")
        return user_id

    def _check_query(self, query: Any, k: Any, mode: Any) -> None:
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("query must be a non-empty string")
        if len(query) > 10_000:
            raise InvalidInput("query is longer than 10,000 characters")
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= _MAX_K:
            raise InvalidInput(f"k must be an integer between 1 and {_MAX_K}")
        if mode not in MODES:
            raise InvalidInput(f"mode must be one of {', '.join(MODES)}, not {mode!r}")

    # -- CPU stages --------------------------------------------------------------------------
    def _prepare(self, items: Sequence[AddItem]) -> "list[Prepared]":
        from ._ingest import Prepared

        if not items:
            return []
        texts = [i.text for i in items]
        if len(texts) >= _OVERLAP_MIN_BATCH:
            # The embedder (torch, which releases the GIL) encodes in a worker thread while
            # the extractor parses here, and then here too (see _overlap): on 2 cores LoCoMo
            # ingest went from 49 to over 100 memories/s. Content-free turns are encoded too
            # (they are few and short) and dropped.
            from ._overlap import encode_beside

            extractions, (all_vectors, all_tokens) = encode_beside(
                self.embedder, texts, lambda: self.extractor.extract_many(texts)
            )
            keep = [n for n, ex in enumerate(extractions) if not ex.contentless]
            vectors, tokens = all_vectors[keep], [all_tokens[n] for n in keep]
        else:
            extractions = self.extractor.extract_many(texts)
            keep = [n for n, ex in enumerate(extractions) if not ex.contentless]
            if not keep:
                return []
            vectors, tokens = self.embedder.encode_with_tokens([texts[n] for n in keep])
        now = self._clock()
        for n in keep:
            self._remember_parse(texts[n], extractions[n])
        return [
            Prepared(items[n], extractions[n], _ts(items[n].at) if items[n].at else now, vectors[j], tokens[j])
            for j, n in enumerate(keep)
        ]

    def _frames(self, texts: Sequence[str]) -> list[tuple[Any, Any]]:
        """``(frames, speaker)`` of texts the write path compares (see :func:`extractors.frames.frames_of`)
        with each other.  The texts this process wrote or compared lately come from a small cache: most
        candidates of a batch were written by the batches before it, and were framed then."""
        from extractors.frames import frames_of

        with self._model_lock:
            cached = {t: self._recent[t] for t in texts if t in self._recent}
        missing = [t for t in dict.fromkeys(texts) if t not in cached]
        if missing:
            for t, ex in zip(missing, self.extractor.extract_many(missing)):
                cached[t] = self._remember_parse(t, ex)
        out = []
        for t in texts:
            ex, frames = cached[t]
            if frames is None:
                frames = frames_of(ex)
                self._remember_parse(t, ex, frames)
            out.append((frames, ex.extra.get("speaker")))
        return out

    def _remember_parse(self, text: str, extraction: Any, frames: Any = None) -> tuple[Any, Any]:
        with self._model_lock:
            self._recent[text] = (extraction, frames)
            self._recent.move_to_end(text)
            while len(self._recent) > _RECENT_PARSES:
                self._recent.popitem(last=False)
        return extraction, frames

    def _query_input(self, query: str, user_id: str, k: int, mode: str, config: RecallConfig) -> QueryInput:
        from extractors.text import detect_language, lexical_tokens

        emb = self.embedder
        pending = vector = tokens = None
        encode_ms = 0.0
        if mode != "bm25" and getattr(self._store, "in_process", False):
            # An in-process store reads in Python, holding the GIL: an encoder thread beside it
            # waits up to a switch interval (5 ms) for the GIL after every op it releases it for,
            # so on 2 cores encoding first and reading after is faster and steadier (100k
            # memories, four interleaved runs: p95 44-49 against 45-61 ms).
            t0 = time.perf_counter()
            got = self._query_vectors(query, user_id, None)
            vector, tokens = got.vector, got.tokens
            encode_ms = (time.perf_counter() - t0) * 1000.0
        elif mode != "bm25":
            # A server store (Neo4j) reads over a socket with the GIL released: the encoder
            # runs in a worker thread meanwhile, and the plan collects it with Call("query_vectors").
            pending = self._query_pool().submit(self._query_vectors, query, user_id, dense_search(mode, k, config))
        keys: list[str] = []
        if self.config.seed.query_entities > 0:
            keys = [e.key for e in self.extractor.extract_many([query])[0].entities]
        return QueryInput(
            text=query, user_id=user_id, k=k, mode=mode, now=self._clock(), terms=lexical_tokens(query),
            vector=vector, tokens=tokens, token_dim=emb.dim, entity_keys=keys, language=detect_language(query),
            pending=pending, encode_ms=encode_ms,
        )

    def _query_vectors(self, query: str, user_id: str, search: DenseSearch | None) -> QueryVectors:
        """The query's vectors (run in the query worker thread).  A driver whose store can be
        called from that thread also runs the plan's dense search there (see Memory)."""
        vectors, tokens = self.embedder.encode_with_tokens([query])
        return QueryVectors(vectors[0], tokens[0])

    def _close_query_pool(self) -> None:
        pool, self._query_encoder = self._query_encoder, None
        if pool is not None:
            pool.shutdown(wait=True)

    def _query_pool(self) -> "ThreadPoolExecutor":
        if self._query_encoder is None:
            with self._model_lock:
                if self._query_encoder is None:
                    self._query_encoder = ThreadPoolExecutor(1, thread_name_prefix="ripple-query")
        return self._query_encoder

    def _local(self, call: Call) -> Any:
        """CPU work that a plan asks of the driver rather than the store."""
        if call.method == "prepare":
            return self._prepare(*call.args)
        if call.method == "query_input":
            return self._query_input(*call.args)
        if call.method == "query_vectors":
            return call.args[0].result()
        if call.method == "embed":
            return self.embedder.encode(call.args[0])
        if call.method == "frames":
            return self._frames(call.args[0])
        if call.method == "judge":
            return _judge_answers(self.lifecycle.judge, call.args[0])
        if call.method == "cross_encode":
            model_name, pairs = call.args
            if not model_name:
                raise ConfigError("the cross-encoder reranker needs RerankConfig.model")
            model = self._cross_encoders.get(model_name)
            if model is None:
                from sentence_transformers import CrossEncoder

                model = self._cross_encoders[model_name] = CrossEncoder(model_name, device=self.settings.device)
            return [float(s) for s in model.predict(pairs)] if pairs else []
        raise ConfigError(f"unknown local call {call.method!r}")

    def _shape(self, q: QueryInput, plan: PlanResult, total_ms: float) -> RecallResult:
        hits = []
        for rank, c in enumerate(plan.hits, start=1):
            path = tuple(
                PathStep(
                    source=e.source, target=e.target, edge=e.type, weight=round(e.weight, 6),
                    label=plan.entity_names.get(e.target if e.target.startswith("e_") else e.source, e.predicate),
                )
                for e in c.path
            )
            hits.append(
                RecallHit(
                    memory=_to_model(plan.records[c.id]), score=float(c.score), rank=rank, path=path, via=c.via,
                    parts=ScoreParts(seed=c.seed, lexical=c.lexical, dense=c.dense, late=c.late,
                                     activation=c.activation, recency=c.recency, importance=c.importance,
                                     confidence=c.confidence, tier=c.tier, rerank=c.rerank),
                )
            )
        trace = RecallTrace(
            stages=tuple(StageTrace(name=n, ms=round(ms, 3), size=size, detail=d) for n, ms, size, d in plan.stages),
            total_ms=round(total_ms, 3),
        )
        return RecallResult(query=q.text, user_id=q.user_id, mode=q.mode, hits=tuple(hits), trace=trace)

    # -- operations: generators of store requests, shared by both drivers ----------------------
    def _op_get_record(self, memory_id: Any, *, with_vectors: bool = False) -> Generator[Call, Any, MemoryRecord]:
        if not isinstance(memory_id, str) or not memory_id:
            raise InvalidInput("memory_id must be a non-empty string")
        found = yield Call("get_memories", ([memory_id],), {"with_vectors": with_vectors})
        if not found:
            raise MemoryNotFound(f"no memory with id {memory_id!r}")
        return found[0]  # type: ignore[no-any-return]

    def _op_require_user(self, user_id: Any) -> Generator[Call, Any, str]:
        self._check_user(user_id)
        if not (yield Call("has_memories", (user_id,))):
            raise UnknownUser(f"no memories stored for user {user_id!r}")
        return user_id  # type: ignore[no-any-return]

    def _op_add_chunk(self, prepared: "list[Prepared]") -> Generator[Call, Any, list[MemoryModel]]:
        from ._ingest import ingest_plan

        records = yield from ingest_plan(prepared, now=self._clock(), lifecycle=self.lifecycle)
        return [_to_model(r) for r in records]

    def _op_update(self, memory_id: str, text: str | None, metadata: dict[str, Any] | None,
                   importance: float | None, at: datetime | None) -> Generator[Call, Any, MemoryModel]:
        from ._ingest import ingest_plan

        old = yield from self._op_get_record(memory_id)
        item = AddItem.model_validate(
            {"text": text if text is not None else old.text, "user_id": old.user_id, "agent_id": old.agent_id,
             "session_id": old.session_id, "at": at or _dt(old.at), "kind": old.kind,
             "importance": importance if importance is not None else old.importance,
             "metadata": metadata if metadata is not None else json.loads(old.metadata_json)}
        )
        prepared = yield Call("prepare", ([item],), local=True)
        if not prepared:
            raise InvalidInput("the new text has no content to remember")
        yield from ingest_plan(prepared, now=old.created_at, replacing=old)
        return _to_model((yield from self._op_get_record(old.id)))

    def _op_delete(self, memory_id: str) -> Generator[Call, Any, None]:
        yield from self._op_get_record(memory_id)
        yield Call("delete_memories", ([memory_id],))

    def _op_forget(self, memory_id: str | None, query: str | None, user_id: str | None) -> Generator[Call, Any, MemoryModel]:
        if (memory_id is None) == (query is None):
            raise InvalidInput("forget needs either a memory id or query= (with user_id=)")
        if query is not None:
            if user_id is None:
                raise InvalidInput("forget(query=...) needs user_id=")
            found = yield from self._op_recall(query, user_id, 1, "ripple", None, False, False)
            if not found.hits:
                raise MemoryNotFound(f"no active memory of {user_id!r} matches {query!r}")
            memory_id = found.hits[0].memory.id
        rec = yield from self._op_get_record(memory_id)
        yield Call("set_status", ([rec.id], INVALIDATED))
        return _to_model(replace(rec, status=INVALIDATED))

    def _op_pin(self, memory_id: str, pinned: bool) -> Generator[Call, Any, MemoryModel]:
        full = replace((yield from self._op_get_record(memory_id, with_vectors=True)), pinned=bool(pinned))
        yield Call("write", (WriteBatch(memories=[full]),))
        return _to_model(full)

    def _op_versions(self, records: Sequence[MemoryRecord], user_id: str, *, conflicts: bool = False
                     ) -> Generator[Call, Any, list[list[MemoryRecord]]]:
        """Each record's versions (itself, what it superseded and what superseded it), oldest first;
        with ``conflicts``, also the memories an open conflict joins it to (its possible versions).

        Records that are versions of one another share one list."""
        parent = {r.id: r.id for r in records}  # union-find over SUPERSEDES edges

        def root(x: str) -> str:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        known = {r.id: r for r in records}
        frontier = list(parent)
        for _ in range(_MAX_VERSIONS):
            if not frontier:
                break
            rows = yield Call("expand", (user_id, frontier, [EDGE_SUPERSEDES, *([EDGE_CONFLICTS] if conflicts else [])]))
            nxt = []
            for n in rows:
                if n.type == EDGE_CONFLICTS and n.weight <= 0:
                    continue  # a resolved conflict joins nothing
                if n.target not in parent:
                    parent[n.target] = n.target
                    nxt.append(n.target)
                parent[root(n.target)] = root(n.source)
            frontier = nxt
        missing = [m for m in parent if m not in known]
        if missing:
            known.update((r.id, r) for r in (yield Call("get_memories", (missing,))))
        members: dict[str, list[MemoryRecord]] = {}
        for mid in parent:
            if mid in known:
                members.setdefault(root(mid), []).append(known[mid])
        return [sorted(members[root(r.id)], key=lambda m: (m.at, m.created_at, m.id)) for r in records]

    def _op_conflicts(self, user_id: str) -> Generator[Call, Any, list[Conflict]]:
        yield from self._op_require_user(user_id)
        edges = [e for e in (yield Call("list_edges", (user_id, [EDGE_CONFLICTS]))) if e.weight > 0]
        ids = sorted({e.src for e in edges} | {e.dst for e in edges})
        records = {r.id: r for r in (yield Call("get_memories", (ids,)))} if ids else {}
        out = []
        for e in edges:
            new, old = records.get(e.src), records.get(e.dst)
            if new is None or old is None or new.status != ACTIVE or old.status != ACTIVE:
                continue  # settled since: one of them was superseded, forgotten or deleted
            out.append(_conflict(new, old, e.at))
        return sorted(out, key=lambda c: (c.at or c.new.at, c.new.id, c.old.id))

    def _op_resolve_conflict(self, new_id: str, old_id: str, supersedes: bool) -> Generator[Call, Any, None]:
        new = yield from self._op_get_record(new_id, with_vectors=True)
        old = yield from self._op_get_record(old_id, with_vectors=True)
        rows = yield Call("expand", (new.user_id, [new.id], [EDGE_CONFLICTS]))
        if old.user_id != new.user_id or not any(n.target == old.id and n.weight > 0 for n in rows):
            raise InvalidInput(f"no open conflict between {new_id!r} and {old_id!r}")
        src, dst = (new, old) if any(n.target == old.id and n.source == new.id for n in rows) else (old, new)
        batch = WriteBatch(edges=[EdgeRecord(src.id, EDGE_CONFLICTS, dst.id, new.user_id, 0.0, at=max(new.at, old.at))])
        if supersedes:  # the later statement wins, as a high-confidence supersession would have
            later, earlier = (new, old) if (new.at, new.id) >= (old.at, old.id) else (old, new)
            batch.memories.append(replace(earlier, status=SUPERSEDED, valid_to=later.at))
            batch.edges.append(EdgeRecord(later.id, EDGE_SUPERSEDES, earlier.id, new.user_id, 1.0, at=later.at))
        yield Call("write", (batch,))

    def _op_history(self, memory_id: str) -> Generator[Call, Any, list[MemoryModel]]:
        rec = yield from self._op_get_record(memory_id)
        (versions,) = yield from self._op_versions([rec], rec.user_id)
        return [_to_model(r) for r in versions]

    def _op_maintain(self, user_id: str, now: float | None) -> Generator[Call, Any, dict[str, int]]:
        yield from self._op_require_user(user_id)
        at = self._clock() if now is None else now
        counts: dict[str, int] = {"hot": 0, "warm": 0, "cold": 0, "frozen": 0, "superseded": 0, "invalidated": 0,
                                  "pinned": 0}
        offset = 0
        while True:
            page = yield Call("list_memories", (user_id,), {"limit": _PAGE, "offset": offset})
            for rec in page:
                if rec.status != ACTIVE:
                    counts[rec.status] += 1
                    continue
                counts["pinned"] += int(rec.pinned)
                counts[tier_of(rec, at, self.config.merge.tiers)[0]] += 1
            if len(page) < _PAGE:
                return counts
            offset += _PAGE

    def _op_get_all(self, user_id: str, session_id: str | None, limit: int | None) -> Generator[Call, Any, list[MemoryModel]]:
        yield from self._op_require_user(user_id)
        records = yield Call("list_memories", (user_id,), {"session_id": session_id, "limit": limit})
        return [_to_model(r) for r in records]

    def _op_recall(self, query: str, user_id: str, k: int, mode: str, config: RecallConfig | None,
                   touch: bool, include_history: bool) -> Generator[Call, Any, RecallResult]:
        self._check_query(query, k, mode)
        yield from self._op_require_user(user_id)  # before any model is loaded for the query
        t0 = time.perf_counter()
        cfg = config or self.config
        if include_history:
            statuses = tuple(dict.fromkeys((*cfg.merge.include_statuses, ACTIVE, SUPERSEDED)))
            cfg = cfg.model_copy(update={"merge": cfg.merge.model_copy(update={"include_statuses": statuses})})
        q = yield Call("query_input", (query, user_id, k, mode, cfg), local=True)
        plan = yield from recall_plan(q, cfg)
        result = self._shape(q, plan, (time.perf_counter() - t0) * 1000.0)
        if include_history and result.hits:
            result = yield from self._with_history(result, plan.records, user_id)
        if touch and result.hits:
            yield Call("touch", ([h.memory.id for h in result.hits], self._clock()))
        return result

    def _with_history(self, result: RecallResult, by_id: dict[str, MemoryRecord],
                      user_id: str) -> Generator[Call, Any, RecallResult]:
        """Every hit with its other versions next to it, oldest first, at the rank of the best of them.

        ``by_id``: the hits' records, as the recall plan already fetched them."""
        from .models import RecallHit

        groups = yield from self._op_versions([by_id[h.memory.id] for h in result.hits if h.memory.id in by_id], user_id,
                                              conflicts=True)
        hits_by_id = {h.memory.id: h for h in result.hits}
        out: list[RecallHit] = []
        placed: set[str] = set()
        for hit, versions in zip([h for h in result.hits if h.memory.id in by_id], groups):
            if hit.memory.id in placed:
                continue
            for rec in versions:
                if rec.id in placed or rec.status == INVALIDATED:
                    continue
                placed.add(rec.id)
                have = hits_by_id.get(rec.id)
                out.append((have or hit).model_copy(update={
                    "memory": _to_model(rec), "rank": len(out) + 1,
                    **({} if have else {"via": "history", "path": (), "parts": hit.parts}),
                }))
        return result.model_copy(update={"hits": tuple(out)})

    def _chunks(self, items: Iterable[Mapping[str, Any] | AddItem], progress: bool) -> Iterator[list[AddItem]]:
        """Validated items in write batches (all validated before the first is yielded), with a progress bar."""
        valid = self._items(items)
        bar = None
        if progress and len(valid) > _CHUNK:
            from tqdm import tqdm

            bar = tqdm(total=len(valid), unit="mem", desc="ingest")
        try:
            for start in range(0, len(valid), _CHUNK):
                chunk = valid[start : start + _CHUNK]
                yield chunk
                if bar is not None:
                    bar.update(len(chunk))
        finally:
            if bar is not None:
                bar.close()

    @staticmethod
    def _store_call(call: Call, store: Any) -> Any:
        """The bound store method a request names; None for an optional batch search the store lacks
        (the driver then runs the one-vector search per vector)."""
        if call.method in _BATCH_SEARCHES and not hasattr(store, call.method):
            return None
        return getattr(store, call.method)


def _conflict(new: MemoryRecord, old: MemoryRecord, at: float | None) -> Conflict:
    """A conflict between two stored memories, with the explanation whichever of them recorded."""
    note: dict[str, Any] = {}
    for rec, other in ((new, old), (old, new)):
        meta = json.loads(rec.metadata_json).get("ripple") or {}
        note = next((n for n in meta.get("conflicts", ()) if n.get("memory") == other.id), note)
    values, frames = note.get("value"), note.get("frame")
    return Conflict(new=_to_model(new), old=_to_model(old), confidence=str(note.get("confidence", "medium")),
                    values=tuple(values) if values else None, frames=tuple(frames) if frames else None,
                    why=str(note.get("why", "")), at=_dt(at))


def _judge_answers(judge: Any, cases: Sequence[Any]) -> list[str]:
    """The configured judge's answers, checked: one of 'supersedes', 'conflict', 'unrelated' per case."""
    if judge is None:
        raise ConfigError("no judge is configured (LifecycleConfig.judge)")
    answers = list(judge(cases))
    if len(answers) != len(cases) or any(a not in ("supersedes", "conflict", "unrelated") for a in answers):
        raise ConfigError("the judge must answer 'supersedes', 'conflict' or 'unrelated' for each case, in order")
    return answers


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(x) for x in err.get("loc", ()))
    return f"{loc}: {err.get('msg', 'invalid')}" if loc else str(err.get("msg", "invalid"))


class Memory(_BaseMemory):
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

    Examples
    --------
    >>> from ripple import Memory
    >>> with Memory(path=tmp_path) as mem:                                  # doctest: +SKIP
    ...     mem.add("Dana runs procurement at Northwind.", user_id="u1", session_id="s1")
    ...     res = mem.recall("who signs off purchases?", user_id="u1", k=5)
    """

    def __init__(self, path: str | None = None, **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        self._store = self._open_store()
        self._write_lock = threading.Lock()

    @property
    def store(self) -> GraphStore:
        return self._store

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the store (models stay cached for the process)."""
        self._close_query_pool()
        if not isinstance(self._store_spec, str):
            return  # the caller owns a store they passed in
        self._store.close()

    def _query_vectors(self, query: str, user_id: str, search: DenseSearch | None) -> QueryVectors:
        """Encode the query, then run the plan's dense search in this same worker thread: it
        overlaps the lexical route the plan reads meanwhile (the longer of the two when a query
        has common words) instead of following it."""
        got = super()._query_vectors(query, user_id, search)
        if search is not None:
            got.search = search
            got.hits = self._store.nearest_memories(user_id, got.vector, search.pool, statuses=search.statuses)
        return got

    def _drive(self, op: Generator[Call, Any, T]) -> T:
        """Run an operation: local CPU work here, store requests as plain calls."""
        store = self._store
        try:
            call = next(op)
            while True:
                if call.local:
                    value = self._local(call)
                else:
                    method = self._store_call(call, store)
                    if method is None:  # no batch search: one search per vector
                        user, vectors, k = call.args
                        one = getattr(store, _BATCH_SEARCHES[call.method])
                        value = [one(user, v, k, **call.kwargs) for v in vectors]
                    else:
                        value = method(*call.args, **call.kwargs)
                call = op.send(value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]

    # -- writes ------------------------------------------------------------------------------
    def add(
        self,
        text: str,
        *,
        user_id: str,
        agent_id: str | None = None,
        session_id: str | None = None,
        at: datetime | None = None,
        kind: str | None = None,
        importance: float | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> list[MemoryModel]:
        """Store one text; returns the stored memories (empty for a contentless turn like "ok")."""
        return self.add_many([_item(text, user_id, agent_id, session_id, at, kind, importance, metadata)])

    def add_many(self, items: Iterable[Mapping[str, Any] | AddItem], *, progress: bool = False) -> list[MemoryModel]:
        """Store many texts in batches; each batch of up to 256 items is atomic.

        All items are validated before anything is written: one bad item
        raises :class:`~ripple.InvalidInput` and nothing is stored.
        """
        out: list[MemoryModel] = []
        for chunk in self._chunks(items, progress):
            prepared = self._prepare(chunk)
            if prepared:
                with self._write_lock:  # NEXT chains need the session tail read and written together
                    out.extend(self._drive(self._op_add_chunk(prepared)))
        return out

    def update(self, memory_id: str, *, text: str | None = None, metadata: dict[str, Any] | None = None,
               importance: float | None = None, at: datetime | None = None) -> MemoryModel:
        """Change a memory in place; a new text is re-extracted and re-embedded."""
        with self._write_lock:
            return self._drive(self._op_update(memory_id, text, metadata, importance, at))

    def delete(self, memory_id: str) -> None:
        """Delete one memory with its edges and index entries."""
        self._drive(self._op_delete(memory_id))

    def delete_all(self, *, user_id: str) -> dict[str, int]:
        """Delete every node, edge and index entry of a user; returns counts."""
        return self._store.delete_user(self._check_user(user_id))

    def forget(self, memory_id: str | None = None, *, query: str | None = None,
               user_id: str | None = None) -> MemoryModel:
        """Invalidate a memory: it never comes back in recall, but stays exportable until deleted.

        Name it by id, or by ``query=`` and ``user_id=`` (the user's best
        recall hit for the query is the one forgotten); returns it.
        """
        return self._drive(self._op_forget(memory_id, query, user_id))

    def pin(self, memory_id: str, pinned: bool = True) -> MemoryModel:
        """Keep a memory at full weight in every forgetting tier (or stop doing so)."""
        with self._write_lock:
            return self._drive(self._op_pin(memory_id, pinned))

    def history(self, memory_id: str) -> list[MemoryModel]:
        """Every version of a memory (what it superseded and what superseded it), oldest first."""
        return self._drive(self._op_history(memory_id))

    def conflicts(self, user_id: str) -> list[Conflict]:
        """Open conflicts of a user: pairs of active memories that may state the same thing with a
        different value, which the write path was not sure enough of to supersede.  Oldest first."""
        return self._drive(self._op_conflicts(self._check_user(user_id)))

    def resolve_conflict(self, new_id: str, old_id: str, *, supersedes: bool) -> None:
        """Settle a conflict: ``supersedes=True`` makes the later of the two supersede the earlier
        (status, ``valid_to``, SUPERSEDES edge); ``False`` keeps both as they are.  Either way the
        conflict is no longer listed."""
        with self._write_lock:
            self._drive(self._op_resolve_conflict(new_id, old_id, supersedes))

    def maintain(self, *, user_id: str, now: datetime | None = None) -> dict[str, int]:
        """A maintenance pass: how many of a user's memories are in each forgetting tier now.

        The tiers apply at every recall anyway (see :class:`~ripple.TierConfig`);
        this pass reports them (``ripple maintain``) and counts superseded,
        invalidated and pinned memories.
        """
        return self._drive(self._op_maintain(user_id, None if now is None else _ts(now)))

    # -- reads ------------------------------------------------------------------------------------
    def get(self, memory_id: str) -> MemoryModel:
        """One memory by id (raises :class:`~ripple.MemoryNotFound`)."""
        return _to_model(self._drive(self._op_get_record(memory_id)))

    def get_all(self, *, user_id: str, session_id: str | None = None, limit: int | None = None) -> list[MemoryModel]:
        """A user's memories in event-time order."""
        return self._drive(self._op_get_all(user_id, session_id, limit))

    def recall(self, query: str, *, user_id: str, k: int = 10, mode: str = "ripple",
               config: RecallConfig | None = None, touch: bool = True, include_history: bool = False) -> RecallResult:
        """The ``k`` memories most related to ``query``, each with its score parts and path.

        ``mode="flat"`` is plain dense top-k through the same API (the baseline);
        ``"bm25"`` and ``"hybrid"`` (RRF) are the other baselines; ``"ripple"``
        seeds, spreads, merges and reranks as configured.  Superseded memories
        are left out unless ``include_history=True``, which puts every version
        of a hit next to it, oldest first.  ``touch`` counts the hits as used
        (which keeps them in the hot forgetting tier).
        """
        with one_blas_thread():
            return self._drive(self._op_recall(query, user_id, k, mode, config, touch, include_history))

    # -- housekeeping --------------------------------------------------------------------------------
    def export(self, *, user_id: str) -> Iterator[dict[str, Any]]:
        """Every node and edge of a user as JSON-ready dicts (see :mod:`graphstore.jsonl`)."""
        from graphstore.jsonl import to_json

        self._drive(self._op_require_user(user_id))
        for rec in self._store.export(user_id):
            yield to_json(rec)

    def stats(self, *, user_id: str | None = None) -> dict[str, int]:
        """Counts of memories, entities and edges (one user or the whole store)."""
        return self._store.stats(user_id)

    def users(self) -> list[str]:
        return self._store.users()


class AsyncMemory(_BaseMemory):
    """The async twin of :class:`Memory`: the same methods, awaited.

    Both classes drive the same operation generators.  Here store requests
    go through the backend's async API when it has one (Neo4j: the driver's
    native async sessions, ``neo4j.AsyncGraphDatabase``) and through a worker
    thread otherwise (SQLite); model inference always runs in a worker
    thread, so the event loop stays responsive.  The constructor does no I/O.
    """

    def __init__(self, path: str | None = None, **kwargs: Any) -> None:
        import anyio

        super().__init__(path, **kwargs)
        self._store: GraphStore | AsyncGraphStore = self._open_store(asynchronous=True)
        self._native = _is_async_store(self._store)
        self._write_lock = anyio.Lock()

    @property
    def store(self) -> "GraphStore | AsyncGraphStore":
        return self._store

    async def __aenter__(self) -> "AsyncMemory":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the store (unless the caller passed it in)."""
        self._close_query_pool()
        if not isinstance(self._store_spec, str):
            return
        if self._native:
            await self._store.aclose()  # type: ignore[union-attr]
        else:
            await _thread(self._store.close)  # type: ignore[union-attr]

    async def _call_store(self, method: str, *args: Any, **kwargs: Any) -> Any:
        fn = getattr(self._store, method)
        return await fn(*args, **kwargs) if self._native else await _thread(fn, *args, **kwargs)

    async def _drive(self, op: Generator[Call, Any, T]) -> T:
        """Run an operation: local CPU work in a worker thread, store requests awaited."""
        store = self._store
        try:
            call = next(op)
            while True:
                if call.local:
                    value = await _thread(self._local, call)
                else:
                    method = self._store_call(call, store)
                    if method is None:  # no batch search: one search per vector
                        user, vectors, k = call.args
                        value = [await self._call_store(_BATCH_SEARCHES[call.method], user, v, k, **call.kwargs)
                                 for v in vectors]
                    else:
                        value = await self._call_store(call.method, *call.args, **call.kwargs)
                call = op.send(value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]

    # -- writes ------------------------------------------------------------------------------
    async def add(
        self,
        text: str,
        *,
        user_id: str,
        agent_id: str | None = None,
        session_id: str | None = None,
        at: datetime | None = None,
        kind: str | None = None,
        importance: float | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> list[MemoryModel]:
        """Store one text (see :meth:`Memory.add`)."""
        return await self.add_many([_item(text, user_id, agent_id, session_id, at, kind, importance, metadata)])

    async def add_many(self, items: Iterable[Mapping[str, Any] | AddItem], *, progress: bool = False) -> list[MemoryModel]:
        """Store many texts in atomic batches (see :meth:`Memory.add_many`)."""
        out: list[MemoryModel] = []
        for chunk in self._chunks(items, progress):
            prepared = await _thread(self._prepare, chunk)
            if prepared:
                async with self._write_lock:
                    out.extend(await self._drive(self._op_add_chunk(prepared)))
        return out

    async def update(self, memory_id: str, *, text: str | None = None, metadata: dict[str, Any] | None = None,
                     importance: float | None = None, at: datetime | None = None) -> MemoryModel:
        async with self._write_lock:
            return await self._drive(self._op_update(memory_id, text, metadata, importance, at))

    async def delete(self, memory_id: str) -> None:
        await self._drive(self._op_delete(memory_id))

    async def delete_all(self, *, user_id: str) -> dict[str, int]:
        return await self._call_store("delete_user", self._check_user(user_id))  # type: ignore[no-any-return]

    async def forget(self, memory_id: str | None = None, *, query: str | None = None,
                     user_id: str | None = None) -> MemoryModel:
        return await self._drive(self._op_forget(memory_id, query, user_id))

    async def pin(self, memory_id: str, pinned: bool = True) -> MemoryModel:
        async with self._write_lock:
            return await self._drive(self._op_pin(memory_id, pinned))

    async def history(self, memory_id: str) -> list[MemoryModel]:
        return await self._drive(self._op_history(memory_id))

    async def conflicts(self, user_id: str) -> list[Conflict]:
        """Open conflicts of a user (see :meth:`Memory.conflicts`)."""
        return await self._drive(self._op_conflicts(self._check_user(user_id)))

    async def resolve_conflict(self, new_id: str, old_id: str, *, supersedes: bool) -> None:
        """Settle a conflict (see :meth:`Memory.resolve_conflict`)."""
        async with self._write_lock:
            await self._drive(self._op_resolve_conflict(new_id, old_id, supersedes))

    async def maintain(self, *, user_id: str, now: datetime | None = None) -> dict[str, int]:
        return await self._drive(self._op_maintain(user_id, None if now is None else _ts(now)))

    # -- reads ------------------------------------------------------------------------------------
    async def get(self, memory_id: str) -> MemoryModel:
        return _to_model(await self._drive(self._op_get_record(memory_id)))

    async def get_all(self, *, user_id: str, session_id: str | None = None, limit: int | None = None) -> list[MemoryModel]:
        return await self._drive(self._op_get_all(user_id, session_id, limit))

    async def recall(self, query: str, *, user_id: str, k: int = 10, mode: str = "ripple",
                     config: RecallConfig | None = None, touch: bool = True,
                     include_history: bool = False) -> RecallResult:
        """The ``k`` memories most related to ``query`` (see :meth:`Memory.recall`)."""
        with one_blas_thread():
            return await self._drive(self._op_recall(query, user_id, k, mode, config, touch, include_history))

    # -- housekeeping --------------------------------------------------------------------------------
    async def export(self, *, user_id: str) -> list[dict[str, Any]]:
        """Every node and edge of a user as JSON-ready dicts."""
        from graphstore.jsonl import to_json

        await self._drive(self._op_require_user(user_id))
        if self._native:
            return [to_json(rec) async for rec in self._store.export(user_id)]  # type: ignore[union-attr]
        return await _thread(lambda: [to_json(rec) for rec in self._store.export(user_id)])  # type: ignore[union-attr]

    async def stats(self, *, user_id: str | None = None) -> dict[str, int]:
        return await self._call_store("stats", user_id)  # type: ignore[no-any-return]

    async def users(self) -> list[str]:
        return await self._call_store("users")  # type: ignore[no-any-return]


def _is_async_store(store: Any) -> bool:
    import inspect

    return inspect.iscoroutinefunction(getattr(store, "get_memories", None))


async def _thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    import functools

    import anyio

    return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))


def _item(text: str, user_id: str, agent_id: str | None, session_id: str | None, at: datetime | None,
          kind: str | None, importance: float | None, metadata: dict[str, Any] | None) -> dict[str, Any]:
    item: dict[str, Any] = {"text": text, "user_id": user_id, "agent_id": agent_id, "session_id": session_id,
                            "at": at, "kind": kind, "metadata": metadata if metadata is not None else {}}
    if importance is not None:
        item["importance"] = importance
    return item
