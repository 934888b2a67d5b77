"""The write path as an I/O-free generator: extraction results in, one atomic batch out.

The CPU-heavy part (extraction, embeddings) runs first, in :func:`prepare`;
:func:`ingest_plan` then resolves entities against the store, links turns of
a session with NEXT edges, and yields a final ``write`` call carrying the
whole batch, so a batch is stored completely or not at all.  Like the recall
pipeline it yields requests (:mod:`ripple._requests`), so the sync
and async APIs share it.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections import Counter, defaultdict
from datetime import datetime, timezone
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Generator, Sequence

from extractors.base import Extraction
from extractors.labels import NAMED_LABELS
from extractors.timeexpr import resolve_times
from extractors.normalize import entity_key
from extractors.text import STOPWORDS_EN, lexical_tokens
from graphstore.protocol import ACTIVE
from graphstore.requests import GetEntities, NearestEntitiesBatch, SessionTails, Write
from graphstore.records import (
    EDGE_MENTIONS,
    EDGE_NEXT,
    EDGE_RELATED,
    EdgeRecord,
    EntityRecord,
    StoredMemory,
    WriteBatch,
)

from ._lifecycle import Decisions, LifecycleConfig, lifecycle_plan
from .embedding import pack_tokens
from .models import AddItem
from ._requests import Embed, Op

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Prepared", "ingest_plan", "cap_entities", "entity_id", "new_memory_id", "SELF_KEY", "DERIVED_KINDS"]

SELF_KEY = "@self"  # the user's own entity: first-person facts hang off it
#: Kinds of memory an agent derives from others (a session summary, a recorded procedure): they are
#: stored, indexed and recallable, but they state nothing new, so the lifecycle leaves them alone
#: (no retraction, correction, superseded or profile fact is read from them, and no repeat merges them).
DERIVED_KINDS = frozenset({"summary", "procedure"})
_KIND_IMPORTANCE = {"personal_info": 0.7, "preference": 0.7, "decision": 0.7, "todo": 0.6, "fact": 0.6}
_MAX_COMENTION = 8
ENTITY_MATCH_THRESHOLD = 0.92


def entity_id(user_id: str, key: str) -> str:
    """Deterministic id of a user's entity: concurrent writers converge on one node."""
    return "e_" + hashlib.sha1(f"{user_id}\x1f{key}".encode("utf-8")).hexdigest()[:20]


_GENERIC_NAME_WORDS = frozenset(
    "project team company group inc ltd llc corp co club school university college hotel street road "
    "city state park bank office the and of mr mrs ms dr".split()
)


def _name_tokens(key: str) -> tuple[str, ...]:
    """Distinctive words of a multi-word name: the ones a shorter mention may use alone."""
    if " " not in key:
        return ()
    return tuple(t for t in key.split() if len(t) >= 3 and t not in _GENERIC_NAME_WORDS and t not in STOPWORDS_EN)


def _alias_update(user: str, eid: str, key: str, name_label: tuple[str, str]) -> EntityRecord:
    """An upsert that only adds ``key`` as an alias of an existing entity."""
    name, label = name_label
    return EntityRecord(id=eid, user_id=user, name=name, key=key, label=label, aliases=(key,))


def _mentioned(ex: Extraction, resolved: dict[str, str], also: dict[str, list[str]]) -> set[str]:
    """The entity ids a memory of this extraction gets MENTIONS edges to: its entities, the one-word
    names inside its multi-word ones, and its facts' values."""
    out = {eid for e in ex.entities for eid in (resolved[e.key], *also.get(e.key, ()))}
    out.update(resolved[entity_key(f.value)] for f in ex.facts if entity_key(f.value) in resolved)
    return out


_ID_LOCK = threading.Lock()
_ID_CLOCK = [0, 0]  # last millisecond used, sequence number within it


def new_memory_id() -> str:
    """Time-ordered id: sorts by creation, strictly within a process, unique across processes.

    The sequence number matters: a batch creates hundreds of ids in one millisecond, and a
    session's turns often share one event time, so the id is what decides which turn is the
    session's last one (where the next batch continues the NEXT chain).  With a random suffix
    alone that choice was random, and so was the graph.
    """
    with _ID_LOCK:
        ms = time.time_ns() // 1_000_000
        if ms <= _ID_CLOCK[0]:
            ms, _ID_CLOCK[1] = _ID_CLOCK[0], _ID_CLOCK[1] + 1
            if _ID_CLOCK[1] > 0xFFFF:  # (65,536 ids in one millisecond: borrow the next one)
                ms, _ID_CLOCK[0], _ID_CLOCK[1] = ms + 1, ms + 1, 0
        else:
            _ID_CLOCK[0], _ID_CLOCK[1] = ms, 0
        seq = _ID_CLOCK[1]
    return f"m_{ms:012x}{seq:04x}{os.urandom(4).hex()}"


@dataclass(slots=True)
class Prepared:
    """One item after the CPU stage: validated input, extraction, vectors.

    ``capped``: what :func:`cap_entities` dropped (recorded in the memory's
    ``metadata["ripple"]``), or None."""

    item: AddItem
    extraction: Extraction
    at: float
    vector: "np.ndarray"
    tokens: "np.ndarray"
    capped: dict[str, Any] | None = None
    multilingual: "np.ndarray | None" = None  # the multilingual route's vector (CJK texts only)


def cap_entities(ex: Extraction, limit: int) -> tuple[Extraction, dict[str, Any] | None]:
    """At most ``limit`` distinct entity keys from one extraction, and a note of the cap (None: under it).

    Every key a memory would add counts (its entities, the two ends of its
    triples, its facts' values and named subjects).  Kept first: the keys of
    facts (they carry the profile and supersede old values), then named
    entities, then the rest, each by how often the text mentions them and then
    by first mention; triples and facts with a dropped end are dropped too.
    Why: a 100,000-character text gave 3,932 entities, and resolving them
    against each other is quadratic (minutes for one write).
    """
    count: Counter[str] = Counter(e.key for e in ex.entities)
    fact_keys = {k for f in ex.facts for k in (entity_key(f.value), _fact_subject(f.subject)) if k}
    triple_keys = {k for t in ex.triples for k in (t.subject, t.object)}
    named = {e.key for e in ex.entities if e.label in NAMED_LABELS}
    order = list(dict.fromkeys([*(e.key for e in ex.entities), *sorted(triple_keys), *sorted(fact_keys)]))
    if len(order) <= limit:
        return ex, None
    first = {k: i for i, k in enumerate(order)}
    ranked = sorted(order, key=lambda k: (k not in fact_keys, k not in named, -count[k], first[k]))
    keep = set(ranked[:limit])
    capped = replace(
        ex,
        entities=tuple(e for e in ex.entities if e.key in keep),
        triples=tuple(t for t in ex.triples if t.subject in keep and t.object in keep),
        facts=tuple(f for f in ex.facts if all(k in keep for k in (entity_key(f.value), _fact_subject(f.subject)) if k)),
    )
    return capped, {"found": len(order), "kept": limit, "limit": "limits.entities_per_memory"}


def _fact_subject(subject: str) -> str:
    return "" if subject in ("user", "") else entity_key(subject)


def ingest_plan(
    prepared: Sequence[Prepared], *, now: float, replacing: StoredMemory | None = None,
    lifecycle: LifecycleConfig | None = None,
) -> Op[list[StoredMemory]]:
    """Resolve entities, chain sessions, build and write one batch; returns the stored memories.

    With ``replacing`` (one prepared item: an update), the new record keeps that
    memory's id, creation time, counters, status and NEXT links, and its old
    MENTIONS edges are replaced in the same write.  With ``lifecycle``, repeats
    reinforce the memory they repeat (which is returned in their place), and
    retractions, corrections and new fact values update older memories in the
    same write (see :mod:`ripple._lifecycle`).
    """
    batch = WriteBatch()
    out: dict[int, StoredMemory] = {}
    by_user: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(prepared):
        by_user[p.item.user_id].append(i)
    mem_ids = [replacing.id] if replacing is not None else [new_memory_id() for _ in prepared]

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
                if fact.subject not in ("user", "") and entity_key(fact.subject):
                    names.setdefault(entity_key(fact.subject), (fact.subject, "NOUN"))
        named = {k for k, (_, label) in names.items() if label in NAMED_LABELS}
        token_keys = {t for k in named for t in _name_tokens(k)}
        lookup = list(names) + sorted({f"~{k}" for k in named if " " not in k} | token_keys - set(names))
        existing = (yield GetEntities(user, lookup)) if names else []
        resolved: dict[str, str] = {}  # key -> entity id
        by_token: dict[str, set[str]] = defaultdict(set)  # "~tok" -> ids of multi-word names containing it
        single: dict[str, str] = {}  # existing single-word named key -> id
        for e in existing:
            for alias in (e.key, *e.aliases):
                if alias.startswith("~"):
                    by_token[alias].add(e.id)
                else:
                    resolved.setdefault(alias, e.id)
            if e.label in NAMED_LABELS and " " not in e.key:
                single[e.key] = e.id
        # a one-word name ("Bluebird") resolves to the one multi-word name that contains it ("Project Bluebird")
        for key in sorted(named):
            if key not in resolved and " " not in key and len(by_token.get(f"~{key}", ())) == 1:
                (resolved[key],) = by_token[f"~{key}"]
                batch.entities.append(_alias_update(user, resolved[key], key, names[key]))
        new_named = [k for k in names if k not in resolved and k in named]
        name_vectors: dict[str, bytes] = {}
        if new_named:
            vecs = yield Embed([names[k][0] for k in new_named])
            matches = yield NearestEntitiesBatch(user, vecs, 1)
            for key, vec, hits in zip(new_named, vecs, matches):
                if hits and hits[0][1] >= ENTITY_MATCH_THRESHOLD:
                    resolved[key] = hits[0][0]
                    batch.entities.append(_alias_update(user, hits[0][0], key, names[key]))
                else:
                    name_vectors[key] = vec.astype("float32").tobytes()
        # the same inside this batch: a one-word name next to the only multi-word name containing it
        extra_aliases: dict[str, list[str]] = defaultdict(list)
        for key in sorted(named):
            if key in resolved or " " in key:
                continue
            holders = [m for m in named if " " in m and key in _name_tokens(m)]
            if len(holders) == 1:
                resolved[key] = resolved.get(holders[0], entity_id(user, holders[0]))
                extra_aliases[holders[0]].append(key)
        for key, (name, label) in names.items():
            if key not in resolved:
                eid = entity_id(user, key)
                resolved[key] = eid
                aliases = tuple(f"~{t}" for t in _name_tokens(key)) if key in named else ()
                aliases += tuple(extra_aliases.get(key, ()))
                batch.entities.append(
                    EntityRecord(id=eid, user_id=user, name=name, key=key, label=label, aliases=aliases,
                                 embedding=name_vectors.get(key))
                )
                if key in named and " " not in key:
                    single.setdefault(key, eid)
        # a multi-word name also mentions the one-word entity it contains ("Northwind Traders" -> "Northwind")
        also: dict[str, list[str]] = {
            key: [single[t] for t in _name_tokens(key) if t in single and single[t] != resolved[key]]
            for key in named if " " in key
        }

        self_id = entity_id(user, SELF_KEY)
        if any(f.subject in ("user", "") for i in idxs for f in prepared[i].extraction.facts):
            batch.entities.append(EntityRecord(id=self_id, user_id=user, name="(user)", key=SELF_KEY, label="SELF"))

        # ---- lifecycle: repeats, retractions, corrections, superseded facts
        planned = {i: _mentioned(prepared[i].extraction, resolved, also) for i in idxs}
        life = Decisions()
        if lifecycle is not None and replacing is None:
            stated = [i for i in idxs if prepared[i].item.kind not in DERIVED_KINDS]
            life = yield from lifecycle_plan(user, stated, prepared, mem_ids, resolved, self_id, lifecycle, planned)
        live = [i for i in idxs if i not in life.duplicate_of]

        # ---- NEXT chains per session, in event-time order (stable for equal times)
        sessions: dict[str, list[int]] = defaultdict(list)
        for i in live:
            sid = prepared[i].item.session_id
            if sid is not None:
                sessions[sid].append(i)
        tails = (yield SessionTails(user, list(sessions))) if sessions and replacing is None else {}
        for sid, members in (sessions.items() if replacing is None else ()):
            members.sort(key=lambda i: (prepared[i].at, i))
            prev = tails.get(sid)
            for i in members:
                if prev is not None:
                    batch.edges.append(EdgeRecord(prev, EDGE_NEXT, mem_ids[i], user, 1.0, at=prepared[i].at))
                prev = mem_ids[i]

        # ---- memories, MENTIONS, RELATED
        for i in live:
            p = prepared[i]
            ex = p.extraction
            mid = mem_ids[i]
            kind = p.item.kind or life.kind.get(i) or ex.kind
            importance = p.item.importance if "importance" in p.item.model_fields_set else _KIND_IMPORTANCE.get(kind, 0.5)
            notes = dict(life.notes.get(i, {}))
            if p.capped:
                notes["entities_capped"] = p.capped
            times = resolve_times(p.item.text, datetime.fromtimestamp(p.at, tz=timezone.utc))
            if times:  # relative times read against the memory's own event time (see extractors.timeexpr)
                notes["times"] = [[a.isoformat(), b.isoformat()] for a, b in times]
            metadata = {**p.item.metadata, "ripple": notes} if notes else p.item.metadata
            rec = StoredMemory(
                id=mid, user_id=user, text=p.item.text, at=p.at, created_at=now, agent_id=p.item.agent_id,
                session_id=p.item.session_id, kind=kind, importance=importance,
                metadata_json=json.dumps(metadata, ensure_ascii=False, sort_keys=False),
                language=ex.language, terms=tuple(lexical_tokens(p.item.text)) + life.extra_terms.get(i, ()),
                embedding=p.vector.astype("float32").tobytes(), token_vectors=pack_tokens(p.tokens),
                multilingual=None if p.multilingual is None else p.multilingual.astype("float32").tobytes(),
                status=life.status.get(i, ACTIVE), valid_to=life.valid_to.get(i),
                confidence=life.confidence.get(i, float(getattr(ex, "confidence", 1.0))),
            )
            if replacing is not None:
                rec = replace(rec, created_at=replacing.created_at, access_count=replacing.access_count,
                              last_access=replacing.last_access, status=replacing.status, mentions=replacing.mentions,
                              last_seen=replacing.last_seen, valid_to=replacing.valid_to, pinned=replacing.pinned)
            out[i] = rec
            batch.memories.append(rec)
            for eid in sorted(planned[i].union(life.extra_mentions.get(i, ()))):
                batch.edges.append(EdgeRecord(mid, EDGE_MENTIONS, eid, user, 1.0, at=p.at))
            co = list(dict.fromkeys(resolved[e.key] for e in ex.entities if e.label in NAMED_LABELS))[:_MAX_COMENTION]
            for a in range(len(co)):
                for b in range(a + 1, len(co)):
                    lo, hi = sorted((co[a], co[b]))
                    batch.edges.append(EdgeRecord(lo, EDGE_RELATED, hi, user, 0.5, predicate="co_mention", evidence=mid, at=p.at))
            for tr in ex.triples:
                src, dst = resolved.get(tr.subject), resolved.get(tr.object)
                if src and dst and src != dst:
                    batch.edges.append(EdgeRecord(src, EDGE_RELATED, dst, user, tr.weight, predicate=tr.predicate, evidence=mid, at=p.at))
            for n, fact in enumerate(ex.facts):
                value = resolved.get(entity_key(fact.value))  # (the memory mentions it: see _mentioned)
                if not value:
                    continue
                subject = self_id if fact.subject in ("user", "") else resolved.get(entity_key(fact.subject))
                if subject and subject != value and (lifecycle is None or (i, n) in life.profile_facts):
                    batch.edges.append(EdgeRecord(subject, EDGE_RELATED, value, user, 1.0, predicate=fact.attribute,
                                                  evidence=mid, at=p.at))
        batch.memories.extend(life.rewrites.values())
        batch.edges.extend(life.edges)
        for i, target in life.duplicate_of.items():
            out[i] = life.rewrites.get(target) or out[mem_ids.index(target)]
    yield Write(batch, [replacing.id] if replacing is not None else [])
    return [out[i] for i in range(len(prepared)) if i in out]
