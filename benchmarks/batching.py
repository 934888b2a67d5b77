"""``python -m benchmarks batching``: recalls/s from concurrent threads, query batching on and off.

One embedded ``Memory`` (default MiniLM, spaCy) holds the first LoCoMo dev conversation; its
questions are recalled from ``--clients`` threads at once, with the runtime's
:class:`ripple._batching.BatchEncoder` (queries that arrive together share one encoder call)
and with one that encodes every query alone (``max_batch=1``, what ripple did before).  The two
alternate in one process, ``--rounds`` times each, and the median round is reported: on a
shared machine only the ratio within one run means anything.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks.datasets import default_data_dir, load_locomo


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--clients", default="1,8,32", help="concurrent threads, comma-separated (default 1,8,32)")
    p.add_argument("--queries", type=int, default=120, help="recalls per round (default 120)")
    p.add_argument("--rounds", type=int, default=3, help="rounds per setting, alternating (default 3)")
    p.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")


def run(args: argparse.Namespace, argv: list[str]) -> int:
    from ripple import Memory
    from ripple._batching import BatchEncoder

    data = load_locomo(default_data_dir() / "locomo" / "locomo-dev.json")
    user = data.docs[0].user_id
    docs = [d for d in data.docs if d.user_id == user]
    questions = [q.text for q in data.queries if q.user_id == user][: args.queries]
    mem = Memory(path=tempfile.mkdtemp(prefix="ripple-batching-"))
    try:
        mem.add_many([{"text": d.text, "user_id": user, "session_id": d.session_id, "at": d.at} for d in docs])
        runtime = mem._runtime
        own = runtime.query_encoder()
        # the runtime's encoder call, batched and one query at a time; neither keeps recent queries
        # (the rounds ask the same questions again: every query must reach the encoder)
        batched = BatchEncoder(own.encode, recent=0)
        alone = BatchEncoder(own.encode, max_batch=1, recent=0)
        for q in questions:  # warm-up, untimed: the model's first calls, the store's caches
            mem.recall(q, user_id=user, k=10, touch=False)
        rows: list[dict[str, Any]] = []
        for clients in (int(x) for x in str(args.clients).split(",") if x.strip()):
            rates: dict[str, list[float]] = {"on": [], "off": []}
            calls0, queries0 = batched.stats.calls, batched.stats.queries
            for _ in range(args.rounds):
                for name, enc in (("on", batched), ("off", alone)):
                    runtime._batcher = enc
                    t0 = time.perf_counter()
                    with ThreadPoolExecutor(clients) as pool:
                        list(pool.map(lambda q: mem.recall(q, user_id=user, k=10, touch=False), questions))
                    rates[name].append(len(questions) / (time.perf_counter() - t0))
            runtime._batcher = own
            on, off = statistics.median(rates["on"]), statistics.median(rates["off"])
            calls = batched.stats.calls - calls0
            row = {"clients": clients, "on_per_s": round(on, 1), "off_per_s": round(off, 1), "ratio": round(on / off, 2),
                   "mean_batch": round((batched.stats.queries - queries0) / max(1, calls), 2)}
            rows.append(row)
            print(f"| {clients} | {row['on_per_s']} | {row['off_per_s']} | {row['ratio']} | {row['mean_batch']} |",
                  flush=True)
    finally:
        mem.close()
    if args.out:
        args.out.write_text(json.dumps({"command": "python -m benchmarks " + " ".join(argv), "rows": rows}, indent=2))
    return 0
