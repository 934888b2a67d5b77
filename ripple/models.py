"""Public data models: what goes into ripple and what comes out.

All models are frozen pydantic models: validated once where data enters a
public call, immutable afterwards.  Times are timezone-aware UTC datetimes
(naive inputs are taken as UTC).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "MemoryKind",
    "MemoryStatus",
    "MemoryRecord",
    "Entity",
    "PathStep",
    "ScoreParts",
    "RecallHit",
    "StageTrace",
    "RecallTrace",
    "RecallResult",
    "AddItem",
    "Fact",
    "Document",
    "MAX_TEXT_CHARS",
]

MAX_TEXT_CHARS = 100_000
MemoryKind = Literal["message", "fact", "preference", "personal_info", "event", "decision", "todo", "document",
                     "retraction", "correction"]
MemoryStatus = Literal["active", "superseded", "invalidated"]


def as_utc(value: datetime) -> datetime:
    """A timezone-aware UTC datetime (naive values are taken as UTC)."""
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MemoryRecord(_Frozen):
    """One stored memory as the API returns it: a message, a fact, a document chunk.

    (Named apart from the client, :class:`ripple.Memory`, and from the store's
    own plain record, :class:`graphstore.StoredMemory`.)
    """

    id: str
    user_id: str
    text: str
    at: datetime = Field(description="when the remembered thing happened (event time)")
    created_at: datetime = Field(description="when ripple stored it")
    agent_id: str | None = None
    session_id: str | None = None
    kind: str = "message"
    importance: float = 0.5
    status: MemoryStatus = "active"
    access_count: int = 0
    last_access: datetime | None = None
    language: str = "en"
    confidence: float = Field(1.0, description="0-1; hedged statements start low, repetition raises it")
    mentions: int = Field(1, description="how many times this was said (near-duplicates reinforce it)")
    last_seen: datetime | None = Field(None, description="when it was last said again")
    valid_to: datetime | None = Field(None, description="when a newer fact superseded it")
    pinned: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)


class Entity(_Frozen):
    """A person, organisation, place, project or thing that memories mention."""

    id: str
    user_id: str
    name: str
    key: str = Field(description="normalised form that mentions resolve to")
    label: str
    aliases: tuple[str, ...] = ()
    degree: int = Field(0, description="number of memories that mention it")


class PathStep(_Frozen):
    """One edge on the way from a seed to a hit."""

    source: str
    target: str
    edge: str  # MENTIONS | RELATED | NEXT
    weight: float
    label: str = Field("", description="entity name or relation, for people to read")


class ScoreParts(_Frozen):
    """How a hit's score was put together."""

    seed: float = 0.0
    lexical: float = 0.0
    dense: float = 0.0
    late: float = 0.0
    coverage: float = Field(0.0, description="share of the query's informative words (IDF-weighted) the memory holds")
    activation: float = Field(0.0, description="the spreading channels' weighted sum")
    channels: dict[str, float] = Field(
        default_factory=dict, description="activation from each channel that reached the memory, before its weight"
    )
    recency: float = 1.0
    importance: float = 0.5
    confidence: float = 1.0
    tier: str = Field("hot", description="forgetting tier at recall time: hot, warm, cold or frozen")
    rerank: float | None = None


class RecallHit(_Frozen):
    """A recalled memory with its score and the path that reached it."""

    memory: MemoryRecord
    score: float = Field(description="ranking score, normalised per query (the best hit scores about 1)")
    relevance: float = Field(
        0.0, description="calibrated 0-1 chance that the memory is relevant at all, comparable across queries "
        "(mostly the query's: an unrelated question gives every hit a low value; rank within a query by score)"
    )
    rank: int
    parts: ScoreParts
    path: tuple[PathStep, ...] = Field((), description="empty for seeds; else seed -> ... -> this memory")
    via: str = Field("seed", description="seed, history, or the name of the channel that reached it (session, entity, ...)")


class StageTrace(_Frozen):
    name: str
    ms: float
    size: int = 0
    detail: dict[str, Any] = Field(default_factory=dict)


class RecallTrace(_Frozen):
    """Per-stage timings and sizes of one recall."""

    stages: tuple[StageTrace, ...] = ()
    total_ms: float = 0.0


class RecallResult(_Frozen):
    """What :meth:`ripple.Memory.recall` returns."""

    query: str
    user_id: str
    mode: str
    hits: tuple[RecallHit, ...]
    trace: RecallTrace
    user_known: bool = Field(True, description="False when the store holds nothing for this user yet (no hits)")

    def __len__(self) -> int:
        return len(self.hits)

    def texts(self) -> list[str]:
        """The hits' texts in rank order."""
        return [h.memory.text for h in self.hits]


class AddItem(_Frozen):
    """One item of :meth:`ripple.Memory.add_many`, validated."""

    text: str
    user_id: str
    agent_id: str | None = None
    session_id: str | None = None
    at: datetime | None = None
    kind: str | None = None
    importance: float = Field(0.5, ge=0.0, le=1.0)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("text")
    @classmethod
    def _text(cls, v: str) -> str:
        if not v or not v.strip():
            raise ValueError("text is empty")
        if len(v) > MAX_TEXT_CHARS:
            raise ValueError(f"text has {len(v)} characters, more than the {MAX_TEXT_CHARS} allowed")
        return v

    @field_validator("user_id")
    @classmethod
    def _user(cls, v: str) -> str:
        if not v or not v.strip():
            raise ValueError("user_id is empty")
        if len(v) > 256:
            raise ValueError("user_id is longer than 256 characters")
        return v

    @field_validator("at")
    @classmethod
    def _at(cls, v: datetime | None) -> datetime | None:
        return None if v is None else as_utc(v)

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, v: dict[str, Any]) -> dict[str, Any]:
        try:
            encoded = json.dumps(v, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"metadata must be JSON-serialisable (str keys, finite numbers): {exc}") from exc
        if json.loads(encoded) != v:
            raise ValueError("metadata does not round-trip through JSON (use str keys and lists, not tuples)")
        return v


class Fact(_Frozen):
    """One fact of a user: an attribute with its value, the memory that states it, and when it held.

    Read from the graph's ``RELATED`` edges (see :meth:`ripple.Memory.facts`):
    ``subject`` is ``"@self"`` for the user's own facts.  A fact is current
    while its evidence memory is active; a newer value closes it
    (``valid_to``, status ``superseded``) and nothing is deleted.
    """

    subject: str
    predicate: str = Field(description="the attribute: name, employer, budget, allergy, ...")
    value: str
    memory_id: str = Field(description="the memory that states it (its evidence)")
    text: str = Field(description="that memory's text")
    confidence: float
    valid_from: datetime = Field(description="when it was said (the evidence memory's event time)")
    valid_to: datetime | None = None
    status: MemoryStatus = "active"
    session_id: str | None = None


class Document(_Frozen):
    """A versioned JSON document of a user (working memory, task state, agent bookkeeping).

    ``version`` counts writes (1 after the first); a write that names a stale
    version is refused (:class:`ripple.VersionConflict`).
    """

    user_id: str
    key: str
    version: int
    value: Any
    updated_at: datetime
