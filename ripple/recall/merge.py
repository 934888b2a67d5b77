"""Stage 3, merge: seed score plus the channels' activation, then the priors read from each record.

Pure functions over plain data: the pipeline fetches the records, these
functions decide the scores.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from graphstore.records import StoredMemory

from .activation import Edge
from .candidates import Candidate, ChannelResult, Seeded
from .config import MergeConfig, RecallConfig, RerankMethod, TierConfig
from .query import QueryInput, has_recency_cue
from .scoring import recency_factor, top

if TYPE_CHECKING:
    from datetime import date

__all__ = ["merge_channels", "merge_channels_reference", "apply_priors", "tier_of", "speaker_boosts", "names_of_speakers", "title_boosts", "title_links", "when_boosts", "time_answer_boosts", "question_factors", "path_to"]


def merge_channels(seeded: Seeded, results: Mapping[str, ChannelResult], config: RecallConfig, k: int) -> list[Candidate]:
    """Candidates scored ``seed / best seed + sum(weight x activation)``, best first, cut to what the
    next stages need; a baseline's final ranking passes through as it is.

    A memory reached by spreading keeps each channel's activation in
    ``channels``; when spreading gave it more than its own seed score, its
    ``via`` is the channel that gave the most (the first one on a tie) and its
    ``path`` the edges from that channel's source to it.

    Spreading reaches hundreds to thousands of memories of which a hundred are
    kept: every one is scored (plain floats in one dict), but only the kept
    ones become (or are updated as) :class:`Candidate` objects; the kept ones
    that only spreading reached join ``seeded.cands``, and ``seeded.scored``
    counts every memory scored (:func:`merge_channels_reference` is the
    readable spec it is tested against: the same kept list, to the bit).
    """
    cands = seeded.cands
    if seeded.final:
        return list(cands.values())
    weights = {name: cfg.weight for cfg in config.spread.channels if (name := cfg.name) in results}
    top_seed = seeded.top
    # (each term as the reference adds it: a channel that did not reach a memory adds 0.0, a no-op)
    activation: dict[str, float] = {}
    for name, res in results.items():
        w = weights[name]
        for n, raw in res.activation.items():
            activation[n] = activation.get(n, 0.0) + w * (raw or 0.0)
    score = {i: c.seed / top_seed + 0.0 for i, c in cands.items()}
    for n, act in activation.items():
        c = cands.get(n)
        score[n] = (0.0 if c is None else c.seed) / top_seed + act
    seeded.scored = len(score)
    keep: list[Candidate] = []
    for n in top(score, kept_count(config, k)):
        c = cands.get(n)
        if c is None:
            c = cands[n] = Candidate(n)
        reached = activation.get(n)
        if reached is not None:
            c.activation = reached
            c.via = _via(c, results, weights, top_seed)
        c.score = score[n]
        if c.via in results:
            res = results[c.via]
            c.path = path_to(c.id, res.parents, res.sources)
        keep.append(c)
    return keep


def kept_count(config: RecallConfig, k: int) -> int:
    """How many merged candidates the next stages need (the reranker's head, twice, or 4 k)."""
    rr = config.rerank
    return max(rr.top_n, k) * 2 if rr.method != RerankMethod.NONE else max(k * 4, 50)


def _via(c: Candidate, results: Mapping[str, ChannelResult], weights: Mapping[str, float], top_seed: float) -> str:
    """Record each channel's activation of ``c``; its ``via``: the channel that gave the most (the
    first on a tie) when spreading gave more than its seed score, else as it was."""
    best, best_name = float("-inf"), ""
    for name, res in results.items():
        raw = res.activation.get(c.id)
        if raw is not None:
            c.channels[name] = raw
        part = weights[name] * (raw or 0.0)
        if part > best:
            best, best_name = part, name
    return best_name if c.activation > c.seed / top_seed else c.via


def merge_channels_reference(seeded: Seeded, results: Mapping[str, ChannelResult], config: RecallConfig,
                             k: int) -> list[Candidate]:
    """The readable spec of :func:`merge_channels`: a candidate for every memory reached, all scored
    and sorted, then cut (the tests hold the fast version to it; ``seeded.scored`` is left alone)."""
    cands = seeded.cands
    if seeded.final:
        return list(cands.values())
    weights = {name: cfg.weight for cfg in config.spread.channels if (name := cfg.name) in results}
    reached: set[str] = set()
    for res in results.values():
        reached.update(res.activation)
    for n in reached:
        c = cands.get(n)
        if c is None:
            c = cands[n] = Candidate(n)
        act, best, best_name = 0.0, float("-inf"), ""
        for name, res in results.items():
            raw = res.activation.get(n)
            if raw is not None:
                c.channels[name] = raw
            part = weights[name] * (raw or 0.0)
            act += part
            if part > best:
                best, best_name = part, name
        c.activation = act
        if act > c.seed / seeded.top:  # most of its score came from spreading: say through which channel
            c.via = best_name
    for c in cands.values():
        c.score = (c.seed / seeded.top) + c.activation
    ordered = sorted(cands.values(), key=lambda c: (-c.score, c.id))
    keep = ordered[: kept_count(config, k)]
    for c in keep:
        if c.via in results:
            res = results[c.via]
            c.path = path_to(c.id, res.parents, res.sources)
    return keep


def apply_priors(q: QueryInput, cands: list[Candidate], records: Mapping[str, StoredMemory],
                 cfg: MergeConfig) -> tuple[list[Candidate], float]:
    """Scale each candidate by what its record says (time, importance, confidence, tier, the speaker and
    title the query names) and re-sort; returns the candidates and the time weight used.  With every
    prior at 0 (the baselines) the candidates pass through untouched."""
    time_w = cfg.time_weight
    if not cfg.has_priors():
        return cands, time_w
    if cfg.recency_cue_weight > time_w and has_recency_cue(q.text):
        time_w = cfg.recency_cue_weight
    conf_w, tiers = cfg.confidence_weight, cfg.tiers
    cand_records = [records[c.id] for c in cands]
    speaker_boost = speaker_boosts(q.text, cand_records, cfg.speaker_weight, cfg.speaker_aliases)
    title_boost = title_boosts(q.text, cand_records, cfg.title_weight)
    when_boost = when_boosts(q.text, q.now, cand_records, cfg.when_weight)
    answer_boost = time_answer_boosts(q.text, cand_records, cfg.time_answer_weight)
    question = question_factors(cand_records, cfg.question_weight)
    for c in cands:
        rec = records[c.id]
        c.importance = rec.importance
        c.confidence = rec.confidence
        c.recency = recency_factor((q.now - rec.at) / 86400.0, cfg.half_life_days)
        c.tier, tier_weight = tier_of(rec, q.now, tiers)
        c.score = c.score * (1.0 - time_w + time_w * c.recency) + cfg.importance_weight * (rec.importance - 0.5)
        c.score *= (1.0 - conf_w + conf_w * rec.confidence) * tier_weight * speaker_boost.get(c.id, 1.0)
        c.score *= title_boost.get(c.id, 1.0) * when_boost.get(c.id, 1.0) * answer_boost.get(c.id, 1.0)
        c.score *= question.get(c.id, 1.0)
    cands.sort(key=lambda c: (-c.score, c.id))
    return cands, time_w


def tier_of(rec: StoredMemory, now: float, cfg: TierConfig) -> tuple[str, float]:
    """The forgetting tier of a memory record at time ``now`` and its score weight (see :class:`TierConfig`)."""
    if not cfg.enabled:
        return "hot", 1.0
    if rec.pinned or rec.access_count + rec.mentions - 1 >= cfg.frequent_uses:
        return "hot", 1.0
    last = max(rec.at, rec.last_seen or 0.0, rec.last_access or 0.0)
    days = (now - last) / 86400.0
    if days <= cfg.hot_days:
        return "hot", 1.0
    if days <= cfg.warm_days:
        return "warm", cfg.warm_weight
    if days <= cfg.cold_days:
        return "cold", cfg.cold_weight
    return "frozen", cfg.frozen_weight


def speaker_boosts(query: str, records: Sequence[StoredMemory], weight: float, aliases: bool = True) -> dict[str, float]:
    """Score multipliers for turns *said by* the person the query asks about (memory id -> ``1 + weight``).

    "What does Melanie do to destress?" is about Melanie's own turns, yet her
    name is just as present in Caroline's replies ("That's great, Melanie!"),
    where no route tells speaker from addressee.  Only when the query names
    some but not all of the speakers among the candidates are their turns
    boosted (or names them all, but all except one only as whom something is
    done to or said about: "What did Jon say about Gina's progress?",
    :func:`extractors.speaker.spoken_of`); passages and one-speaker logs get nothing.  With ``aliases`` the
    query may name a speaker the way friends do ("小雨" for 林晓雨, "浩子" for
    陈浩, "Mel" for Melanie: :func:`extractors.speaker.named_speakers`).
    """
    if weight <= 0 or not records:
        return {}
    from extractors.speaker import named_speakers, says_name, split_speaker, spoken_of

    speaker_of: dict[str, str] = {}
    for rec in records:
        turn = split_speaker(rec.text)
        if turn.speaker is not None:
            speaker_of[rec.id] = turn.subject
    speakers = set(speaker_of.values())
    if len(speakers) < 2:
        return {}
    if aliases:
        named = named_speakers(query, speakers)
    else:
        text = query.lower()
        named = {sp for sp in speakers if says_name(text, sp)}
    if named == speakers:  # every speaker named: the question is about the one it does not name as an object
        named = named - spoken_of(query, named)
        if len(named) != 1:
            return {}
    if not named:
        return {}
    return {i: 1.0 + weight for i, sp in speaker_of.items() if sp in named}


def names_of_speakers(names: Sequence[str], records: Iterable[StoredMemory], query: str = "") -> int:
    """How many of ``names`` (names a query asks about that no memory's words hold) are a speaker of the
    candidates, by the forms friends use: "晓雨" is 林晓雨, whose turns are stored as "林晓雨: ...".

    The lexical route knows a name only as a word of some memory, and "晓雨" is no word of "林晓雨" to the
    segmenter; calibrated relevance, which reads how many of the names the user knows, would take a
    question about the user's own friend for one about a stranger (see :func:`speaker_boosts`).  A name
    of several words ("Su Lei", read as "su" and "lei") counts whole when ``query`` names a speaker by it."""
    if not names:
        return 0
    from extractors.speaker import named_speakers, romanised_aliases, split_speaker

    speakers = {t.subject for t in (split_speaker(r.text) for r in records) if t.speaker is not None}
    if not speakers:
        return 0
    # (the words of the romanised names the whole query says: "Su Lei" makes "su" a known name too)
    said = {w.lower() for k in named_speakers(query, speakers) for a in romanised_aliases(k) if a in query
            for w in a.split()} if query else set()
    # (a Latin name token is lower-cased; a romanised Chinese name is matched capitalised, as it was asked)
    return sum(1 for n in names if n in said or named_speakers(n.title() if n.isascii() else n, speakers))


def title_boosts(query: str, records: Sequence[StoredMemory], weight: float) -> dict[str, float]:
    """Score multipliers for documents whose title the query names (memory id -> ``1 + weight``).

    "Where was Philip Carlo born?" is about the page titled "Philip Carlo"
    more than about the pages that mention him.  Memories without a title line
    (chat turns) are untouched.
    """
    if weight <= 0 or not records:
        return {}
    from extractors.heading import names_title, split_title, title_key
    from extractors.normalize import entity_key

    query_key = entity_key(query)
    out = {}
    for rec in records:
        title = split_title(rec.text)
        if title is not None and names_title(query_key, title_key(title)):
            out[rec.id] = 1.0 + weight
    return out


def title_links(cands: list[Candidate], records: Mapping[str, StoredMemory], weight: float,
                sources: int, fan_damping: float = 0.0) -> list[Candidate]:
    """Lift the titled documents that the ``sources`` best candidates name to ``weight`` times the score of
    the one naming them, divided by ``n ** fan_damping`` when it names ``n`` of the candidates' pages, and
    re-sort.

    Why: a page that names another page's title links to it, as a wiki's hyperlink does ("Intrepid Wind
    Farm\n... located in Sac and ... Iowa" names the page "Iowa\n...").  A multi-hop question names the
    first page and asks about the second ("Who was president when the area where Intrepid Wind Farm is
    located became a state?"), which shares no word with it; the link carries the first page's score to
    the second, one hop away, so the second ranks just below it.  Sources are the best candidates after
    the priors (where a question's first hop is, when it was found at all); targets are titled candidates
    (chat turns have no title line: a store of chat alone is untouched); a page with several passages is
    lifted once, by its best one, and a passage never links to another of its own page.  A lifted
    candidate's ``via`` is ``"title"``, its path the one link and ``channels["title"]`` the link's weight,
    so that its calibrated relevance follows its source's as a spread hit's does
    (:func:`ripple.recall.relevance.through_source`).

    Fan damping: a page that names many pages (the euro's, naming every country that adopted it; a
    state's, naming its neighbours) says little about any one of them, so its score is shared among its
    links as spreading shares an entity's among the memories that mention it (hub damping).  A page that
    names one candidate page passes the whole ``weight``.
    """
    if weight <= 0 or sources <= 0 or len(cands) < 2:
        return cands
    from extractors.heading import names_title, split_title, title_key
    from extractors.normalize import entity_key

    keys: dict[str, str] = {}
    titles: dict[str, str] = {}
    for c in cands:
        title = split_title(records[c.id].text)
        if title is not None:
            keys[c.id], titles[c.id] = title_key(title), title
    if not keys:
        return cands
    lifted = False
    for src in cands[:sources]:
        text = records[src.id].text
        body = entity_key(text.partition("\n")[2] if src.id in keys else text)  # (a page's own title is no link)
        linked: dict[str, Candidate] = {}  # title -> the page's best passage: a page is lifted once
        for c in cands:
            key = keys.get(c.id)
            # (nor one to another passage of the same page: MuSiQue keeps several paragraphs under one title)
            if key is None or key in linked or key == keys.get(src.id) or not names_title(body, key):
                continue
            linked[key] = c
        floor = weight * src.score / (len(linked) ** fan_damping if linked else 1.0)
        for c in linked.values():
            if c.score >= floor:
                continue
            c.score = floor
            c.via = "title"
            c.channels["title"] = weight  # (as a channel's activation: the hit's relevance follows its source's)
            c.path = [Edge(src.id, c.id, weight, type="NAMES_TITLE", predicate=titles[c.id])]
            lifted = True
    if lifted:
        cands.sort(key=lambda c: (-c.score, c.id))
    return cands


def when_boosts(query: str, now: float, records: Sequence[StoredMemory], weight: float) -> dict[str, float]:
    """Score multipliers for memories in a time the query names (memory id -> ``1 + weight``).

    "What did Maria donate in December 2023?" is about what happened then: a
    memory counts when its event time falls in a named range, or when a time it
    names does ("we went camping last month", resolved against its own date when
    it was stored).  Queries that name no time change nothing.
    """
    if weight <= 0 or not records:
        return {}
    from datetime import datetime, timezone

    from extractors.timeexpr import overlaps, query_times

    asked = query_times(query, datetime.fromtimestamp(now, tz=timezone.utc))
    if not asked:
        return {}
    out = {}
    for rec in records:
        day = datetime.fromtimestamp(rec.at, tz=timezone.utc).date()
        spans = [(day, day), *_stored_times(rec)]
        if any(overlaps(a, s) for a in asked for s in spans):
            out[rec.id] = 1.0 + weight
    return out


def time_answer_boosts(query: str, records: Sequence[StoredMemory], weight: float) -> dict[str, float]:
    """Score multipliers for memories that name a time, when the query asks for one (id -> ``1 + weight``).

    "When is the Northwind deadline?" is answered by a memory that says when
    ("... has to go live before the trade fair on 14 June"), not by the ones
    that only share its words; the write path recorded the times each memory
    names (``metadata["ripple"]["times"]``).  Like a word in every document, a
    time in every candidate tells nothing (encyclopedia passages nearly all name
    a year): the bonus shrinks with the share of candidates that name one.
    Other questions change nothing.
    """
    if weight <= 0 or not records:
        return {}
    from extractors.timeexpr import asks_when

    if not asks_when(query):
        return {}
    timed = [rec.id for rec in records if _stored_times(rec)]
    bonus = weight * (1.0 - len(timed) / len(records))
    return {i: 1.0 + bonus for i in timed}


def question_factors(records: Sequence[StoredMemory], weight: float) -> dict[str, float]:
    """Score multipliers for turns that only ask a question (memory id -> ``1 - weight``).

    "店名想好了吗" ("Have you picked the shop's name?") matches a question about the
    shop's name better than its answer ("叫'慢半拍'") does, yet holds nothing
    the asker wants: the answer is the next turn, which the session channel
    reaches from it (spreading has run before this prior, so the question still
    passes its score on).  A turn whose message is one sentence, a question
    (:func:`extractors.filters.is_question_only`), was never evidence in the six
    development conversations.  Other memories are untouched.
    """
    if weight <= 0 or not records:
        return {}
    from extractors.filters import is_question_only
    from extractors.speaker import split_speaker

    factor = max(0.0, 1.0 - weight)
    return {rec.id: factor for rec in records if is_question_only(rec.text[split_speaker(rec.text).message_start:])}


def _stored_times(rec: StoredMemory) -> list[tuple["date", "date"]]:
    """The times a memory names, as the write path resolved them (metadata["ripple"]["times"])."""
    if '"times"' not in rec.metadata_json:
        return []
    import json
    from datetime import date

    try:
        times = json.loads(rec.metadata_json).get("ripple", {}).get("times", [])
        return [(date.fromisoformat(a), date.fromisoformat(b)) for a, b in times]
    except (ValueError, TypeError, AttributeError):
        return []


def path_to(node: str, parents: Mapping[str, Edge], sources: set[str]) -> list[Edge]:
    """Edges from a source of the channel to ``node``, following the best incoming edges back."""
    path: list[Edge] = []
    seen = {node}
    while node in parents and (not path or node not in sources):
        e = parents[node]
        path.append(e)
        node = e.source
        if node in seen:
            break
        seen.add(node)
    path.reverse()
    return path
