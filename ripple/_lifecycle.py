"""Keeping memory true over time, decided on the write path: duplicates, superseded facts, retractions.

An append-only memory goes wrong in three ways that users notice: the same
thing stored five times, an old value ("the budget is 50k") recalled after a
new one ("now 60k"), and something the user took back ("forget that")
coming back.  :func:`lifecycle_plan` decides, for one user's part of an
ingest batch, what to do about each; :func:`ripple._ingest.ingest_plan`
applies the decisions in the same atomic write as the new memories.  Like
the rest of the engine it is an I/O-free generator of store requests, so the
sync and async APIs and every backend share it.

Nothing is overwritten: a superseded memory keeps its text and gets
``valid_to`` and a SUPERSEDES edge from its successor; a retracted one gets
status ``invalidated`` and a RETRACTS edge from the retraction.  Both stay
exportable (and visible in Cypher) until deleted.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generator, Sequence

from pydantic import BaseModel, ConfigDict, Field

from extractors.normalize import entity_key
from extractors.text import lexical_tokens
from graphstore.protocol import ACTIVE, INVALIDATED, SUPERSEDED
from graphstore.records import EDGE_MENTIONS, EDGE_RETRACTS, EDGE_SUPERSEDES, EdgeRecord, MemoryRecord

from graphstore.requests import Expand, GetMemories, LastMemoryInSession, NearestMemories, NearestMemoriesBatch, RelatedEdges

from ._requests import Embed, Op

if TYPE_CHECKING:
    from ._ingest import Prepared

__all__ = ["LifecycleConfig", "Decisions", "lifecycle_plan", "reinforced_confidence"]

#: Attributes a person can have many values of at once: a new value adds, it does not replace.
MULTI_VALUED = frozenset({
    "preference", "dislike", "like", "hobby", "skill", "knows", "language", "friend", "pet", "interest",
    "identity", "visited", "plan", "goal", "allergy", "child", "sibling",
})


class LifecycleConfig(BaseModel):
    """What the write path does to keep memory true (see :mod:`ripple._lifecycle`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dedup: bool = True
    dedup_cosine: float = Field(0.95, gt=0, le=1, description="sentence cosine above which a memory may be a repeat")
    dedup_overlap: float = Field(
        0.7, ge=0, le=1, description="share of words two texts must have in common to count as a repeat"
    )
    supersede: bool = True
    retractions: bool = True
    corrections: bool = True
    multi_valued: frozenset[str] = MULTI_VALUED
    reinforce_step: float = Field(0.2, ge=0, le=1, description="confidence added when something is said again")
    profile_confidence: float = Field(
        0.7, ge=0, le=1, description="facts below this confidence stay in their memory but do not become profile facts"
    )
    retraction_cosine: float = Field(
        0.3, ge=-1, le=1, description="a retraction naming its object invalidates the closest memory above this"
    )


def reinforced_confidence(a: float, b: float, step: float) -> float:
    """Confidence after the same thing was said twice (once at ``a``, once at ``b``)."""
    return min(1.0, max(a, b) + step) if min(a, b) < 1.0 else 1.0


@dataclass(slots=True)
class Decisions:
    """What :func:`lifecycle_plan` decided for one user's items (indices into the batch)."""

    duplicate_of: dict[int, str] = field(default_factory=dict)  # item -> memory id it repeats
    status: dict[int, str] = field(default_factory=dict)  # item -> status other than active
    valid_to: dict[int, float] = field(default_factory=dict)
    confidence: dict[int, float] = field(default_factory=dict)
    kind: dict[int, str] = field(default_factory=dict)
    notes: dict[int, dict[str, Any]] = field(default_factory=dict)  # item -> what it did, kept in metadata
    extra_terms: dict[int, tuple[str, ...]] = field(default_factory=dict)
    extra_mentions: dict[int, list[str]] = field(default_factory=dict)
    rewrites: dict[str, MemoryRecord] = field(default_factory=dict)  # stored memories with new values
    edges: list[EdgeRecord] = field(default_factory=list)
    profile_facts: set[tuple[int, int]] = field(default_factory=set)  # (item, fact index) kept as profile edges


def _fact_subject(fact: Any, resolved: dict[str, str], self_id: str) -> str | None:
    if fact.subject in ("user", "", None):
        return self_id
    return resolved.get(fact.subject) or resolved.get(entity_key(fact.subject))


def _overlap(a: Sequence[str], b: Sequence[str]) -> float:
    sa, sb = set(a), set(b)
    return len(sa & sb) / max(1, len(sa | sb))


def _numbers(terms: Sequence[str]) -> list[str]:
    """The numbers of a text in order: "50k" is not "60k", and "writer 1, item 0" is not "writer 0, item 1"."""
    return [t for t in terms if any(ch.isdigit() for ch in t)]


def lifecycle_plan(
    user: str,
    idxs: Sequence[int],
    prepared: Sequence["Prepared"],
    mem_ids: Sequence[str],
    resolved: dict[str, str],
    self_id: str,
    cfg: LifecycleConfig,
    mentions: dict[int, set[str]],
) -> Op[Decisions]:
    """Decide duplicates, retractions, corrections and superseded facts for one user's new items.

    ``mentions`` are the entity ids each item's memory will have MENTIONS edges to (what a stored
    memory must share with a new one for the new one to be a repeat)."""
    import numpy as np

    d = Decisions()
    order = sorted(idxs, key=lambda i: (prepared[i].at, i))
    terms = {i: lexical_tokens(prepared[i].item.text) for i in idxs}
    stored: dict[str, MemoryRecord] = {}  # stored memories fetched (with vectors) so far

    def fetch(ids: Sequence[str]) -> Op[None]:
        want = [m for m in dict.fromkeys(ids) if m not in stored and m not in d.rewrites]
        if want:
            for rec in (yield GetMemories(want, with_vectors=True)):
                stored[rec.id] = rec

    def current(mid: str) -> MemoryRecord:
        return d.rewrites.get(mid) or stored[mid]

    for i in idxs:
        d.confidence[i] = float(getattr(prepared[i].extraction, "confidence", 1.0))

    # ---- near-duplicates: reinforce the memory already there instead of adding a copy
    if cfg.dedup and order:
        vecs = np.vstack([prepared[i].vector for i in order]).astype(np.float32)
        found = yield NearestMemoriesBatch(user, vecs, 3, (ACTIVE,))
        close = {i: [(m, s) for m, s in hits if s >= cfg.dedup_cosine] for i, hits in zip(order, found)}
        cand_ids = sorted({m for hits in close.values() for m, _ in hits})
        if cand_ids:
            yield from fetch(cand_ids)
            rows = yield Expand(user, cand_ids, [EDGE_MENTIONS])
            cand_mentions: dict[str, set[str]] = {m: set() for m in cand_ids}
            for n in rows:
                if n.source in cand_mentions:
                    cand_mentions[n.source].add(n.target)
        norms = {i: vecs[n] / max(1e-9, float(np.linalg.norm(vecs[n]))) for n, i in enumerate(order)}
        kept: list[int] = []
        for i in order:
            target: str | None = None
            for mid, _ in close.get(i, ()):
                rec = stored.get(mid)
                if rec is None or rec.status != ACTIVE:
                    continue
                if (cand_mentions[mid] == mentions[i] and _numbers(rec.terms) == _numbers(terms[i])
                        and _overlap(rec.terms, terms[i]) >= cfg.dedup_overlap):
                    target = mid
                    break
            if target is None:  # a repeat inside this batch
                for j in kept:
                    if (float(norms[i] @ norms[j]) >= cfg.dedup_cosine and mentions[j] == mentions[i]
                            and _numbers(terms[j]) == _numbers(terms[i]) and _overlap(terms[j], terms[i]) >= cfg.dedup_overlap):
                        target = mem_ids[j]
                        d.confidence[j] = reinforced_confidence(d.confidence[j], d.confidence[i], cfg.reinforce_step)
                        break
            if target is None:
                kept.append(i)
                continue
            d.duplicate_of[i] = target
            if target in stored or target in d.rewrites:
                rec = current(target)
                d.rewrites[target] = replace(
                    rec, mentions=rec.mentions + 1, last_seen=max(prepared[i].at, rec.last_seen or rec.at),
                    confidence=reinforced_confidence(rec.confidence, d.confidence[i], cfg.reinforce_step),
                )
        order = kept

    # ---- retractions ("forget that") and corrections ("no, I meant Tuesday")
    previous: dict[str, int] = {}  # session -> latest new item of this batch so far
    for i in order:
        ex, p = prepared[i].extraction, prepared[i]
        sid = p.item.session_id
        retracts = cfg.retractions and bool(getattr(ex, "retracts", False))
        corrects = cfg.corrections and bool(getattr(ex, "corrects", False)) and not retracts
        if retracts or corrects:
            d.kind[i] = "retraction" if retracts else "correction"
            target, reason = None, "nothing earlier in this session to refer to"
            hint = str(getattr(ex, "retract_hint", "") or "") if retracts else ""
            if hint:
                (hvec,) = yield Embed([hint])
                hvec = np.asarray(hvec, dtype=np.float32)
                options: list[tuple[float, str]] = []
                for mid, score in (yield NearestMemories(user, hvec, 5, (ACTIVE,))):
                    options.append((float(score), mid))
                for j in order:
                    if (prepared[j].at, j) >= (p.at, i) or d.status.get(j):
                        continue  # only what was said before the retraction, and is still standing
                    v = prepared[j].vector
                    options.append((float(v @ hvec / max(1e-9, float(np.linalg.norm(v) * np.linalg.norm(hvec)))),
                                    mem_ids[j]))
                options = [o for o in options if o[1] != mem_ids[i] and o[0] >= cfg.retraction_cosine]
                if options:
                    yield from fetch([m for _, m in options if m not in mem_ids])
                    options = [o for o in options if o[1] in mem_ids or
                               (current(o[1]).kind not in ("retraction", "correction") and current(o[1]).at <= p.at)]
                if options:
                    score, target = max(options, key=lambda o: (o[0], o[1]))
                    reason = f"closest memory to {hint!r} (cosine {score:.2f})"
                else:
                    reason = f"no memory close enough to {hint!r}"
            elif sid is not None:
                if sid in previous:
                    target = mem_ids[previous[sid]]
                else:
                    target = yield LastMemoryInSession(user, sid)
                if target is not None:
                    reason = "the previous message of this session"
            if target is not None:
                yield from _apply_link(d, i, target, retracts, p.at, user, mem_ids, terms, mentions, fetch, current,
                                       stored)
            d.notes[i] = {"retracts" if retracts else "corrects": target, "reason": reason}
        if sid is not None:
            previous[sid] = i

    # ---- facts: a new value of a single-valued attribute supersedes the old one
    new_facts: list[tuple[int, int, str, str, str]] = []  # (item, fact index, subject id, attribute, value id)
    for i in order:
        if d.status.get(i) == INVALIDATED:
            continue
        for n, fact in enumerate(prepared[i].extraction.facts):
            subject, value = _fact_subject(fact, resolved, self_id), resolved.get(entity_key(fact.value))
            confidence = min(d.confidence[i], float(getattr(fact, "confidence", 1.0)))
            if subject is None or value is None or confidence < cfg.profile_confidence:
                continue
            d.profile_facts.add((i, n))
            if cfg.supersede and fact.attribute not in cfg.multi_valued:
                new_facts.append((i, n, subject, fact.attribute, value))
    if new_facts:
        edges = yield RelatedEdges(user, sorted({f[2] for f in new_facts}), sorted({f[3] for f in new_facts}))
        yield from fetch([e.evidence for e in edges if e.evidence])
        holders: dict[tuple[str, str], list[tuple[str, str]]] = {}  # (subject, attribute) -> [(value, memory id)]
        for e in edges:
            if e.evidence and e.evidence in stored and current(e.evidence).status == ACTIVE:
                holders.setdefault((e.src, e.predicate), []).append((e.dst, e.evidence))
        for i, _n, subject, attribute, value in sorted(new_facts, key=lambda f: (prepared[f[0]].at, f[0])):
            at = prepared[i].at
            still: list[tuple[str, str]] = []
            for old_value, holder in holders.get((subject, attribute), []):
                if holder == mem_ids[i]:
                    continue
                holder_at = current(holder).at if holder in stored else prepared[mem_ids.index(holder)].at
                if old_value == value:  # said again: both become more certain
                    _reinforce(d, holder, i, mem_ids, prepared, current, stored, cfg)
                    still.append((old_value, holder))
                elif holder_at <= at:
                    _supersede(d, old=holder, new=mem_ids[i], at=at, user=user, mem_ids=mem_ids, current=current,
                               stored=stored)
                else:  # back-filled history: the stored value is newer, so this one was already outdated
                    _supersede(d, old=mem_ids[i], new=holder, at=holder_at, user=user, mem_ids=mem_ids,
                               current=current, stored=stored)
                    still.append((old_value, holder))
            if d.status.get(i) != SUPERSEDED:
                still.append((value, mem_ids[i]))
            holders[(subject, attribute)] = still
    return d


def _supersede(d: Decisions, *, old: str, new: str, at: float, user: str, mem_ids: Sequence[str],
               current: Any, stored: dict[str, MemoryRecord]) -> None:
    """``old`` is no longer true from ``at``: it gets ``valid_to`` and a SUPERSEDES edge from ``new``."""
    if old in mem_ids:
        j = mem_ids.index(old)
        if d.status.get(j) != INVALIDATED:
            d.status[j], d.valid_to[j] = SUPERSEDED, at
    elif old in stored:
        rec = current(old)
        if rec.status == ACTIVE:
            d.rewrites[old] = replace(rec, status=SUPERSEDED, valid_to=at)
    d.edges.append(EdgeRecord(new, EDGE_SUPERSEDES, old, user, 1.0, at=at))


def _reinforce(d: Decisions, holder: str, i: int, mem_ids: Sequence[str], prepared: Sequence["Prepared"],
               current: Any, stored: dict[str, MemoryRecord], cfg: LifecycleConfig) -> None:
    if holder in mem_ids:
        j = mem_ids.index(holder)
        d.confidence[j] = reinforced_confidence(d.confidence[j], d.confidence[i], cfg.reinforce_step)
    elif holder in stored:
        rec = current(holder)
        d.rewrites[holder] = replace(rec, confidence=reinforced_confidence(rec.confidence, d.confidence[i], cfg.reinforce_step))
    d.confidence[i] = reinforced_confidence(d.confidence[i], d.confidence[i], cfg.reinforce_step)


def _apply_link(d: Decisions, i: int, target: str, retracts: bool, at: float, user: str, mem_ids: Sequence[str],
                terms: dict[int, list[str]], mentions: dict[int, set[str]], fetch: Any, current: Any,
                stored: dict[str, MemoryRecord]) -> Op[None]:
    """Invalidate (retraction) or supersede (correction) ``target`` on behalf of item ``i``."""
    if retracts:
        if target in mem_ids:
            d.status[mem_ids.index(target)] = INVALIDATED
        else:
            yield from fetch([target])
            if target in stored:
                d.rewrites[target] = replace(current(target), status=INVALIDATED)
        d.edges.append(EdgeRecord(mem_ids[i], EDGE_RETRACTS, target, user, 1.0, at=at))
        return
    # a correction replaces what it corrects, and carries its words and entities so that the
    # questions the old memory answered now find the corrected one
    if target in mem_ids:
        j = mem_ids.index(target)
        d.extra_terms[i] = tuple(terms[j])
        d.extra_mentions[i] = sorted(mentions[j])
    else:
        yield from fetch([target])
        if target not in stored:
            return
        d.extra_terms[i] = current(target).terms
        rows = yield Expand(user, [target], [EDGE_MENTIONS])
        d.extra_mentions[i] = sorted({n.target for n in rows if n.source == target})
    _supersede(d, old=target, new=mem_ids[i], at=at, user=user, mem_ids=mem_ids, current=current, stored=stored)
