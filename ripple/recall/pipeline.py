"""The recall walk, written once as an I/O-free generator.

``recall_plan`` yields :class:`Call` requests ("neighbours of these ids",
"token vectors of these candidates") and receives the store's answers; it
never touches a store itself.  :class:`ripple.Memory` drives it with plain
calls, :class:`ripple.AsyncMemory` with ``await``, so the two APIs cannot
disagree (the pattern of httpx's ``Auth.auth_flow``).

Stages: seed -> spread -> merge -> rerank.  Every candidate keeps its score
parts and, when it was reached by spreading, the edge path from a seed.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generator, Sequence

from graphstore.records import EDGE_MENTIONS, EDGE_NEXT, EDGE_RELATED, Neighbor

from .activation import Edge, SpreadResult, spread_flow
from .config import MergeMethod, RecallConfig, RerankMethod, SeedConfig, SpreadMethod, TierConfig
from .scoring import bm25, maxsim_stacked, minmax, recency_factor, rrf, top, weighted_sum

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Call", "QueryInput", "QueryVectors", "DenseSearch", "dense_search", "Candidate", "PlanResult", "recall_plan", "MODES", "has_recency_cue", "tier_of"]

MODES = ("ripple", "flat", "bm25", "hybrid", "ppr")
_RECENCY_CUES = re.compile(
    r"\b(latest|recent(ly)?|newest|last (time|week|month)|most recent|currently|these days|nowadays|now)\b"
    r"|最近|最新|上次|现在|目前|如今",
    re.IGNORECASE,
)


# A query that names its own time ("the latest project in July 2023", "2023年7月最新的") asks what was
# latest *then*; weighting by age from today would favour the wrong memories.
_ANCHORED_TIME = re.compile(
    r"\b(1[89]\d\d|2\d\d\d)\b|\b(january|february|march|april|may|june|july|august|september|october|"
    r"november|december|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\b(?!\s*(?:i|we|you|he|she|they)\b)"
    r"|\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}|\d+\s*[年月]|[一二三四五六七八九十]+月",
    re.IGNORECASE,
)


def has_recency_cue(text: str) -> bool:
    """True when a query asks about recency ("latest", "recently", "最近") relative to now, not to a
    time it names itself ("the latest project in July 2023")."""
    return _RECENCY_CUES.search(text) is not None and _ANCHORED_TIME.search(text) is None


@dataclass(frozen=True, slots=True)
class Call:
    """A request for the store: ``getattr(store, method)(*args, **kwargs)``."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    local: bool = False  # CPU work the driver does itself (e.g. a cross-encoder), not a store call


@dataclass(slots=True)
class QueryInput:
    """Everything CPU-bound about the query, computed by the driver beforehand."""

    text: str
    user_id: str
    k: int
    mode: str
    now: float
    terms: list[str]
    vector: "np.ndarray | None"
    tokens: "np.ndarray | None"
    token_dim: int
    entity_keys: list[str]
    language: str = "en"
    # The query's vectors while the driver is still computing them (an opaque handle): the plan
    # runs the lexical route meanwhile and asks for them with Call("query_vectors", (pending,)),
    # which answers with a QueryVectors.
    pending: Any = None
    encode_ms: float = 0.0  # time the driver spent encoding the query before the plan (0: none, or beside it)


@dataclass(frozen=True, slots=True)
class DenseSearch:
    """The nearest-memory search a plan will make once it has the query vector."""

    pool: int
    statuses: tuple[str, ...]


@dataclass(slots=True)
class QueryVectors:
    """What a driver's ``query_vectors`` answers: the query's vectors, and the hits of the plan's
    dense search when the driver could already run it (``search`` says which search that was)."""

    vector: "np.ndarray"
    tokens: "np.ndarray"
    search: DenseSearch | None = None
    hits: list[tuple[str, float]] | None = None


def dense_search(mode: str, k: int, config: RecallConfig) -> DenseSearch | None:
    """The dense search :func:`recall_plan` makes in ``mode``, or ``None`` when it makes none.

    A driver that encodes the query in a worker thread may run this search
    there as soon as the vector exists: it then overlaps the lexical route
    instead of following it (the plan checks that the search is the same).
    """
    if mode not in ("ripple", "flat", "hybrid", "ppr"):
        return None
    return DenseSearch(_pool_size(config, k), tuple(config.merge.include_statuses))


def _pool_size(config: RecallConfig, k: int) -> int:
    """Candidates each first-stage route keeps (the dense search, the lexical top, the fused pool)."""
    return max(config.seed.pool, k)


@dataclass(slots=True)
class Candidate:
    id: str
    score: float = 0.0
    seed: float = 0.0
    lexical: float = 0.0
    dense: float = 0.0
    late: float = 0.0
    activation: float = 0.0
    recency: float = 1.0
    importance: float = 0.5
    confidence: float = 1.0
    tier: str = "hot"
    rerank: float | None = None
    via: str = "seed"
    path: list[Edge] = field(default_factory=list)


@dataclass(slots=True)
class PlanResult:
    hits: list[Candidate]
    records: dict[str, Any]  # memory id -> MemoryRecord
    entity_names: dict[str, str]
    stages: list[tuple[str, float, int, dict[str, Any]]]


class _Timer:
    def __init__(self) -> None:
        self.stages: list[tuple[str, float, int, dict[str, Any]]] = []
        self._t = time.perf_counter()

    def lap(self, name: str, size: int, **detail: Any) -> None:
        now = time.perf_counter()
        self.stages.append((name, (now - self._t) * 1000.0, size, detail))
        self._t = now


def _edges(neighbors: Sequence[Neighbor], known_degree: dict[str, int]) -> list[Edge]:
    """Neighbour rows as activation edges, each with its source's degree (what damping divides by).

    A row carries the degree of its *target*.  For the entity -> memory step the
    entity is the source: its degree was learned from the previous hop's rows
    (``known_degree``, updated here), or, for an entity that started as a seed,
    it is the number of MENTIONS rows leaving it in this hop.
    """
    rows_from: dict[str, int] = {}
    for n in neighbors:
        if n.type == EDGE_MENTIONS:
            rows_from[n.source] = rows_from.get(n.source, 0) + 1
            if n.label:  # the target is an entity
                known_degree.setdefault(n.target, n.degree)
    degree = {
        s: known_degree.get(s, rows_from.get(s, 1) if s.startswith("e_") else 1)
        for s in {n.source for n in neighbors}
    }
    return [Edge(n.source, n.target, n.weight, degree[n.source], n.type, n.predicate) for n in neighbors]


def recall_plan(q: QueryInput, config: RecallConfig) -> Generator[Call, Any, PlanResult]:
    """Run one recall; see the module docstring for the protocol."""
    timer = _Timer()
    if q.encode_ms:
        timer.stages.append(("seed.encode", q.encode_ms, 1, {}))
    k = q.k
    seed_cfg, spread_cfg, merge_cfg = config.seed, config.spread, config.merge
    statuses = tuple(merge_cfg.include_statuses)

    # ---- stage 1: seed --------------------------------------------------------
    lexical: dict[str, float] = {}
    dense: dict[str, float] = {}
    pool_size = _pool_size(config, k)
    want_lexical = q.mode in ("ripple", "bm25", "hybrid", "ppr") and q.terms
    if want_lexical:
        n_docs, avg_len, df = yield Call("lexical_stats", (q.user_id, q.terms))
        cap = max(1, seed_cfg.max_df_ratio * n_docs)
        if seed_cfg.max_df is not None:
            cap = min(cap, seed_cfg.max_df)
        usable = [t for t in dict.fromkeys(q.terms) if 0 < df.get(t, 0) <= cap]
        if usable:
            rows = yield Call("postings", (q.user_id, usable))
            lexical = bm25(q.terms, rows, n_docs=n_docs, avg_len=avg_len, df=df, k1=seed_cfg.bm25_k1, b=seed_cfg.bm25_b)
    search = dense_search(q.mode, k, config)
    early: list[tuple[str, float]] | None = None
    if q.pending is not None:  # the encoder ran while the lexical route read the postings
        got: QueryVectors = yield Call("query_vectors", (q.pending,), local=True)
        q = dataclasses.replace(q, vector=got.vector, tokens=got.tokens, pending=None)
        if got.hits is not None and got.search == search:
            early = got.hits
    if search is not None and q.vector is not None:
        if early is None:
            early = yield Call("nearest_memories", (q.user_id, q.vector, search.pool), {"statuses": search.statuses})
        dense = dict(early)
    timer.lap("seed.first_stage", len(lexical) + len(dense), lexical=len(lexical), dense=len(dense))

    if q.mode == "flat":
        cands = [Candidate(i, score=s, seed=s, dense=s) for i, s in sorted(dense.items(), key=lambda kv: -kv[1])]
        return (yield from _finish(q, cands[: max(k, 1)], config, timer, statuses, spread_used=False))
    if q.mode == "bm25":
        ranked = top(lexical, pool_size)
        cands = [Candidate(i, score=lexical[i], seed=lexical[i], lexical=lexical[i]) for i in ranked]
        return (yield from _finish(q, cands, config, timer, statuses, spread_used=False))
    if q.mode == "hybrid":
        fused = rrf([top(dense, pool_size), top(lexical, pool_size)], k=60)
        cands = [
            Candidate(i, score=fused[i], seed=fused[i], lexical=lexical.get(i, 0.0), dense=dense.get(i, 0.0))
            for i in top(fused, pool_size)
        ]
        return (yield from _finish(q, cands, config, timer, statuses, spread_used=False))

    fl = seed_cfg.first_stage_lexical
    lexical_pool = {i: lexical[i] for i in top(lexical, pool_size)}
    first = weighted_sum([(fl, lexical_pool), (1 - fl, dense)])
    pool = top(first, pool_size)
    late: dict[str, float] = {}
    if seed_cfg.late > 0 and q.tokens is not None and pool:
        import numpy as np

        blobs = yield Call("token_vectors", (pool,))
        late, doc_tokens = _maxsim_blobs(np.asarray(q.tokens, dtype=np.float32), blobs, q.token_dim)
    pool_lex = {i: lexical[i] for i in pool if i in lexical}
    pool_dense = {i: dense[i] for i in pool if i in dense}
    lexical_weight = seed_cfg.lexical_cjk if q.language in ("zh", "ja", "ko") else seed_cfg.lexical
    if late and (seed_cfg.late_length_pivot or seed_cfg.dense_length_pivot):
        seed_scores = _length_aware_seed(pool_lex, pool_dense, late, doc_tokens, lexical_weight, seed_cfg)
    else:
        seed_scores = weighted_sum(
            [(lexical_weight, pool_lex), (seed_cfg.dense, pool_dense), (seed_cfg.late, late)]
        ) or {i: first.get(i, 0.0) for i in pool}
    for i in pool:
        seed_scores.setdefault(i, 0.0)
    cands_by_id: dict[str, Candidate] = {
        i: Candidate(i, seed=s, lexical=lexical.get(i, 0.0), dense=dense.get(i, 0.0), late=late.get(i, 0.0))
        for i, s in seed_scores.items()
    }
    timer.lap("seed.late_interaction", len(late), pool=len(pool))

    # ---- stage 2: spread -------------------------------------------------------
    top_seed = max(seed_scores.values(), default=0.0) or 1.0
    norm_seed = {i: s / top_seed for i, s in seed_scores.items()}
    ranked_seeds = top(norm_seed, len(norm_seed))
    session_act: dict[str, float] = {}
    entity_act: dict[str, float] = {}
    raw_session: dict[str, float] = {}
    raw_entity: dict[str, float] = {}
    parents: dict[str, tuple[dict[str, Edge], set[str]]] = {}  # channel -> (best incoming edge, sources)
    entity_names: dict[str, str] = {}
    spread_used = spread_cfg.method != SpreadMethod.NONE and q.mode in ("ripple", "ppr")
    if spread_used and (q.mode == "ppr" or spread_cfg.method == SpreadMethod.PPR):
        entity_act, _ = yield from _ppr_channel(q, spread_cfg, norm_seed, ranked_seeds)
        spread_used = True
    elif spread_used:
        # session channel: neighbouring turns over NEXT edges, strongest path wins
        strong = [i for i in ranked_seeds if norm_seed[i] >= spread_cfg.source_min]
        sources = {i: norm_seed[i] for i in strong[: spread_cfg.session_sources]}
        if sources and spread_cfg.session_weights and spread_cfg.session_lambda > 0:
            res_session = yield from _drive_spread(
                q.user_id, (EDGE_NEXT,), sources,
                max_hops=len(spread_cfg.session_weights), decay=list(spread_cfg.session_weights),
                damping=0.0, threshold=spread_cfg.threshold, frontier_cap=spread_cfg.frontier_cap,
                aggregate="max", max_degree=None, labels=(),
            )
            session_act = raw_session = res_session.activation
            parents["session"] = (res_session.parent, set(sources))
        timer.lap("spread.session", len(session_act))
        # entity channel: memory -> entity -> memory, hub-damped
        sources = {i: norm_seed[i] for i in strong[: spread_cfg.entity_sources]}
        if q.entity_keys and config.seed.query_entities > 0:
            ents = yield Call("get_entities", (q.user_id, q.entity_keys))
            for e in ents:
                sources[e.id] = config.seed.query_entities
                entity_names[e.id] = e.name
        if sources and spread_cfg.method == SpreadMethod.SESSION_PPR and spread_cfg.entity_lambda > 0:
            entity_act, _ = yield from _ppr_channel(q, spread_cfg, norm_seed, ranked_seeds)
            raw_entity = entity_act
            parents["entity"] = ({}, set(sources))
        elif sources and spread_cfg.hops > 0 and spread_cfg.entity_lambda > 0:
            n_docs_total = len(norm_seed)
            if want_lexical:
                n_docs_total = max(n_docs_total, int(n_docs))  # type: ignore[possibly-undefined]
            cap = spread_cfg.max_degree
            ratio_cap = max(spread_cfg.min_hub_degree, int(spread_cfg.max_degree_ratio * n_docs_total))
            cap = min(cap, ratio_cap) if cap is not None else ratio_cap
            types = (EDGE_MENTIONS, EDGE_RELATED) if spread_cfg.hops > 2 else (EDGE_MENTIONS,)
            res_entity = yield from _drive_spread(
                q.user_id, types, sources,
                max_hops=spread_cfg.hops, decay=spread_cfg.hop_decay, damping=spread_cfg.hub_damping,
                threshold=spread_cfg.threshold, frontier_cap=spread_cfg.frontier_cap, degree_offset=spread_cfg.degree_offset,
                aggregate=spread_cfg.entity_aggregate, max_degree=cap, labels=spread_cfg.entity_labels,
            )
            memory_act = raw_entity = {n: a for n, a in res_entity.activation.items() if n.startswith("m_")}
            peak = max(memory_act.values(), default=0.0) if spread_cfg.entity_scale == "peak" else 1.0
            entity_act = {n: a / peak for n, a in memory_act.items()} if peak > 0 else {}
            parents["entity"] = (res_entity.parent, set(sources))
        timer.lap("spread.entity", len(entity_act))

    # ---- stage 3: merge -------------------------------------------------------
    for n in set(session_act) | set(entity_act):
        c = cands_by_id.get(n)
        if c is None:
            c = cands_by_id[n] = Candidate(n)
        act = spread_cfg.session_lambda * session_act.get(n, 0.0) + spread_cfg.entity_lambda * entity_act.get(n, 0.0)
        if q.mode == "ppr":
            act = entity_act.get(n, 0.0)
        c.activation = act
        if act > c.seed / top_seed:  # most of its score came from spreading: say through which channel
            c.via = "session" if session_act.get(n, 0.0) * spread_cfg.session_lambda >= entity_act.get(n, 0.0) * spread_cfg.entity_lambda else "entity"
    if config.merge.method == MergeMethod.RRF:
        # rank fusion: a memory at the top of a spreading channel competes with the top seeds
        k0 = config.merge.rrf_k
        # each channel ranks its sources (by seed) and what they reached (by activation, which never
        # exceeds the seed it came from) on one scale: spreading can lift a memory close to the seed
        # that reached it, above weaker seeds, never above that seed
        def channel(name: str, act: dict[str, float]) -> list[str]:
            value = {i: norm_seed.get(i, 0.0) for i in parents.get(name, ({}, set()))[1]}
            for i, a in act.items():
                value[i] = max(value.get(i, 0.0), a)
            return sorted(value, key=lambda i: (-value[i], -norm_seed.get(i, 0.0), i))

        ranks = [
            (1.0, top(norm_seed, len(norm_seed))),
            (config.merge.session_rank_weight, channel("session", raw_session)),
            (config.merge.entity_rank_weight, channel("entity", raw_entity)),
        ]
        fused: dict[str, float] = {}
        for w, ranking in ranks:
            if w <= 0:
                continue
            for r, n in enumerate(ranking, start=1):
                fused[n] = fused.get(n, 0.0) + w / (k0 + r)
        scale = 1.0 / max(fused.values(), default=1.0)
        for c in cands_by_id.values():
            c.score = fused.get(c.id, 0.0) * scale
    else:
        for c in cands_by_id.values():
            c.score = (c.seed / top_seed) + c.activation
    ordered = sorted(cands_by_id.values(), key=lambda c: (-c.score, c.id))
    keep = ordered[: max(config.rerank.top_n, k) * 2 if config.rerank.method != RerankMethod.NONE else max(k * 4, 50)]
    for c in keep:
        if c.via in parents:
            c.path = _path_to(c.id, *parents[c.via])
    timer.lap("merge", len(cands_by_id))
    return (yield from _finish(q, keep, config, timer, statuses, spread_used=spread_used, entity_names=entity_names))


def _maxsim_blobs(query_tokens: "np.ndarray", blobs: dict[str, bytes], dim: int) -> tuple[dict[str, float], dict[str, int]]:
    """MaxSim of the query against stored (packed) token vectors, and each memory's token count."""
    from ripple.embedding import TOKEN_SCALE, stack_token_blobs

    ids, lengths, stacked = stack_token_blobs(blobs, dim)
    scores = maxsim_stacked(query_tokens, ids, lengths, stacked, scale=TOKEN_SCALE)
    return scores, dict(zip(ids, lengths.tolist()))


def _length_aware_seed(
    lexical: dict[str, float],
    dense: dict[str, float],
    late: dict[str, float],
    doc_tokens: dict[str, int],
    lexical_weight: float,
    cfg: SeedConfig,
) -> dict[str, float]:
    """Seed scores with route weights that follow each memory's length (see :class:`SeedConfig`).

    A memory of ``n`` content tokens keeps ``min(1, late_pivot / n) ** power``
    of the MaxSim weight, gives the rest to the dense route, and gets
    ``min(1, n / dense_pivot) ** power`` of the base dense weight.
    """
    lex_n, dense_n, late_n = minmax(lexical), minmax(dense), minmax(late)
    late_pivot, dense_pivot = cfg.late_length_pivot, cfg.dense_length_pivot
    out: dict[str, float] = {}
    for i in set(lex_n) | set(dense_n) | set(late_n):
        n = max(doc_tokens.get(i, 1), 1)
        late_share = min(1.0, late_pivot / n) ** cfg.late_length_power if late_pivot else 1.0
        dense_share = min(1.0, n / dense_pivot) ** cfg.dense_length_power if dense_pivot else 1.0
        w_dense = cfg.dense * dense_share + cfg.late * (1.0 - late_share)
        out[i] = lexical_weight * lex_n.get(i, 0.0) + w_dense * dense_n.get(i, 0.0) + cfg.late * late_share * late_n.get(i, 0.0)
    return out


def _drive_spread(
    user_id: str,
    types: tuple[str, ...],
    seeds: dict[str, float],
    *,
    max_degree: int | None,
    labels: tuple[str, ...] | None = None,
    **options: Any,
) -> Generator[Call, Any, SpreadResult]:
    """Drive :func:`spread_flow` with one batched ``expand`` call per hop."""
    flow = spread_flow(seeds, **options)
    known_degree: dict[str, int] = {}
    try:
        frontier = next(flow)
        while True:
            rows: list[Neighbor] = yield Call("expand", (user_id, frontier, types), {"max_degree": max_degree})
            frontier = flow.send(_edges(_keep_labels(rows, labels), known_degree))
    except StopIteration as stop:
        result: SpreadResult = stop.value
        return result


def _keep_labels(rows: list[Neighbor], labels: tuple[str, ...] | None) -> list[Neighbor]:
    """Drop steps into entities whose label does not carry activation (DATE by default)."""
    if labels is None:
        return [r for r in rows if r.label != "DATE"]
    allowed = set(labels)
    return [r for r in rows if not r.label or r.label in allowed]


def _ppr_channel(
    q: QueryInput, cfg: Any, norm_seed: dict[str, float], ranked: list[str]
) -> Generator[Call, Any, tuple[dict[str, float], dict[str, Edge]]]:
    """Personalised PageRank (HippoRAG-style) over the seeds' 2-hop neighbourhood, with networkx."""
    import networkx as nx

    sources = {i: norm_seed[i] for i in ranked[: cfg.entity_sources]}
    graph = nx.Graph()
    frontier = list(sources)
    seen = set(frontier)
    for _ in range(2):
        rows: list[Neighbor] = yield Call("expand", (q.user_id, frontier, (EDGE_MENTIONS, EDGE_NEXT)), {"max_degree": None})
        nxt = []
        for r in rows:
            graph.add_edge(r.source, r.target, weight=r.weight)
            if r.target not in seen:
                seen.add(r.target)
                nxt.append(r.target)
        frontier = nxt[: cfg.frontier_cap * 4]
        if not frontier:
            break
    if graph.number_of_nodes() == 0:
        return {}, {}
    pers = {n: sources.get(n, 0.0) for n in graph.nodes}
    if sum(pers.values()) <= 0:
        return {}, {}
    pr = nx.pagerank(graph, alpha=cfg.ppr_alpha, personalization=pers, weight="weight", max_iter=200, tol=1e-8)
    mem = {n: s for n, s in pr.items() if n.startswith("m_")}
    return minmax(mem), {}


def _path_to(node: str, parents: dict[str, Edge], sources: set[str]) -> list[Edge]:
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


def _blend_rerank(head: list[Candidate], scores: dict[str, float], weight: float) -> list[Candidate]:
    """Mix normalised reranker scores into the merged scores of the head, and re-sort it."""
    base = minmax({c.id: c.score for c in head})
    for c in head:
        c.rerank = scores.get(c.id, 0.0)
        c.score = (1 - weight) * base.get(c.id, 0.0) + weight * c.rerank
    return sorted(head, key=lambda c: (-c.score, c.id))


def tier_of(rec: Any, now: float, cfg: TierConfig) -> tuple[str, float]:
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


def _speaker_boosts(query: str, records: Sequence[Any], weight: float) -> dict[str, float]:
    """Score multipliers for turns *said by* the person the query asks about (memory id -> ``1 + weight``).

    "What does Melanie do to destress?" is about Melanie's own turns, yet her
    name is just as present in Caroline's replies ("That's great, Melanie!"),
    where no route tells speaker from addressee.  Only when the query names
    some but not all of the speakers among the candidates are their turns
    boosted; passages and one-speaker logs get nothing.
    """
    if weight <= 0 or not records:
        return {}
    from extractors.speaker import split_speaker

    speaker_of: dict[str, str] = {}
    for rec in records:
        turn = split_speaker(rec.text)
        if turn.speaker is not None:
            speaker_of[rec.id] = turn.subject
    speakers = set(speaker_of.values())
    if len(speakers) < 2:
        return {}
    text = query.lower()
    named = {sp for sp in speakers if sp in text and (not sp.isascii() or re.search(rf"(?<!\w){re.escape(sp)}(?!\w)", text))}
    if not named or named == speakers:
        return {}
    return {i: 1.0 + weight for i, sp in speaker_of.items() if sp in named}


def _title_boosts(query: str, records: Sequence[Any], weight: float) -> dict[str, float]:
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


def _finish(
    q: QueryInput,
    cands: list[Candidate],
    config: RecallConfig,
    timer: _Timer,
    statuses: tuple[str, ...],
    *,
    spread_used: bool,
    entity_names: dict[str, str] | None = None,
) -> Generator[Call, Any, PlanResult]:
    """Merge with time/importance/status on the records, rerank, trim to k."""
    merge_cfg, rr = config.merge, config.rerank
    ids = [c.id for c in cands]
    records = {r.id: r for r in (yield Call("get_memories", (ids,)))} if ids else {}
    cands = [c for c in cands if c.id in records and records[c.id].status in statuses]
    time_w = merge_cfg.time_weight
    if q.mode == "ripple" and merge_cfg.recency_cue_weight > time_w and has_recency_cue(q.text):
        time_w = merge_cfg.recency_cue_weight
    if q.mode == "ripple":
        conf_w, tiers = merge_cfg.confidence_weight, merge_cfg.tiers
        cand_records = [records[c.id] for c in cands]
        speaker_boost = _speaker_boosts(q.text, cand_records, merge_cfg.speaker_weight)
        title_boost = _title_boosts(q.text, cand_records, merge_cfg.title_weight)
        for c in cands:
            rec = records[c.id]
            c.importance = rec.importance
            c.confidence = rec.confidence
            c.recency = recency_factor((q.now - rec.at) / 86400.0, merge_cfg.half_life_days)
            c.tier, tier_weight = tier_of(rec, q.now, tiers)
            c.score = c.score * (1.0 - time_w + time_w * c.recency) + merge_cfg.importance_weight * (rec.importance - 0.5)
            c.score *= (1.0 - conf_w + conf_w * rec.confidence) * tier_weight * speaker_boost.get(c.id, 1.0)
            c.score *= title_boost.get(c.id, 1.0)
        cands.sort(key=lambda c: (-c.score, c.id))
    timer.lap("merge.records", len(cands), time_weight=time_w)
    if q.mode == "ripple" and rr.method != RerankMethod.NONE:
        head = cands[: rr.top_n]
        if rr.method == RerankMethod.MAXSIM and q.tokens is not None:
            import numpy as np

            blobs = yield Call("token_vectors", ([c.id for c in head],))
            raw, _ = _maxsim_blobs(np.asarray(q.tokens, dtype=np.float32), blobs, q.token_dim)
        else:
            pairs = [(q.text, records[c.id].text) for c in head]
            scored: list[float] = yield Call("cross_encode", (rr.model, pairs), local=True)
            raw = {c.id: float(s) for c, s in zip(head, scored)}
        cands = _blend_rerank(head, minmax(raw), rr.weight) + cands[rr.top_n :]
        timer.lap(f"rerank.{rr.method.value}", len(head))
    hits = cands[: q.k]
    names = dict(entity_names or {})
    need = sorted({e.source for c in hits for e in c.path if e.source.startswith("e_")}
                  | {e.target for c in hits for e in c.path if e.target.startswith("e_")})
    if need:
        rows = yield Call("entity_names", (need,))
        names.update(rows)
    for c in hits:
        if not math.isfinite(c.score):
            c.score = 0.0
    timer.lap("trim", len(hits))
    return PlanResult(hits, records, names, timer.stages)
