"""Public data models: what goes into ripple and what comes out.

All models are frozen pydantic models: validated once where data enters a
public call, immutable afterwards.  Times are timezone-aware UTC datetimes
(naive inputs are taken as UTC).
"""

from __future__ import annotations

import base64
import binascii
import math
from array import array
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from graphstore.records import EDGE_TYPES

from . import _validate as check
from .limits import Limits

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
    "MemoryConflict",
    "ExportedMemory",
    "ExportedEntity",
    "ExportedEdge",
    "ImportReport",
    "MAX_TEXT_CHARS",
]

MAX_TEXT_CHARS = Limits().text_chars  # the default of ``Limits.text_chars`` (kept for callers of 0.x)
MAX_LABEL_CHARS = 64  # kind, entity label, language
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
    edge: str  # MENTIONS | RELATED | NEXT | NAMES_TITLE (the source's text names the target's title)
    weight: float
    label: str = Field("", description="entity name or relation, for people to read")


class ScoreParts(_Frozen):
    """How a hit's score was put together."""

    seed: float = 0.0
    lexical: float = 0.0
    dense: float = 0.0
    late: float = 0.0
    multilingual: float = Field(
        0.0, description="cosine in the multilingual route's space (memories in a CJK script; 0 when the route is off)"
    )
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
    conflicts: tuple[str, ...] = Field(
        (), description="ids of active memories an open conflict joins this one to: one of the two may have "
        "replaced the other ('was 50k, possibly now 60k'); see Memory.conflicts and Memory.resolve_conflict")


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


class MemoryConflict(_Frozen):
    """Two active memories that may state the same thing with different values: a supersession ripple
    was not sure enough of to apply ("was 50k, possibly now 60k").  Listed by
    :meth:`ripple.Memory.conflicts` for an agent or a person to resolve with
    :meth:`ripple.Memory.resolve_conflict`."""

    new: MemoryRecord = Field(description="the later statement (by event time)")
    old: MemoryRecord = Field(description="the earlier statement it may replace")
    confidence: str = Field("medium", description="how sure the write path was: medium")
    values: tuple[str, str] | None = Field(None, description="(old value, new value) as written")
    frames: tuple[str, str] | None = Field(None, description="(old clause, new clause) that were compared")
    why: str = Field("", description="the reasons, as recorded in the memory's metadata['ripple']")
    at: datetime | None = Field(None, description="when the conflict arose (the later event time)")

    def newness(self) -> tuple[datetime, str, str]:
        """The conflict's place in time, oldest first: the order of :meth:`ripple.Memory.conflicts`
        (whose ``limit`` keeps the newest), for clients that merge or trim lists of conflicts."""
        return (self.at or self.new.at, self.new.id, self.old.id)


def _limits(info: ValidationInfo) -> "Limits":
    """The limits a validation runs under: the caller's (``context={"limits": ...}``) or the defaults."""
    got = info.context.get("limits") if isinstance(info.context, dict) else None
    return got if isinstance(got, Limits) else check.DEFAULT_LIMITS


class AddItem(_Frozen):
    """One item of :meth:`ripple.Memory.add_many`, validated.

    The checks are :mod:`ripple._validate`'s field checks, under the client's
    :class:`~ripple.Limits` (a model built without a client uses the
    defaults; the client checks it again against its own limits).
    """

    text: str
    user_id: str
    agent_id: str | None = None
    session_id: str | None = None
    at: datetime | None = None
    kind: str | None = None
    importance: float = Field(0.5, ge=0.0, le=1.0)
    metadata: dict[str, Any] = Field(default_factory=dict)

    model_config = ConfigDict(frozen=True, extra="forbid", revalidate_instances="always")

    @field_validator("text", mode="before")
    @classmethod
    def _text(cls, v: Any, info: ValidationInfo) -> Any:
        return check.text(v, _limits(info)) if isinstance(v, str) else v

    @field_validator("user_id", mode="before")
    @classmethod
    def _user(cls, v: Any, info: ValidationInfo) -> Any:
        return check.user(v, _limits(info)) if isinstance(v, str) else v

    @field_validator("session_id", "agent_id")
    @classmethod
    def _ids(cls, v: str | None, info: ValidationInfo) -> str | None:
        name = str(info.field_name)
        return None if v is None else check.identifier(v, name, f"{name}_chars", _limits(info))

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str | None) -> str | None:
        return None if v is None else check.short(v, "kind", MAX_LABEL_CHARS)

    @field_validator("at")
    @classmethod
    def _at(cls, v: datetime | None) -> datetime | None:
        return None if v is None else check.utc(v, "at")

    @field_validator("metadata", mode="before")
    @classmethod
    def _metadata(cls, v: Any, info: ValidationInfo) -> Any:
        check.json_tree(v, "metadata", _limits(info))
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


# -------------------------------------------------------------------------------------------- import


class _Exported(_Frozen):
    """A line of an export (:mod:`graphstore.jsonl`) as an import validates it, field by field with the
    checks of :class:`AddItem`, under the importing client's limits and vector dimension
    (``context={"limits": ..., "dim": ...}``)."""

    model_config = ConfigDict(frozen=True, extra="ignore", allow_inf_nan=False)

    user_id: str

    @field_validator("user_id", mode="before")
    @classmethod
    def _user(cls, v: Any, info: ValidationInfo) -> Any:
        return check.user(v, _limits(info)) if isinstance(v, str) else v


def _blob(v: Any, info: ValidationInfo, *, what: str, width: int, whole: bool, own_space: bool = False) -> bytes | None:
    """A base64 vector blob whose length is ``width`` bytes per dimension (one vector, or ``whole=False``:
    any number of them); ``own_space``: a vector of another model (the multilingual one), whose
    dimension is not the store's."""
    if v is None:
        return None
    if not isinstance(v, str):
        raise check.InvalidInput(f"{what} must be base64 text, not {type(v).__name__}")
    try:
        blob = base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise check.InvalidInput(f"{what} is not base64: {exc}") from None
    dim = info.context.get("dim") if isinstance(info.context, dict) and not own_space else None
    if own_space and len(blob) % width:
        raise check.InvalidInput(f"{what} has {len(blob)} bytes, not a whole number of {width}-byte values")
    if isinstance(dim, int) and dim > 0:
        if whole and len(blob) != width * dim:
            raise check.InvalidInput(f"{what} has {len(blob)} bytes; this store's vectors have {width * dim}"
                                     f" ({dim} dimensions of {width} bytes)")
        if not whole and len(blob) % (width * dim):
            raise check.InvalidInput(f"{what} has {len(blob)} bytes, not a whole number of {dim}-dimension rows")
    if width == 4 and not all(math.isfinite(x) for x in array("f", blob[: len(blob) - len(blob) % 4])):
        raise check.InvalidInput(f"{what} holds a value that is not finite")
    return blob


class ExportedMemory(_Exported):
    """A ``"memory"`` line of an export."""

    type: Literal["memory"]
    id: str
    text: str
    at: float
    created_at: float
    agent_id: str | None = None
    session_id: str | None = None
    kind: str = "message"
    importance: float = Field(0.5, ge=0.0, le=1.0)
    status: MemoryStatus = "active"
    access_count: int = Field(0, ge=0, le=2**62)
    last_access: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    language: str = "en"
    confidence: float = Field(1.0, ge=0.0, le=1.0)
    mentions: int = Field(1, ge=1, le=2**62)
    last_seen: float | None = None
    valid_to: float | None = None
    pinned: bool = False
    terms: tuple[str, ...] = ()
    embedding: bytes | None = None
    token_vectors: bytes | None = None
    multilingual: bytes | None = None

    @field_validator("id", mode="before")
    @classmethod
    def _id(cls, v: Any, info: ValidationInfo) -> Any:
        if isinstance(v, str) and v.startswith("e_"):
            raise check.InvalidInput(f"memory id {v!r} starts with e_, which names entities")
        return check.memory_id(v, _limits(info)) if isinstance(v, str) else v

    @field_validator("text", mode="before")
    @classmethod
    def _text(cls, v: Any, info: ValidationInfo) -> Any:
        return check.text(v, _limits(info)) if isinstance(v, str) else v

    @field_validator("session_id", "agent_id")
    @classmethod
    def _ids(cls, v: str | None, info: ValidationInfo) -> str | None:
        name = str(info.field_name)
        return None if v is None else check.identifier(v, name, f"{name}_chars", _limits(info))

    @field_validator("kind", "language")
    @classmethod
    def _label(cls, v: str, info: ValidationInfo) -> str:
        return check.short(v, str(info.field_name), MAX_LABEL_CHARS)

    @field_validator("at", "created_at", "last_access", "last_seen", "valid_to", mode="before")
    @classmethod
    def _time(cls, v: Any, info: ValidationInfo) -> Any:
        return None if v is None else check.timestamp(v, str(info.field_name))

    @field_validator("metadata", mode="before")
    @classmethod
    def _metadata(cls, v: Any, info: ValidationInfo) -> Any:
        check.json_tree(v, "metadata", _limits(info))
        return v

    @field_validator("terms", mode="before")
    @classmethod
    def _terms(cls, v: Any, info: ValidationInfo) -> Any:
        if isinstance(v, list):
            if len(v) > _limits(info).text_chars:
                raise check.InvalidInput(f"terms has {len(v):,} tokens, more than the text can have")
            for t in v:
                check.short(t, "a term", MAX_NAME_CHARS)
        return v

    @field_validator("embedding", mode="before")
    @classmethod
    def _embedding(cls, v: Any, info: ValidationInfo) -> Any:
        return _blob(v, info, what="embedding", width=4, whole=True)

    @field_validator("token_vectors", mode="before")
    @classmethod
    def _tokens(cls, v: Any, info: ValidationInfo) -> Any:
        return _blob(v, info, what="token_vectors", width=1, whole=False)

    @field_validator("multilingual", mode="before")
    @classmethod
    def _multilingual(cls, v: Any, info: ValidationInfo) -> Any:
        return _blob(v, info, what="multilingual", width=4, whole=True, own_space=True)


class ExportedEntity(_Exported):
    """An ``"entity"`` line of an export."""

    type: Literal["entity"]
    id: str
    name: str
    key: str
    label: str
    aliases: tuple[str, ...] = ()
    embedding: bytes | None = None

    @field_validator("id", "name", "key")
    @classmethod
    def _name(cls, v: str, info: ValidationInfo) -> str:
        if not v.strip():
            raise check.InvalidInput(f"entity {info.field_name} is empty")
        return check.short(v, f"entity {info.field_name}", MAX_NAME_CHARS)

    @field_validator("label")
    @classmethod
    def _label(cls, v: str) -> str:
        return check.short(v, "entity label", MAX_LABEL_CHARS)

    @field_validator("aliases")
    @classmethod
    def _aliases(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if len(v) > MAX_ALIASES:
            raise check.InvalidInput(f"entity has {len(v):,} aliases, more than {MAX_ALIASES:,}")
        for a in v:
            check.short(a, "entity alias", MAX_NAME_CHARS)
        return v

    @field_validator("embedding", mode="before")
    @classmethod
    def _embedding(cls, v: Any, info: ValidationInfo) -> Any:
        return _blob(v, info, what="entity embedding", width=4, whole=True)


class ExportedEdge(_Exported):
    """An ``"edge"`` line of an export: one of ripple's edge types between two nodes of the user."""

    type: Literal["edge"]
    src: str
    edge: str
    dst: str
    weight: float = Field(ge=0.0, le=1e9)
    predicate: str = ""
    evidence: str | None = None
    at: float | None = None

    @field_validator("src", "dst", "evidence")
    @classmethod
    def _end(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is None:
            return None
        if not v.strip():
            raise check.InvalidInput(f"edge {info.field_name} is empty")
        return check.short(v, f"edge {info.field_name}", MAX_NAME_CHARS)

    @field_validator("edge")
    @classmethod
    def _edge(cls, v: str) -> str:
        if v not in EDGE_TYPES:
            raise check.InvalidInput(f"unknown edge type {v[:100]!r} (ripple's are {', '.join(EDGE_TYPES)})")
        return v

    @field_validator("predicate")
    @classmethod
    def _predicate(cls, v: str) -> str:
        return check.short(v, "edge predicate", MAX_NAME_CHARS)

    @field_validator("at", mode="before")
    @classmethod
    def _time(cls, v: Any) -> Any:
        return None if v is None else check.timestamp(v, "edge at")


class ImportReport(_Frozen):
    """What :meth:`ripple.Memory.import_records` did, record by record.

    ``imported`` and ``skipped`` count records by kind (``memories``,
    ``entities``, ``edges``); a skipped record was already stored exactly
    as the file has it (re-importing one's own export skips everything).
    ``refusals`` holds one line per refused record (the first
    :data:`REFUSALS_SHOWN`), ``refused`` counts them all.  ``rekeyed``
    counts records of another ``user_id`` that were imported as this user's
    under new ids.
    """

    user_id: str
    imported: dict[str, int]
    skipped: dict[str, int]
    refused: int = 0
    refusals: tuple[str, ...] = ()
    rekeyed: int = 0
    batches: int = Field(0, description="transactions written (each batch is stored whole or not at all)")

    def summary(self) -> str:
        """One line: what was imported, skipped, re-keyed and refused."""
        def counts(c: dict[str, int]) -> str:
            return ", ".join(f"{n} {kind}" for kind, n in c.items())

        out = f"imported {counts(self.imported)} for user {self.user_id!r} in {self.batches} batches"
        if any(self.skipped.values()):
            out += f"; skipped {counts(self.skipped)} already stored"
        if self.rekeyed:
            out += f"; {self.rekeyed} records of another user taken as this user's with new ids"
        if self.refused:
            out += f"; refused {self.refused} records"
        return out


REFUSALS_SHOWN = 100  # refusal lines an ImportReport keeps
MAX_NAME_CHARS = 1_000  # entity names, keys, aliases, predicates, edge ends, lexical terms
MAX_ALIASES = 10_000
