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

from bisect import bisect_left
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from extractors.frames import numbered_names
from extractors.normalize import entity_key
from extractors.text import lexical_tokens
from graphstore.protocol import ACTIVE, INVALIDATED, SUPERSEDED
from graphstore.records import EDGE_CONFLICTS, EDGE_MENTIONS, EDGE_RETRACTS, EDGE_SUPERSEDES, EdgeRecord, StoredMemory

from ._supersede import (
    DENSE_HIGH, DENSE_MEDIUM, HIGH, MEDIUM, FrameView, JudgeCase, Verdict, compare, grade, match,
    worth_parsing,
)
from graphstore.requests import (
    Expand, GetMemories, LastMemoryInSession, MemoriesMentioning, NearestMemories, NearestMemoriesBatch, RelatedEdges,
)

from ._pairjudge import PAIR_JUDGE_MIN, reads
from ._requests import ClauseVectors, Embed, Frames, Judge, JudgePairs, Op, Speakers
from ._notes import with_ripple_notes

if TYPE_CHECKING:
    import numpy as np

    from ._ingest import Prepared

__all__ = ["LifecycleConfig", "Decisions", "lifecycle_plan", "reinforced_confidence", "MULTI_VALUED"]

#: Attributes a person can have many values of at once: a new value adds, it does not replace.
MULTI_VALUED = frozenset({
    "preference", "dislike", "like", "hobby", "skill", "knows", "language", "friend", "pet", "interest",
    "identity", "visited", "plan", "goal", "allergy", "child", "sibling",
})


class LifecycleConfig(BaseModel):
    """What the write path does to keep memory true (see :mod:`ripple._lifecycle`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

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
    candidates: int = Field(8, ge=0, le=100, description="nearest active memories a new statement is compared with")
    candidate_cosine: float = Field(
        0.3, ge=-1, le=1, description="sentence cosine from which a near memory is compared with a new statement"
    )
    per_entity: int = Field(
        4, ge=0, le=100, description="latest active memories per shared entity that a new statement is compared with"
    )
    frame_cosine_high: float = Field(
        DENSE_HIGH, ge=-1, le=1, description="cosine of the masked clauses from which a compatible pair is acted on"
    )
    frame_cosine_medium: float = Field(
        DENSE_MEDIUM, ge=-1, le=1, description="cosine of the masked clauses below which a compatible pair is left alone"
    )
    conflicts: bool = Field(True, description="record medium-confidence supersessions as conflicts for review")
    pair_judge: bool = Field(
        False, description="also ask the learned pair judge (ripple._pairjudge) about the English candidate pairs the "
                           "rules compare but do not refuse; a probability at or above pair_judge_min supersedes. "
                           "Off by default: it doubles the supersession recall of plainly stated English changes "
                           "out of sample, but reads templated text as changes and costs a model pass per pair",
    )
    pair_judge_min: float = Field(
        PAIR_JUDGE_MIN, ge=0, le=1, description="the pair judge's probability from which a pair supersedes",
    )
    pair_judge_candidates: int = Field(
        3, ge=0, le=100, description="the pair judge reads at most this many of a new statement's candidates, the "
                                     "nearest in meaning: each read costs a model pass on the write path",
    )
    judge: Callable[[Sequence[JudgeCase]], Sequence[str]] | None = Field(
        None, exclude=True,
        description="optional judge (an LLM, a person) for the medium cases: one of 'supersedes', 'conflict', "
                    "'unrelated' per case; never required",
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
    rewrites: dict[str, StoredMemory] = field(default_factory=dict)  # stored memories with new values
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
    # stored memories fetched so far, without their vectors: the decisions read text, terms and the
    # lifecycle fields; only a memory that is rewritten needs its vectors (see _with_vectors)
    stored: dict[str, StoredMemory] = {}

    def fetch(ids: Sequence[str]) -> Op[None]:
        want = [m for m in dict.fromkeys(ids) if m not in stored and m not in d.rewrites]
        if want:
            for rec in (yield GetMemories(want)):
                stored[rec.id] = rec

    def current(mid: str) -> StoredMemory:
        return d.rewrites.get(mid) or stored[mid]

    def speaker_of(ids: Sequence[str]) -> Op[list[str | None]]:
        """Who said each memory (None: no named speaker), as ``extra["speaker"]`` names a new item's."""
        yield from fetch([m for m in ids if m not in mem_ids])
        return [prepared[mem_ids.index(m)].extraction.extra.get("speaker") if m in mem_ids
                else _speaker(current(m).text) if m in stored or m in d.rewrites else None for m in ids]

    for i in idxs:
        d.confidence[i] = float(getattr(prepared[i].extraction, "confidence", 1.0))

    # ---- the nearest active memories of each item: repeats, and statements it may replace
    near: dict[int, list[tuple[str, float]]] = {}
    k_near = max(3 if cfg.dedup else 0, cfg.candidates if cfg.supersede else 0)
    if k_near and order:
        vecs = np.vstack([prepared[i].vector for i in order]).astype(np.float32)
        found = yield NearestMemoriesBatch(user, vecs, k_near, (ACTIVE,))
        near = dict(zip(order, found))

    # ---- near-duplicates: reinforce the memory already there instead of adding a copy
    if cfg.dedup and order:
        close = {i: [(m, s) for m, s in near[i][:3] if s >= cfg.dedup_cosine] for i in order}
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
                    # (one takes back only one's own words: not what another speaker said)
                    said = yield from speaker_of([m for _, m in options])
                    options = [o for o, who in zip(options, said) if who == ex.extra.get("speaker")]
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
                if target is not None and retracts:
                    theirs = (yield from speaker_of([target]))[0]
                    if theirs != ex.extra.get("speaker"):
                        # "别提了，日本去不成了" after the other one's "你日本签证下来了吗": one takes back only
                        # one's own words; said to another speaker's message it answers it (a reply, no retraction)
                        target, retracts = None, False
                        reason = f"the previous message of this session is {theirs or 'unnamed'}'s, not the speaker's"
                        del d.kind[i]
            if target is not None:
                yield from _apply_link(d, i, target, retracts, p.at, user, mem_ids, terms, mentions, fetch, current,
                                       stored)
            d.notes[i] = {"corrects" if corrects else "retracts": target, "reason": reason}
        if sid is not None:
            previous[sid] = i

    # ---- profile facts: confident facts become RELATED edges (the user's profile)
    fact_keys: dict[int, set[tuple[str, str]]] = {}  # item -> (subject id, attribute) of its facts
    for i in order:
        if d.status.get(i) == INVALIDATED:
            continue
        for n, fact in enumerate(prepared[i].extraction.facts):
            subject, value = _fact_subject(fact, resolved, self_id), resolved.get(entity_key(fact.value))
            confidence = min(d.confidence[i], float(getattr(fact, "confidence", 1.0)))
            if subject is None or value is None or confidence < cfg.profile_confidence:
                continue
            d.profile_facts.add((i, n))
            fact_keys.setdefault(i, set()).add((subject, fact.attribute))

    # ---- statements: a new value of the same statement supersedes the old one (see ripple._supersede)
    if cfg.supersede:
        yield from _statement_plan(user, order, prepared, mem_ids, resolved, cfg, d, near, fact_keys, mentions,
                                   terms, fetch, current, stored)
    yield from _with_vectors(d, stored)
    return d


def _with_vectors(d: Decisions, stored: dict[str, StoredMemory]) -> Op[None]:
    """Give the rewritten stored memories their vectors back (a rewrite writes the whole record).

    Why not read them with the records: a batch's decisions read hundreds of stored candidates and
    rewrite a few (at 4,000 synthetic memories into Neo4j, the vectors of every candidate were ~10 %
    of the server's CPU and a few MB a batch through the driver); the vectors of a memory never change
    while it exists, so reading them after the decisions gives the same record."""
    bare = [m for m in d.rewrites if m in stored]
    if not bare:
        return
    full = {rec.id: rec for rec in (yield GetMemories(bare, with_vectors=True))}
    for mid in bare:
        got = full.get(mid)
        # (one deleted by another client since the decisions read it is written back as the decisions
        # left it, as before, only without the vectors it no longer has: a batch's duplicates may name it)
        if got is not None:
            d.rewrites[mid] = replace(d.rewrites[mid], embedding=got.embedding, token_vectors=got.token_vectors,
                                      multilingual=got.multilingual)


@dataclass(frozen=True, slots=True)
class _Decision:
    """A graded verdict between a new item and an older (or, back-filled, newer) memory."""

    item: int
    target: str
    at: float  # the target's event time
    level: str
    verdict: Verdict
    reasons: tuple[str, ...]


def _statement_plan(
    user: str, order: Sequence[int], prepared: Sequence["Prepared"], mem_ids: Sequence[str],
    resolved: dict[str, str], cfg: LifecycleConfig, d: Decisions, near: dict[int, list[tuple[str, float]]],
    fact_keys: dict[int, set[tuple[str, str]]], mentions: dict[int, set[str]], terms: dict[int, list[str]],
    fetch: Any, current: Any, stored: dict[str, StoredMemory],
) -> Op[None]:
    """Find, for each new item that states a value, the active memories it replaces (see
    :mod:`ripple._supersede`), and record the decisions in ``d``.

    Candidates: the item's nearest active memories (from the repeat check), the latest active
    memories that mention one of its entities, the memories holding a fact with the same subject and
    attribute, and the earlier items of the batch that are near it or share an entity; of those, only
    the ones whose text can hold a comparable value are parsed.  Items are decided in event-time
    order, so a batch holding a whole history in any order ends as the same history written in time
    order; a stored memory newer than the item makes the item history."""
    import numpy as np

    # a titled text (a page, a passage) is a document, not a statement of the present state: its
    # paragraphs state many facts side by side, and one's number does not update another's
    # ("Watertown International Airport ... 6 mi" / "Alexandria ... 5 mi"; two paragraphs of one
    # article on snowfall): only texts without a title line (chat turns, notes) replace each other
    items = [i for i in order if d.status.get(i) != INVALIDATED and d.kind.get(i) != "retraction"
             and not d.notes.get(i, {}).get("corrects") and _title_key(prepared[i].item.text) is None]
    framed = (yield Frames([prepared[i].item.text for i in items])) if items else []
    new_frames: dict[int, tuple[Any, ...]] = {}
    for i, (views, _speaker) in zip(items, framed):
        views = tuple(v for v in views if v.promising)
        if views:
            new_frames[i] = views
    if not new_frames:
        return
    in_batch = set(mem_ids)
    speakers = {resolved.get(str(prepared[i].extraction.extra.get("speaker"))) for i in new_frames}
    cands: dict[int, set[str]] = {
        i: {m for m, score in near.get(i, ())[: cfg.candidates] if score >= cfg.candidate_cosine and m not in in_batch}
        for i in new_frames
    }
    # memories holding a fact with the same subject and attribute ("I live in ..." / "I moved to ...")
    keyed = {i: fact_keys[i] for i in new_frames if i in fact_keys}
    if keyed:
        subjects = sorted({s for ks in keyed.values() for s, _ in ks})
        attributes = sorted({a for ks in keyed.values() for _, a in ks})
        for e in (yield RelatedEdges(user, subjects, attributes)):
            for i, ks in keyed.items():
                if (e.src, e.predicate) in ks and e.evidence and e.evidence not in in_batch:
                    cands[i].add(e.evidence)
    # the latest memories that mention one of the item's entities (not its speaker)
    shared = {i: mentions.get(i, set()) - speakers for i in new_frames}
    entity_ids = sorted({e for ids in shared.values() for e in ids})
    if entity_ids and cfg.per_entity:
        by_entity: dict[str, list[str]] = {}
        for eid, mid in (yield MemoriesMentioning(user, entity_ids, per_entity=cfg.per_entity)):
            by_entity.setdefault(eid, []).append(mid)
        for i, ids in shared.items():
            cands[i].update(m for e in ids for m in by_entity.get(e, ()) if m not in in_batch)
    # earlier items of this batch that are near or share an entity
    position = {i: n for n, i in enumerate(order)}
    units = np.vstack([prepared[i].vector for i in order]).astype(np.float32)
    units /= np.maximum(np.linalg.norm(units, axis=1, keepdims=True), 1e-9)
    cosines = units[[position[i] for i in new_frames]] @ units.T
    row_of = {i: n for n, i in enumerate(new_frames)}
    live = [j for j in order if d.status.get(j) != INVALIDATED and d.kind.get(j) != "retraction"]
    mentioned_by: dict[str, list[int]] = {}  # entity -> the live items mentioning it, in event-time order
    for j in live:
        for entity in mentions.get(j, ()):
            mentioned_by.setdefault(entity, []).append(j)
    live_at = np.array([position[j] for j in live], dtype=np.int64)
    batch_cands = {i: _earlier_candidates(i, live, live_at, position, cosines[n], shared[i], mentioned_by, cfg)
                   for n, i in enumerate(new_frames)}
    wanted = sorted({m for ms in cands.values() for m in ms})
    if wanted:
        yield from fetch(wanted)
    # only candidates whose text can hold a comparable value are parsed (a regular-expression test)
    texts = {m: (current(m).text, current(m).terms) for m in wanted if m in stored
             and current(m).status == ACTIVE and current(m).kind != "retraction"}
    texts.update((mem_ids[j], (prepared[j].item.text, terms[j])) for js in batch_cands.values() for j in js)
    # nor a titled one, nor one about another numbered thing ("Sprint 19 ... review 19" does not
    # update "Sprint 18 ... review 18")
    # (what a candidate text says alone is read once, not once per new item that meets it)
    titled = {m: _title_key(text) is not None for m, (text, _) in texts.items()}
    numbers = {m: numbered_names(text) for m, (text, _) in texts.items()}
    for i, frames in new_frames.items():
        test = worth_parsing([v.frame for v in frames], prepared[i].extraction, terms[i])
        numbered = numbered_names(prepared[i].item.text)

        def replaceable(m: str) -> bool:
            theirs = numbers[m]
            return not titled[m] and not (numbered and theirs and not numbered & theirs) and test(*texts[m])

        cands[i] = {m for m in cands[i] if m in texts and replaceable(m)}
        batch_cands[i] = [j for j in batch_cands[i] if replaceable(mem_ids[j])]
    old_ids = sorted({m for ms in cands.values() for m in ms})
    # every clause of a memory that may be replaced (a stored memory newer than the item is the one
    # that replaces: the roles swap); one speaker's statement is never replaced by another's
    old_ids += sorted({mem_ids[j] for js in batch_cands.values() for j in js})
    # (the speakers first, from the parses: a text that no new item of its own speaker meets is not
    # read into frames, it could only be compared with another speaker's statements; nor, once known,
    # one none of whose frames can replace or be replaced: it gives no pair either way)
    said = {i: prepared[i].extraction.extra.get("speaker") for i in new_frames}
    speaker_of: dict[str, Any] = {}
    if old_ids:
        speaker_of = dict(zip(old_ids, (yield Speakers([texts[m][0] for m in old_ids]))))
    heard = {m for i in new_frames for m in (*cands[i], *(mem_ids[j] for j in batch_cands[i]))
             if speaker_of[m] == said[i]}
    compared = [m for m in old_ids if m in heard]
    old_frames: dict[str, tuple[Any, ...]] = {}
    if compared:
        for m, (frames, _) in zip(compared, (yield Frames([texts[m][0] for m in compared], comparable=True))):
            old_frames[m] = frames

    # ---- the frames compared, then graded by the cosine of their masked clauses; each frame is
    # prepared for comparison once (a memory meets many others: on templated text, nearly every
    # earlier turn of its template), and a clause that can never replace or be replaced, read alone,
    # is left out of the pairs (the same test structural_match makes of each pair)
    found: list[tuple[int, str, float, Verdict]] = []
    asked: list[tuple[int, str, float]] = []  # the pairs the pair judge is asked about
    as_old = {m: tuple(v for v in views if v.replaceable) for m, views in old_frames.items()}
    as_new = {m: tuple(v for v in views if v.replacing) for m, views in old_frames.items()}
    for i, frames in new_frames.items():
        targets = [(m, current(m).at) for m in sorted(cands[i]) if speaker_of[m] == said[i]]
        targets += [(mem_ids[j], prepared[j].at) for j in batch_cands[i] if speaker_of[mem_ids[j]] == said[i]]
        if not targets:
            continue
        mine_new = tuple(v for v in frames if v.replacing)
        mine_old: tuple[FrameView, ...] | None = None
        mine_asked: list[tuple[int, str, float]] = []
        judged = cfg.pair_judge and reads(prepared[i].item.text)
        test_pair = compare if judged else match  # (why the rules refuse matters only to the judge)
        for target, at in targets:
            if at <= prepared[i].at:
                olds, news = as_old[target], mine_new
            else:
                if mine_old is None:
                    ((mine, _),) = yield Frames([prepared[i].item.text])
                    mine_old = tuple(v for v in mine if v.replaceable)
                olds, news = mine_old, as_new[target]
            refused = not (olds and news)  # an addition, a change by an amount, an event: nothing to replace
            for old in olds:
                for new in news:
                    v = test_pair(old, new, multi_valued=cfg.multi_valued)
                    if isinstance(v, Verdict):
                        found.append((i, target, at, v))
                    elif v is not None:
                        refused = True
            if judged and not refused and reads(texts[target][0]):
                mine_asked.append((i, target, at))
        if mine_asked:  # the nearest in meaning first (a candidate found by a shared entity alone last)
            row = cosines[row_of[i]]
            closeness = dict(near.get(i, ()))
            closeness.update((mem_ids[j], float(row[position[j]])) for j in batch_cands[i])
            mine_asked.sort(key=lambda x: -closeness.get(x[1], -1.0))
            asked += mine_asked[: cfg.pair_judge_candidates]
    if not found and not asked:
        return
    best: dict[tuple[int, str], _Decision] = {}
    if found:
        masked = sorted({t for *_, v in found for t in (v.old_masked, v.new_masked)})
        vectors = yield ClauseVectors(masked)
        index = {t: np.asarray(vec, dtype=np.float32) for t, vec in zip(masked, vectors)}
        lengths = {t: np.linalg.norm(vec) for t, vec in index.items()}  # (once per clause, not per pair)
        rank = {HIGH: 2, MEDIUM: 1}
        for i, target, at, v in found:
            a, b = index[v.old_masked], index[v.new_masked]
            cosine = float(a @ b / max(1e-9, float(lengths[v.old_masked] * lengths[v.new_masked])))
            level, reasons = grade(v, cosine, high=cfg.frame_cosine_high, medium=cfg.frame_cosine_medium)
            if level not in rank:
                continue
            have = best.get((i, target))
            if have is None or rank[level] > rank[have.level]:
                best[(i, target)] = _Decision(i, target, at, level, v, reasons)
    if asked:
        yield from _pair_judged(asked, best, prepared, texts, cfg)
    decisions = sorted(best.values(), key=lambda x: (position[x.item], x.at, x.target))
    if cfg.judge is not None:
        decisions = yield from _judged(cfg.judge, decisions, prepared, current, mem_ids, stored)

    # ---- applied in event-time order
    gone: set[str] = set()  # superseded in this plan
    for dec in decisions:
        i, new_id = dec.item, mem_ids[dec.item]
        if new_id in gone or dec.target in gone:
            continue
        note = {"memory": dec.target, "confidence": dec.level, "value": [dec.verdict.old_value, dec.verdict.new_value],
                "frame": [dec.verdict.old_clause, dec.verdict.new_clause], "why": "; ".join(dec.reasons)}
        at = prepared[i].at
        if dec.level == HIGH and dec.at <= at:
            _supersede(d, old=dec.target, new=new_id, at=at, user=user, mem_ids=mem_ids, current=current,
                       stored=stored)
            gone.add(dec.target)
            d.notes.setdefault(i, {}).setdefault("supersedes", []).append(note)
        elif dec.level == HIGH:  # back-filled: the stored statement is newer, this one is its history
            _supersede(d, old=new_id, new=dec.target, at=dec.at, user=user, mem_ids=mem_ids, current=current,
                       stored=stored)
            gone.add(new_id)
            d.notes.setdefault(i, {})["superseded_by"] = note
        elif cfg.conflicts:
            newer, older = (new_id, dec.target) if dec.at <= at else (dec.target, new_id)
            d.edges.append(EdgeRecord(newer, EDGE_CONFLICTS, older, user, 1.0, at=max(at, dec.at)))
            d.notes.setdefault(i, {}).setdefault("conflicts", []).append(note)
            # the other side carries the same note, so that a recall hit of either one shows that it
            # may be out of date (or may replace the other) without another store round trip
            _note_conflict(d, dec.target, {**note, "memory": new_id}, mem_ids, current, stored)


def _pair_judged(asked: Sequence[tuple[int, str, float]], best: dict[tuple[int, str], _Decision],
                 prepared: Sequence["Prepared"], texts: dict[str, tuple[str, Any]], cfg: LifecycleConfig) -> Op[None]:
    """The candidate pairs the rules did not act on, put to the pair judge (:mod:`ripple._pairjudge`):
    a probability at or above ``cfg.pair_judge_min`` makes the pair a high-confidence supersession.

    Why beside the rules rather than instead of them: the rules are exact where they fire (precision
    ~1 on every split) but miss most changes phrased in ways they do not know; the judge reads those
    phrasings.  Each pair is read in time order (the older text first), as the judge was trained."""
    pending = [(i, target, at) for i, target, at in dict.fromkeys(asked)
               if (i, target) not in best or best[(i, target)].level != HIGH]
    if not pending:
        return
    ordered = []
    for i, target, at in pending:
        mine, theirs = prepared[i].item.text, texts[target][0]
        ordered.append((theirs, mine) if at <= prepared[i].at else (mine, theirs))
    for (i, target, at), (old, new), p in zip(pending, ordered, (yield JudgePairs(ordered))):
        if p < cfg.pair_judge_min:
            continue
        why = f"the pair judge: p {p:.3f}"
        prior = best.get((i, target))
        reasons = (*prior.reasons, why) if prior is not None else (why,)
        verdict = prior.verdict if prior is not None else Verdict(HIGH, "", "", old, new, "", "", (why,), "same")
        best[(i, target)] = _Decision(i, target, at, HIGH, verdict, reasons)


def _earlier_candidates(
    i: int, live: Sequence[int], live_at: "np.ndarray", position: dict[int, int], cosines: "np.ndarray",
    shared: set[str], mentioned_by: dict[str, list[int]], cfg: LifecycleConfig,
) -> list[int]:
    """The earlier items of a batch that item ``i`` is compared with: the candidates a stored history
    would give it, so that a batch decides as the same items written one by one.

    Written one by one, an item meets its ``candidates`` nearest earlier memories (above
    ``candidate_cosine``) and the latest ``per_entity`` memories of each entity it shares; a batch
    takes the same from its earlier live items (``live``, in event-time order; ``live_at``: their
    positions in the batch).  Comparing with *every* earlier item that shares an entity made a batch
    of n items cost n² frame comparisons: a whole conversation or a synthetic store in one
    ``add_many`` spent most of its ingest there."""
    import numpy as np

    here = position[i]
    before = int(np.searchsorted(live_at, here))  # (live is in batch order: the earlier ones are a prefix)
    near_cos = cosines[live_at[:before]]
    above = np.flatnonzero(near_cos >= cfg.candidate_cosine)
    # the nearest first, ties in batch order (a stable sort on the negated cosine)
    nearest = above[np.argsort(-near_cos[above], kind="stable")][: cfg.candidates]
    picked = {live[int(k)] for k in nearest}
    if cfg.per_entity:
        for entity in shared:
            items = mentioned_by.get(entity, [])
            cut = bisect_left(items, here, key=position.__getitem__)
            picked.update(items[max(0, cut - cfg.per_entity): cut])
    return sorted(picked, key=position.__getitem__)


def _judged(judge: Any, decisions: list[_Decision], prepared: Sequence["Prepared"], current: Any, mem_ids: Sequence[str],
            stored: dict[str, StoredMemory]) -> Op[list[_Decision]]:
    """The medium decisions put to the configured judge: 'supersedes' makes one high, 'unrelated'
    drops it, anything else keeps it a conflict."""
    medium = [x for x in decisions if x.level == MEDIUM]
    if not medium:
        return decisions

    def text_of(mid: str) -> str:
        return prepared[mem_ids.index(mid)].item.text if mid in mem_ids else current(mid).text

    cases = [JudgeCase(old_text=text_of(x.target), new_text=prepared[x.item].item.text, old_value=x.verdict.old_value,
                       new_value=x.verdict.new_value, reasons=x.reasons) for x in medium]
    answers = list((yield Judge(judge, cases)))
    verdicts = dict(zip(map(id, medium), answers))
    out = []
    for x in decisions:
        answer = verdicts.get(id(x))
        if answer == "supersedes":
            out.append(replace(x, level=HIGH, reasons=(*x.reasons, "the judge: supersedes")))
        elif answer != "unrelated":
            out.append(x if answer is None else replace(x, reasons=(*x.reasons, f"the judge: {answer}")))
    return out


def _note_conflict(d: Decisions, holder: str, note: dict[str, Any], mem_ids: Sequence[str], current: Any,
                   stored: dict[str, StoredMemory]) -> None:
    """Add a conflict note to ``holder``'s metadata (an item of this batch, or a stored memory rewritten)."""
    if holder in mem_ids:
        d.notes.setdefault(mem_ids.index(holder), {}).setdefault("conflicts", []).append(note)
    elif holder in stored:
        d.rewrites[holder] = with_ripple_notes(current(holder), lambda notes: notes.setdefault("conflicts", []).append(note))


def _speaker(text: str) -> str | None:
    """Who says ``text`` ("林晓雨: ..." -> its key; None without a named speaker: a role such as
    "User:" names no one in particular), as the frames name a turn's speaker."""
    from extractors.speaker import split_speaker

    turn = split_speaker(text)
    return turn.subject if turn.speaker is not None else None


def _title_key(text: str) -> str | None:
    """The key of a text's title line (None for a text without one: chat turns)."""
    from extractors.heading import split_title, title_key

    title = split_title(text)
    return None if title is None else title_key(title)


def _supersede(d: Decisions, *, old: str, new: str, at: float, user: str, mem_ids: Sequence[str],
               current: Any, stored: dict[str, StoredMemory]) -> None:
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
               current: Any, stored: dict[str, StoredMemory], cfg: LifecycleConfig) -> None:
    if holder in mem_ids:
        j = mem_ids.index(holder)
        d.confidence[j] = reinforced_confidence(d.confidence[j], d.confidence[i], cfg.reinforce_step)
    elif holder in stored:
        rec = current(holder)
        d.rewrites[holder] = replace(rec, confidence=reinforced_confidence(rec.confidence, d.confidence[i], cfg.reinforce_step))
    d.confidence[i] = reinforced_confidence(d.confidence[i], d.confidence[i], cfg.reinforce_step)


def _apply_link(d: Decisions, i: int, target: str, retracts: bool, at: float, user: str, mem_ids: Sequence[str],
                terms: dict[int, list[str]], mentions: dict[int, set[str]], fetch: Any, current: Any,
                stored: dict[str, StoredMemory]) -> Op[None]:
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
