"""The write path as an I/O-free generator: extraction results in, one atomic batch out.

The CPU-heavy part (extraction, embeddings) runs first, in :func:`prepare`;
:func:`ingest_plan` then resolves entities against the store, links turns of
a session with NEXT edges, and yields a final ``write`` call carrying the
whole batch, so a batch is stored completely or not at all.  Like the recall
pipeline it yields :class:`~ripple.recall.pipeline.Call` requests, so the sync
and async APIs share it.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generator, Sequence

from extractors.base import Extraction
from extractors.normalize import entity_key
from extractors.text import lexical_tokens
from graphstore.records import (
    EDGE_MENTIONS,
    EDGE_NEXT,
    EDGE_RELATED,
    EdgeRecord,
    EntityRecord,
    MemoryRecord,
    WriteBatch,
)

from .embedding import pack_tokens
from .models import AddItem
from .recall.pipeline import Call

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Prepared", "ingest_plan", "entity_id", "new_memory_id", "SELF_KEY", "NAMED_LABELS"]

SELF_KEY = "@self"  # the user's own entity: first-person facts hang off it
NAMED_LABELS = frozenset({"PERSON", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK", "WORK_OF_ART", "FAC", "NORP",
                          "LANGUAGE", "LAW", "PROPN", "MISC"})
_KIND_IMPORTANCE = {"personal_info": 0.7, "preference": 0.7, "decision": 0.7, "todo": 0.6, "fact": 0.6}
_MAX_COMENTION = 8
ENTITY_MATCH_THRESHOLD = 0.92


def entity_id(user_id: str, key: str) -> str:
    """Deterministic id of a user's entity: concurrent writers converge on one node."""
    return "e_" + hashlib.sha1(f"{user_id}\x1f{key}".encode("utf-8")).hexdigest()[:20]


def new_memory_id() -> str:
    """Time-ordered random id (sorts by creation, unique across processes)."""
    return f"m_{time.time_ns() // 1_000_000:012x}{os.urandom(6).hex()}"


@dataclass(slots=True)
class Prepared:
    """One item after the CPU stage: validated input, extraction, vectors."""

    item: AddItem
    extraction: Extraction
    at: float
    vector: "np.ndarray"
    tokens: "np.ndarray"


def ingest_plan(prepared: Sequence[Prepared], *, now: float) -> Generator[Call, Any, list[MemoryRecord]]:
    """Resolve entities, chain sessions, build and write one batch; returns the stored memories."""
    batch = WriteBatch()
    memories: list[MemoryRecord] = []
    by_user: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(prepared):
        by_user[p.item.user_id].append(i)
    mem_ids = [new_memory_id() for _ in prepared]

    for user, idxs in by_user.items():
        # ---- entities: exact key or alias, then embedding match for new named ones
        names: dict[str, tuple[str, str]] = {}  # key -> (surface name, label)
        for i in idxs:
            for ent in prepared[i].extraction.entities:
                names.setdefault(ent.key, (ent.name, ent.label))
            for tr in prepared[i].extraction.triples:
                names.setdefault(tr.subject, (tr.subject, "NOUN"))
                names.setdefault(tr.object, (tr.object, "NOUN"))
            for fact in prepared[i].extraction.facts:
                if entity_key(fact.value):
                    names.setdefault(entity_key(fact.value), (fact.value, "VALUE"))
        existing = (yield Call("get_entities", (user, list(names)))) if names else []
        resolved: dict[str, str] = {}  # key -> entity id
        for e in existing:
            for alias in (e.key, *e.aliases):
                resolved.setdefault(alias, e.id)
        new_named = [k for k in names if k not in resolved and names[k][1] in NAMED_LABELS]
        name_vectors: dict[str, bytes] = {}
        if new_named:
            vecs = yield Call("embed", ([names[k][0] for k in new_named],), local=True)
            for key, vec in zip(new_named, vecs):
                hits = yield Call("nearest_entities", (user, vec, 1))
                if hits and hits[0][1] >= ENTITY_MATCH_THRESHOLD:
                    resolved[key] = hits[0][0]
                    batch.entities.append(
                        EntityRecord(id=hits[0][0], user_id=user, name=names[key][0], key=key, label=names[key][1],
                                     aliases=(key,))
                    )
                else:
                    name_vectors[key] = vec.astype("float32").tobytes()
        for key, (name, label) in names.items():
            if key not in resolved:
                eid = entity_id(user, key)
                resolved[key] = eid
                batch.entities.append(
                    EntityRecord(id=eid, user_id=user, name=name, key=key, label=label, embedding=name_vectors.get(key))
                )
        self_id = entity_id(user, SELF_KEY)
        if any(prepared[i].extraction.facts for i in idxs):
            batch.entities.append(EntityRecord(id=self_id, user_id=user, name="(user)", key=SELF_KEY, label="SELF"))

        # ---- NEXT chains per session, in event-time order (stable for equal times)
        sessions: dict[str, list[int]] = defaultdict(list)
        for i in idxs:
            sid = prepared[i].item.session_id
            if sid is not None:
                sessions[sid].append(i)
        for sid, members in sessions.items():
            members.sort(key=lambda i: (prepared[i].at, i))
            prev = yield Call("last_memory_in_session", (user, sid))
            for i in members:
                if prev is not None:
                    batch.edges.append(EdgeRecord(prev, EDGE_NEXT, mem_ids[i], user, 1.0, at=prepared[i].at))
                prev = mem_ids[i]

        # ---- memories, MENTIONS, RELATED
        for i in idxs:
            p = prepared[i]
            ex = p.extraction
            mid = mem_ids[i]
            kind = p.item.kind or ex.kind
            importance = p.item.importance if "importance" in p.item.model_fields_set else _KIND_IMPORTANCE.get(kind, 0.5)
            rec = MemoryRecord(
                id=mid, user_id=user, text=p.item.text, at=p.at, created_at=now, agent_id=p.item.agent_id,
                session_id=p.item.session_id, kind=kind, importance=importance,
                metadata_json=json.dumps(p.item.metadata, ensure_ascii=False, sort_keys=False),
                language=ex.language, terms=tuple(lexical_tokens(p.item.text)),
                embedding=p.vector.astype("float32").tobytes(), token_vectors=pack_tokens(p.tokens),
            )
            memories.append(rec)
            batch.memories.append(rec)
            mentioned = list(dict.fromkeys(resolved[e.key] for e in ex.entities))
            for eid in mentioned:
                batch.edges.append(EdgeRecord(mid, EDGE_MENTIONS, eid, user, 1.0, at=p.at))
            named = [resolved[e.key] for e in ex.entities if e.label in NAMED_LABELS]
            named = list(dict.fromkeys(named))[:_MAX_COMENTION]
            for a in range(len(named)):
                for b in range(a + 1, len(named)):
                    s, d = sorted((named[a], named[b]))
                    batch.edges.append(EdgeRecord(s, EDGE_RELATED, d, user, 0.5, predicate="co_mention", evidence=mid, at=p.at))
            for tr in ex.triples:
                s, d = resolved.get(tr.subject), resolved.get(tr.object)
                if s and d and s != d:
                    batch.edges.append(EdgeRecord(s, EDGE_RELATED, d, user, tr.weight, predicate=tr.predicate, evidence=mid, at=p.at))
            for fact in ex.facts:
                d = resolved.get(entity_key(fact.value))
                if d:
                    batch.edges.append(EdgeRecord(self_id, EDGE_RELATED, d, user, 1.0, predicate=fact.attribute, evidence=mid, at=p.at))
                    batch.edges.append(EdgeRecord(mid, EDGE_MENTIONS, d, user, 1.0, at=p.at))
    yield Call("write", (batch,))
    return memories
