"""``python -m benchmarks users``: one user's recall and ``delete_all`` as the other users grow (issue 18).

A store holds many users (``--users 1000,10000``, ``--per-user`` memories each, the synthetic
generator's chat turns and two-hop facts).  The question is not how fast recall is but whether
it *stays* as fast: every read of a user is meant to touch that user's rows only (per-user
indexes, per-user vector caches), so one user's p50/p95 should not grow with the number of
others, and deleting one user should cost what that user holds, not what the store holds.

Each size is a fresh embedded store (or a Neo4j server with ``--store``), written through the
public ``Memory.add_many``; the write path's lifecycle (repeats, supersession) is off because it
is per user and not what is measured here.  Model-free vectors (hash-384) and the gazetteer
extractor keep the ingest of a million memories within an hour on two cores.  Recall: the
generator's questions (spread over the users), ``touch=False``, after a warm-up pass over other
users.  Delete: ``delete_all`` of ``--deletes`` users picked at random, timed one by one.

``--store sqlite:///folder`` keeps an embedded store (one size per run) and ``--reuse-store`` measures
it again without ingesting (with ``--deletes 0``, which leaves every user in place): a million
memories take about half an hour to write here, a profile of one user's recall a minute.

Results: ``--out`` (default ``benchmarks/results/users/``) gets one JSON per size and prints a
Markdown table.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.datasets import PROJECT_ROOT, synthetic
from graphstore.protocol import InProcessStore
from benchmarks.metrics import latency_percentiles
from benchmarks.methods import RippleMethod

OUT = PROJECT_ROOT / "benchmarks" / "results" / "users"


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--users", default="1000,10000", help="numbers of users, comma-separated (default 1000,10000)")
    p.add_argument("--per-user", type=int, default=100, help="memories per user on average (default 100)")
    p.add_argument("--queries", type=int, default=200, help="questions recalled per size (default 200)")
    p.add_argument("--deletes", type=int, default=10, help="users deleted one by one per size (default 10)")
    p.add_argument("--methods", default="flat,ripple", help="recall modes measured (default flat,ripple)")
    p.add_argument("--store", default=None,
                   help="a store URI (Neo4j, or sqlite:///folder for an embedded store that is kept) instead of"
                        " a temporary embedded store")
    p.add_argument("--reuse-store", action="store_true",
                   help="with --store: recall from the store's copy when every user already has memories there"
                        " (no ingest); keep it reusable with --deletes 0")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--no-progress", action="store_true")


def process_io() -> dict[str, int]:
    """This process's read counters (Linux ``/proc/self/io``; empty elsewhere).

    Why: latency on a shared machine moves by half from one run to the next, while the
    number of reads a recall makes does not.  On the embedded store every SQLite page
    that misses its page cache is one ``read`` call (``syscr``), and ``read_bytes`` is
    what had to come from the disk rather than the OS's cache: together they say whether
    a user's recall touches more pages as other users are added, and whether those pages
    were in memory.  (On a server store the calls are socket reads: not comparable.)
    """
    try:
        fields = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    except (OSError, ValueError):
        return {}
    return {"read_calls": int(fields["syscr"]), "read_kib": int(fields["rchar"]) // 1024,
            "disk_kib": int(fields["read_bytes"]) // 1024}


def measure(n_users: int, per_user: int, n_queries: int, deletes: int, modes: list[str], store: str | None,
            progress: bool, reuse: bool = False) -> dict[str, Any]:
    """Ingest one store of ``n_users`` users, then time recalls per mode and ``delete_all``s."""
    ds = synthetic(n_users * per_user, n_users=n_users, n_queries=n_queries)
    method = RippleMethod("ripple", name="users", embedder="hash-384", extractor="gazetteer", store=store,
                          lifecycle={"dedup": False, "supersede": False}, progress=progress, reuse=reuse)
    method.index(ds)
    ingest_s = method.ingest_seconds()  # None when the store's copy was reused
    mem = method._mem
    out: dict[str, Any] = {"users": n_users, "memories": method.indexed_count(), "per_user": per_user,
                           "ingest_s": None if ingest_s is None else round(ingest_s, 1),
                           "store": "embedded" if isinstance(mem.store, InProcessStore) else "neo4j", "modes": {}}
    queries = list(ds.queries)
    for mode in modes:
        for q in queries[: min(20, len(queries))]:  # warm-up: caches, plans
            mem.recall(q.text, user_id=q.user_id, k=10, mode=mode, touch=False)
        lat = []
        io0, cpu0 = process_io(), time.process_time()
        for q in queries:
            t = time.perf_counter()
            mem.recall(q.text, user_id=q.user_id, k=10, mode=mode, touch=False)
            lat.append((time.perf_counter() - t) * 1000)
        io1, cpu1 = process_io(), time.process_time()
        pct = latency_percentiles(lat)  # (the run harness's percentiles: figures comparable with RESULTS.md's)
        out["modes"][mode] = {"n": len(lat), "p50_ms": round(pct["p50"], 2), "p95_ms": round(pct["p95"], 2),
                              "p99_ms": round(pct["p99"], 2), "mean_ms": round(pct["mean"], 2),
                              "cpu_ms": round((cpu1 - cpu0) * 1000 / len(lat), 2),
                              **{f"{k}_per_recall": round((io1[k] - io0[k]) / len(lat), 1) for k in io0 if k in io1}}
    users = sorted({d.user_id for d in ds.docs})
    victims = random.Random(0).sample(users, min(deletes, len(users)))
    times, sizes = [], []
    for u in victims:
        sizes.append(mem.stats(user_id=u)["memories"])
        t = time.perf_counter()
        mem.delete_all(user_id=u)
        times.append((time.perf_counter() - t) * 1000)
    out["delete_all"] = ({"n": len(times), "p50_ms": round(statistics.median(times), 1),
                          "max_ms": round(max(times), 1), "memories_per_user_p50": statistics.median(sizes)}
                         if times else {"n": 0, "p50_ms": None, "max_ms": None, "memories_per_user_p50": None})
    method.close()
    return out


def table(rows: list[dict[str, Any]]) -> str:
    modes = sorted({m for r in rows for m in r["modes"]})
    head = ("| users | memories | store | ingest s | " + " | ".join(f"{m} p50 / p95 ms" for m in modes)
            + " | delete_all p50 / max ms |")
    lines = [head, "|" + "---:|" * (5 + len(modes))]
    for r in rows:
        cells = [f"{r['modes'][m]['p50_ms']} / {r['modes'][m]['p95_ms']}" for m in modes]
        d = r["delete_all"]
        ingest = "–" if r["ingest_s"] is None else r["ingest_s"]
        deletes = f"{d['p50_ms']} / {d['max_ms']}" if d["n"] else "–"
        lines.append(f"| {r['users']:,} | {r['memories']:,} | {r['store']} | {ingest} | " + " | ".join(cells)
                     + f" | {deletes} |")
    return "\n".join(lines)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    sizes = [int(x) for x in str(args.users).split(",") if x.strip()]
    modes = [m.strip() for m in str(args.methods).split(",") if m.strip()]
    if not sizes or any(n < 1 for n in sizes):
        raise SystemExit("--users: positive numbers, comma-separated")
    if args.store and len(sizes) > 1:
        raise SystemExit("--store holds one size: give --users one number")
    if args.reuse_store and not args.store:
        raise SystemExit("--reuse-store needs --store (a temporary store has nothing to reuse)")
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in sizes:
        row = measure(n, args.per_user, args.queries, args.deletes, modes, args.store, not args.no_progress,
                      reuse=args.reuse_store)
        row["command"] = "python -m benchmarks " + " ".join(argv)
        (args.out / f"users-{n}{'-neo4j' if row['store'] == 'neo4j' else ''}.json").write_text(json.dumps(row, indent=2))
        rows.append(row)
        print(table([row]).splitlines()[-1], flush=True)
    print(table(rows))
    return 0
