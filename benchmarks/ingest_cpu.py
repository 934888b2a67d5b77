"""Ingest rate of the embedded store and a Neo4j server in one run window, with CPU seconds.

Why: on a shared machine wall-clock rates are mostly the scheduler's, so beside
each ingest's wall time this records the client's CPU seconds
(``time.process_time()``, all its threads) and the Neo4j server's (utime +
stime of its JVM from ``/proc/<pid>/stat``, read before and after), and
interleaves embedded and Neo4j rounds so that both see the same load.  It
ingests with the benchmark's own ripple method (``benchmarks.methods``: the
same ``add_many`` chunks as ``python -m benchmarks run``), default embedder and
extractor unless told otherwise.

    python -m benchmarks.ingest_cpu --size 2000 --store bolt://127.0.0.1:7687 \\
        --neo4j-pid-file .neo4j/neo4j.pid --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any


def _jvm_cpu(pid: int | None) -> float:
    """utime + stime of a process in seconds (0 without a pid)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _one(store: str | None, dataset: Any, pid: int | None, embedder: str | None, extractor: str | None,
         ahead: bool | None = None, dedup: bool = True) -> dict[str, Any]:
    from benchmarks.methods import make_method

    method = make_method("ripple", store=store, embedder=embedder, extractor=extractor, dedup=dedup)
    if ahead is not None:  # add_many's overlap forced on or off (ripple._ahead; the default follows the store)
        opened = method._open  # type: ignore[attr-defined]

        def _open(where: str) -> Any:
            mem = opened(where)
            mem._prepare_ahead = ahead
            return mem

        method._open = _open  # type: ignore[attr-defined]
    method.prepare()  # type: ignore[attr-defined]  # model loading is not ingest
    load0 = os.getloadavg()[0]
    cpu0, srv0, t0 = time.process_time(), _jvm_cpu(pid if store else None), time.perf_counter()
    method.index(dataset)
    wall = float(method.ingest_seconds() or (time.perf_counter() - t0))  # type: ignore[attr-defined]
    cpu, srv = time.process_time() - cpu0, _jvm_cpu(pid if store else None) - srv0
    from benchmarks.methods import _SHARED_STORES

    directory = method._dir  # type: ignore[attr-defined]
    _SHARED_STORES.clear()  # the next round ingests again (the benchmark shares one ingest per run)
    out = {"store": store or "embedded", "ahead": ahead, "memories": method.indexed_count(), "wall_s": round(wall, 1),
           "rate": round(dataset.n_docs / wall, 1), "client_cpu_s": round(cpu, 1), "server_cpu_s": round(srv, 1),
           "load": [round(load0, 1), round(os.getloadavg()[0], 1)]}
    method.close()
    if store is None:
        shutil.rmtree(directory, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=2000)
    parser.add_argument("--store", required=True, help="the Neo4j URI (bolt://...)")
    parser.add_argument("--neo4j-pid-file", type=Path, default=None, help="the server's pid file (server CPU)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of every variant, interleaved")
    parser.add_argument("--variants", default="embedded,neo4j",
                        help="comma-separated: embedded, neo4j (the default), neo4j-serial, neo4j-ahead")
    parser.add_argument("--embedder", default=None)
    parser.add_argument("--extractor", default=None)
    parser.add_argument("--no-dedup", action="store_true", help="as the benchmark's --no-dedup (the issue's command)")
    args = parser.parse_args()

    from benchmarks.datasets import synthetic

    dataset = synthetic(args.size, n_users=1, n_queries=1)
    pid = int(args.neo4j_pid_file.read_text().strip()) if args.neo4j_pid_file else None
    known = {"embedded": (None, None), "neo4j": (args.store, None), "neo4j-serial": (args.store, False),
             "neo4j-ahead": (args.store, True)}
    variants = [known[v] for v in args.variants.split(",")]
    for n in range(args.rounds):
        for store, ahead in (variants if n % 2 == 0 else variants[::-1]):
            print(json.dumps({"round": n, **_one(store, dataset, pid, args.embedder, args.extractor, ahead,
                                                          not args.no_dedup)}),
                  flush=True)


if __name__ == "__main__":
    main()
