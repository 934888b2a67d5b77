"""JSONL export and import of a user's graph, the same for every backend.

One JSON object per line, ``{"type": "memory" | "entity" | "edge", ...}``,
keeping ids, times and provenance (edge evidence), so that a graph can move
between the embedded store and Neo4j and back.  Vectors are base64 so that an
import needs no model.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Iterable, Iterator, Mapping

from .records import EdgeRecord, EntityRecord, StoredMemory, WriteBatch

__all__ = ["to_json", "from_json", "records_from_lines", "batches_from_records", "batches_from_lines"]


def _b64(blob: bytes | None) -> str | None:
    return None if blob is None else base64.b64encode(blob).decode("ascii")


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def to_json(rec: StoredMemory | EntityRecord | EdgeRecord) -> dict[str, Any]:
    """A record as a JSON-ready dict."""
    if isinstance(rec, StoredMemory):
        return {
            "type": "memory", "id": rec.id, "user_id": rec.user_id, "agent_id": rec.agent_id,
            "session_id": rec.session_id, "text": rec.text, "at": rec.at, "created_at": rec.created_at,
            "kind": rec.kind, "importance": rec.importance, "status": rec.status,
            "access_count": rec.access_count, "last_access": rec.last_access,
            "metadata": json.loads(rec.metadata_json), "language": rec.language, "confidence": rec.confidence,
            "mentions": rec.mentions, "last_seen": rec.last_seen, "valid_to": rec.valid_to, "pinned": rec.pinned,
            "terms": list(rec.terms),
            "embedding": _b64(rec.embedding), "token_vectors": _b64(rec.token_vectors),
            "multilingual": _b64(rec.multilingual),
        }
    if isinstance(rec, EntityRecord):
        return {
            "type": "entity", "id": rec.id, "user_id": rec.user_id, "name": rec.name, "key": rec.key,
            "label": rec.label, "aliases": list(rec.aliases), "embedding": _b64(rec.embedding),
        }
    return {
        "type": "edge", "src": rec.src, "edge": rec.type, "dst": rec.dst, "user_id": rec.user_id,
        "weight": rec.weight, "predicate": rec.predicate, "evidence": rec.evidence, "at": rec.at,
    }


def from_json(obj: dict[str, Any]) -> StoredMemory | EntityRecord | EdgeRecord:
    """Inverse of :func:`to_json`; raises ``ValueError`` on an unknown type."""
    kind = obj.get("type")
    if kind == "memory":
        return StoredMemory(
            id=obj["id"], user_id=obj["user_id"], text=obj["text"], at=float(obj["at"]),
            created_at=float(obj["created_at"]), agent_id=obj.get("agent_id"), session_id=obj.get("session_id"),
            kind=obj.get("kind", "message"), importance=float(obj.get("importance", 0.5)),
            status=obj.get("status", "active"), access_count=int(obj.get("access_count", 0)),
            last_access=obj.get("last_access"), metadata_json=json.dumps(obj.get("metadata", {}), ensure_ascii=False),
            language=obj.get("language", "en"), confidence=float(obj.get("confidence", 1.0)),
            mentions=int(obj.get("mentions", 1)), last_seen=obj.get("last_seen"), valid_to=obj.get("valid_to"),
            pinned=bool(obj.get("pinned", False)), terms=tuple(obj.get("terms", ())),
            embedding=_unb64(obj.get("embedding")), token_vectors=_unb64(obj.get("token_vectors")),
            multilingual=_unb64(obj.get("multilingual")),
        )
    if kind == "entity":
        return EntityRecord(
            id=obj["id"], user_id=obj["user_id"], name=obj["name"], key=obj["key"], label=obj["label"],
            aliases=tuple(obj.get("aliases", ())), embedding=_unb64(obj.get("embedding")),
        )
    if kind == "edge":
        return EdgeRecord(
            src=obj["src"], type=obj["edge"], dst=obj["dst"], user_id=obj["user_id"], weight=float(obj["weight"]),
            predicate=obj.get("predicate", ""), evidence=obj.get("evidence"), at=obj.get("at"),
        )
    raise ValueError(f"unknown record type {kind!r}")


def records_from_lines(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The JSON objects of JSONL lines (blank lines skipped); ``ValueError`` names the bad line."""
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"line {n}: {exc}") from exc
        if not isinstance(obj, dict):
            raise ValueError(f"line {n}: a record must be a JSON object, not {type(obj).__name__}")
        yield obj


def batches_from_records(records: Iterable[Mapping[str, Any]], *, size: int = 1000) -> Iterator[WriteBatch]:
    """Exported records as write batches (nodes first, then the edges that need them)."""
    nodes = WriteBatch()
    edges: list[EdgeRecord] = []
    for n, obj in enumerate(records, start=1):
        try:
            rec = from_json(dict(obj))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"record {n}: {exc}") from exc
        if isinstance(rec, StoredMemory):
            nodes.memories.append(rec)
        elif isinstance(rec, EntityRecord):
            nodes.entities.append(rec)
        else:
            edges.append(rec)
        if len(nodes.memories) + len(nodes.entities) >= size:
            yield nodes
            nodes = WriteBatch()
    if nodes:
        yield nodes
    for i in range(0, len(edges), size):
        yield WriteBatch(edges=edges[i : i + size])


def batches_from_lines(lines: Iterable[str], *, size: int = 1000) -> Iterator[WriteBatch]:
    """Parse JSONL lines into write batches (nodes before the edges that need them)."""
    return batches_from_records(records_from_lines(lines), size=size)
