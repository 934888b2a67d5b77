"""Store records and plan results as the public models (pydantic at the edge, plain data inside)."""

from __future__ import annotations

import contextlib
import json
from datetime import datetime, timezone
from typing import Any, Iterator, cast

from graphstore.jsonl import to_json
from graphstore.records import EdgeRecord, EntityRecord
from graphstore.records import StoredMemory

from .errors import StoreError
from .models import MemoryRecord, MemoryStatus, PathStep, RecallHit, RecallResult, RecallTrace, ScoreParts, StageTrace
from .recall.candidates import PlanResult
from .recall.query import QueryInput

__all__ = ["to_model", "to_datetime", "recall_result", "stored_metadata", "exported"]


def to_datetime(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, tz=timezone.utc)


@contextlib.contextmanager
def _damaged(r: StoredMemory) -> Iterator[None]:
    """A stored row that cannot be read back (a time out of range, metadata that is not JSON): a StoreError."""
    try:
        yield
    except (ValueError, OverflowError, OSError, TypeError, RecursionError) as exc:
        raise StoreError(f"memory {r.id!r} of user {r.user_id!r} is damaged in the store and cannot be read:"
                         f" {type(exc).__name__}: {exc}") from exc


def stored_metadata(r: StoredMemory) -> dict[str, Any]:
    """A stored memory's metadata (a damaged one raises :class:`~ripple.StoreError`)."""
    with _damaged(r):
        value = json.loads(r.metadata_json)
        if not isinstance(value, dict):
            raise ValueError(f"metadata is a JSON {type(value).__name__}, not an object")
        return value


def exported(rec: StoredMemory | EntityRecord | EdgeRecord) -> dict[str, Any]:
    """A stored record as an export line (:func:`graphstore.jsonl.to_json`); a damaged one is a StoreError."""
    try:
        return to_json(rec)
    except (ValueError, OverflowError, TypeError, RecursionError) as exc:
        raise StoreError(f"{type(rec).__name__} {getattr(rec, 'id', '')!r} of user {rec.user_id!r} is damaged"
                         f" in the store and cannot be exported: {type(exc).__name__}: {exc}") from exc


def to_model(r: StoredMemory) -> MemoryRecord:
    """A stored memory as the public record (a damaged one raises :class:`~ripple.StoreError`)."""
    metadata = stored_metadata(r)
    with _damaged(r):
        return MemoryRecord(
            id=r.id, user_id=r.user_id, text=r.text, at=datetime.fromtimestamp(r.at, tz=timezone.utc),
            created_at=datetime.fromtimestamp(r.created_at, tz=timezone.utc),
            agent_id=r.agent_id, session_id=r.session_id, kind=r.kind, importance=r.importance,
            status=cast(MemoryStatus, r.status), access_count=r.access_count, last_access=to_datetime(r.last_access),
            language=r.language, confidence=r.confidence, mentions=r.mentions, last_seen=to_datetime(r.last_seen),
            valid_to=to_datetime(r.valid_to), pinned=r.pinned, metadata=metadata,
        )


def recall_result(q: QueryInput, plan: PlanResult, total_ms: float) -> RecallResult:
    """The plan's hits, with their parts, paths and the stage trace, as the public result."""
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
                memory=to_model(plan.records[c.id]), score=float(c.score), relevance=round(c.relevance, 6), rank=rank,
                path=path, via=c.via,
                parts=ScoreParts(seed=c.seed, lexical=c.lexical, dense=c.dense, late=c.late, multilingual=c.multilingual,
                                 coverage=c.coverage,
                                 activation=c.activation, channels=dict(c.channels), recency=c.recency,
                                 importance=c.importance, confidence=c.confidence, tier=c.tier, rerank=c.rerank),
            )
        )
    trace = RecallTrace(
        stages=tuple(StageTrace(name=n, ms=round(ms, 3), size=size, detail=d) for n, ms, size, d in plan.stages),
        total_ms=round(total_ms, 3),
    )
    return RecallResult(query=q.text, user_id=q.user_id, mode=q.mode, hits=tuple(hits), trace=trace)
