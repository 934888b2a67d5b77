"""Import of exported records into one user's graph: tenant-safe, validated, idempotent, in batches.

An export (:mod:`graphstore.jsonl`) is a user's memories, entities and edges
with their ids.  Written back as they are, a file could name another user's
ids and overwrite that user's rows (issue 18: ``get(id)`` then returned the
importer's text).  So an import is always *for one user*, named by the caller,
and this plan decides every id itself:

* A record of another ``user_id`` is **re-keyed**: taken as the importing
  user's, under a new id derived from (importing user, source user, old id).
  Why re-key rather than refuse: moving a user's export to another name or
  store is the common use, and a derived id can never be another user's row
  (a refusal would leave the caller to rewrite the file by hand).  A
  memory's new id keeps the old one's time prefix, so the order of turns
  survives; the derivation is deterministic, so importing the same file twice
  writes the same ids (idempotent).
* A memory id of the importing user's own records is kept, but refused if
  the store holds it **for another user**: nothing of another user is ever
  written.
* An entity id is never taken from the file: entities are one per (user,
  key), so the id is the user's existing entity of that key, else
  :func:`ripple._ingest.entity_id` of it (the id ingest gives it).
* An edge must join two nodes of the importing user (written from this file,
  or already stored), of the kinds its type joins, and a RELATED edge's
  evidence must be one of the user's memories: anything else is a dangling
  edge and refused.

Records are validated one by one with the models of :mod:`ripple.models`
(the same field checks and :class:`~ripple.Limits` as ``add``, plus the
store's vector dimension); a bad record is refused with its number and
reason, the others are imported.  Nodes are written in batches of
``limits.import_batch`` records, one transaction each, then the edges (which
need the nodes) in batches of the same size.  Records already stored exactly
as in the file are skipped, and a RELATED edge is written only for the
weight it lacks (the store adds RELATED weights up), so importing one's own
export changes nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from pydantic import BaseModel, ValidationError

from extractors.normalize import entity_key
from graphstore.jsonl import to_json
from graphstore.records import (
    EDGE_MENTIONS,
    EDGE_RELATED,
    EdgeRecord,
    EntityRecord,
    StoredMemory,
    WriteBatch,
)
from graphstore.requests import EntityNames, Expand, GetEntities, GetMemories, RelatedEdges, Write

from . import _validate as check
from ._ingest import SELF_KEY, entity_id
from ._requests import Op, VectorDim
from .errors import InvalidInput
from .limits import Limits
from .models import REFUSALS_SHOWN, ExportedEdge, ExportedEntity, ExportedMemory, ImportReport

__all__ = ["import_plan", "rekey_memory_id"]

_KINDS = ("memories", "entities", "edges")
_MODELS: dict[str, type[BaseModel]] = {"memory": ExportedMemory, "entity": ExportedEntity, "edge": ExportedEdge}
_RIPPLE_ID = re.compile(r"m_[0-9a-f]{16}[0-9a-f]{8}")
# (edge type) -> (source kind, target kind): what each of ripple's edge types joins
_ENDS = {EDGE_MENTIONS: ("memory", "entity"), EDGE_RELATED: ("entity", "entity")}
_WEIGHT_EPS = 1e-9


def rekey_memory_id(user_id: str, source_user: str, memory_id: str) -> str:
    """The id a memory of ``source_user`` gets when imported as ``user_id``'s (deterministic).

    A ripple id (``m_`` + 16 hex digits of time and sequence + 8 random) keeps
    its time part, so the re-keyed turns keep their order; others get 24 hex
    digits of the hash.
    """
    digest = hashlib.sha1(f"{user_id}\x1f{source_user}\x1f{memory_id}".encode("utf-8")).hexdigest()
    if _RIPPLE_ID.fullmatch(memory_id):
        return f"{memory_id[:18]}{digest[:8]}"
    return f"m_{digest[:24]}"


class _Refused(Exception):
    """One record refused, with its reason (caught per record, never raised out of the plan)."""


@dataclass
class _State:
    """What an import has learned so far (and the report it builds)."""

    user_id: str
    limits: Limits
    imported: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_KINDS, 0))
    skipped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_KINDS, 0))
    refusals: list[tuple[int, str]] = field(default_factory=list)  # (record number, line)
    refused: int = 0
    rekeyed: int = 0
    batches: int = 0
    dim: int | None = None
    # (source user, file entity id) -> the importing user's entity id it became
    entities: dict[tuple[str, str], str] = field(default_factory=dict)

    def refuse(self, n: int, what: str, reason: str) -> None:
        self.refused += 1
        if len(self.refusals) < REFUSALS_SHOWN:
            self.refusals.append((n, f"record {n}: {what}: {reason}" if what else f"record {n}: {reason}"))

    def report(self) -> ImportReport:
        return ImportReport(user_id=self.user_id, imported=self.imported, skipped=self.skipped, refused=self.refused,
                            refusals=tuple(line for _, line in sorted(self.refusals)), rekeyed=self.rekeyed,
                            batches=self.batches)


def _parse(raw: Any) -> Mapping[str, Any]:
    """A record as a mapping: a dict, or one JSON line (str or UTF-8 bytes) holding an object."""
    try:
        return check.json_record(raw)
    except InvalidInput as exc:
        raise _Refused(str(exc)) from None


def _validated(obj: Mapping[str, Any], state: _State) -> BaseModel:
    kind = obj.get("type")
    model = _MODELS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise _Refused(f"unknown record type {str(kind)[:60]!r} (memory, entity or edge)")
    try:
        return model.model_validate(dict(obj), context={"limits": state.limits, "dim": state.dim})
    except ValidationError as exc:
        raise _Refused(str(check.from_validation(exc))) from None


def _needs_dim(obj: Mapping[str, Any]) -> bool:
    return obj.get("embedding") is not None or obj.get("token_vectors") is not None


def import_plan(records: Iterable[Any], user_id: str, limits: Limits) -> Op[ImportReport]:
    """Validate and write ``records`` as ``user_id``'s (see the module docstring); returns the report."""
    check.user(user_id, limits)
    if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, Iterable):
        raise InvalidInput(f"records must be an iterable of exported records, not {type(records).__name__}")
    state = _State(user_id, limits)
    nodes: list[tuple[int, ExportedMemory | ExportedEntity]] = []
    edges: list[tuple[int, ExportedEdge]] = []
    for n, raw in enumerate(records, start=1):
        if isinstance(raw, (str, bytes)) and not raw.strip():
            continue  # a blank line
        try:
            obj = _parse(raw)
            if state.dim is None and _needs_dim(obj):
                state.dim = yield VectorDim()
            rec = _validated(obj, state)
        except _Refused as why:
            state.refuse(n, "", str(why))
            continue
        if isinstance(rec, ExportedEdge):
            edges.append((n, rec))
        elif isinstance(rec, (ExportedMemory, ExportedEntity)):
            nodes.append((n, rec))
        if len(nodes) >= limits.import_batch:
            yield from _write_nodes(nodes, state)
            nodes = []
    if nodes:
        yield from _write_nodes(nodes, state)
    for start in range(0, len(edges), limits.import_batch):
        yield from _write_edges(edges[start : start + limits.import_batch], state)
    return state.report()


# -------------------------------------------------------------------------------------------- nodes


def _memory_id(rec: ExportedMemory, state: _State) -> str:
    if rec.user_id == state.user_id:
        return rec.id
    return rekey_memory_id(state.user_id, rec.user_id, rec.id)


def _stored_memory(rec: ExportedMemory, mid: str, user_id: str) -> StoredMemory:
    return StoredMemory(
        id=mid, user_id=user_id, text=rec.text, at=rec.at, created_at=rec.created_at, agent_id=rec.agent_id,
        session_id=rec.session_id, kind=rec.kind, importance=rec.importance, status=rec.status,
        access_count=rec.access_count, last_access=rec.last_access,
        metadata_json=json.dumps(rec.metadata, ensure_ascii=False), language=rec.language,
        confidence=rec.confidence, mentions=rec.mentions, last_seen=rec.last_seen, valid_to=rec.valid_to,
        pinned=rec.pinned, terms=rec.terms, embedding=rec.embedding, token_vectors=rec.token_vectors,
        multilingual=rec.multilingual,
    )


def _write_nodes(nodes: Sequence[tuple[int, ExportedMemory | ExportedEntity]], state: _State) -> Op[None]:
    """One transaction of memories and entities: ids decided, other users' rows refused, unchanged skipped."""
    user = state.user_id
    batch = WriteBatch()
    mems = [(n, r, _memory_id(r, state)) for n, r in nodes if isinstance(r, ExportedMemory)]
    ents = [(n, r) for n, r in nodes if isinstance(r, ExportedEntity)]
    stored = {m.id: m for m in (yield GetMemories([mid for _, _, mid in mems], with_vectors=True))} if mems else {}
    for n, rec, mid in mems:
        have = stored.get(mid)
        if have is not None and have.user_id != user:
            state.refuse(n, f"memory {rec.id}", "this id belongs to another user; nothing of theirs is written")
            continue
        new = _stored_memory(rec, mid, user)
        state.rekeyed += rec.user_id != user
        if have is not None and to_json(have) == to_json(new):
            state.skipped["memories"] += 1
            continue
        batch.memories.append(new)
        stored[mid] = new
        state.imported["memories"] += 1
    if ents:
        keys = sorted({r.key for _, r in ents})
        by_key = {e.key: e for e in (yield GetEntities(user, keys)) if e.user_id == user}
        for n, ent in ents:
            known = by_key.get(ent.key)
            eid = known.id if known is not None else entity_id(user, ent.key)
            state.entities[(ent.user_id, ent.id)] = eid
            state.rekeyed += ent.user_id != user
            if known is not None and set(ent.aliases) <= set(known.aliases) | {known.key}:
                state.skipped["entities"] += 1
                continue
            batch.entities.append(EntityRecord(id=eid, user_id=user, name=ent.name, key=ent.key, label=ent.label,
                                               aliases=ent.aliases, embedding=ent.embedding))
            merged = tuple(dict.fromkeys((*(known.aliases if known else ()), *ent.aliases)))
            by_key[ent.key] = EntityRecord(eid, user, ent.name, ent.key, ent.label, merged)
            state.imported["entities"] += 1
    if batch:
        yield Write(batch)
        state.batches += 1


# -------------------------------------------------------------------------------------------- edges


@dataclass
class _Ends:
    """Which of a batch's edge ends are the importing user's, by kind."""

    memories: set[str]
    entities: set[str]


def _end_id(node: str, kind: str, source_user: str, state: _State) -> str:
    """The importing user's id for an edge end as the file names it."""
    if kind == "entity":
        return state.entities.get((source_user, node), node if source_user == state.user_id else "")
    return node if source_user == state.user_id else rekey_memory_id(state.user_id, source_user, node)


def _owned(edges: Sequence[tuple[int, ExportedEdge]], state: _State) -> Op[_Ends]:
    """The user's own nodes among the edges' ends (mapped ids), found in the store."""
    user = state.user_id
    want_m: set[str] = set()
    want_e: set[str] = set()
    for _, e in edges:
        src_kind, dst_kind = _ENDS.get(e.edge, ("memory", "memory"))
        for node, kind in ((e.src, src_kind), (e.dst, dst_kind)):
            (want_e if kind == "entity" else want_m).add(_end_id(node, kind, e.user_id, state))
        if e.evidence is not None:
            want_m.add(_end_id(e.evidence, "memory", e.user_id, state))
    want_m.discard("")
    want_e.discard("")
    memories = {m.id for m in (yield GetMemories(sorted(want_m))) if m.user_id == user} if want_m else set()
    entities = want_e & set(state.entities.values())
    unknown = sorted(want_e - entities)
    if unknown:
        # Entities of the user's that this file did not carry: the store has no lookup of an entity by id
        # and user, so ask by id for its name, then by the user's key for it (ids of another user's
        # entities never come back from the user-scoped lookup).
        names = yield EntityNames(unknown)
        keys = sorted({entity_key(name) for name in names.values()} | {SELF_KEY})
        mine = yield GetEntities(user, keys)
        entities.update(e.id for e in mine if e.user_id == user and e.id in names)
    return _Ends(memories, entities)


def _write_edges(edges: Sequence[tuple[int, ExportedEdge]], state: _State) -> Op[None]:
    """One transaction of edges between the user's nodes; dangling ones refused, known ones skipped."""
    user = state.user_id
    ends = yield from _owned(edges, state)
    wanted: dict[tuple[str, str, str, str], tuple[int, EdgeRecord]] = {}  # the last line of an edge wins
    for n, e in edges:
        src_kind, dst_kind = _ENDS.get(e.edge, ("memory", "memory"))
        src, dst = _end_id(e.src, src_kind, e.user_id, state), _end_id(e.dst, dst_kind, e.user_id, state)
        evidence = None if e.evidence is None else _end_id(e.evidence, "memory", e.user_id, state)
        problem = (
            _dangling("source", e.src, src, src_kind, ends) or _dangling("target", e.dst, dst, dst_kind, ends)
            or (_dangling("evidence", e.evidence, evidence, "memory", ends) if e.evidence is not None else "")
        )
        if problem:
            state.refuse(n, f"{e.edge} edge {e.src} -> {e.dst}", problem)
            continue
        state.rekeyed += e.user_id != user
        rec = EdgeRecord(src, e.edge, dst, user, e.weight, e.predicate, evidence, e.at)
        wanted[(src, e.edge, dst, e.predicate)] = (n, rec)
    existing = yield from _existing_weights([rec for _, rec in wanted.values()], user)
    batch = WriteBatch()
    for key, (_, rec) in wanted.items():
        have = existing.get(key)
        if rec.type == EDGE_RELATED:  # the store adds RELATED weights up: write only what is missing
            missing = rec.weight - (have or 0.0)
            if have is not None and missing <= _WEIGHT_EPS:
                state.skipped["edges"] += 1
                continue
            batch.edges.append(EdgeRecord(rec.src, rec.type, rec.dst, user, missing, rec.predicate, rec.evidence,
                                          rec.at))
        elif have is not None and abs(have - rec.weight) <= _WEIGHT_EPS:
            state.skipped["edges"] += 1
            continue
        else:
            batch.edges.append(rec)
        state.imported["edges"] += 1
    if batch:
        yield Write(batch)
        state.batches += 1


def _dangling(end: str, named: str | None, mapped: str | None, kind: str, ends: _Ends) -> str:
    """Why an edge end is not one of the user's nodes of ``kind`` ("" when it is)."""
    if mapped and mapped in (ends.entities if kind == "entity" else ends.memories):
        return ""
    return f"its {end} {named} is not a {kind} of this user (in the file or the store): a dangling edge"


def _existing_weights(edges: Sequence[EdgeRecord], user: str) -> Op[dict[tuple[str, str, str, str], float]]:
    """The stored weight of each edge that exists already, by (src, type, dst, predicate)."""
    out: dict[tuple[str, str, str, str], float] = {}
    related = [e for e in edges if e.type == EDGE_RELATED]
    if related:
        rows = yield RelatedEdges(user, sorted({e.src for e in related}), sorted({e.predicate for e in related}))
        out.update(((r.src, r.type, r.dst, r.predicate), r.weight) for r in rows)
    others = [e for e in edges if e.type != EDGE_RELATED]
    if others:
        rows = yield Expand(user, sorted({e.src for e in others}), sorted({e.type for e in others}))
        out.update(((r.source, r.type, r.target, r.predicate), r.weight) for r in rows if r.type != EDGE_RELATED)
    return out
