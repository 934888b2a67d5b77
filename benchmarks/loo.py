"""``python -m benchmarks loo``: compare recall plans per conversation and choose by leave-one-out.

Quality figures on a few hundred questions are easy to overfit: after some
forty configurations were compared on two LoCoMo conversations, the chosen
default scored about .06 lower on conversations it never saw.  This command
makes the honest figure the easy one to get.  It ingests each dataset once,
recalls every question with every candidate plan, and reports

* every candidate's figures per conversation (per user) and pooled;
* the leave-one-conversation-out figure of *choosing* among the candidates:
  for each conversation, pick the candidate with the best pooled score on the
  other conversations, score it on the held-out one, and pool those scores.
  A LOO figure well below the best pooled one means the choice fits the
  questions, not the data.

Candidates are named recall plans: ``ripple`` (the default), a recipe or
ablation name (``nodamping``, ``sessionppr``, ...; see
:mod:`ripple.recall.recipes`), or ``NAME=PATH:VALUE;PATH:VALUE`` where each
PATH is a dotted path into :class:`ripple.RecallConfig` (numbers index the
channel tuple: ``spread.channels.1.hops:3``) and VALUE is JSON
(``NAME=RECIPE+PATH:VALUE`` starts from a recipe instead of the default).  Results as
data: one JSON file per run, plus a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from benchmarks.datasets import Dataset, Query, default_data_dir, iter_doc_chunks
from benchmarks.metrics import recall_at

__all__ = ["parse_candidate", "evaluate", "loo_choice", "register", "run"]

METRICS: dict[str, Callable[[Sequence[str], Sequence[str]], float]] = {
    "R@5": lambda r, g: recall_at(r, g, 5),
    "R@10": lambda r, g: recall_at(r, g, 10),
}


# --------------------------------------------------------------------------------------------- candidates


def _set_path(obj: Any, path: list[str], value: Any) -> Any:
    """A copy of the JSON-like ``obj`` with ``path`` set to ``value`` (lists indexed by number)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(obj, list):
        i = int(head)
        out = list(obj)
        out[i] = _set_path(out[i], rest, value)
        return out
    if not isinstance(obj, dict):
        raise ValueError(f"cannot set {'.'.join(path)} inside a {type(obj).__name__}")
    if head not in obj:
        raise ValueError(f"no setting {head!r} (known: {', '.join(obj)})")
    return {**obj, head: _set_path(obj[head], rest, value)}


def parse_candidate(spec: str) -> tuple[str, Any]:
    """``(name, RecallConfig)`` of a candidate spec (see the module docstring)."""
    from ripple import RecallConfig
    from ripple.recall.recipes import ABLATIONS, RECIPES

    name, sep, body = spec.partition("=")
    name = name.strip()
    if not sep:
        if name in RECIPES:
            return name, RECIPES[name]
        if name in ABLATIONS:
            return name, ABLATIONS[name]
        raise ValueError(f"unknown recall plan {name!r}: a recipe ({', '.join(RECIPES)}), an ablation"
                         f" ({', '.join(ABLATIONS)}) or NAME=PATH:VALUE;...")
    head, plus, tail = body.partition("+")
    if plus and ":" not in head:  # NAME=RECIPE+PATH:VALUE;... starts from a recipe or ablation
        data = parse_candidate(head.strip())[1].model_dump(mode="json")
        body = tail
    else:
        data = RecallConfig().model_dump(mode="json")
    for part in filter(None, (p.strip() for p in body.split(";"))):
        path, colon, raw = part.partition(":")
        if not colon:
            raise ValueError(f"{part!r}: expected PATH:VALUE")
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        data = _set_path(data, path.strip().split("."), value)
    return name, RecallConfig.model_validate(data)


# --------------------------------------------------------------------------------------------- evaluation


def _ingest(ds: Dataset, folder: str, progress: bool) -> dict[str, float]:
    """Store the dataset's documents once; returns each user's present (their latest memory's time)."""
    from tqdm import tqdm

    from ripple import Memory

    now: dict[str, float] = {}
    with Memory(path=folder) as mem, tqdm(total=ds.n_docs, desc=f"ingest {ds.name}", unit="doc",
                                          disable=not progress, file=sys.stderr) as bar:
        for chunk in iter_doc_chunks(ds.docs, 2048):
            mem.add_many([{"text": d.text, "user_id": d.user_id, "session_id": d.session_id, "at": d.at,
                           "metadata": {"doc_id": d.id}} for d in chunk])
            for d in chunk:
                if d.at is not None:
                    now[d.user_id] = max(now.get(d.user_id, float("-inf")), d.at.timestamp())
            bar.update(len(chunk))
    return now


@contextmanager
def ingested(ds: Dataset, cache: Path | None, progress: bool) -> Iterator[tuple[str, dict[str, float]]]:
    """The dataset stored once: in ``cache`` (reused by later runs) or in a temporary folder removed
    afterwards; yields the folder and each user's present (see :func:`_ingest`)."""
    tmp = None
    folder = cache if cache is not None else Path(tmp := tempfile.mkdtemp(prefix=f"ripple-{ds.name}-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        marker = folder / "user_now.json"
        if marker.is_file():
            user_now = json.loads(marker.read_text())
        else:
            user_now = _ingest(ds, str(folder), progress)
            marker.write_text(json.dumps(user_now))
        yield str(folder), user_now
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def evaluate(ds: Dataset, candidates: Mapping[str, Any], *, folder: str, user_now: Mapping[str, float],
             k: int = 25, progress: bool = False) -> dict[str, list[dict[str, Any]]]:
    """Per candidate, one row per question: user, category, ranked doc ids and the metrics."""
    from tqdm import tqdm

    from ripple import Memory

    clock_at: list[float | None] = [None]
    out: dict[str, list[dict[str, Any]]] = {}
    for name, config in candidates.items():
        rows = []
        with Memory(path=folder, config=config, clock=lambda: clock_at[0] or time.time()) as mem:
            for q in tqdm(ds.queries, desc=name, disable=not progress, file=sys.stderr):
                clock_at[0] = user_now.get(q.user_id)
                res = mem.recall(q.text, user_id=q.user_id, k=k, touch=False)
                ranked = [h.memory.metadata.get("doc_id", h.memory.id) for h in res.hits]
                rows.append({"id": q.id, "user": q.user_id, "category": q.category, "ranked": ranked,
                             **{m: fn(ranked, q.gold) for m, fn in METRICS.items()}})
        out[name] = rows
    return out


def _mean(rows: Iterable[Mapping[str, Any]], metric: str) -> float:
    vals = [float(r[metric]) for r in rows]
    return sum(vals) / len(vals) if vals else float("nan")


def table(results: Mapping[str, list[dict[str, Any]]]) -> dict[str, dict[str, dict[str, float]]]:
    """candidate -> group ("pooled", each user, "multi-hop") -> metric -> mean."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, rows in results.items():
        groups: dict[str, list[dict[str, Any]]] = {"pooled": rows}
        for r in rows:
            groups.setdefault(r["user"], []).append(r)
        mh = [r for r in rows if r["category"] == "multi-hop"]
        if mh:
            groups["multi-hop"] = mh
        out[name] = {g: {"n": len(rs), **{m: _mean(rs, m) for m in METRICS}} for g, rs in groups.items()}
    return out


def loo_choice(results: Mapping[str, list[dict[str, Any]]], metric: str = "R@10") -> dict[str, Any]:
    """Leave-one-user-out choice among the candidates: per held-out user the candidate best on the
    others, its score there, and the pooled held-out score (question-weighted, like the pooled figure)."""
    names = list(results)
    users = sorted({r["user"] for r in results[names[0]]})
    folds = []
    held_rows: list[dict[str, Any]] = []
    for user in users:
        train = {n: _mean((r for r in results[n] if r["user"] != user), metric) for n in names}
        best = max(names, key=lambda n: (train[n], -names.index(n)))
        test = [r for r in results[best] if r["user"] == user]
        held_rows.extend(test)
        folds.append({"held_out": user, "chosen": best, "train": train[best], "held_out_score": _mean(test, metric)})
    pooled_best = max(names, key=lambda n: _mean(results[n], metric))
    return {"metric": metric, "folds": folds, "loo": _mean(held_rows, metric), "best_pooled": pooled_best,
            "best_pooled_score": _mean(results[pooled_best], metric)}


def markdown(tab: Mapping[str, Mapping[str, Mapping[str, float]]], loo: Mapping[str, Any] | None) -> str:
    names = list(tab)
    groups = [g for g in tab[names[0]] if g not in ("pooled", "multi-hop")]
    head = ["candidate", "R@5", "R@10", "multi-hop R@10", *[f"{g} R@10" for g in groups]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for n in names:
        t = tab[n]
        cells = [n, f"{t['pooled']['R@5']:.3f}", f"{t['pooled']['R@10']:.3f}",
                 f"{t['multi-hop']['R@10']:.3f}" if "multi-hop" in t else "-",
                 *[f"{t[g]['R@10']:.3f}" for g in groups]]
        lines.append("| " + " | ".join(cells) + " |")
    if loo is not None:
        lines.append("")
        lines.append(f"leave-one-conversation-out {loo['metric']}: **{loo['loo']:.3f}** (best pooled: "
                     f"{loo['best_pooled']} {loo['best_pooled_score']:.3f}); chosen per fold: "
                     + ", ".join(f"{f['held_out']} -> {f['chosen']} ({f['held_out_score']:.3f})" for f in loo["folds"]))
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------- command


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", default="locomo",
                        help="locomo (one user per conversation), musique, hotpotqa, zh, zh-probe, ...; comma-separated"
                             " datasets are pooled (their users are the folds; each is stored in its own"
                             " --store-cache subfolder)")
    parser.add_argument("--candidates", required=True,
                        help="semicolon-free list separated by ' | ': recipe names or NAME=PATH:VALUE;PATH:VALUE")
    parser.add_argument("--k", type=int, default=25)
    parser.add_argument("--store-cache", type=Path, default=None,
                        help="keep the ingested store in this folder and reuse it next time (same data and code!)")
    parser.add_argument("--out", type=Path, default=None, help="write the per-question rows and tables as JSON here")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--no-progress", action="store_true")


def run(args: argparse.Namespace, argv: list[str] | None = None) -> int:
    from benchmarks.run import check_sealed, load_datasets

    candidates = dict(parse_candidate(s.strip()) for s in args.candidates.split("|") if s.strip())
    data_args = argparse.Namespace(sizes=[10_000], users=10, seed=0, n_queries=200, limit=None)
    names = [n.strip() for n in args.dataset.split(",") if n.strip()]
    check_sealed(names, fits=False)
    results: dict[str, list[dict[str, Any]]] = {n: [] for n in candidates}
    for ds in load_datasets(names, Path(args.data_dir or default_data_dir()), data_args):
        cache = args.store_cache / ds.name if args.store_cache is not None and len(names) > 1 else args.store_cache
        with ingested(ds, cache, not args.no_progress) as (folder, user_now):
            got = evaluate(ds, candidates, folder=folder, user_now=user_now, k=args.k, progress=not args.no_progress)
        for n, rows in got.items():
            results[n].extend(rows)
    tab = table(results)
    loo = loo_choice(results) if len(candidates) > 1 else None
    print(markdown(tab, loo))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        command = "python -m benchmarks " + " ".join(argv or sys.argv[1:])
        args.out.write_text(json.dumps({"command": command, "candidates": {n: c.model_dump(mode="json") for n, c in
                                        candidates.items()}, "table": tab, "loo": loo, "rows": results},
                                       ensure_ascii=False))
    return 0
