"""``python -m benchmarks run``: index a dataset with each method and store raw rankings.

For every (dataset, method) pair one JSONL file ``<out>/<dataset>/<method>.jsonl``
is written: a header row (``"type": "header"``) describing the run -- method
config, versions, git commit, machine, index time, ingest throughput, store
size, memory -- then one ``"type": "query"`` row per query with the gold ids,
the ranked ids, and the latency of ``method.recall`` alone.  Nothing else is
computed here: metrics come later from :mod:`benchmarks.report`.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from benchmarks.datasets import PROJECT_ROOT, Dataset, Query, default_data_dir

__all__ = [
    "DATASETS",
    "SEALED_DATASETS",
    "check_sealed",
    "register",
    "run",
    "run_one",
    "load_datasets",
    "pick_names",
    "machine_info",
    "package_versions",
    "git_info",
    "default_out_dir",
]

PACKAGES = ("numpy", "scipy", "bm25s", "jieba", "psutil", "networkx", "sentence-transformers", "torch", "ripple-memory")


def default_out_dir() -> Path:
    return PROJECT_ROOT / "benchmarks" / "results"


# --------------------------------------------------------------------------- datasets


def _locomo(data_dir: Path, args: argparse.Namespace) -> Iterator[Dataset]:
    from benchmarks.datasets import load_locomo

    yield load_locomo(data_dir / "locomo" / "locomo-dev.json")


def _multihop(name: str) -> Callable[[Path, argparse.Namespace], Iterator[Dataset]]:
    def load(data_dir: Path, args: argparse.Namespace) -> Iterator[Dataset]:
        from benchmarks.datasets import load_multihop

        base = data_dir / "multihop"
        yield load_multihop(name, base / f"{name}_train_corpus.json", base / f"{name}_train.json")

    return load


def _zh_chat(data_dir: Path, args: argparse.Namespace) -> Iterator[Dataset]:
    from benchmarks.datasets import load_locomo

    yield load_locomo(data_dir / "zh" / "zh-chat-dev.json", name="zh")


def _zh_heldout(data_dir: Path, args: argparse.Namespace) -> Iterator[Dataset]:
    """The sealed Chinese held-out chat set: named explicitly only, scored once per candidate, never tuned on."""
    from benchmarks.datasets import load_locomo

    yield load_locomo(data_dir / "zh" / "zh-chat-heldout.json", name="zh-heldout")


def _zh_probe(data_dir: Path, args: argparse.Namespace) -> Iterator[Dataset]:
    from benchmarks.datasets import load_zh_probe

    yield load_zh_probe(data_dir / "zh" / "zh-probe-dev.json")


def _synthetic(data_dir: Path, args: argparse.Namespace) -> Iterator[Dataset]:
    from benchmarks.datasets import synthetic

    for size in args.sizes:
        yield synthetic(size, n_users=args.users, seed=args.seed, n_queries=args.n_queries)


DATASETS: dict[str, Callable[[Path, argparse.Namespace], Iterator[Dataset]]] = {
    "locomo": _locomo,
    "musique": _multihop("musique"),
    "hotpotqa": _multihop("hotpotqa"),
    "zh": _zh_chat,  # the Chinese chat set (LoCoMo format)
    "zh-heldout": _zh_heldout,  # sealed: never in a default or pooled development run (SEALED_DATASETS)
    "zh-probe": _zh_probe,  # the small Chinese probe, one gold memory per question
    "synthetic": _synthetic,
}

#: Datasets written to be scored, not tuned on: no command's default names them, ``loo`` refuses to pool
#: them with other data and ``calibrate`` (which fits) refuses them, so a score on them stays out of sample.
SEALED_DATASETS: frozenset[str] = frozenset({"zh-heldout"})


def check_sealed(names: Sequence[str], *, fits: bool) -> None:
    """Exit when a sealed dataset would leak into development: fitted on, or pooled with other data.

    Scoring a sealed set alone is allowed (``run``, or ``loo`` with only it named); a command that
    fits parameters (``fits=True``) may not read it at all.
    """
    sealed = [n for n in names if n in SEALED_DATASETS]
    if not sealed:
        return
    if fits:
        raise SystemExit(f"{', '.join(sealed)} is sealed: score it with `run`, never fit on it")
    if len(names) > 1:
        raise SystemExit(f"{', '.join(sealed)} is sealed: name it alone, never pooled with development data")


def load_datasets(names: list[str], data_dir: Path, args: argparse.Namespace) -> Iterator[Dataset]:
    for name in names:
        if name not in DATASETS:
            raise SystemExit(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}")
        yield from DATASETS[name](data_dir, args)


# --------------------------------------------------------------------------- environment


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            out[n] = None
    return out


def ripple_version() -> str | None:
    try:
        import ripple

        v = getattr(ripple, "__version__", None)
        if v:
            return str(v)
    except Exception:  # noqa: BLE001 -- the engine may be mid-rewrite; the harness must still run
        pass
    try:
        return metadata.version("ripple-memory")
    except metadata.PackageNotFoundError:
        return None


def git_info(root: Path = PROJECT_ROOT) -> dict[str, Any]:
    def git(*a: str) -> str | None:
        try:
            r = subprocess.run(["git", "-C", str(root), *a], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            return None
        return r.stdout.strip() if r.returncode == 0 else None

    status = git("status", "--porcelain")
    return {"commit": git("rev-parse", "HEAD"), "dirty": bool(status) if status is not None else None}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info() -> dict[str, Any]:
    import psutil

    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count()
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": usable,
        "ram_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "platform": platform.platform(),
    }


def machine_line(m: dict[str, Any]) -> str:
    return f"{m.get('cpu')}, {m.get('cores_usable')}/{m.get('cores')} cores, {m.get('ram_gb')} GB RAM, {m.get('platform')}"


# --------------------------------------------------------------------------- memory


def _reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark for this process (Linux >= 4.0); False if not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_rss_bytes() -> tuple[int, str]:
    """Peak resident memory and where it came from (``VmHWM`` or ``ru_maxrss``)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024, "VmHWM"
    except OSError:
        pass
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return (r if sys.platform == "darwin" else r * 1024), "ru_maxrss"


def _rss_bytes() -> int:
    import psutil

    return int(psutil.Process().memory_info().rss)


# --------------------------------------------------------------------------- running


def _mb(b: int | None) -> float | None:
    return None if b is None else round(b / 2**20, 1)


def run_one(
    dataset: Dataset,
    method_name: str,
    *,
    k: int,
    out_dir: Path,
    limit: int | None = None,
    warmup: int = 1,
    command: str = "",
    progress: bool = True,
    store: str | None = None,
    embedder: str | None = None,
    dedup: bool = True,
    extractor: str | None = None,
    gc_freeze: bool = True,
    reuse_store: bool = False,
    cold: bool = False,
) -> Path:
    """Index ``dataset`` with a fresh ``method_name`` and write its result file; returns the path.

    With ``gc_freeze`` every object alive before the timed queries (the loaded
    dataset above all: 100k synthetic documents are ~500k tracked objects) is
    moved out of the garbage collector's reach while they run, as a long-lived
    service does with ``gc.freeze()`` after start-up. Without it, one query in
    a hundred pays for a full collection that walks the harness's own data
    (230-255 ms at 100k memories), which says nothing about the method.
    """
    from tqdm import tqdm

    from benchmarks.methods import make_method

    queries = dataset.queries[:limit] if limit else list(dataset.queries)
    method = make_method(method_name, store=store, embedder=embedder, dedup=dedup, extractor=extractor,
                         reuse=reuse_store)
    if hasattr(method, "progress"):
        method.progress = progress  # type: ignore[attr-defined]
    prepare = getattr(method, "prepare", None)
    t0 = time.perf_counter()
    if callable(prepare):  # model loading is not ingest time
        prepare()
    prepare_s = time.perf_counter() - t0
    gc.collect()
    peak_reset = _reset_peak_rss()
    rss0 = _rss_bytes()
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    method.index(dataset)
    index_s = time.perf_counter() - t0
    reused = getattr(method, "ingest_seconds", None)
    if callable(reused) and reused() is not None:  # the store was ingested once for several methods
        index_s = float(reused())
    rss_index = _rss_bytes()
    warm = getattr(method, "warm", None)
    t0 = time.perf_counter()
    if callable(warm) and not cold:  # what a store keeps in process for the users' recalls, loaded before timing
        warm(dataset)
    warm_s = time.perf_counter() - t0

    for q in queries[:warmup]:  # lazy imports and caches, not timed
        method.recall(q, k)

    bar = tqdm(queries, desc=f"{dataset.name}/{method.name}", unit="q", disable=not progress, file=sys.stderr)
    if gc_freeze:
        gc.collect()
        gc.freeze()
    try:
        rows = _timed_queries(method, bar, k)
    finally:
        if gc_freeze:
            gc.unfreeze()
    query_s = sum(r["latency_ms"] for r in rows) / 1000.0

    peak, peak_src = _peak_rss_bytes()
    store_bytes_fn = getattr(method, "store_bytes", None)
    store = store_bytes_fn() if callable(store_bytes_fn) else None
    cfg_fn = getattr(method, "config", None)
    indexed_fn = getattr(method, "indexed_count", None)
    n_docs = dataset.n_docs
    header = {
        "type": "header",
        "dataset": dataset.name,
        "method": method.name,
        "config": cfg_fn() if callable(cfg_fn) else {},
        "k": k,
        "limit": limit,
        "warmup": warmup,
        "gc_frozen": gc_freeze,
        "n_queries": len(rows),
        "n_docs": n_docs,
        "n_indexed": indexed_fn() if callable(indexed_fn) else None,
        "prepare_s": round(prepare_s, 4),
        "index_s": round(index_s, 4),
        "warm_s": None if cold else round(warm_s, 4),
        "ingest_docs_per_s": round(n_docs / index_s, 1) if index_s > 0 else None,
        "query_s_total": round(query_s, 4),
        "store_bytes": store,
        "rss_before_index_mb": _mb(rss0),
        "rss_after_index_mb": _mb(rss_index),
        "peak_rss_mb": _mb(peak),
        "peak_rss_source": peak_src,
        "peak_rss_scope": "this run" if peak_reset and peak_src == "VmHWM" else "process lifetime",
        "ripple_version": ripple_version(),
        "git": git_info(),
        "machine": machine_info(),
        "versions": package_versions(),
        "dataset_info": dataset.info,
        "command": command,
        "started_at": started.isoformat(timespec="seconds"),
    }
    close = getattr(method, "close", None)
    if callable(close):
        close()

    target = out_dir / dataset.name / f"{method.name}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".jsonl.tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.write(json.dumps(header, ensure_ascii=False, default=str) + "\n")
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    os.replace(tmp, target)
    return target


def _timed_queries(method: Any, queries: Iterable[Query], k: int) -> list[dict[str, Any]]:
    """One result row per query: its ranking, its wall-clock latency and the method's explanation."""
    rows: list[dict[str, Any]] = []
    for q in queries:
        t = time.perf_counter()
        ranked = method.recall(q, k)
        ms = (time.perf_counter() - t) * 1000.0
        row: dict[str, Any] = {
            "type": "query",
            "query_id": q.id,
            "user_id": q.user_id,
            "category": q.category,
            "gold": list(q.gold),
            "ranked": list(ranked)[:k],
            "latency_ms": round(ms, 4),
        }
        explain = getattr(method, "last_explain", None)
        if explain:
            row["explain"] = explain
        rows.append(row)
    return rows


def _int_list(value: str) -> list[int]:
    out = []
    for part in value.split(","):
        part = part.strip().lower().replace("_", "")
        mult = 1
        if part.endswith("k"):
            mult, part = 1_000, part[:-1]
        elif part.endswith("m"):
            mult, part = 1_000_000, part[:-1]
        out.append(int(float(part) * mult))
    return out


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", "--datasets", dest="datasets", default="locomo",
                        help="comma-separated: locomo, musique, hotpotqa, zh, zh-probe, synthetic (default: locomo);"
                             " zh-heldout is sealed: scored once per candidate, never tuned on")
    parser.add_argument("--methods", default="bm25", help="comma-separated method names (default: bm25)")
    parser.add_argument("--k", type=int, default=25, help="ranking depth returned per query (default: 25)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N queries of each dataset")
    parser.add_argument("--out", type=Path, default=None, help="results folder (default: benchmarks/results)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="benchmark data folder (default: $RIPPLE_DATA_DIR or benchmarks/data)")
    parser.add_argument("--size", "--sizes", dest="sizes", type=_int_list, default=[10_000],
                        help="synthetic store sizes, comma-separated, k/M suffixes allowed (default: 10k)")
    parser.add_argument("--users", type=int, default=10, help="synthetic: number of users (default: 10)")
    parser.add_argument("--seed", type=int, default=0, help="synthetic: generator seed (default: 0)")
    parser.add_argument("--n-queries", type=int, default=200, help="synthetic: number of questions (default: 200)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed recalls before timing (default: 1)")
    parser.add_argument("--cold", action="store_true",
                        help="time the first recalls after a start: the store's users are not warmed (Memory.warm)"
                             " and no recall is untimed")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--no-gc-freeze", action="store_true",
                        help="leave the objects alive before the timed queries (the loaded dataset) to the garbage"
                             " collector; by default they are frozen out of it while the queries run (gc.freeze)")
    parser.add_argument("--store", default=None,
                        help="ripple methods: a Neo4j URI (bolt://, neo4j://) instead of a temporary embedded store; "
                             "password from RIPPLE_NEO4J_PASSWORD; the dataset's users are deleted there first")
    parser.add_argument("--embedder", default=None,
                        help="ripple methods: embedder name, e.g. hash-384 (model-free, for scale runs)")
    parser.add_argument("--no-dedup", action="store_true",
                        help="ripple methods: store repeated texts as separate memories (scale runs: the synthetic"
                             " generator repeats its filler lines, which dedup would merge)")
    parser.add_argument("--extractor", choices=["gazetteer"], default=None,
                        help="ripple methods: 'gazetteer' matches the names the synthetic generator used instead of"
                             " parsing with spaCy (~10x faster ingest; no RELATED triples), for 1M-memory builds")
    parser.add_argument("--reuse-store", action="store_true",
                        help="ripple methods with --store: recall from the server's copy of the dataset when every"
                             " user of it has memories there (an earlier run's ingest; no ingest rate is recorded)")


def pick_names(value: str, known: Iterable[str], kind: str) -> list[str] | None:
    """The names of a comma-separated flag; ``None``, after saying which are unknown, if any is."""
    names = [n.strip() for n in value.split(",") if n.strip()]
    known = list(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"unknown {kind}(s): {', '.join(unknown)}; known: {', '.join(known)}", file=sys.stderr)
        return None
    return names


def run(args: argparse.Namespace, argv: list[str] | None = None) -> int:
    from benchmarks.methods import METHODS

    data_dir = args.data_dir or default_data_dir()
    out_dir = args.out or default_out_dir()
    methods = pick_names(args.methods, METHODS, "method")
    if methods is None:
        return 2
    names = [d.strip() for d in args.datasets.split(",") if d.strip()]
    command = "python -m benchmarks " + shlex.join(argv if argv is not None else sys.argv[1:])
    for ds in load_datasets(names, Path(data_dir), args):
        for m in methods:
            path = run_one(ds, m, k=args.k, out_dir=Path(out_dir), limit=args.limit,
                           warmup=0 if args.cold else args.warmup, cold=args.cold,
                           command=command, progress=not args.no_progress, store=args.store, embedder=args.embedder,
                           dedup=not args.no_dedup, extractor=args.extractor, gc_freeze=not args.no_gc_freeze,
                           reuse_store=args.reuse_store)
            print(f"wrote {path}", file=sys.stderr)
    return 0
