"""PNG figures from result files (via :mod:`benchmarks.report`); matplotlib with the Agg backend.

* ``<dataset>-recall10-by-category.png``: grouped bars, recall@10 per category and method;
* ``<dataset>-latency.png``: per-method distribution of query latency (box plot);
* ``synthetic-scale.png``: latency p50/p95 and peak RSS against store size for
  the ``synthetic-*`` datasets.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchmarks.report import RunResult

__all__ = ["plot_all", "recall_by_category", "latency_distribution", "scale_curve"]


def _plt():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def recall_by_category(ds_name: str, methods: dict[str, Any], path: Path, metric: str = "recall@10") -> Path | None:
    """Grouped bars of ``metric`` per category (plus overall), one bar per method."""
    cats = sorted({c for s in methods.values() for c in s["categories"]})
    groups = [*cats, "overall"]
    if not any(metric in s["overall"] for s in methods.values()):
        return None
    plt = _plt()
    names = list(methods)
    width = 0.8 / max(1, len(names))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(groups) * max(1, len(names)) * 0.6 + 2), 4))
    for i, name in enumerate(names):
        s = methods[name]
        vals = [(s["categories"].get(g) or {}).get(metric, 0.0) if g != "overall" else s["overall"].get(metric, 0.0) for g in groups]
        xs = [j + (i - (len(names) - 1) / 2) * width for j in range(len(groups))]
        bars = ax.bar(xs, vals, width=width, label=name)
        ax.bar_label(bars, labels=[f"{v:.2f}" for v in vals], fontsize=7, padding=1)
    ns = [(methods[names[0]]["categories"].get(g) or methods[names[0]]["overall"]).get("n", 0) if g != "overall"
          else methods[names[0]]["overall"].get("n", 0) for g in groups]
    ax.set_xticks(range(len(groups)), [f"{g}\n(n={n})" for g, n in zip(groups, ns)], fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(metric)
    ax.set_title(f"{ds_name}: {metric} by category")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def latency_distribution(ds_name: str, latencies: dict[str, list[float]], path: Path) -> Path | None:
    """Box plot of per-query latency (ms) for each method; log scale when spreads are wide."""
    data = {m: v for m, v in latencies.items() if v}
    if not data:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(max(5.0, 1.4 * len(data) + 2), 4))
    ax.boxplot(list(data.values()), showfliers=True, whis=(5, 95))
    ax.set_xticks(range(1, len(data) + 1), list(data), fontsize=8)
    lo = min(min(v) for v in data.values())
    hi = max(max(v) for v in data.values())
    if lo > 0 and hi / lo > 50:
        ax.set_yscale("log")
    ax.set_ylabel("query latency (ms)")
    ax.set_title(f"{ds_name}: recall latency (whiskers p5-p95)")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def scale_curve(points: dict[str, list[dict[str, float]]], path: Path) -> Path | None:
    """Latency p50/p95 and peak RSS against store size, one line per method."""
    if not points:
        return None
    plt = _plt()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for name, pts in sorted(points.items()):
        pts = sorted(pts, key=lambda p: p["n_docs"])
        xs = [p["n_docs"] for p in pts]
        (line,) = ax1.plot(xs, [p["p50"] for p in pts], marker="o", label=f"{name} p50")
        ax1.plot(xs, [p["p95"] for p in pts], marker="^", linestyle="--", color=line.get_color(), label=f"{name} p95")
        ax2.plot(xs, [p["peak_rss_mb"] for p in pts], marker="o", color=line.get_color(), label=name)
    for ax in (ax1, ax2):
        ax.set_xscale("log")
        ax.set_xlabel("memories in store")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    ax1.set_yscale("log")
    ax1.set_ylabel("query latency (ms)")
    ax1.set_title("recall latency vs store size")
    ax2.set_ylabel("peak RSS (MB)")
    ax2.set_title("memory vs store size")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_all(runs: list["RunResult"], summary: dict[str, Any], plot_dir: Path) -> dict[str, list[Path]]:
    """Every figure for ``runs``; returns ``{dataset: [paths]}`` plus ``"_scale"``."""
    plot_dir = Path(plot_dir)
    plot_dir.mkdir(parents=True, exist_ok=True)
    out: dict[str, list[Path]] = {}
    for ds_name, ds in summary["datasets"].items():
        paths = []
        p = recall_by_category(ds_name, ds["methods"], plot_dir / f"{ds_name}-recall10-by-category.png")
        if p:
            paths.append(p)
        lat = {r.method: [row["latency_ms"] for row in r.rows] for r in runs if r.dataset == ds_name}
        p = latency_distribution(ds_name, lat, plot_dir / f"{ds_name}-latency.png")
        if p:
            paths.append(p)
        out[ds_name] = paths
    points: dict[str, list[dict[str, float]]] = {}
    for ds_name, ds in summary["datasets"].items():
        if not ds_name.startswith("synthetic-"):
            continue
        for name, s in ds["methods"].items():
            run, lat = s["run"], s["latency_ms"]
            if run.get("n_docs") and lat.get("p50") is not None:
                points.setdefault(name, []).append(
                    {"n_docs": run["n_docs"], "p50": lat["p50"], "p95": lat["p95"], "peak_rss_mb": run.get("peak_rss_mb") or float("nan")}
                )
    p = scale_curve(points, plot_dir / "synthetic-scale.png")
    out["_scale"] = [p] if p else []
    return out
