"""Pure scoring functions: BM25 from postings, MaxSim, fusion and time decay.

No store calls, no pydantic: plain dicts and arrays in, plain dicts out, so
each function can be tested against a hand computation.

References
----------
Robertson & Zaragoza (2009), "The Probabilistic Relevance Framework: BM25 and Beyond".
Khattab & Zaharia (2020), "ColBERT: Efficient and Effective Passage Search via
Contextualized Late Interaction over BERT" (MaxSim).
Cormack, Clarke & Büttcher (2009), "Reciprocal Rank Fusion outperforms Condorcet
and individual Rank Learning Methods".
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

if TYPE_CHECKING:
    import numpy as np

__all__ = ["bm25", "maxsim", "maxsim_stacked", "minmax", "weighted_sum", "rrf", "recency_factor", "top"]


def bm25(
    query_terms: Sequence[str],
    postings: Iterable[tuple[str, str, int, int]],
    *,
    n_docs: int,
    avg_len: float,
    df: Mapping[str, int],
    k1: float = 1.2,
    b: float = 0.75,
) -> dict[str, float]:
    """Okapi BM25 of every document that has at least one query term.

    ``postings`` rows are ``(term, doc_id, tf, doc_len)``; repeated query terms
    count once per occurrence, as in the classic formula's query-term frequency.
    """
    if n_docs <= 0:
        return {}
    qtf = Counter(query_terms)
    avg = avg_len or 1.0
    scores: dict[str, float] = {}
    for term, doc, tf, dl in postings:
        n = df.get(term, 0)
        if n <= 0 or term not in qtf:
            continue
        idf = math.log(1.0 + (n_docs - n + 0.5) / (n + 0.5))
        denom = tf + k1 * (1.0 - b + b * dl / avg)
        scores[doc] = scores.get(doc, 0.0) + qtf[term] * idf * tf * (k1 + 1.0) / denom
    return scores


def term_coverage(
    query_terms: Sequence[str],
    postings: Iterable[tuple[str, str, int, int]],
    *,
    n_docs: int,
    df: Mapping[str, int],
    cap: float,
) -> tuple[dict[str, float], float]:
    """How much of the query's informative words each document holds, and the user's memories hold.

    Each distinct query term weighs its IDF (a term no memory has weighs the
    most: ``df = 0``); terms in more than ``cap`` memories carry no information
    and are left out.  Returns ``({doc: matched weight / total}, known weight /
    total)``: absolute shares in [0, 1] that mean the same for every query,
    unlike BM25 scores.  "What is the capital of Peru?" asked of a user who
    never mentioned Peru has ``known`` near .5 whatever the ranking says.
    """
    weights: dict[str, float] = {}
    for term in dict.fromkeys(query_terms):
        n = df.get(term, 0)
        if n <= cap:
            weights[term] = math.log(1.0 + (n_docs - n + 0.5) / (n + 0.5)) if n_docs > 0 else 1.0
    total = sum(weights.values())
    if total <= 0:
        return {}, 1.0
    matched: dict[str, float] = {}
    for term, doc, _tf, _dl in postings:
        w = weights.get(term)
        if w is not None:
            matched[doc] = matched.get(doc, 0.0) + w
    known = sum(w for t, w in weights.items() if df.get(t, 0) > 0)
    return {d: min(1.0, m / total) for d, m in matched.items()}, known / total


def maxsim(query_tokens: "np.ndarray", docs: Mapping[str, "np.ndarray"]) -> dict[str, float]:
    """Late-interaction score: mean over query tokens of the best-matching doc token.

    One matrix product over all candidate documents' tokens stacked together,
    then a segmented max (``np.maximum.reduceat``) per document.
    """
    import numpy as np

    if not docs or query_tokens.size == 0:
        return {}
    ids = list(docs)
    mats = [docs[i] for i in ids]
    lengths = np.fromiter((m.shape[0] for m in mats), dtype=np.int64, count=len(mats))
    return maxsim_stacked(query_tokens, ids, lengths, np.vstack(mats))


def maxsim_stacked(
    query_tokens: "np.ndarray", ids: Sequence[str], lengths: "np.ndarray", stacked: "np.ndarray", scale: float = 1.0
) -> dict[str, float]:
    """:func:`maxsim` over documents whose token rows are already stacked.

    ``stacked`` holds ``lengths[j]`` rows for ``ids[j]``, in order; it may be
    int8 (packed token vectors), in which case ``scale`` undoes the packing.
    Stacking the stored bytes once is cheaper than unpacking one array per
    document (200 candidates: ~0.3 ms against ~1.5 ms).
    """
    import numpy as np

    if not len(ids) or query_tokens.size == 0:
        return {}
    sims = query_tokens.astype(np.float32, copy=False) @ stacked.astype(np.float32, copy=False).T
    if scale != 1.0:
        sims *= scale
    if sims.shape[1] == 0:
        return {i: 0.0 for i in ids}
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    best = np.maximum.reduceat(sims, np.minimum(starts, sims.shape[1] - 1), axis=1)  # (n_query_tokens, n_docs)
    best[:, lengths == 0] = 0.0
    means = best.mean(axis=0)
    return {i: float(s) for i, s in zip(ids, means)}


def minmax(scores: Mapping[str, float]) -> dict[str, float]:
    """Scale scores to [0, 1]; a constant non-empty map becomes all ones."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if hi - lo <= 1e-12:
        return {k: 1.0 for k in scores}
    span = hi - lo
    return {k: (v - lo) / span for k, v in scores.items()}


def weighted_sum(routes: Sequence[tuple[float, Mapping[str, float]]], *, normalise: bool = True) -> dict[str, float]:
    """Sum of routes' scores times their weights, each min-max normalised first.

    A document missing from a route gets that route's minimum (0 after
    normalisation).
    """
    out: dict[str, float] = {}
    for weight, scores in routes:
        if weight == 0 or not scores:
            continue
        scaled = minmax(scores) if normalise else dict(scores)
        for k, v in scaled.items():
            out[k] = out.get(k, 0.0) + weight * v
    return out


def rrf(rankings: Sequence[Sequence[str]], *, k: int = 60) -> dict[str, float]:
    """Reciprocal rank fusion: ``sum(1 / (k + rank))`` over the rankings."""
    out: dict[str, float] = {}
    for ranking in rankings:
        for r, doc in enumerate(ranking, start=1):
            out[doc] = out.get(doc, 0.0) + 1.0 / (k + r)
    return out


def recency_factor(age_days: float, half_life_days: float) -> float:
    """``0.5 ** (age / half_life)``, 1.0 for events in the future."""
    if age_days <= 0:
        return 1.0
    return 0.5 ** (age_days / half_life_days)


def top(scores: Mapping[str, float], n: int) -> list[str]:
    """Ids of the ``n`` highest scores, ties broken by id for determinism.

    Exactly ``sorted(...)[:n]``, but a large map (thousands of BM25 hits for a
    common word) is first cut to the scores at or above the ``n``-th best with
    a numpy partition, so only those are sorted in Python.
    """
    if n <= 0 or not scores:
        return []
    items: Iterable[tuple[str, float]] = scores.items()
    if len(scores) > 4 * n + 64:
        import numpy as np

        values = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
        cut = np.partition(values, len(values) - n)[len(values) - n]  # the n-th best score
        items = [(k, v) for k, v in scores.items() if v >= cut]
    return [k for k, _ in sorted(items, key=lambda kv: (-kv[1], kv[0]))[:n]]
