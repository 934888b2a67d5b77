"""``ripple recall``: the memories most related to a query."""

from __future__ import annotations

import argparse
import json

from ripple import Memory
from ripple.errors import ConfigError
from ripple.settings import RippleSettings

from ._format import explain, table
from ._remote import add_server_flags, remote


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("query")
    p.add_argument("--user", "-u", required=True, help="user id")
    p.add_argument("-k", type=int, default=5, help="number of memories (default 5)")
    p.add_argument("--mode", choices=["ripple", "flat", "bm25", "hybrid", "ppr"], default="ripple")
    p.add_argument("--json", action="store_true", help="print the full result as JSON")
    p.add_argument("--explain", action="store_true", help="show each hit's path and the stage timings")
    p.add_argument("--graph", metavar="FILE.html", help="also write this recall's part of the graph as an interactive page")
    add_server_flags(p)


def run(args: argparse.Namespace, settings: RippleSettings) -> int:
    client = remote(args)
    if client is not None:
        if args.graph:
            raise ConfigError("--graph draws from the local store: drop --server (or $RIPPLE_SERVER) to use it")
        res = client.recall(args.query, user_id=args.user, k=args.k, mode=args.mode, touch=False)
    else:
        with Memory(settings=settings) as mem:
            res = mem.recall(args.query, user_id=args.user, k=args.k, mode=args.mode, touch=False)
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
        stages = ", ".join(f"{s.name} {s.ms:.1f} ms ({s.size})" for s in res.trace.stages)
        print(f"trace: {stages}; total {res.trace.total_ms:.1f} ms")
    return 0
