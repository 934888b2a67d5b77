"""``ripple recall``: the memories most related to a query."""

from __future__ import annotations

import argparse
import json

from ripple.errors import ConfigError
from ripple.settings import RippleSettings

from ._format import explain, table
from ._remote import add_server_flags, remote
from ._store import open_memory


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("query")
    p.add_argument("--user", "-u", required=True, help="user id")
    p.add_argument("-k", type=int, default=5, help="number of memories (default 5)")
    p.add_argument("--mode", choices=["ripple", "flat", "bm25", "hybrid", "ppr"], default="ripple")
    p.add_argument("--json", action="store_true", help="print the full result as JSON")
    p.add_argument("--explain", action="store_true", help="show each hit's path and the stage timings")
    p.add_argument("--no-touch", action="store_true",
                   help="look without counting the hits as used (by default recall hits stay in the hot tier)")
    p.add_argument("--graph", metavar="FILE.html", help="also write this recall's part of the graph as an interactive page")
    add_server_flags(p)


def run(args: argparse.Namespace, settings: RippleSettings) -> int:
    client = remote(args)
    if client is not None:
        if args.graph:
            raise ConfigError("--graph draws from the local store: drop --server (or $RIPPLE_SERVER) to use it")
        res = client.recall(args.query, user_id=args.user, k=args.k, mode=args.mode, touch=not args.no_touch)
    else:
        with open_memory(settings) as mem:
            res = mem.recall(args.query, user_id=args.user, k=args.k, mode=args.mode, touch=not args.no_touch)
            if args.graph:
                from .cmd_graph import write_recall_graph

                write_recall_graph(mem, res, args.graph)
    if args.json:
        print(json.dumps(res.model_dump(mode="json"), ensure_ascii=False, indent=2))
        return 0
    rows = [[str(h.rank), f"{h.score:.3f}", h.via, h.memory.at.date().isoformat(), h.memory.text] for h in res.hits]
    print(table(["#", "score", "via", "date", "memory"], rows))
    if args.explain:
        for h in res.hits:
            print(f"#{h.rank} {h.memory.id}")
            print(explain(h))
        load = sum(s.ms for s in res.trace.stages if s.name == "load.models")
        if load:
            print(f"models: loaded in {load:.0f} ms (once per process: `ripple serve` keeps them warm)")
        stages = ", ".join(f"{s.name} {s.ms:.1f} ms ({s.size})" for s in res.trace.stages if s.name != "load.models")
        print(f"trace: {stages}; recall {res.trace.total_ms - load:.1f} ms")
    return 0
