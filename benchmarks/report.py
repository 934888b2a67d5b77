"""``python -m benchmarks report``: metrics, tables and plots from result files only.

Reads every ``<out>/<dataset>/<method>.jsonl`` written by :mod:`benchmarks.run`,
scores each query row with the :mod:`benchmarks.metrics` registry, and writes
``<out>/summary.json``, ``<out>/summary.md`` and PNG plots under
``<out>/plots/``.  No method is ever rerun.  ``--update-results-md FILE``
rewrites the ``<!-- bench:begin -->`` ... ``<!-- bench:end -->`` section of a
markdown file with the summary.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.metrics import METRICS, aggregate, latency_percentiles, score_row

__all__ = [
    "RunResult",
    "load_results",
    "summarise",
    "render_markdown",
    "update_results_md",
    "register",
    "run",
    "BEGIN",
    "END",
]

BEGIN = "<!-- bench:begin -->"
END = "<!-- bench:end -->"

# column label for each registry metric in the markdown tables
_LABELS = {
    "recall@2": "R@2",
    "recall@5": "R@5",
    "recall@10": "R@10",
    "recall@25": "R@25",
    "recall_all@10": "Rall@10",
    "ndcg@10": "nDCG@10",
    "mrr": "MRR",
}
_CATEGORY_METRICS = ("recall@5", "recall@10", "recall@25", "recall_all@10")


@dataclass
class RunResult:
    """One result file: its header and query rows."""

    path: Path
    header: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def dataset(self) -> str:
        return str(self.header.get("dataset") or self.path.parent.name)

    @property
    def method(self) -> str:
        return str(self.header.get("method") or self.path.stem)


def load_results(out_dir: Path) -> list[RunResult]:
    """Every ``<out_dir>/<dataset>/<method>.jsonl`` (header first), sorted by dataset and method."""
    runs: list[RunResult] = []
    for path in sorted(Path(out_dir).glob("*/*.jsonl")):
        header: dict[str, Any] | None = None
        rows: list[dict[str, Any]] = []
        with path.open(encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                rec = json.loads(line)
                if rec.get("type") == "header":
                    header = rec
                elif rec.get("type") == "query":
                    rows.append(rec)
        if header is None:
            print(f"skipping {path}: no header row", file=sys.stderr)
            continue
        runs.append(RunResult(path=path, header=header, rows=rows))
    runs.sort(key=lambda r: (_dataset_key(r.dataset), r.method))
    return runs


_DATASET_ORDER = ("locomo", "musique", "hotpotqa")


def _dataset_key(name: str) -> tuple[int, int, str]:
    """Known datasets first in a fixed order, then others by name, synthetic ones by size."""
    m = re.match(r"^synthetic-(\d+)([kM]?)$", name)
    if m:
        n = int(m.group(1)) * {"": 1, "k": 1_000, "M": 1_000_000}[m.group(2)]
        return (2, n, name)
    if name in _DATASET_ORDER:
        return (0, _DATASET_ORDER.index(name), name)
    return (1, 0, name)


def _round(v: Any, nd: int = 4) -> Any:
    if isinstance(v, float):
        return None if math.isnan(v) else round(v, nd)
    if isinstance(v, dict):
        return {k: _round(x, nd) for k, x in v.items()}
    return v


def summarise_run(run: RunResult) -> dict[str, Any]:
    """Metrics per category and overall, latency percentiles and run facts of one file."""
    h = run.header
    k = int(h.get("k") or 0) or None
    scored = [{"category": r.get("category", "all"), **score_row(r["ranked"], r["gold"], k=k)} for r in run.rows]
    groups = aggregate(scored, by="category")
    lat = latency_percentiles([r["latency_ms"] for r in run.rows])
    short = sum(1 for r in run.rows if k and len(r["ranked"]) < k)
    return {
        "overall": _round(groups.get("overall", {"n": 0})),
        "categories": {g: _round(v) for g, v in groups.items() if g != "overall"},
        "latency_ms": _round(lat, 3),
        "stages_ms": _stage_percentiles(run.rows),
        "run": {
            "k": h.get("k"),
            "limit": h.get("limit"),
            "n_queries": len(run.rows),
            "queries_returning_fewer_than_k": short,
            "n_docs": h.get("n_docs"),
            "n_indexed": h.get("n_indexed"),
            "index_s": h.get("index_s"),
            "ingest_docs_per_s": h.get("ingest_docs_per_s"),
            "store_mb": None if h.get("store_bytes") is None else round(h["store_bytes"] / 2**20, 2),
            "peak_rss_mb": h.get("peak_rss_mb"),
            "peak_rss_scope": h.get("peak_rss_scope"),
            "rss_after_index_mb": h.get("rss_after_index_mb"),
            "config": h.get("config"),
            "ripple_version": h.get("ripple_version"),
            "git": h.get("git"),
            "machine": h.get("machine"),
            "command": h.get("command"),
            "started_at": h.get("started_at"),
            "file": str(run.path),
        },
    }


def _stage_percentiles(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """p50 / p95 milliseconds of each recall stage, from the per-query traces ripple methods record."""
    per_stage: dict[str, list[float]] = {}
    for r in rows:
        for name, ms in ((r.get("explain") or {}).get("stages_ms") or {}).items():
            per_stage.setdefault(name, []).append(float(ms))
    out = {}
    for name, values in per_stage.items():
        lat = latency_percentiles(values)
        out[name] = {"p50": round(lat["p50"], 3), "p95": round(lat["p95"], 3)}
    return out


def summarise(runs: list[RunResult]) -> dict[str, Any]:
    """``{"datasets": {dataset: {"methods": {method: summary}}}}`` for all runs."""
    datasets: dict[str, Any] = {}
    for r in runs:
        ds = datasets.setdefault(r.dataset, {"n_docs": r.header.get("n_docs"), "methods": {}})
        ds["methods"][r.method] = summarise_run(r)
    return {
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "metrics": list(METRICS),
        "datasets": datasets,
    }


# --------------------------------------------------------------------------- markdown


def _fmt(v: Any, nd: int = 3) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        if math.isnan(v):
            return "–"
        return f"{v:.{nd}f}"
    return str(v)


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _ms(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 100 else f"{v:.0f}"


def render_markdown(summary: dict[str, Any], *, plots: dict[str, list[Path]] | None = None, relative_to: Path | None = None) -> str:
    """The summary as markdown: per dataset a methods × metrics table and a per-category table."""
    lines: list[str] = []
    metric_names = [m for m in summary["metrics"] if m in _LABELS] + [m for m in summary["metrics"] if m not in _LABELS]
    synthetic: list[tuple[str, str, dict[str, Any]]] = []
    for ds_name, ds in summary["datasets"].items():
        methods = ds["methods"]
        any_run = next(iter(methods.values()))["run"]
        lines.append(f"### {ds_name}")
        lines.append("")
        lines.append(
            f"{any_run['n_docs']} docs, {any_run['n_queries']} queries, k = {any_run['k']}"
            + (f" (first {any_run['limit']} queries only)" if any_run.get("limit") else "")
        )
        lines.append("")
        present = [m for m in metric_names if any(m in s["overall"] for s in methods.values())]
        head = ["method", "n", *[_LABELS.get(m, m) for m in present], "p50 ms", "p95 ms", "index s", "docs/s", "peak RSS MB"]
        rows = []
        for name, s in methods.items():
            o, lat, run = s["overall"], s["latency_ms"], s["run"]
            rows.append(
                [name, str(o.get("n", 0)), *[_fmt(o.get(m)) for m in present], _ms(lat.get("p50")), _ms(lat.get("p95")),
                 _fmt(run.get("index_s"), 2), _fmt(run.get("ingest_docs_per_s"), 0), _fmt(run.get("peak_rss_mb"), 0)]
            )
            if ds_name.startswith("synthetic-"):
                synthetic.append((ds_name, name, s))
        lines += _table(head, rows)
        lines.append("")
        traced = {name: s["stages_ms"] for name, s in methods.items()
                  if s.get("stages_ms") and (name == "ripple" or name.startswith("ripple+"))}
        if traced:
            names = list(dict.fromkeys(stage for st in traced.values() for stage in st))
            lines.append("Where ripple's recall time goes (per stage, p50 / p95 ms):")
            lines.append("")
            lines += _table(["method", *names], [
                [name, *[f"{_ms(st[n]['p50'])} / {_ms(st[n]['p95'])}" if n in st else "–" for n in names]]
                for name, st in traced.items()
            ])
            lines.append("")
        cats = sorted({c for s in methods.values() for c in s["categories"]})
        if len(cats) > 1:
            cm = [m for m in _CATEGORY_METRICS if any(m in s["overall"] for s in methods.values())]
            head = ["category", "method", "n", *[_LABELS[m] for m in cm]]
            rows = []
            for c in cats:
                for name, s in methods.items():
                    g = s["categories"].get(c)
                    if g:
                        rows.append([c, name, str(g["n"]), *[_fmt(g.get(m)) for m in cm]])
            lines.append("Per category:")
            lines.append("")
            lines += _table(head, rows)
            lines.append("")
        for p in (plots or {}).get(ds_name, []):
            rel = os.path.relpath(p, relative_to) if relative_to else str(p)
            lines.append(f"![{p.stem}]({rel})")
            lines.append("")
    if synthetic:
        lines.append("### synthetic scale")
        lines.append("")
        head = ["method", "docs", "indexed", "index s", "docs/s", "p50 ms", "p95 ms", "p99 ms", "peak RSS MB", "store MB", "R@10"]
        rows = []
        for ds_name, name, s in sorted(synthetic, key=lambda t: (t[1], t[2]["run"]["n_docs"] or 0)):
            run, lat = s["run"], s["latency_ms"]
            rows.append([name, str(run["n_docs"]), _fmt(run.get("n_indexed")), _fmt(run.get("index_s"), 2),
                         _fmt(run.get("ingest_docs_per_s"), 0), _ms(lat.get("p50")), _ms(lat.get("p95")), _ms(lat.get("p99")),
                         _fmt(run.get("peak_rss_mb"), 0), _fmt(run.get("store_mb"), 1), _fmt(s["overall"].get("recall@10"))])
        lines += _table(head, rows)
        lines.append("")
        for p in (plots or {}).get("_scale", []):
            rel = os.path.relpath(p, relative_to) if relative_to else str(p)
            lines.append(f"![{p.stem}]({rel})")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _machine_and_commands(summary: dict[str, Any]) -> tuple[list[str], list[str]]:
    from benchmarks.run import machine_line

    machines, commands = [], []
    for ds in summary["datasets"].values():
        for s in ds["methods"].values():
            run = s["run"]
            if run.get("machine"):
                line = machine_line(run["machine"])
                if line not in machines:
                    machines.append(line)
            if run.get("command") and run["command"] not in commands:
                commands.append(run["command"])
    return machines, commands


def update_results_md(path: Path, body: str) -> None:
    """Replace the text between :data:`BEGIN` and :data:`END` in ``path`` (created if missing)."""
    path = Path(path)
    block = f"{BEGIN}\n{body.rstrip()}\n{END}"
    if path.exists():
        text = path.read_text(encoding="utf-8")
        if BEGIN in text and END in text and text.index(BEGIN) < text.index(END):
            start = text.index(BEGIN)
            end = text.index(END) + len(END)
            text = text[:start] + block + text[end:]
        else:
            text = text.rstrip() + "\n\n" + block + "\n"
    else:
        text = "# Benchmark results\n\nThe section below is rewritten by `python -m benchmarks report --update-results-md`.\n\n" + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


# --------------------------------------------------------------------------- command


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=None, help="results folder to read and write (default: benchmarks/results)")
    parser.add_argument("--update-results-md", type=Path, default=None, metavar="FILE",
                        help="rewrite the bench:begin/bench:end section of FILE with the summary")
    parser.add_argument("--no-plots", action="store_true", help="tables only")


def run(args: argparse.Namespace, argv: list[str] | None = None) -> int:
    from benchmarks.run import default_out_dir

    out_dir = Path(args.out or default_out_dir())
    runs = load_results(out_dir)
    if not runs:
        print(f"no result files under {out_dir}", file=sys.stderr)
        return 1
    summary = summarise(runs)
    plots: dict[str, list[Path]] = {}
    if not args.no_plots:
        from benchmarks.plot import plot_all

        plots = plot_all(runs, summary, out_dir / "plots")
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    md = render_markdown(summary, plots=plots, relative_to=out_dir)
    (out_dir / "summary.md").write_text("# Benchmark summary\n\n" + md, encoding="utf-8")
    print(f"wrote {out_dir / 'summary.md'}, {out_dir / 'summary.json'}, {sum(len(v) for v in plots.values())} plots", file=sys.stderr)

    if args.update_results_md:
        target = Path(args.update_results_md)
        machines, commands = _machine_and_commands(summary)
        report_cmd = "python -m benchmarks " + shlex.join(argv if argv is not None else sys.argv[1:])
        body = [render_markdown(summary, plots=plots, relative_to=target.resolve().parent)]
        body.append("Commands:")
        body.append("")
        body.append("```")
        body += commands
        body.append(report_cmd)
        body.append("```")
        body.append("")
        body += [f"Machine: {m}" for m in machines]
        update_results_md(target, "\n".join(body))
        print(f"updated {target}", file=sys.stderr)
    return 0
