"""``python -m benchmarks serve-load``: requests per second and latency percentiles of ``ripple serve``
beside the same calls made in-process, on the same store, with the same queries, in one run.

For each backend (the embedded store, Neo4j):

1. ingest one LoCoMo development conversation (its turns) for one user, in-process;
2. **in-process**: an :class:`ripple.AsyncMemory` in this process answers ``recall`` (the
   conversation's questions, cycled) and ``add`` (its turns again, for a separate user) from
   1, 8 and 32 concurrent callers (asyncio tasks);
3. **HTTP**: the memory is closed, ``ripple serve`` starts on the same store on 127.0.0.1
   (with ``--workers 1,2``: once per setting, ``ripple serve --workers N``),
   and 1, 8 and 32 concurrent clients (``httpx.AsyncClient``, one connection each) send the
   same requests over the loopback interface.

Each (surface, op, clients) cell is a closed loop: every caller sends its next request when
the previous one answered; requests per second is completed requests / wall time, and
p50/p95/p99 are over all requests of the cell.  A few unmeasured requests warm each surface.
The results are written as JSON (with the machine, the load average and the commit) to
``benchmarks/results/server_load/``, and a Markdown table is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Awaitable, Callable

from benchmarks.datasets import PROJECT_ROOT, default_data_dir, load_locomo

RECALL_USER = "load-recall"
WARM_REQUESTS = 3


@dataclass
class Cell:
    backend: str
    surface: str  # in-process | http | http-Nw (``ripple serve --workers N``)
    op: str  # recall | add
    clients: int
    requests: int
    seconds: float
    rps: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    errors: int


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backends", default="embedded,neo4j", help="embedded, neo4j or both (default both)")
    p.add_argument("--clients", default="1,8,32", help="concurrent callers per cell (default 1,8,32)")
    p.add_argument("--requests", type=int, default=200, help="requests per cell (default 200)")
    p.add_argument("--k", type=int, default=10, help="memories per recall (default 10)")
    p.add_argument("--turns", type=int, default=0, help="ingest only the first N turns (default all)")
    p.add_argument("--neo4j-uri", default=os.environ.get("RIPPLE_BENCH_NEO4J_URI", "bolt://127.0.0.1:7687"))
    p.add_argument("--neo4j-password", default=os.environ.get("RIPPLE_NEO4J_PASSWORD", "ripple-dev-password"))
    p.add_argument("--surfaces", default="in-process,http", help="in-process, http or both (default both)")
    p.add_argument("--workers", default="1", help="`ripple serve --workers` settings for the HTTP cells, comma-separated"
                                                  " (default 1; e.g. 1,2 measures both in one run)")
    p.add_argument("--store-dir", help="folder for the embedded store (default: a new temporary folder)")
    p.add_argument("--out", type=Path, default=PROJECT_ROOT / "benchmarks" / "results" / "server_load")


def run(args: argparse.Namespace, argv: list[str]) -> int:
    import tempfile

    levels = [int(c) for c in args.clients.split(",") if c.strip()]
    data = load_locomo(default_data_dir() / "locomo" / "locomo-dev.json")
    docs = list(data.docs)
    turns = [d for d in docs if d.user_id == docs[0].user_id]
    turns = turns[: args.turns] if args.turns else turns
    queries = [q.text for q in data.queries if q.user_id == docs[0].user_id]
    cells: list[Cell] = []
    with tempfile.TemporaryDirectory(prefix="ripple-serve-load-") as tmp:
        for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
            if backend == "embedded":
                store = str(Path(args.store_dir or tmp) / "store")
                env = {}
            elif backend == "neo4j":
                store, env = args.neo4j_uri, {"RIPPLE_NEO4J_PASSWORD": args.neo4j_password}
            else:
                raise SystemExit(f"unknown backend {backend!r} (embedded, neo4j)")
            print(f"[{backend}] {len(turns)} turns, {len(queries)} questions; clients {levels}", file=sys.stderr)
            surfaces = {x.strip() for x in args.surfaces.split(",") if x.strip()}
            if surfaces - {"in-process", "http"}:
                raise SystemExit(f"unknown surface in {args.surfaces!r} (in-process, http)")
            cells += asyncio.run(_in_process(backend, store, env, turns, queries, levels, args,
                                             measure="in-process" in surfaces))
            for workers in ([int(w) for w in str(args.workers).split(",") if w.strip()] if "http" in surfaces else []):
                cells += _over_http(backend, store, env, turns, queries, levels, args, Path(tmp), workers)
    header = _header(argv, len(turns), len(queries))
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%SZ')}.json"
    path.write_text(json.dumps({"header": header, "cells": [asdict(c) for c in cells]}, indent=2), encoding="utf-8")
    print(markdown(cells))
    print(f"\nwritten {path.relative_to(PROJECT_ROOT) if path.is_relative_to(PROJECT_ROOT) else path}", file=sys.stderr)
    return 0


# -- the two surfaces ------------------------------------------------------------------------------------
def _settings(store: str, env: dict[str, str]) -> Any:
    from ripple import RippleSettings

    return RippleSettings(store=store, neo4j_password=env.get("RIPPLE_NEO4J_PASSWORD"))


async def _in_process(backend: str, store: str, env: dict[str, str], turns: list[Any], queries: list[str],
                      levels: list[int], args: argparse.Namespace, measure: bool = True) -> list[Cell]:
    """Ingest the conversation (for every surface), then, with ``measure``, the in-process cells."""
    from ripple import AsyncMemory

    cells: list[Cell] = []
    http = [_http_surface(int(w)) for w in str(args.workers).split(",") if w.strip()]
    async with AsyncMemory(settings=_settings(store, env)) as mem:
        for user in [RECALL_USER] + [_add_user(s, c) for s in ("in-process", *http) for c in levels]:
            await mem.delete_all(user_id=user)
        t0 = time.perf_counter()
        await mem.add_many([{"text": d.text, "user_id": RECALL_USER, "session_id": d.session_id, "at": d.at}
                            for d in turns])
        print(f"[{backend}] ingested {len(turns)} turns in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        if not measure:
            return cells
        for n in range(WARM_REQUESTS):
            await mem.recall(queries[n % len(queries)], user_id=RECALL_USER, k=args.k)
        for clients in levels:
            async def recall(n: int) -> None:
                await mem.recall(queries[n % len(queries)], user_id=RECALL_USER, k=args.k)

            user = _add_user("in-process", clients)

            async def add(n: int, user: str = user) -> None:
                await mem.add(_add_text(turns, n), user_id=user, session_id="load")

            cells.append(await _cell(backend, "in-process", "recall", clients, args.requests, recall))
            cells.append(await _cell(backend, "in-process", "add", clients, args.requests, add))
    return cells


def _over_http(backend: str, store: str, env: dict[str, str], turns: list[Any], queries: list[str],
               levels: list[int], args: argparse.Namespace, tmp: Path, workers: int = 1) -> list[Cell]:
    from ripple.server.process import child_env, ripple_process

    log = tmp / f"serve-{backend}-{workers}.log"
    command = ["serve", "--log-level", "warning", "--workers", str(workers)]
    surface = _http_surface(workers)
    # (timing starts only when every worker has answered ready: each loads its models on its own)
    with ripple_process(store, command, log=log, env=child_env(**env), workers=workers) as server:
        return asyncio.run(_http_cells(backend, server.url, turns, queries, levels, args, surface, workers))


async def _http_cells(backend: str, url: str, turns: list[Any], queries: list[str], levels: list[int],
                      args: argparse.Namespace, surface: str = "http", workers: int = 1) -> list[Cell]:
    import httpx

    cells = []
    limits = httpx.Limits(max_connections=max(levels), max_keepalive_connections=max(levels))
    async with httpx.AsyncClient(base_url=url, timeout=600, limits=limits) as client:
        async def post(path: str, body: dict[str, Any]) -> None:
            r = await client.post(path, json=body)
            if r.status_code >= 300:
                raise RuntimeError(f"{r.status_code}: {r.text[:200]}")

        for n in range(WARM_REQUESTS * workers):  # (unmeasured: the first requests of each worker are slower)
            await post(f"/v1/users/{RECALL_USER}/recall", {"query": queries[n % len(queries)], "k": args.k})
        for clients in levels:
            async def recall(n: int) -> None:
                await post(f"/v1/users/{RECALL_USER}/recall", {"query": queries[n % len(queries)], "k": args.k})

            user = _add_user(surface, clients)

            async def add(n: int, user: str = user) -> None:
                await post(f"/v1/users/{user}/memories", {"text": _add_text(turns, n), "session_id": "load"})

            cells.append(await _cell(backend, surface, "recall", clients, args.requests, recall))
            cells.append(await _cell(backend, surface, "add", clients, args.requests, add))
    return cells


def _http_surface(workers: int) -> str:
    return "http" if workers == 1 else f"http-{workers}w"


def _add_user(surface: str, clients: int) -> str:
    return f"load-add-{surface}-{clients}"


def _add_text(turns: list[Any], n: int) -> str:
    return str(turns[n % len(turns)].text)


# -- one closed-loop cell ------------------------------------------------------------------------------------
async def _cell(backend: str, surface: str, op: str, clients: int, requests: int,
                call: Callable[[int], Awaitable[None]]) -> Cell:
    """``requests`` calls from ``clients`` concurrent callers, each sending its next when the last answered."""
    requests = max(requests, clients)
    latencies: list[float] = []
    errors = 0
    next_n = 0

    async def caller() -> None:
        nonlocal next_n, errors
        while next_n < requests:
            n, next_n = next_n, next_n + 1
            t0 = time.perf_counter()
            try:
                await call(n)
            except Exception as exc:  # noqa: BLE001 - counted and shown, the run goes on
                errors += 1
                print(f"[{backend} {surface} {op} x{clients}] error: {exc}", file=sys.stderr)
                continue
            latencies.append((time.perf_counter() - t0) * 1000.0)

    t0 = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(clients)))
    seconds = time.perf_counter() - t0
    p50, p95, p99 = (round(_percentile(latencies, q), 2) for q in (50, 95, 99))
    cell = Cell(backend=backend, surface=surface, op=op, clients=clients, requests=len(latencies),
                seconds=round(seconds, 3), rps=round(len(latencies) / seconds, 2) if seconds else 0.0,
                p50_ms=p50, p95_ms=p95, p99_ms=p99, errors=errors)
    print(f"[{backend}] {surface:10} {op:6} x{clients:<3} {cell.rps:7.1f} req/s  p50 {cell.p50_ms:7.1f}  "
          f"p95 {cell.p95_ms:7.1f}  p99 {cell.p99_ms:7.1f} ms", file=sys.stderr)
    return cell


def _percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (no interpolation: every figure is a latency that happened)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


# -- output -------------------------------------------------------------------------------------------------
def markdown(cells: list[Cell]) -> str:
    """One row per (backend, op, clients): in-process beside HTTP (and HTTP with N workers)."""
    surfaces = list(dict.fromkeys(c.surface for c in cells))
    rows = ["| backend | op | clients | " + " | ".join(f"{_surface_name(s)} req/s | p50 / p95 / p99 ms" for s in surfaces)
            + " |", "|---|---|---|" + "---|---|" * len(surfaces)]
    index = {(c.backend, c.surface, c.op, c.clients): c for c in cells}
    for backend, op, clients in dict.fromkeys((c.backend, c.op, c.clients) for c in cells):
        row = [backend, op, str(clients)]
        for surface in surfaces:
            c = index.get((backend, surface, op, clients))
            row += ([f"{c.rps:.1f}", f"{c.p50_ms:.1f} / {c.p95_ms:.1f} / {c.p99_ms:.1f}"] if c else ["-", "-"])
        rows.append("| " + " | ".join(row) + " |")
    return "\n".join(rows)


def _surface_name(surface: str) -> str:
    """A table's name for a surface: in-process, HTTP, or HTTP with N workers (``http-Nw``)."""
    if surface.startswith("http-"):
        return f"HTTP, {surface[5:-1]} workers"
    return {"http": "HTTP"}.get(surface, surface)


def _header(argv: list[str], n_turns: int, n_queries: int) -> dict[str, Any]:
    from benchmarks.run import git_info, machine_info, package_versions

    return {
        "command": "python -m benchmarks " + " ".join(argv),
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "turns": n_turns, "queries": n_queries, "loadavg": os.getloadavg(),
        "machine": machine_info(), "git": git_info(), "versions": package_versions(),
        "python": sys.version.split()[0], "interface": "127.0.0.1 (loopback)",
    }


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(subprocess.call([sys.executable, "-m", "benchmarks", "serve-load", *sys.argv[1:]]))
