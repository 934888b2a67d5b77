"""Stage 1, seed: score the user's memories against the query.

The routes are read once (BM25 from postings, dense cosine from the vector
index); the seed method (:class:`~ripple.recall.config.SeedMethod`) then
decides what they become, through the :data:`SEEDERS` registry: ripple's own
fused seeds with token-level late interaction, or a baseline's final ranking.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Generator, Mapping, Sequence

from graphstore.records import LexicalRows, df_cap
from graphstore.requests import LexicalRoute, NearestMemories, TokenVectors

from .._requests import CollectQueryVectors, EncodeQuery, Request
from .candidates import Candidate, Seeded, StageTimer
from .config import RecallConfig, SeedConfig, SeedMethod
from .multilingual import CJK_LANGUAGES, multilingual_route
from .query import QueryInput, QueryVectors, dense_search, pool_size
from .scoring import bm25, maxsim_stacked, minmax, rrf, term_coverage, top, weighted_sum

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Routes", "SEEDERS", "seed_stage", "maxsim_blobs", "length_aware_seed", "too_common", "informative_rows",
           "without_words"]


@dataclass(slots=True)
class Routes:
    """The first stage's raw routes: BM25 and dense cosine per memory id."""

    lexical: dict[str, float]
    dense: dict[str, float]
    n_docs: int | None  # None when the lexical route did not run
    coverage: dict[str, float]  # share of the query's informative words each memory holds (scoring.term_coverage)
    known: float  # share of them the user's memories hold at all
    names_known: float  # share of the names the query asks about that the user's memories hold
    multilingual: dict[str, float] = dataclasses.field(default_factory=dict)  # cosine in the multilingual space
    # query terms in more than max_df_ratio of the user's memories (what the lexical route ignores as too common)
    common: frozenset[str] = frozenset()
    # cosine to the query without its too common words (SeedConfig.dense_skip_common), which the seeds rank by;
    # ``dense`` keeps the whole query's, which calibrated relevance reads (None: no such search was made)
    dense_rank: dict[str, float] | None = None
    # the names the query asks about that no memory's words hold, and how many names it asks about
    unknown_names: tuple[str, ...] = ()
    n_names: int = 0

    def what_the_user_knows(self) -> dict[str, Any]:
        """What every seeder passes on to :class:`Seeded` from the routes: the user's memory count and how
        much of the query (its words, its names) the user's memories know."""
        return {"n_docs": self.n_docs, "known": self.known, "names_known": self.names_known,
                "unknown_names": self.unknown_names, "n_names": self.n_names}


def _read_routes(q: QueryInput, config: RecallConfig) -> Generator[Request, Any, tuple[QueryInput, Routes]]:
    """Read the lexical route (if the method uses it) and the dense route (if it uses that)."""
    seed_cfg = config.seed
    lexical: dict[str, float] = {}
    dense: dict[str, float] = {}
    n_docs: int | None = None
    coverage: dict[str, float] = {}
    known = names_known = 1.0
    unknown_names: tuple[str, ...] = ()
    names: set[str] = set()
    common: frozenset[str] = frozenset()
    if seed_cfg.method != SeedMethod.DENSE and q.terms:
        # statistics, then the postings of the terms not too common to be worth reading
        route: LexicalRows = yield LexicalRoute(q.user_id, q.terms, seed_cfg.max_df_ratio, seed_cfg.max_df)
        n_docs, df, rows = route.n_docs, route.df, route.postings
        if rows:
            lexical = bm25(q.terms, rows, n_docs=n_docs, avg_len=route.avg_len, df=df, k1=seed_cfg.bm25_k1, b=seed_cfg.bm25_b)
        cap = df_cap(n_docs, seed_cfg.max_df_ratio, seed_cfg.max_df)
        coverage, known = term_coverage(q.terms, rows, n_docs=n_docs, df=df, cap=cap)
        names = set(q.names)
        if names:
            unknown_names = tuple(sorted(t for t in names if df.get(t, 0) <= 0))
            names_known = 1.0 - len(unknown_names) / len(names)
        common = too_common(df, n_docs, seed_cfg.max_df_ratio, seed_cfg.common_min_df)
    search = dense_search(q.k, config)
    early: list[tuple[str, float]] | None = None
    if q.pending is not None:  # the encoder ran while the lexical route read the postings
        got: QueryVectors = yield CollectQueryVectors(q.pending)
        q = dataclasses.replace(q, vector=got.vector, tokens=got.tokens, pending=None)
        if got.hits is not None and got.search == search:
            early = got.hits
    dense_rank: dict[str, float] | None = None
    if search is not None and q.vector is not None:
        if early is None:
            early = yield NearestMemories(q.user_id, q.vector, search.pool, search.statuses)
        dense = dict(early)
        # (ripple's own seeds only: a baseline's routes stay what a user of that baseline gets)
        skip = seed_cfg.dense_skip_common and seed_cfg.method == SeedMethod.FUSED and common
        plain = without_words(q.text, common) if skip else q.text
        if plain != q.text:
            probe = informative_vector(q.tokens, q.token_terms, common)
            if probe is None:  # (the words behind the token rows are unknown: encode the text without them)
                probe = yield EncodeQuery(plain)
            dense_rank = dict((yield NearestMemories(q.user_id, probe, search.pool, search.statuses)))
    multilingual: dict[str, float] = {}
    if seed_cfg.method == SeedMethod.FUSED and seed_cfg.multilingual > 0:
        multilingual = yield from multilingual_route(q, pool_size(config, q.k), tuple(config.merge.include_statuses))
    return q, Routes(lexical, dense, n_docs, coverage, known, names_known, multilingual, common, dense_rank,
                     unknown_names, len(names))


# ------------------------------------------------------------------------------------------- seeders

Seeder = Callable[[QueryInput, Routes, RecallConfig, StageTimer], Generator[Request, Any, Seeded]]


def _dense_seeds(q: QueryInput, routes: Routes, config: RecallConfig, timer: StageTimer) -> Generator[Request, Any, Seeded]:
    """The flat baseline: dense cosine top-k, final."""
    yield from ()  # (every seeder is a generator of requests; this one needs none)
    ranked = sorted(routes.dense.items(), key=lambda kv: -kv[1])[: max(q.k, 1)]
    return Seeded({i: Candidate(i, score=s, seed=s, dense=s) for i, s in ranked}, final=True)
    yield  # (a generator, like every stage)


def _lexical_seeds(q: QueryInput, routes: Routes, config: RecallConfig, timer: StageTimer) -> Generator[Request, Any, Seeded]:
    """The BM25 baseline: lexical top of the pool, final."""
    yield from ()
    lexical = routes.lexical
    ranked = top(lexical, pool_size(config, q.k))
    return Seeded({i: Candidate(i, score=lexical[i], seed=lexical[i], lexical=lexical[i],
                                coverage=routes.coverage.get(i, 0.0)) for i in ranked},
                  final=True, **routes.what_the_user_knows())


def _rrf_seeds(q: QueryInput, routes: Routes, config: RecallConfig, timer: StageTimer) -> Generator[Request, Any, Seeded]:
    """The hybrid baseline: reciprocal rank fusion of the dense and BM25 rankings, final."""
    yield from ()
    n = pool_size(config, q.k)
    fused = rrf([top(routes.dense, n), top(routes.lexical, n)], k=config.seed.rrf_k)
    cands = {
        i: Candidate(i, score=fused[i], seed=fused[i], lexical=routes.lexical.get(i, 0.0), dense=routes.dense.get(i, 0.0),
                     coverage=routes.coverage.get(i, 0.0))
        for i in top(fused, n)
    }
    return Seeded(cands, final=True, **routes.what_the_user_knows())


def _fused_seeds(q: QueryInput, routes: Routes, config: RecallConfig, timer: StageTimer) -> Generator[Request, Any, Seeded]:
    """ripple's own: a fused first stage picks a pool, MaxSim scores it, and the seeds go on to spread."""
    seed_cfg = config.seed
    lexical = routes.lexical
    dense = routes.dense if routes.dense_rank is None else routes.dense_rank
    n = pool_size(config, q.k)
    fl = seed_cfg.first_stage_lexical
    lexical_pool = {i: lexical[i] for i in top(lexical, n)}
    ml = routes.multilingual
    first = weighted_sum([(fl, lexical_pool), (1 - fl, dense), (1 - fl, ml)])
    pool = top(first, n)
    late: dict[str, float] = {}
    late_shown = late  # the whole query's MaxSim: what each hit reports and calibrated relevance reads
    doc_tokens: dict[str, int] = {}
    if seed_cfg.late > 0 and q.tokens is not None and pool:
        import numpy as np

        blobs = yield TokenVectors(pool)
        query_tokens = np.asarray(q.tokens, dtype=np.float32)
        late_shown, doc_tokens = maxsim_blobs(query_tokens, blobs, q.token_dim)
        late = late_shown
        if seed_cfg.late_skip_common:
            rows = informative_rows(query_tokens, q.token_terms, routes.common)
            if rows is not query_tokens:
                late, _ = maxsim_blobs(rows, blobs, q.token_dim)
    pool_lex = {i: lexical[i] for i in pool if i in lexical}
    pool_dense = {i: dense[i] for i in pool if i in dense}
    cjk = q.language in CJK_LANGUAGES
    lexical_weight = seed_cfg.lexical_cjk if cjk else seed_cfg.lexical
    pool_ml = {i: ml[i] for i in pool if i in ml}
    # Min-max puts the route's best memory at the top whatever its cosine, which is fair only against
    # the memories the route could judge: it is weighed by the share of the pool it scored (all of it
    # for a user who writes Chinese), and a question in another script (English) takes it only when
    # the route judged most of the pool: otherwise the main model, which reads the question, judges more.
    if pool_ml and not cjk and 2 * len(pool_ml) <= len(pool):
        pool_ml = {}
    # Memories in a CJK script are read by the multilingual model: the main embedder's routes keep
    # main_share_cjk of their weight there, and a CJK query's words weigh lexical_multilingual (see
    # ripple.recall.multilingual).  Other memories, and every memory of a user without CJK ones, as before.
    share = {i: seed_cfg.main_share_cjk for i in pool_ml} if seed_cfg.main_share_cjk != 1.0 else {}
    if pool_ml and cjk:
        lexical_weight = seed_cfg.lexical_multilingual
    if late and (seed_cfg.late_length_pivot or seed_cfg.dense_length_pivot):
        seed_scores = length_aware_seed(pool_lex, pool_dense, late, doc_tokens, lexical_weight, seed_cfg, share)
    else:
        parts = [(lexical_weight, pool_lex), (seed_cfg.dense, pool_dense), (seed_cfg.late, late)]
        if share:
            parts = [(w, minmax(r) if n == 0 else _scaled(r, share)) for n, (w, r) in enumerate(parts)]
        seed_scores = weighted_sum(parts, normalise=not share) or {i: first.get(i, 0.0) for i in pool}
    if pool_ml:  # (the multilingual route: only where the user has memories in a CJK script)
        weight = seed_cfg.multilingual * len(pool_ml) / len(pool)
        for i, s in weighted_sum([(weight, pool_ml)]).items():
            seed_scores[i] = seed_scores.get(i, 0.0) + s
    for i in pool:
        seed_scores.setdefault(i, 0.0)
    cands = {
        i: Candidate(i, seed=s, lexical=lexical.get(i, 0.0), dense=routes.dense.get(i, 0.0), late=late_shown.get(i, 0.0),
                     multilingual=pool_ml.get(i, 0.0), coverage=routes.coverage.get(i, 0.0))
        for i, s in seed_scores.items()
    }
    timer.lap("seed.late_interaction", len(late), pool=len(pool))
    top_seed = max(seed_scores.values(), default=0.0) or 1.0
    norm = {i: s / top_seed for i, s in seed_scores.items()}
    return Seeded(cands, final=False, norm=norm, ranked=top(norm, len(norm)), top=top_seed,
                  **routes.what_the_user_knows())


#: Seed method -> the function that turns the routes into seeds.
SEEDERS: dict[SeedMethod, Seeder] = {
    SeedMethod.FUSED: _fused_seeds,
    SeedMethod.DENSE: _dense_seeds,
    SeedMethod.LEXICAL: _lexical_seeds,
    SeedMethod.RRF: _rrf_seeds,
}


def seed_stage(q: QueryInput, config: RecallConfig, timer: StageTimer) -> Generator[Request, Any, tuple[QueryInput, Seeded]]:
    """Read the routes, then seed with the configured method; returns the query with its vectors."""
    q, routes = yield from _read_routes(q, config)
    timer.lap("seed.first_stage", len(routes.lexical) + len(routes.dense),
              lexical=len(routes.lexical), dense=len(routes.dense), multilingual=len(routes.multilingual))
    seeded = yield from SEEDERS[config.seed.method](q, routes, config, timer)
    return q, seeded


# ------------------------------------------------------------------------------------------- scoring helpers


def too_common(df: Mapping[str, int], n_docs: int, max_df_ratio: float, min_df: int = 1) -> frozenset[str]:
    """Query terms in more than ``max_df_ratio`` of the user's memories and in more than ``min_df`` of
    them: what the lexical route ignores for saying nothing about which memory is meant (a speaker's
    name in a chat, in every turn of theirs), once the store is large enough for a share to say so.
    Only the share counts, not ``max_df``: that cap is about the cost of reading postings."""
    cap = max(1.0, float(min_df), max_df_ratio * n_docs)
    return frozenset(t for t, n in df.items() if n > cap)


def without_words(text: str, common: frozenset[str]) -> str:
    """``text`` without the words whose lexical token is in ``common`` (see :attr:`SeedConfig.dense_skip_common`):
    "What activities does Melanie partake in?" -> "What activities does partake in?".  A run of
    Chinese, which lexical_tokens splits into several words, stays whole; so does a text that would
    be left empty."""
    from extractors.text import lexical_tokens

    def keep(m: re.Match[str]) -> str:
        toks = lexical_tokens(m.group(0))
        return "" if len(toks) == 1 and toks[0] in common else m.group(0)

    out = " ".join(_WORD.sub(keep, text).split())
    return out if any(ch.isalnum() for ch in out) else text


_WORD = re.compile(r"\w+(?:'\w+)?")


def informative_rows(tokens: "np.ndarray", terms: Sequence[str] | None, common: frozenset[str]) -> "np.ndarray":
    """The query's token vectors without the rows of words in ``common`` (see :attr:`SeedConfig.late_skip_common`).

    MaxSim averages, over the query's tokens, each one's best match in a memory: a
    name that every turn of its speaker starts with matches all of them fully, so
    it adds the same to the speaker's turns and something to every turn that
    names them ("Thanks, Melanie!"), a reaction more often than the answer.  The
    rows are kept as they are when the words behind them are unknown (``terms``
    None, or not one per row) or when every row would go.
    """
    if not common or terms is None or len(terms) != len(tokens):
        return tokens
    keep = [i for i, t in enumerate(terms) if t not in common]
    if not keep or len(keep) == len(terms):
        return tokens
    return tokens[keep]


def informative_vector(tokens: "np.ndarray | None", terms: Sequence[str] | None,
                       common: frozenset[str]) -> "np.ndarray | None":
    """The query's vector without its too common words, as the mean of its other token vectors
    (normalised); ``None`` when no row can be left out (see :func:`informative_rows`).

    Why not encode the text without them: a second pass of the encoder cost every question that names
    a speaker ~10 ms (LoCoMo p50 18 -> 28 ms), and the query's token vectors are at hand.  On the LoCoMo
    development split the two rank alike (R@10 .818 against .820, leave-one-conversation-out .818;
    benchmarks/RESULTS.md, "Too common words in the query")."""
    import numpy as np

    if tokens is None:
        return None
    rows = np.asarray(tokens, dtype=np.float32)
    kept = informative_rows(rows, terms, common)
    if len(kept) == len(rows):
        return None
    mean = kept.mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if norm > 0 else None


def _scaled(scores: dict[str, float], share: Mapping[str, float]) -> dict[str, float]:
    """Min-max normalised ``scores``, those named in ``share`` scaled by it."""
    return {i: v * share.get(i, 1.0) for i, v in minmax(scores).items()}


def maxsim_blobs(query_tokens: "np.ndarray", blobs: dict[str, bytes], dim: int) -> tuple[dict[str, float], dict[str, int]]:
    """MaxSim of the query against stored (packed) token vectors, and each memory's token count."""
    from ripple.embedding import TOKEN_SCALE, stack_token_blobs

    ids, lengths, stacked = stack_token_blobs(blobs, dim)
    scores = maxsim_stacked(query_tokens, ids, lengths, stacked, scale=TOKEN_SCALE)
    return scores, dict(zip(ids, lengths.tolist()))


def length_aware_seed(
    lexical: dict[str, float],
    dense: dict[str, float],
    late: dict[str, float],
    doc_tokens: dict[str, int],
    lexical_weight: float,
    cfg: SeedConfig,
    share: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """Seed scores with route weights that follow each memory's length (see :class:`SeedConfig`).

    A memory of ``n`` content tokens keeps ``min(1, late_pivot / n) ** power``
    of the MaxSim weight, gives the rest to the dense route, and gets
    ``min(1, n / dense_pivot) ** power`` of the base dense weight.  ``share`` scales both for the
    memories it names (see :attr:`SeedConfig.main_share_cjk`).
    """
    lex_n, dense_n, late_n = minmax(lexical), minmax(dense), minmax(late)
    late_pivot, dense_pivot = cfg.late_length_pivot, cfg.dense_length_pivot
    out: dict[str, float] = {}
    for i in set(lex_n) | set(dense_n) | set(late_n):
        n = max(doc_tokens.get(i, 1), 1)
        late_share = min(1.0, late_pivot / n) ** cfg.late_length_power if late_pivot else 1.0
        dense_share = min(1.0, n / dense_pivot) ** cfg.dense_length_power if dense_pivot else 1.0
        w_dense = cfg.dense * dense_share + cfg.late * (1.0 - late_share)
        if share is None or i not in share:
            out[i] = lexical_weight * lex_n.get(i, 0.0) + w_dense * dense_n.get(i, 0.0) + cfg.late * late_share * late_n.get(i, 0.0)
        else:
            out[i] = lexical_weight * lex_n.get(i, 0.0) + share[i] * (w_dense * dense_n.get(i, 0.0)
                                                                      + cfg.late * late_share * late_n.get(i, 0.0))
    return out
