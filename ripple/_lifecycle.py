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

import json
from bisect import bisect_left
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from extractors.frames import numbered_names, value_groups
from extractors.normalize import entity_key
from extractors.text import lexical_tokens
from graphstore.protocol import ACTIVE, INVALIDATED, SUPERSEDED
from graphstore.records import (
    EDGE_CONFLICTS, EDGE_MENTIONS, EDGE_NEXT, EDGE_RETRACTS, EDGE_SUPERSEDES, EdgeRecord, StoredMemory,
)

from ._supersede import (
    DENSE_HIGH, DENSE_MEDIUM, DENSE_SAME, HIGH, JUDGE_READS_REFUSED, MEDIUM, FrameView, JudgeCase, Verdict, compare,
    grade, match, worth_parsing,
)
from graphstore.requests import (
    Expand, GetMemories, LastMemoryInSession, MemoriesMentioning, NearestMemories, NearestMemoriesBatch, RelatedEdges,
)

from ._pairjudge import PAIR_JUDGE_MIN, PAIR_JUDGE_MIN_ZH, language, reads
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
    frame_cosine_same: float | None = Field(
        DENSE_SAME, ge=-1, le=1,
        description="cosine of the masked clauses from which a statement that says what the old one said, no more and"
                    " no less, with another value supersedes it unmarked ('Sam wears a size 31 shoe' / 'sam's shoe size:"
                    " 33'); None leaves such pairs conflicts for review",
    )
    conflicts: bool = Field(True, description="record medium-confidence supersessions as conflicts for review")
    pair_judge: bool = Field(
        False, description="also ask the learned pair judge (ripple._pairjudge) about the candidate pairs the "
                           "rules compare but do not refuse (or refuse only because qualifiers differ: ripple._supersede."
                           "JUDGE_READS_REFUSED); a probability at or above pair_judge_min supersedes. "
                           "Two judges: English (MiniLM) and Chinese (multilingual-e5-small). "
                           "Off by default: out of sample they take supersession recall from about a third to "
                           "about a half or more, but read templated text as changes and cost a model pass per pair",
    )
    pair_judge_min: float = Field(
        PAIR_JUDGE_MIN, ge=0, le=1, description="the English pair judge's probability from which a pair supersedes",
    )
    pair_judge_min_zh: float = Field(
        PAIR_JUDGE_MIN_ZH, ge=0, le=1,
        description="the Chinese pair judge's probability from which a pair supersedes (a pair with Chinese in it)",
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


@dataclass(frozen=True, slots=True)
class _Batch:
    """What the stages of :func:`lifecycle_plan` share for one user's new items: the batch, the
    decisions so far, and the stored memories read so far (read through :meth:`current`, which sees
    the rewrites an earlier stage decided)."""

    user: str
    prepared: Sequence["Prepared"]
    mem_ids: Sequence[str]
    cfg: LifecycleConfig
    d: Decisions
    terms: dict[int, list[str]]  # item -> the words of its text
    mentions: dict[int, set[str]]  # item -> the entity ids its memory will have MENTIONS edges to
    # stored memories fetched so far, without their vectors: the decisions read text, terms and the
    # lifecycle fields; only a memory that is rewritten needs its vectors (see _with_vectors)
    stored: dict[str, StoredMemory] = field(default_factory=dict)
    # new memory id -> its item (the first, as ``mem_ids.index`` finds it): a batch of a whole conversation
    # asks this per candidate and decision, which a scan of ``mem_ids`` made quadratic in the batch
    item_of: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for n, mid in enumerate(self.mem_ids):
            self.item_of.setdefault(mid, n)

    def fetch(self, ids: Sequence[str]) -> Op[None]:
        """Read the stored memories of ``ids`` that were neither read nor rewritten yet."""
        want = [m for m in dict.fromkeys(ids) if m not in self.stored and m not in self.d.rewrites]
        if want:
            for rec in (yield GetMemories(want)):
                self.stored[rec.id] = rec

    def known(self, mid: str) -> bool:
        """Whether a stored memory was read (or rewritten) by this batch: one deleted meanwhile was not."""
        return mid in self.stored or mid in self.d.rewrites

    def current(self, mid: str) -> StoredMemory:
        """A stored memory as the decisions so far leave it."""
        return self.d.rewrites.get(mid) or self.stored[mid]

    def said(self, i: int) -> Any:
        """Who says new item ``i`` (its ``extra["speaker"]``; None: no named speaker)."""
        return self.prepared[i].extraction.extra.get("speaker")

    def who_said(self, ids: Sequence[str]) -> Op[list[str | None]]:
        """Who said each memory (None: no named speaker), as ``extra["speaker"]`` names a new item's."""
        yield from self.fetch([m for m in ids if m not in self.item_of])
        return [self.said(self.item_of[m]) if m in self.item_of
                else _speaker(self.current(m).text) if self.known(m) else None
                for m in ids]

    def agent_said(self, mid: str) -> bool:
        """Whether a memory (a new item's or a stored one) is a turn the agent said (:data:`AGENT_ROLE`)."""
        if mid in self.item_of:
            return self.prepared[self.item_of[mid]].item.metadata.get("role") == AGENT_ROLE
        return self.known(mid) and _role(self.current(mid).metadata_json) == AGENT_ROLE

    def text_of(self, mid: str) -> str:
        """The text of a memory: a new item's or a stored one's."""
        return self.prepared[self.item_of[mid]].item.text if mid in self.item_of else self.current(mid).text


#: ``metadata["role"]`` of a turn the agent said (``ripple.agent`` writes it on each of the assistant's turns).
#: An agent's turns are its replies: suggestions, sums, plans and questions, many values about many things
#: (a day's itinerary, a recipe's grams, a rent rise worked out as a share), not facts the user states. So
#: they neither replace nor are replaced, and a correction never lands on one: written as chat, two
#: Chinese user-and-assistant conversations (``benchmarks/data/zh/zh-chat-assistant.json``) had 21 of the
#: assistant's turns superseded by the rules, by its own later replies or by the user's answer to its
#: question (benchmarks/RESULTS.md, "A Chinese pair judge").
AGENT_ROLE = "assistant"


def _role(metadata_json: str) -> Any:
    """``metadata["role"]`` of a stored memory, or None.  Tolerant on purpose: a damaged metadata column
    ("{bad", "[1]") is reported by the store's own reads as a StoreError (tests/test_errors.py); the write
    path's decisions must not fail on it first with a bare JSON or attribute error."""
    try:
        meta = json.loads(metadata_json or "{}")
    except ValueError:
        return None
    return meta.get("role") if isinstance(meta, dict) else None


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
    memory must share with a new one for the new one to be a repeat).

    The stages run in event-time order of the items, each on what the ones before left: a repeat is
    neither a retraction nor a statement, and a retracted item states no profile fact."""
    b = _Batch(user, prepared, mem_ids, cfg, Decisions(), {i: lexical_tokens(prepared[i].item.text) for i in idxs},
               mentions)
    order = sorted(idxs, key=lambda i: (prepared[i].at, i))
    for i in idxs:
        b.d.confidence[i] = float(getattr(prepared[i].extraction, "confidence", 1.0))
    # (the nearest search and the repeat check read the same rows: stacked once)
    vectors = _stacked(prepared, order) if order and (cfg.dedup or cfg.supersede) else None
    near = yield from _nearest(b, order, vectors)
    if cfg.dedup and vectors is not None:
        order = yield from _duplicates(b, order, near, vectors)
    yield from _links(b, order)
    fact_keys = _profile_facts(b, order, resolved, self_id)
    # ---- statements: a new value of the same statement supersedes the old one (see ripple._supersede)
    if cfg.supersede:
        yield from _statement_plan(b, order, resolved, near, fact_keys)
    yield from _with_vectors(b.d, b.stored)
    return b.d


def _stacked(prepared: Sequence["Prepared"], order: Sequence[int]) -> "np.ndarray":
    """The sentence vectors of the items of ``order``, one row each."""
    import numpy as np

    return np.vstack([prepared[i].vector for i in order]).astype(np.float32)


def _nearest(b: _Batch, order: Sequence[int], vectors: "np.ndarray | None") -> Op[dict[int, list[tuple[str, float]]]]:
    """The nearest active memories of each item (``vectors``: theirs, one row each, in ``order``): repeats,
    and statements it may replace."""
    k_near = max(3 if b.cfg.dedup else 0, b.cfg.candidates if b.cfg.supersede else 0)
    if not k_near or vectors is None:
        return {}
    found = yield NearestMemoriesBatch(b.user, vectors, k_near, (ACTIVE,))
    return dict(zip(order, found))


def _duplicates(b: _Batch, order: Sequence[int], near: dict[int, list[tuple[str, float]]],
                vectors: "np.ndarray") -> Op[list[int]]:
    """Near-duplicates: reinforce the memory already there instead of adding a copy.

    Returns the items that repeat nothing, in event-time order: the later stages decide only those."""
    import numpy as np

    cfg, d = b.cfg, b.d
    close = {i: [(m, s) for m, s in near[i][:3] if s >= cfg.dedup_cosine] for i in order}
    cand_ids = sorted({m for hits in close.values() for m, _ in hits})
    cand_mentions: dict[str, set[str]] = {}
    if cand_ids:
        yield from b.fetch(cand_ids)
        cand_mentions = yield from _mentioned(b, cand_ids)
    norms = {i: v / max(1e-9, float(np.linalg.norm(v))) for i, v in zip(order, vectors)}
    kept: list[int] = []
    for i in order:
        target = _stored_repeat(b, i, close[i], cand_mentions)
        if target is None:  # a repeat inside this batch
            j = _batch_repeat(b, i, kept, norms)
            if j is not None:
                target = b.mem_ids[j]
                d.confidence[j] = reinforced_confidence(d.confidence[j], d.confidence[i], cfg.reinforce_step)
        if target is None:
            kept.append(i)
            continue
        d.duplicate_of[i] = target
        if b.known(target):
            rec = b.current(target)
            d.rewrites[target] = replace(
                rec, mentions=rec.mentions + 1, last_seen=max(b.prepared[i].at, rec.last_seen or rec.at),
                confidence=reinforced_confidence(rec.confidence, d.confidence[i], cfg.reinforce_step),
            )
    return kept


def _mentioned(b: _Batch, ids: Sequence[str]) -> Op[dict[str, set[str]]]:
    """The entity ids each stored memory of ``ids`` has MENTIONS edges to."""
    rows = yield Expand(b.user, ids, [EDGE_MENTIONS])
    out: dict[str, set[str]] = {m: set() for m in ids}
    for n in rows:
        if n.source in out:
            out[n.source].add(n.target)
    return out


def _same_words(earlier: Sequence[str], new: Sequence[str], cfg: LifecycleConfig) -> bool:
    """Whether the words of two texts make the new one a repeat: the same numbers, and enough words in common."""
    return _numbers(earlier) == _numbers(new) and _overlap(earlier, new) >= cfg.dedup_overlap


def _stored_repeat(
    b: _Batch, i: int, close: Sequence[tuple[str, float]], cand_mentions: dict[str, set[str]],
) -> str | None:
    """The active stored memory (of the ``close`` ones) that item ``i`` repeats, if any."""
    for mid, _ in close:
        rec = b.stored.get(mid)
        if rec is None or rec.status != ACTIVE:
            continue
        if cand_mentions[mid] == b.mentions[i] and _same_words(rec.terms, b.terms[i], b.cfg):
            return mid
    return None


def _batch_repeat(b: _Batch, i: int, kept: Sequence[int], norms: dict[int, "np.ndarray"]) -> int | None:
    """The earlier item of this batch (of the ``kept`` ones, no repeats themselves) that item ``i`` repeats, if any."""
    for j in kept:
        if (float(norms[i] @ norms[j]) >= b.cfg.dedup_cosine and b.mentions[j] == b.mentions[i]
                and _same_words(b.terms[j], b.terms[i], b.cfg)):
            return j
    return None


def _links(b: _Batch, order: Sequence[int]) -> Op[None]:
    """Retractions ("forget that") and corrections ("no, I meant Tuesday"): each finds what it refers
    to, and invalidates (a retraction) or supersedes (a correction) it."""
    previous: dict[str, list[int]] = {}  # session -> the new items of this batch so far, latest last
    for i in order:
        ex = b.prepared[i].extraction
        retracts = b.cfg.retractions and bool(getattr(ex, "retracts", False))
        corrects = b.cfg.corrections and bool(getattr(ex, "corrects", False)) and not retracts
        if retracts or corrects:
            yield from _link(b, i, retracts, order, previous)
        sid = b.prepared[i].item.session_id
        if sid is not None:
            previous.setdefault(sid, []).append(i)


def _link(b: _Batch, i: int, retracts: bool, order: Sequence[int], previous: dict[str, list[int]]) -> Op[None]:
    """Item ``i``, a retraction (``retracts``) or else a correction: what it refers to, what it does to
    it (see :func:`_apply_link`), and why, in its notes."""
    b.d.kind[i] = "retraction" if retracts else "correction"
    hint = str(getattr(b.prepared[i].extraction, "retract_hint", "") or "") if retracts else ""
    if hint:
        target, reason = yield from _hinted_target(b, i, hint, order)
    else:
        found = None if retracts else (yield from _corrected_message(b, i, previous))
        target, reason = found or (yield from _previous_message(b, i, retracts, previous))
    if target is not None and target not in b.item_of:
        yield from b.fetch([target])
    if target is not None and b.agent_said(target) and not b.agent_said(b.mem_ids[i]):
        # "改成5月2号早上走了" after the assistant's "那出发改到哪天？": an answer to the agent corrects none of its words
        target, reason = None, "the message it refers to is the agent's (a reply to it, no correction of it)"
    if target is not None:
        yield from _apply_link(b, i, target, retracts, b.prepared[i].at)
    b.d.notes[i] = {"retracts" if retracts else "corrects": target, "reason": reason}


def _hinted_target(b: _Batch, i: int, hint: str, order: Sequence[int]) -> Op[tuple[str | None, str]]:
    """What a retraction naming its object (``hint``) takes back: the closest memory to the hint above
    ``retraction_cosine``, stored or said earlier in this batch; and why."""
    import numpy as np

    p = b.prepared[i]
    (hvec,) = yield Embed([hint])
    hvec = np.asarray(hvec, dtype=np.float32)
    options: list[tuple[float, str]] = []
    for mid, score in (yield NearestMemories(b.user, hvec, 5, (ACTIVE,))):
        options.append((float(score), mid))
    for j in order:
        if (b.prepared[j].at, j) >= (p.at, i) or b.d.status.get(j):
            continue  # only what was said before the retraction, and is still standing
        v = b.prepared[j].vector
        options.append((float(v @ hvec / max(1e-9, float(np.linalg.norm(v) * np.linalg.norm(hvec)))),
                        b.mem_ids[j]))
    options = [o for o in options if o[1] != b.mem_ids[i] and o[0] >= b.cfg.retraction_cosine]
    if options:
        options = yield from _retractable(b, i, options)
    if options:
        score, target = max(options, key=lambda o: (o[0], o[1]))
        return target, f"closest memory to {hint!r} (cosine {score:.2f})"
    return None, f"no memory close enough to {hint!r}"


def _retractable(b: _Batch, i: int, options: Sequence[tuple[float, str]]) -> Op[list[tuple[float, str]]]:
    """The ``(cosine, memory)`` options retraction ``i`` can take back: not a retraction or correction
    itself, not said after it, and said by its own speaker."""
    at = b.prepared[i].at
    yield from b.fetch([m for _, m in options if m not in b.item_of])
    # (a stored option the read did not return was deleted by another client since the search found it)
    options = [o for o in options if o[1] in b.item_of or (b.known(o[1]) and
               b.current(o[1]).kind not in ("retraction", "correction") and b.current(o[1]).at <= at)]
    # (one takes back only one's own words: not what another speaker said)
    said = yield from b.who_said([m for _, m in options])
    return [o for o, who in zip(options, said) if who == b.said(i)]


#: The latest messages of its session a correction that states a value may refer to (see _corrected_message).
_CORRECTION_REACH = 3


def _corrected_message(b: _Batch, i: int, previous: dict[str, list[int]]) -> Op[tuple[str, str] | None]:
    """What a correction that states a value corrects: of its session's last few messages that hold a
    value of the same kind, the latest that shares a word with it, or else the latest.  "不对不对，牙医是两点半"
    after "明天牙医约的下午两点" and "洗完牙顺便带咪咪去打疫苗" corrects the appointment, not the errand said in
    between, which the previous message rule would have superseded (a true statement hidden); "说错了，张姐是
    周四休" after "张姐周三休息" and "钟点工周五来" corrects what 张姐 does, though both name a day.  None: the
    correction states no value, or none of those messages holds one of its kind (the previous message rule
    then applies)."""
    sid = b.prepared[i].item.session_id
    lang = "zh" if b.prepared[i].extraction.language == "zh" else "en"
    text = b.prepared[i].item.text
    mine = value_groups(text, lang)
    if sid is None or not mine:
        return None
    words = _correction_words(text)
    shared = "the latest message of this session with a value of the kind it states and a word it says"
    latest: str | None = None  # (the messages are read latest first: the first that shares a word ends the search)
    for j in reversed(previous.get(sid, [])[-_CORRECTION_REACH:]):  # (this batch's, latest first)
        said = b.prepared[j].item.text
        if value_groups(said, lang) & mine:
            if words & _correction_words(said):
                return b.mem_ids[j], shared
            latest = latest or b.mem_ids[j]
    left = _CORRECTION_REACH - len(previous.get(sid, []))
    seen: set[str] = set()
    here = (yield LastMemoryInSession(b.user, sid)) if left > 0 else None
    while here is not None and left > 0:  # (then the stored ones, back along the session's NEXT chain)
        yield from b.fetch([here])
        if b.known(here) and value_groups(b.current(here).text, lang) & mine:
            if words & _correction_words(b.current(here).text):
                return here, shared
            latest = latest or here
        seen.add(here)
        left -= 1
        before = {n.target for n in (yield Expand(b.user, [here], [EDGE_NEXT]))} - seen - {here}
        here = before.pop() if len(before) == 1 else None
    return None if latest is None else (latest, "the latest message of this session with a value of the kind it states")


def _correction_words(text: str) -> frozenset[str]:
    """The words a correction and what it corrects may share: lexical tokens of two characters or more
    (a single Han character, "周" or "点", is in every day and time), none a number."""
    return frozenset(t for t in lexical_tokens(text) if len(t) > 1 and not any(c.isdigit() for c in t))


def _previous_message(b: _Batch, i: int, retracts: bool, previous: dict[str, list[int]]) -> Op[tuple[str | None, str]]:
    """What a retraction or correction without a hint refers to: the previous message of its session
    (of this batch, ``previous``, or else stored); and why."""
    sid = b.prepared[i].item.session_id
    target: str | None = None
    if sid is not None:
        if previous.get(sid):
            target = b.mem_ids[previous[sid][-1]]
        else:
            target = yield LastMemoryInSession(b.user, sid)
    if target is None:
        return None, "nothing earlier in this session to refer to"
    if retracts:
        theirs = (yield from b.who_said([target]))[0]
        if theirs != b.said(i):
            # "别提了，日本去不成了" after the other one's "你日本签证下来了吗": one takes back only
            # one's own words; said to another speaker's message it answers it (a reply, no retraction)
            del b.d.kind[i]
            return None, f"the previous message of this session is {theirs or 'unnamed'}'s, not the speaker's"
    return target, "the previous message of this session"


def _profile_facts(
    b: _Batch, order: Sequence[int], resolved: dict[str, str], self_id: str,
) -> dict[int, set[tuple[str, str]]]:
    """Profile facts: confident facts become RELATED edges (the user's profile).

    Returns each item's ``(subject id, attribute)`` of its facts: a stored fact with the same key is
    one of the statements the item may replace."""
    fact_keys: dict[int, set[tuple[str, str]]] = {}  # item -> (subject id, attribute) of its facts
    for i in order:
        if b.d.status.get(i) == INVALIDATED:
            continue
        for n, fact in enumerate(b.prepared[i].extraction.facts):
            subject, value = _fact_subject(fact, resolved, self_id), resolved.get(entity_key(fact.value))
            confidence = min(b.d.confidence[i], float(getattr(fact, "confidence", 1.0)))
            if subject is None or value is None or confidence < b.cfg.profile_confidence:
                continue
            b.d.profile_facts.add((i, n))
            fact_keys.setdefault(i, set()).add((subject, fact.attribute))
    return fact_keys


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


#: A verdict the rules gave a pair: (new item, candidate memory, the candidate's event time, verdict).
_Found = tuple[int, str, float, Verdict]
#: A pair of a new item and a candidate memory (with the candidate's event time).
_Pair = tuple[int, str, float]


@dataclass(frozen=True, slots=True)
class _Candidates:
    """What the new items of :func:`_statement_plan` are compared with."""

    frames: dict[int, tuple[FrameView, ...]]  # new item -> its promising frames (the items that state a value)
    stored: dict[int, set[str]]  # new item -> the stored memories it may replace
    earlier: dict[int, list[int]]  # new item -> the earlier items of the batch it may replace, in event-time order
    texts: dict[str, tuple[str, Any]]  # candidate memory -> (text, terms)
    position: dict[int, int]  # item -> its place in event-time order
    cosines: dict[int, "np.ndarray"]  # new item -> its sentence cosine with every item, by position


@dataclass(frozen=True, slots=True)
class _CandidateFrames:
    """The frames of the candidates a new item of its own speaker meets, each frame prepared for
    comparison once, split by role."""

    speaker: dict[str, Any]  # candidate memory -> who says it
    as_old: dict[str, tuple[FrameView, ...]]  # candidate memory -> its clauses that can be replaced
    as_new: dict[str, tuple[FrameView, ...]]  # candidate memory -> its clauses that can replace


def _statement_plan(
    b: _Batch, order: Sequence[int], resolved: dict[str, str], near: dict[int, list[tuple[str, float]]],
    fact_keys: dict[int, set[tuple[str, str]]],
) -> Op[None]:
    """Find, for each new item that states a value, the active memories it replaces (see
    :mod:`ripple._supersede`), and record the decisions in ``b.d``.

    Candidates: the item's nearest active memories (from the repeat check), the latest active
    memories that mention one of its entities, the memories holding a fact with the same subject and
    attribute, and the earlier items of the batch that are near it or share an entity; of those, only
    the ones whose text can hold a comparable value are parsed.  Items are decided in event-time
    order, so a batch holding a whole history in any order ends as the same history written in time
    order; a stored memory newer than the item makes the item history."""
    new_frames = yield from _new_frames(b, order)
    if not new_frames:
        return
    shared = _shared_entities(b, new_frames, resolved)
    cands = yield from _stored_candidates(b, new_frames, near, fact_keys, shared)
    position = {i: n for n, i in enumerate(order)}
    cosines = _batch_cosines(b, order, position, new_frames)
    earlier = _batch_candidates(b, order, position, cosines, shared)
    texts = yield from _candidate_texts(b, cands, earlier)
    c = _replaceable_candidates(b, _Candidates(new_frames, cands, earlier, texts, position, cosines))
    their_frames = yield from _old_frames(b, c)
    found, asking = yield from _compared_pairs(b, c, their_frames)
    asked = _nearest_asked(b, c, near, asking)
    if not found and not asked:
        return
    best = yield from _graded(b, found)
    if asked:
        yield from _pair_judged(b, asked, best, texts)
    decisions = sorted(best.values(), key=lambda x: (position[x.item], x.at, x.target))
    if b.cfg.judge is not None:
        decisions = yield from _judged(b, b.cfg.judge, decisions)
    _apply_decisions(b, decisions)


def _new_frames(b: _Batch, order: Sequence[int]) -> Op[dict[int, tuple[FrameView, ...]]]:
    """The promising frames of each new item that may state a value (none: the item replaces nothing)."""
    d = b.d
    # a titled text (a page, a passage) is a document, not a statement of the present state: its
    # paragraphs state many facts side by side, and one's number does not update another's
    # ("Watertown International Airport ... 6 mi" / "Alexandria ... 5 mi"; two paragraphs of one
    # article on snowfall): only texts without a title line (chat turns, notes) replace each other
    items = [i for i in order if d.status.get(i) != INVALIDATED and d.kind.get(i) != "retraction"
             and not d.notes.get(i, {}).get("corrects") and _title_key(b.prepared[i].item.text) is None]
    framed = (yield Frames([b.prepared[i].item.text for i in items])) if items else []
    new_frames: dict[int, tuple[FrameView, ...]] = {}
    for i, (views, _) in zip(items, framed):
        views = tuple(v for v in views if v.promising)
        if views:
            new_frames[i] = views
    return new_frames


def _shared_entities(b: _Batch, new_frames: dict[int, Any], resolved: dict[str, str]) -> dict[int, set[str]]:
    """The entities each new item mentions that a memory may share with it to be compared: not the
    speakers of the new items."""
    speakers = {resolved.get(str(b.said(i))) for i in new_frames}
    return {i: b.mentions.get(i, set()) - speakers for i in new_frames}


def _stored_candidates(
    b: _Batch, new_frames: dict[int, Any], near: dict[int, list[tuple[str, float]]],
    fact_keys: dict[int, set[tuple[str, str]]], shared: dict[int, set[str]],
) -> Op[dict[int, set[str]]]:
    """The stored memories each new item may replace: its nearest (from the repeat check), the ones
    holding a fact with the same key, and the latest that mention one of its ``shared`` entities."""
    cands: dict[int, set[str]] = {
        i: {m for m, score in near.get(i, ())[: b.cfg.candidates] if score >= b.cfg.candidate_cosine
            and m not in b.item_of}
        for i in new_frames
    }
    yield from _same_fact_key(b, cands, fact_keys)
    yield from _mentioning_shared(b, cands, shared)
    return cands


def _same_fact_key(b: _Batch, cands: dict[int, set[str]], fact_keys: dict[int, set[tuple[str, str]]]) -> Op[None]:
    """Add to ``cands`` the memories holding a fact with the same subject and attribute ("I live in
    ..." / "I moved to ...")."""
    keyed = {i: fact_keys[i] for i in cands if i in fact_keys}
    if not keyed:
        return
    subjects = sorted({s for ks in keyed.values() for s, _ in ks})
    attributes = sorted({a for ks in keyed.values() for _, a in ks})
    for e in (yield RelatedEdges(b.user, subjects, attributes)):
        for i, ks in keyed.items():
            if (e.src, e.predicate) in ks and e.evidence and e.evidence not in b.item_of:
                cands[i].add(e.evidence)


def _mentioning_shared(b: _Batch, cands: dict[int, set[str]], shared: dict[int, set[str]]) -> Op[None]:
    """Add to ``cands`` the latest memories that mention one of the item's entities (not its speaker)."""
    entity_ids = sorted({e for ids in shared.values() for e in ids})
    if not (entity_ids and b.cfg.per_entity):
        return
    by_entity: dict[str, list[str]] = {}
    for eid, mid in (yield MemoriesMentioning(b.user, entity_ids, per_entity=b.cfg.per_entity)):
        by_entity.setdefault(eid, []).append(mid)
    for i, ids in shared.items():
        cands[i].update(m for e in ids for m in by_entity.get(e, ()) if m not in b.item_of)


def _batch_cosines(b: _Batch, order: Sequence[int], position: dict[int, int],
                   new_frames: dict[int, Any]) -> dict[int, "np.ndarray"]:
    """Each new item's sentence cosine with every item of the batch (indexed by ``position``)."""
    import numpy as np

    units = _stacked(b.prepared, order)
    units /= np.maximum(np.linalg.norm(units, axis=1, keepdims=True), 1e-9)
    cosines = units[[position[i] for i in new_frames]] @ units.T
    return {i: cosines[n] for n, i in enumerate(new_frames)}


def _batch_candidates(b: _Batch, order: Sequence[int], position: dict[int, int], cosines: dict[int, "np.ndarray"],
                      shared: dict[int, set[str]]) -> dict[int, list[int]]:
    """The earlier items of this batch each new item may replace: the ones near it or sharing an
    entity (see :func:`_earlier_candidates`)."""
    import numpy as np

    live = [j for j in order if b.d.status.get(j) != INVALIDATED and b.d.kind.get(j) != "retraction"]
    mentioned_by: dict[str, list[int]] = {}  # entity -> the live items mentioning it, in event-time order
    for j in live:
        for entity in b.mentions.get(j, ()):
            mentioned_by.setdefault(entity, []).append(j)
    live_at = np.array([position[j] for j in live], dtype=np.int64)
    return {i: _earlier_candidates(i, live, live_at, position, row, shared[i], mentioned_by, b.cfg)
            for i, row in cosines.items()}


def _candidate_texts(
    b: _Batch, cands: dict[int, set[str]], earlier: dict[int, list[int]],
) -> Op[dict[str, tuple[str, Any]]]:
    """The text and terms of every candidate: the stored ones still active (retractions state nothing
    to replace), and the earlier items of the batch."""
    wanted = sorted({m for ms in cands.values() for m in ms})
    if wanted:
        yield from b.fetch(wanted)
    texts: dict[str, tuple[str, Any]] = {m: (b.current(m).text, b.current(m).terms) for m in wanted if m in b.stored
             and b.current(m).status == ACTIVE and b.current(m).kind != "retraction"}
    texts.update((b.mem_ids[j], (b.prepared[j].item.text, b.terms[j])) for js in earlier.values() for j in js)
    return texts


def _replaceable_candidates(b: _Batch, c: _Candidates) -> _Candidates:
    """``c`` with only the candidates each item may replace: only candidates whose text can hold a
    comparable value are parsed (a regular-expression test)."""
    # nor a titled one, nor one about another numbered thing ("Sprint 19 ... review 19" does not
    # update "Sprint 18 ... review 18")
    # (what a candidate text says alone is read once, not once per new item that meets it)
    titled = {m: _title_key(text) is not None for m, (text, _) in c.texts.items()}
    numbers = {m: numbered_names(text) for m, (text, _) in c.texts.items()}
    stored: dict[int, set[str]] = {}
    earlier: dict[int, list[int]] = {}
    for i, frames in c.frames.items():
        test = worth_parsing([v.frame for v in frames], b.prepared[i].extraction, b.terms[i])
        numbered = numbered_names(b.prepared[i].item.text)

        def replaceable(m: str) -> bool:
            theirs = numbers[m]
            return not titled[m] and not (numbered and theirs and not numbered & theirs) and test(*c.texts[m])

        stored[i] = {m for m in c.stored[i] if m in c.texts and replaceable(m)}
        earlier[i] = [j for j in c.earlier[i] if replaceable(b.mem_ids[j])]
    return replace(c, stored=stored, earlier=earlier)


def _old_frames(b: _Batch, c: _Candidates) -> Op[_CandidateFrames]:
    """Who says each candidate, and the frames of the ones a new item of the same speaker meets."""
    old_ids = sorted({m for ms in c.stored.values() for m in ms})
    # every clause of a memory that may be replaced (a stored memory newer than the item is the one
    # that replaces: the roles swap); one speaker's statement is never replaced by another's
    old_ids += sorted({b.mem_ids[j] for js in c.earlier.values() for j in js})
    # (the speakers first, from the parses: a text that no new item of its own speaker meets is not
    # read into frames, it could only be compared with another speaker's statements; nor, once known,
    # one none of whose frames can replace or be replaced: it gives no pair either way)
    speaker_of: dict[str, Any] = {}
    if old_ids:
        speaker_of = dict(zip(old_ids, (yield Speakers([c.texts[m][0] for m in old_ids]))))
    heard = {m for i in c.frames for m in (*c.stored[i], *(b.mem_ids[j] for j in c.earlier[i]))
             if speaker_of[m] == b.said(i)}
    compared = [m for m in old_ids if m in heard]
    old_frames: dict[str, tuple[FrameView, ...]] = {}
    if compared:
        for m, (frames, _) in zip(compared, (yield Frames([c.texts[m][0] for m in compared], comparable=True))):
            old_frames[m] = frames
    # each frame is prepared for comparison once (a memory meets many others: on templated text,
    # nearly every earlier turn of its template), and a clause that can never replace or be replaced,
    # read alone, is left out of the pairs (the same test structural_match makes of each pair)
    as_old = {m: tuple(v for v in views if v.replaceable) for m, views in old_frames.items()}
    as_new = {m: tuple(v for v in views if v.replacing) for m, views in old_frames.items()}
    return _CandidateFrames(speaker_of, as_old, as_new)


def _compared_pairs(b: _Batch, c: _Candidates, f: _CandidateFrames) -> Op[tuple[list[_Found], dict[int, list[_Pair]]]]:
    """The frames compared (then graded by the cosine of their masked clauses: :func:`_graded`).

    Returns the verdicts the rules found, and each item's pairs the pair judge may be asked about."""
    found: list[_Found] = []
    asked: dict[int, list[_Pair]] = {}  # the pairs the pair judge may be asked about
    for i in c.frames:
        mine_found, mine_asked = yield from _item_pairs(b, c, f, i)
        found += mine_found
        if mine_asked:
            asked[i] = mine_asked
    return found, asked


def _item_pairs(b: _Batch, c: _Candidates, f: _CandidateFrames, i: int) -> Op[tuple[list[_Found], list[_Pair]]]:
    """Item ``i``'s frames compared with those of its candidates of its own speaker: the verdicts, and
    the candidates the pair judge may read (ones a judge of their language reads, :func:`ripple._pairjudge.reads`,
    that the rules neither acted on nor refused, but for :data:`~ripple._supersede.JUDGE_READS_REFUSED`)."""
    said = b.said(i)
    if b.agent_said(b.mem_ids[i]):
        return [], []  # the agent's reply replaces nothing (AGENT_ROLE)
    targets = [(m, b.current(m).at) for m in sorted(c.stored[i]) if f.speaker[m] == said and not b.agent_said(m)]
    targets += [(b.mem_ids[j], b.prepared[j].at) for j in c.earlier[i]
                if f.speaker[b.mem_ids[j]] == said and not b.agent_said(b.mem_ids[j])]
    found: list[_Found] = []
    asked: list[_Pair] = []
    if not targets:
        return found, asked
    mine_new = tuple(v for v in c.frames[i] if v.replacing)
    mine_old: tuple[FrameView, ...] | None = None
    judged = b.cfg.pair_judge and reads(b.prepared[i].item.text)
    test_pair = compare if judged else match  # (why the rules refuse matters only to the judge)
    for target, at in targets:
        if at <= b.prepared[i].at:
            olds, news = f.as_old[target], mine_new
        else:
            if mine_old is None:
                ((mine, _),) = yield Frames([b.prepared[i].item.text])
                mine_old = tuple(v for v in mine if v.replaceable)
            olds, news = mine_old, f.as_new[target]
        refused = not (olds and news)  # an addition, a change by an amount, an event: nothing to replace
        for old in olds:
            for new in news:
                v = test_pair(old, new, multi_valued=b.cfg.multi_valued)
                if isinstance(v, Verdict):
                    found.append((i, target, at, v))
                elif v is not None and v not in JUDGE_READS_REFUSED:
                    refused = True
        older_text = c.texts[target][0]
        if judged and not refused and reads(older_text) and not _said_again(b.prepared[i].item.text, older_text):
            asked.append((i, target, at))
    return found, asked


def _said_again(a: str, b: str) -> bool:
    """Whether two texts say the same words (case and spacing aside): a repeat, never a change, so never
    put to the pair judge (which read 80 such pairs of the synthetic store, written without dedup, as
    changes: benchmarks/RESULTS.md, "A learned pair judge")."""
    return a.casefold().split() == b.casefold().split()


def _nearest_asked(b: _Batch, c: _Candidates, near: dict[int, list[tuple[str, float]]],
                   asked: dict[int, list[_Pair]]) -> list[_Pair]:
    """The pairs put to the pair judge: of each item's, at most ``pair_judge_candidates``, the nearest
    in meaning first (a candidate found by a shared entity alone last)."""
    out: list[_Pair] = []
    for i, mine_asked in asked.items():
        row = c.cosines[i]
        closeness = dict(near.get(i, ()))
        closeness.update((b.mem_ids[j], float(row[c.position[j]])) for j in c.earlier[i])
        mine_asked.sort(key=lambda x: -closeness.get(x[1], -1.0))
        out += mine_asked[: b.cfg.pair_judge_candidates]
    return out


def _graded(b: _Batch, found: Sequence[_Found]) -> Op[dict[tuple[int, str], _Decision]]:
    """The verdicts graded by the cosine of their masked clauses: the best level of each (item,
    candidate) pair, high or medium (below medium: left alone)."""
    import numpy as np

    best: dict[tuple[int, str], _Decision] = {}
    if not found:
        return best
    masked = sorted({t for *_, v in found for t in (v.old_masked, v.new_masked)})
    vectors = yield ClauseVectors(masked)
    index = {t: np.asarray(vec, dtype=np.float32) for t, vec in zip(masked, vectors)}
    lengths = {t: np.linalg.norm(vec) for t, vec in index.items()}  # (once per clause, not per pair)
    rank = {HIGH: 2, MEDIUM: 1}
    for i, target, at, v in found:
        old, new = index[v.old_masked], index[v.new_masked]
        cosine = float(old @ new / max(1e-9, float(lengths[v.old_masked] * lengths[v.new_masked])))
        level, reasons = grade(v, cosine, high=b.cfg.frame_cosine_high, medium=b.cfg.frame_cosine_medium,
                               same=b.cfg.frame_cosine_same)
        if level not in rank:
            continue
        have = best.get((i, target))
        if have is None or rank[level] > rank[have.level]:
            best[(i, target)] = _Decision(i, target, at, level, v, reasons)
    return best


def _apply_decisions(b: _Batch, decisions: Sequence[_Decision]) -> None:
    """The decisions applied in event-time order: a high one supersedes (the older side), a medium one
    is recorded as a conflict on both sides (``cfg.conflicts``)."""
    d, mem_ids = b.d, b.mem_ids
    gone: set[str] = set()  # superseded in this plan
    for dec in decisions:
        i, new_id = dec.item, mem_ids[dec.item]
        if new_id in gone or dec.target in gone:
            continue
        note = {"memory": dec.target, "confidence": dec.level, "value": [dec.verdict.old_value, dec.verdict.new_value],
                "frame": [dec.verdict.old_clause, dec.verdict.new_clause], "why": "; ".join(dec.reasons)}
        at = b.prepared[i].at
        if dec.level == HIGH and dec.at <= at:
            _supersede(b, old=dec.target, new=new_id, at=at)
            gone.add(dec.target)
            d.notes.setdefault(i, {}).setdefault("supersedes", []).append(note)
        elif dec.level == HIGH:  # back-filled: the stored statement is newer, this one is its history
            _supersede(b, old=new_id, new=dec.target, at=dec.at)
            gone.add(new_id)
            d.notes.setdefault(i, {})["superseded_by"] = note
        elif b.cfg.conflicts:
            newer, older = (new_id, dec.target) if dec.at <= at else (dec.target, new_id)
            d.edges.append(EdgeRecord(newer, EDGE_CONFLICTS, older, b.user, 1.0, at=max(at, dec.at)))
            d.notes.setdefault(i, {}).setdefault("conflicts", []).append(note)
            # the other side carries the same note, so that a recall hit of either one shows that it
            # may be out of date (or may replace the other) without another store round trip
            _note_conflict(b, dec.target, {**note, "memory": new_id})


def _pair_judged(b: _Batch, asked: Sequence[_Pair], best: dict[tuple[int, str], _Decision],
                 texts: dict[str, tuple[str, Any]]) -> Op[None]:
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
        mine, theirs = b.prepared[i].item.text, texts[target][0]
        ordered.append((theirs, mine) if at <= b.prepared[i].at else (mine, theirs))
    for (i, target, at), (old, new), p in zip(pending, ordered, (yield JudgePairs(ordered))):
        if p < (b.cfg.pair_judge_min if language(old, new) == "en" else b.cfg.pair_judge_min_zh):
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


def _judged(b: _Batch, judge: Any, decisions: list[_Decision]) -> Op[list[_Decision]]:
    """The medium decisions put to the configured judge: 'supersedes' makes one high, 'unrelated'
    drops it, anything else keeps it a conflict."""
    medium = [x for x in decisions if x.level == MEDIUM]
    if not medium:
        return decisions
    cases = [JudgeCase(old_text=b.text_of(x.target), new_text=b.prepared[x.item].item.text,
                       old_value=x.verdict.old_value, new_value=x.verdict.new_value, reasons=x.reasons)
             for x in medium]
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


def _note_conflict(b: _Batch, holder: str, note: dict[str, Any]) -> None:
    """Add a conflict note to ``holder``'s metadata (an item of this batch, or a stored memory rewritten)."""
    if holder in b.item_of:
        b.d.notes.setdefault(b.item_of[holder], {}).setdefault("conflicts", []).append(note)
    elif holder in b.stored:
        b.d.rewrites[holder] = with_ripple_notes(b.current(holder),
                                                 lambda notes: notes.setdefault("conflicts", []).append(note))


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


def _supersede(b: _Batch, *, old: str, new: str, at: float) -> None:
    """``old`` is no longer true from ``at``: it gets ``valid_to`` and a SUPERSEDES edge from ``new``."""
    d = b.d
    if old in b.item_of:
        j = b.item_of[old]
        if d.status.get(j) != INVALIDATED:
            d.status[j], d.valid_to[j] = SUPERSEDED, at
    elif old in b.stored:
        rec = b.current(old)
        if rec.status == ACTIVE:
            d.rewrites[old] = replace(rec, status=SUPERSEDED, valid_to=at)
    d.edges.append(EdgeRecord(new, EDGE_SUPERSEDES, old, b.user, 1.0, at=at))


def _apply_link(b: _Batch, i: int, target: str, retracts: bool, at: float) -> Op[None]:
    """Invalidate (retraction) or supersede (correction) ``target`` on behalf of item ``i``."""
    d, mem_ids = b.d, b.mem_ids
    if retracts:
        if target in b.item_of:
            d.status[b.item_of[target]] = INVALIDATED
        else:
            yield from b.fetch([target])
            if target in b.stored:
                d.rewrites[target] = replace(b.current(target), status=INVALIDATED)
        d.edges.append(EdgeRecord(mem_ids[i], EDGE_RETRACTS, target, b.user, 1.0, at=at))
        return
    # a correction replaces what it corrects, and carries its words and entities so that the
    # questions the old memory answered now find the corrected one
    if target in b.item_of:
        j = b.item_of[target]
        d.extra_terms[i] = tuple(b.terms[j])
        d.extra_mentions[i] = sorted(b.mentions[j])
    else:
        yield from b.fetch([target])
        if target not in b.stored:
            return
        d.extra_terms[i] = b.current(target).terms
        d.extra_mentions[i] = sorted((yield from _mentioned(b, [target]))[target])
    _supersede(b, old=target, new=mem_ids[i], at=at)
