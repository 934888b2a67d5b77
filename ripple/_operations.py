"""Every public operation, written once as an I/O-free generator of requests.

:class:`ripple.Memory` and :class:`ripple.AsyncMemory` only *drive* these
(plain calls or ``await``, see :mod:`ripple._memory`), so the two APIs cannot
disagree.  Each operation validates its input first, then yields
:mod:`graphstore.requests` (store work) and :mod:`ripple._requests` (model
work) and returns the public result.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from graphstore.protocol import ACTIVE, INVALIDATED, SUPERSEDED
from graphstore.records import EDGE_CONFLICTS, EDGE_SUPERSEDES, EdgeRecord, StoredMemory, WriteBatch
from graphstore.requests import (
    Cypher,
    DeleteMemories,
    DeleteUser,
    Expand,
    Export,
    GetMemories,
    GetUserState,
    HasMemories,
    ListEdges,
    ListMemories,
    SetStatus,
    Stats,
    Touch,
    Users,
    Warm,
    Write,
)

from . import _validate as check
from ._lifecycle import LifecycleConfig
from ._notes import open_conflict_ids, ripple_notes, with_ripple_notes
from ._requests import EncodesBeside, Op, Prepare, PrepareQuery
from ._shape import recall_result, to_datetime, to_model
from .errors import InvalidInput, MemoryNotFound, StoreError
from .limits import Limits, exceeded
from .models import (AddItem, ImportReport, MemoryConflict, MemoryRecord, RecallHit, RecallResult, RecallTrace,
                     StageTrace, as_utc)
from .recall.config import RecallConfig
from .recall.merge import tier_of
from .recall.pipeline import recall_plan
from .recall.query import asks_about_change
from .recall.recipes import RECIPES

if TYPE_CHECKING:
    from graphstore.retries import Retry

    from ._ingest import Prepared

__all__ = ["OpContext", "get", "get_record", "add_chunk", "update", "delete", "delete_all", "forget", "pin",
           "history", "conflicts", "resolve_conflict", "maintain", "get_all", "recall", "with_store_retries", "export",
           "import_records", "stats", "users", "cypher"]

_log = logging.getLogger("ripple")
_MAX_VERSIONS = 50  # hops followed along SUPERSEDES edges
_PAGE = 5_000  # memories per page when a maintenance pass walks a user's memories


@dataclass(frozen=True, slots=True)
class OpContext:
    """What operations read of their client: its recall plan, lifecycle rules, clock and size limits."""

    config: RecallConfig
    lifecycle: LifecycleConfig
    clock: Callable[[], float]
    limits: Limits = Limits()


def _ts(value: datetime) -> float:
    return as_utc(value).timestamp()


# -------------------------------------------------------------------------------------------- reads by id


def get_record(ctx: OpContext, memory_id: Any, *, with_vectors: bool = False) -> Op[StoredMemory]:
    found = yield GetMemories([check.memory_id(memory_id, ctx.limits)], with_vectors=with_vectors)
    if not found:
        raise MemoryNotFound(f"no memory with id {memory_id!r}")
    return found[0]


def get(ctx: OpContext, memory_id: Any) -> Op[MemoryRecord]:
    return to_model((yield from get_record(ctx, memory_id)))


def known_user(ctx: OpContext, user_id: Any) -> Op[bool]:
    """True when the store holds a memory of the user.  A user with no memories yet is not an
    error for a read (an agent's first turn for a new user recalls nothing): reads of such a
    user return empty results, and :class:`~ripple.models.RecallResult` says so."""
    check.user(user_id, ctx.limits)
    return bool((yield HasMemories(user_id)))


# -------------------------------------------------------------------------------------------- writes


def add_chunk(ctx: OpContext, prepared: "list[Prepared]") -> Op[list[MemoryRecord]]:
    from ._ingest import ingest_plan

    records = yield from ingest_plan(prepared, now=ctx.clock(), lifecycle=ctx.lifecycle)
    return [to_model(r) for r in records]


def update(ctx: OpContext, memory_id: Any, text: str | None, metadata: dict[str, Any] | None,
           importance: float | None, at: datetime | None) -> Op[MemoryRecord]:
    from ._ingest import ingest_plan

    old = yield from get_record(ctx, memory_id)
    current = to_model(old)  # (a damaged row is a StoreError here, before anything is written)
    item = check.item(
        {"text": text if text is not None else old.text, "user_id": old.user_id, "agent_id": old.agent_id,
         "session_id": old.session_id, "at": at or current.at, "kind": old.kind,
         "importance": importance if importance is not None else old.importance,
         "metadata": metadata if metadata is not None else current.metadata},
        ctx.limits, "update",
    )
    prepared = yield Prepare([item])
    if not prepared:
        raise InvalidInput("the new text has no content to remember")
    yield from ingest_plan(prepared, now=old.created_at, replacing=old)
    return to_model((yield from get_record(ctx, old.id)))


def delete(ctx: OpContext, memory_id: Any) -> Op[None]:
    yield from get_record(ctx, memory_id)
    yield DeleteMemories([memory_id])


def delete_all(ctx: OpContext, user_id: Any) -> Op[dict[str, int]]:
    return (yield DeleteUser(check.user(user_id, ctx.limits)))


def forget(ctx: OpContext, memory_id: str | None, query: str | None, user_id: str | None) -> Op[MemoryRecord]:
    if (memory_id is None) == (query is None):
        raise InvalidInput("forget needs either a memory id or query= (with user_id=)")
    if query is not None:
        if user_id is None:
            raise InvalidInput("forget(query=...) needs user_id=")
        found = yield from recall(ctx, query, user_id, 1, "ripple", None, False, False, None)
        if not found.hits:
            raise MemoryNotFound(f"no active memory of {user_id!r} matches {query!r}")
        memory_id = found.hits[0].memory.id
    rec = yield from get_record(ctx, memory_id)
    yield SetStatus([rec.id], INVALIDATED)
    return to_model(replace(rec, status=INVALIDATED))


def pin(ctx: OpContext, memory_id: Any, pinned: bool) -> Op[MemoryRecord]:
    full = replace((yield from get_record(ctx, memory_id, with_vectors=True)), pinned=bool(pinned))
    yield Write(WriteBatch(memories=[full]))
    return to_model(full)


# -------------------------------------------------------------------------------------------- versions


def versions(records: Sequence[StoredMemory], user_id: str, *, conflicts: bool = False
             ) -> Op[list[list[StoredMemory]]]:
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
        rows = yield Expand(user_id, frontier, [EDGE_SUPERSEDES, *([EDGE_CONFLICTS] if conflicts else [])])
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
        known.update((r.id, r) for r in (yield GetMemories(missing)))
    members: dict[str, list[StoredMemory]] = {}
    for mid in parent:
        if mid in known:
            members.setdefault(root(mid), []).append(known[mid])
    return [sorted(members[root(r.id)], key=lambda m: (m.at, m.created_at, m.id)) for r in records]


def history(ctx: OpContext, memory_id: Any) -> Op[list[MemoryRecord]]:
    rec = yield from get_record(ctx, memory_id)
    (found,) = yield from versions([rec], rec.user_id)
    return [to_model(r) for r in found]


def conflicts(ctx: OpContext, user_id: Any, limit: Any = None, memory_ids: Any = None) -> Op[list[MemoryConflict]]:
    """Open conflicts of a user (open CONFLICTS edges between two memories still active), oldest first.

    ``memory_ids``: only conflicts that involve one of these memories; ``limit``: only the newest
    ``limit`` of them.  Both keep the cost to what is asked for: a user accumulates open conflicts
    (and settled ones whose edges stay), and a caller that shows the last few, or checks a few
    memories, should not fetch and explain every one (edges are read newest first, records in
    chunks, until ``limit`` open ones are found)."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise InvalidInput(f"limit must be a positive integer, not {limit!r}")
    if isinstance(memory_ids, (str, bytes)):
        raise InvalidInput("memory_ids must be a list of memory ids, not one string")
    wanted = None if memory_ids is None else {str(i) for i in memory_ids}
    if not (yield from known_user(ctx, user_id)):
        return []
    edges = [e for e in (yield ListEdges(user_id, [EDGE_CONFLICTS]))
             if e.weight > 0 and (wanted is None or e.src in wanted or e.dst in wanted)]
    edges.sort(key=lambda e: (e.at or 0.0, e.src, e.dst), reverse=True)  # newest first (the write path dates each)
    out: list[MemoryConflict] = []
    step = len(edges) if limit is None else max(8, 2 * limit)
    for start in range(0, len(edges), max(step, 1)):
        chunk = edges[start:start + step]
        ids = sorted({e.src for e in chunk} | {e.dst for e in chunk})
        records = {r.id: r for r in (yield GetMemories(ids))}
        for e in chunk:
            new, old = records.get(e.src), records.get(e.dst)
            if new is None or old is None or new.status != ACTIVE or old.status != ACTIVE:
                continue  # settled since: one of them was superseded, forgotten or deleted
            out.append(_conflict(new, old, e.at))
        if limit is not None and len(out) >= limit:
            break
    out = sorted(out, key=MemoryConflict.newness)
    return out if limit is None else out[-limit:]


def _conflict(new: StoredMemory, old: StoredMemory, at: float | None) -> MemoryConflict:
    """A conflict between two stored memories, with the explanation whichever of them recorded."""
    note: dict[str, Any] = {}
    for rec, other in ((new, old), (old, new)):
        meta = ripple_notes(rec.metadata_json)
        note = next((n for n in meta.get("conflicts", ()) if n.get("memory") == other.id), note)
    values, frames = note.get("value"), note.get("frame")
    return MemoryConflict(new=to_model(new), old=to_model(old), confidence=str(note.get("confidence", "medium")),
                          values=tuple(values) if values else None, frames=tuple(frames) if frames else None,
                          why=str(note.get("why", "")), at=None if at is None else to_datetime(at))


def resolve_conflict(ctx: OpContext, new_id: Any, old_id: Any, supersedes: bool) -> Op[None]:
    """Settle an open conflict: close its edge (weight 0) and, with ``supersedes``, let the later
    of the two supersede the earlier, as a high-confidence decision on the write path would have."""
    new = yield from get_record(ctx, new_id, with_vectors=True)
    old = yield from get_record(ctx, old_id, with_vectors=True)
    edges = [] if old.user_id != new.user_id else (yield ListEdges(new.user_id, [EDGE_CONFLICTS]))
    open_edges = [e for e in edges if e.weight > 0 and {e.src, e.dst} == {new.id, old.id}]
    if not open_edges:
        raise InvalidInput(f"no open conflict between {new_id!r} and {old_id!r}")
    batch = WriteBatch(edges=[replace(e, weight=0.0) for e in open_edges])
    # each side's note on the other is marked settled (recall hits stop showing it)
    settled = "supersedes" if supersedes else "both"
    new, old = (_settle(rec, other.id, settled) for rec, other in ((new, old), (old, new)))
    later, earlier = (new, old) if (new.at, new.id) >= (old.at, old.id) else (old, new)
    if supersedes:
        earlier = replace(earlier, status=SUPERSEDED, valid_to=later.at)
        batch.edges.append(EdgeRecord(later.id, EDGE_SUPERSEDES, earlier.id, new.user_id, 1.0, at=later.at))
    batch.memories.extend([later, earlier])
    yield Write(batch)


def _settle(rec: StoredMemory, other: str, how: str) -> StoredMemory:
    def mark(notes: dict[str, Any]) -> None:
        for n in notes.get("conflicts", ()):
            if n.get("memory") == other:
                n["resolved"] = how

    return with_ripple_notes(rec, mark)


def _with_history(result: RecallResult, by_id: dict[str, StoredMemory], user_id: str) -> Op[RecallResult]:
    """Every hit with its other versions next to it, oldest first, at the rank of the best of them.

    ``by_id``: the hits' records, as the recall plan already fetched them."""
    kept = [h for h in result.hits if h.memory.id in by_id]
    groups = yield from versions([by_id[h.memory.id] for h in kept], user_id, conflicts=True)
    hits_by_id = {h.memory.id: h for h in result.hits}
    out: list[RecallHit] = []
    placed: set[str] = set()
    for hit, group in zip(kept, groups):
        if hit.memory.id in placed:
            continue
        for rec in group:
            if rec.id in placed or rec.status == INVALIDATED:
                continue
            placed.add(rec.id)
            have = hits_by_id.get(rec.id)
            out.append((have or hit).model_copy(update={
                "memory": to_model(rec), "rank": len(out) + 1,
                **({} if have else {"via": "history", "path": (), "parts": hit.parts}),
            }))
    return result.model_copy(update={"hits": tuple(out)})


def _with_conflicts(result: RecallResult) -> Op[RecallResult]:
    """Each hit with the memories an open conflict joins it to (``RecallHit.conflicts``): "was 50k,
    possibly now 60k" is what a reader of the hit must know.

    Read from the notes both memories of a conflict carry (the write path puts one on each); only
    when a hit has one is the store asked whether the other memory is still active."""
    named = {h.memory.id: open_conflict_ids(h.memory.metadata) for h in result.hits}
    wanted = sorted({m for ids in named.values() for m in ids})
    if not wanted:
        return result
    active = {r.id for r in (yield GetMemories(wanted)) if r.status == ACTIVE}
    hits = tuple(h.model_copy(update={"conflicts": tuple(m for m in named[h.memory.id] if m in active)})
                 if h.memory.status == ACTIVE and named[h.memory.id] else h for h in result.hits)
    return result.model_copy(update={"hits": hits})


# -------------------------------------------------------------------------------------------- reads of a user


def maintain(ctx: OpContext, user_id: Any, now: datetime | None) -> Op[dict[str, int]]:
    now = check.when(now, "now")
    at = ctx.clock() if now is None else _ts(now)
    counts: dict[str, int] = {"hot": 0, "warm": 0, "cold": 0, "frozen": 0, "superseded": 0, "invalidated": 0,
                              "pinned": 0}
    if not (yield from known_user(ctx, user_id)):
        return counts
    offset = 0
    while True:
        page = yield ListMemories(user_id, limit=_PAGE, offset=offset)
        for rec in page:
            if rec.status != ACTIVE:
                counts[rec.status] += 1
                continue
            counts["pinned"] += int(rec.pinned)
            counts[tier_of(rec, at, ctx.config.merge.tiers)[0]] += 1
        if len(page) < _PAGE:
            return counts
        offset += _PAGE


def get_all(ctx: OpContext, user_id: Any, session_id: str | None, limit: int | None) -> Op[list[MemoryRecord]]:
    session_id, limit = check.session(session_id, ctx.limits), check.limit(limit)
    if not (yield from known_user(ctx, user_id)):
        return []
    records = yield ListMemories(user_id, session_id=session_id, limit=limit)
    return [to_model(r) for r in records]


def recall(ctx: OpContext, query: Any, user_id: Any, k: Any, mode: Any, config: RecallConfig | None,
           touch: bool, include_history: bool | None, min_relevance: float | None = None) -> Op[RecallResult]:
    check.query(query, k, mode, ctx.limits)
    floor = check.relevance_floor(min_relevance)
    t0 = time.perf_counter()
    check.user(user_id, ctx.limits)
    cfg = config or (ctx.config if mode == "ripple" else RECIPES[mode])
    if include_history is None:  # the caller left it to the query: a question about a change asks for history
        include_history = cfg.merge.history_cue and asks_about_change(query)
    if include_history:
        statuses = tuple(dict.fromkeys((*cfg.merge.include_statuses, ACTIVE, SUPERSEDED)))
        cfg = cfg.model_copy(update={"merge": cfg.merge.model_copy(update={"include_statuses": statuses})})
    # the query's encoding starts first where it runs beside the plan with its model loaded: the first read
    # then waits on the store while the model works (an unknown user's recall still loads no model)
    q = (yield PrepareQuery(query, user_id, k, mode, cfg)) if (yield EncodesBeside(cfg)) else None
    # one read answers the user check and the multilingual route's (see graphstore.records.UserState)
    state = yield GetUserState(user_id)
    if not state.memories:
        return RecallResult(query=query, user_id=user_id, mode=mode, hits=(), trace=RecallTrace(),
                            user_known=False)
    if q is None:
        q = yield PrepareQuery(query, user_id, k, mode, cfg)
    q.user_multilingual = state.multilingual
    plan = yield from recall_plan(q, cfg)
    if floor:
        plan.hits = [c for c in plan.hits if c.relevance >= floor]
    result = recall_result(q, plan, (time.perf_counter() - t0) * 1000.0)
    if include_history and result.hits:
        result = yield from _with_history(result, plan.records, user_id)
    if result.hits:
        result = yield from _with_conflicts(result)
    if touch and result.hits:
        t1 = time.perf_counter()
        try:
            yield Touch([h.memory.id for h in result.hits], ctx.clock())
        except StoreError as exc:  # counting the hits as used is not worth failing the recall for
            _warn_once("touch", "recall could not record its hits as used (the recall itself is fine): %s", exc)
            result = _with_stage(result, StageTrace(name="touch", ms=(time.perf_counter() - t1) * 1000.0,
                                                    size=len(result.hits), detail={"error": _one_line(exc)}))
    return result


_WARNED: set[str] = set()


def _warn_once(kind: str, message: str, exc: BaseException) -> None:
    """Log a degraded-but-working condition once per process and kind (then at debug level)."""
    level = logging.DEBUG if kind in _WARNED else logging.WARNING
    _WARNED.add(kind)
    _log.log(level, message, _one_line(exc))


def _one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def _with_stage(result: RecallResult, stage: StageTrace) -> RecallResult:
    trace = result.trace.model_copy(update={"stages": (*result.trace.stages, stage)})
    return result.model_copy(update={"trace": trace})


def with_store_retries(result: RecallResult, retried: Sequence[Retry]) -> RecallResult:
    """The result with a ``store_retries`` stage when its store calls had to be retried (a slow store)."""
    if not retried:
        return result
    detail = {"stores": sorted({r.store for r in retried}), "errors": [r.error for r in retried[:5]]}
    return _with_stage(result, StageTrace(name="store_retries", ms=sum(r.wait_s for r in retried) * 1000.0,
                                          size=len(retried), detail=detail))


# -------------------------------------------------------------------------------------------- housekeeping


def export(ctx: OpContext, user_id: Any) -> Op[Any]:
    """The user's records (an iterator, or an async iterator from an async store); none for an unknown
    user.  Any user :meth:`~ripple.Memory.users` lists can be exported, also one whose memories were
    all deleted but whose entities remain."""
    check.user(user_id, ctx.limits)
    return (yield Export(user_id))


def stats(ctx: OpContext, user_id: str | None) -> Op[dict[str, int]]:
    if user_id is not None:
        check.user(user_id, ctx.limits)
    return (yield Stats(user_id))


def users() -> Op[list[str]]:
    return (yield Users())


def warm(ctx: OpContext, user_id: Any) -> Op[None]:
    check.user(user_id, ctx.limits)
    yield Warm(user_id)


def import_records(ctx: OpContext, records: Iterable[Any], user_id: Any) -> Op[ImportReport]:
    """Exported records as ``user_id``'s, validated, re-keyed and written batch by batch (see :mod:`ripple._import`)."""
    from ._import import import_plan

    return (yield from import_plan(records, user_id, ctx.limits))


def cypher(ctx: OpContext, query: Any, params: dict[str, Any] | None, write: bool, allow_procedures: bool,
           allow_admin: bool) -> Op[tuple[list[str], list[list[Any]]]]:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("the Cypher query must be a non-empty string")
    if len(query) > ctx.limits.query_chars:
        raise exceeded("query_chars", "Cypher query length in characters", len(query), ctx.limits.query_chars)
    check.unicode(query, "the Cypher query")
    if params is not None and not isinstance(params, dict):
        raise InvalidInput(f"Cypher params must be a dict, not {type(params).__name__}")
    return (yield Cypher(query, dict(params or {}), bool(write), bool(allow_procedures), bool(allow_admin)))
