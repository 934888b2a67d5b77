"""Retrieval metrics as a registry of pure functions over raw rankings.

Every metric takes ``(ranked, gold)`` -- the ranked document ids a method
returned and the gold ids of the query -- and returns a float in [0, 1].
:data:`METRICS` maps a stable name to the function and :data:`METRIC_DEPTH`
to the ranking depth it reads, so a report can leave out metrics deeper than
the ``k`` a run was made with.  Adding a metric is one decorated function;
results never need to be recomputed by rerunning a method.

>>> METRICS["recall@2"](["a", "x", "b"], ("a", "b"))
0.5
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Callable, Iterable, Mapping, Sequence

__all__ = [
    "METRICS",
    "METRIC_DEPTH",
    "MetricFn",
    "register",
    "recall_at",
    "recall_all_at",
    "ndcg_at",
    "mrr",
    "score_row",
    "aggregate",
    "latency_percentiles",
]

MetricFn = Callable[[Sequence[str], Sequence[str]], float]

METRICS: dict[str, MetricFn] = {}
METRIC_DEPTH: dict[str, int | None] = {}  # None: reads the whole returned list


def register(name: str, depth: int | None) -> Callable[[MetricFn], MetricFn]:
    """Add a metric to the registry under ``name``."""

    def deco(fn: MetricFn) -> MetricFn:
        if name in METRICS:
            raise ValueError(f"metric {name!r} registered twice")
        METRICS[name] = fn
        METRIC_DEPTH[name] = depth
        return fn

    return deco


def _dedup(ranked: Iterable[str]) -> list[str]:
    """Ranked ids without repeats (first occurrence wins)."""
    return list(dict.fromkeys(ranked))


def recall_at(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    """``|gold ∩ top-k| / |gold|``; 0 for an empty gold set."""
    g = set(gold)
    if not g:
        return 0.0
    return len(g.intersection(_dedup(ranked)[:k])) / len(g)


def recall_all_at(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    """1 if every gold id is in the top ``k``, else 0 (strict multi-hop recall)."""
    g = set(gold)
    if not g:
        return 0.0
    return 1.0 if g.issubset(_dedup(ranked)[:k]) else 0.0


def ndcg_at(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    """Binary-relevance nDCG@k with the usual ``1 / log2(rank + 1)`` discount."""
    g = set(gold)
    if not g:
        return 0.0
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(_dedup(ranked)[:k]) if d in g)
    idcg = sum(1.0 / math.log2(i + 2) for i in range(min(len(g), k)))
    return dcg / idcg


def mrr(ranked: Sequence[str], gold: Sequence[str]) -> float:
    """Reciprocal rank of the first gold id in the returned list, 0 if none."""
    g = set(gold)
    for i, d in enumerate(_dedup(ranked)):
        if d in g:
            return 1.0 / (i + 1)
    return 0.0


def _bind(fn: Callable[..., float], k: int) -> MetricFn:
    def metric(ranked: Sequence[str], gold: Sequence[str]) -> float:
        return fn(ranked, gold, k)

    metric.__name__ = f"{fn.__name__}_{k}"
    metric.__doc__ = f"{fn.__doc__} (k = {k})"
    return metric


for _k in (2, 5, 10, 25):
    register(f"recall@{_k}", _k)(_bind(recall_at, _k))
register("recall_all@10", 10)(_bind(recall_all_at, 10))
register("ndcg@10", 10)(_bind(ndcg_at, 10))
register("mrr", None)(mrr)


def score_row(ranked: Sequence[str], gold: Sequence[str], *, k: int | None = None, names: Iterable[str] | None = None) -> dict[str, float]:
    """All (or the ``names``) registered metrics of one query.

    With ``k`` (the depth a run returned), metrics that read deeper than ``k``
    are left out, since a truncated list would understate them.
    """
    out: dict[str, float] = {}
    for name in names if names is not None else METRICS:
        depth = METRIC_DEPTH[name]
        if k is not None and depth is not None and depth > k:
            continue
        out[name] = METRICS[name](ranked, gold)
    return out


def aggregate(rows: Iterable[Mapping[str, Any]], by: str | None = "category", *, overall: str = "overall") -> dict[str, dict[str, float]]:
    """Mean of every numeric field per group of ``rows[by]`` and over all rows.

    Each row is a mapping of metric name -> value plus the grouping key.
    Returns ``{group: {"n": count, metric: mean, ...}}`` with groups sorted and
    the ``overall`` group last.  A metric missing from some rows is averaged
    over the rows that have it.
    """
    sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    n: dict[str, int] = defaultdict(int)
    for row in rows:
        groups = [overall]
        if by is not None and by in row:
            groups.insert(0, str(row[by]))
        for grp in groups:
            n[grp] += 1
            for key, val in row.items():
                if key == by or isinstance(val, bool) or not isinstance(val, (int, float)):
                    continue
                sums[grp][key] += float(val)
                counts[grp][key] += 1
    result: dict[str, dict[str, float]] = {}
    for grp in sorted((g for g in n if g != overall)) + ([overall] if overall in n else []):
        result[grp] = {"n": n[grp], **{k: sums[grp][k] / counts[grp][k] for k in sums[grp]}}
    return result


def latency_percentiles(values_ms: Sequence[float], ps: Sequence[float] = (50, 95, 99)) -> dict[str, float]:
    """``{"p50": ..., "p95": ..., "p99": ..., "mean": ..., "max": ...}`` in the input's unit.

    Linear interpolation between order statistics (numpy's default); an empty
    input gives NaNs.
    """
    vals = sorted(float(v) for v in values_ms)
    out: dict[str, float] = {}
    if not vals:
        return {**{f"p{p:g}": math.nan for p in ps}, "mean": math.nan, "max": math.nan}
    for p in ps:
        pos = (len(vals) - 1) * p / 100.0
        lo, hi = math.floor(pos), math.ceil(pos)
        out[f"p{p:g}"] = vals[lo] + (vals[hi] - vals[lo]) * (pos - lo)
    out["mean"] = sum(vals) / len(vals)
    out["max"] = vals[-1]
    return out
