"""``ripple graph``: a user's memory graph as one interactive HTML page.

``--around`` takes an entity name (its neighbourhood) or else a query (the
neighbourhood of that recall: hits, seeds and activation paths).  The page
needs no network access: the drawing library is inlined.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ripple.settings import RippleSettings

from ._store import open_memory

if TYPE_CHECKING:
    from ripple import Memory
    from ripple.models import RecallResult
    from ripple.viz import GraphView

DEFAULT_OUT = "graph.html"


def register(p: argparse.ArgumentParser) -> None:
    from ripple.viz.graph import DEFAULT_LIMIT

    p.add_argument("--user", "-u", required=True, help="user id")
    p.add_argument("--around", metavar="TEXT",
                   help="an entity's name (its neighbourhood) or a query (the neighbourhood of that recall)")
    p.add_argument("--limit", type=int, default=DEFAULT_LIMIT,
                   help=f"most nodes to draw (default {DEFAULT_LIMIT}); the page says what was left out")
    p.add_argument("-k", type=int, default=10, help="hits of the recall for a query (default 10)")
    p.add_argument("--mode", choices=["ripple", "flat", "bm25", "hybrid", "ppr"], default="ripple",
                   help="recall mode for a query (default ripple)")
    p.add_argument("--out", "-o", default=DEFAULT_OUT, help=f"output file (default {DEFAULT_OUT})")


def run(args: argparse.Namespace, settings: RippleSettings) -> int:
    from ripple.errors import InvalidInput
    from ripple.viz import GraphIndex, build_graph, hits_from_recall

    if args.limit < 1:
        raise InvalidInput(f"--limit must be at least 1, got {args.limit}")
    with open_memory(settings) as mem:
        index = GraphIndex.from_records(mem.export(user_id=args.user))
        entity = index.find_entity(args.around) if args.around else None
        if args.around and entity is None:
            res = mem.recall(args.around, user_id=args.user, k=args.k, mode=args.mode, touch=False)
            view = build_graph(index, user_id=args.user, hits=hits_from_recall(res), query=args.around,
                               limit=args.limit)
        else:
            view = build_graph(index, user_id=args.user, focus_entity=entity, limit=args.limit)
    _write(args.out, view)
    return 0


def write_recall_graph(mem: "Memory", result: "RecallResult", out: str, *, limit: int | None = None) -> "GraphView":
    """The page of one recall (``ripple recall --graph``): its hits in the user's graph."""
    from ripple.viz import GraphIndex, build_graph, hits_from_recall
    from ripple.viz.graph import DEFAULT_LIMIT

    index = GraphIndex.from_records(mem.export(user_id=result.user_id))
    view = build_graph(index, user_id=result.user_id, hits=hits_from_recall(result), query=result.query,
                       limit=limit or DEFAULT_LIMIT)
    _write(out, view)
    return view


def _write(out: str, view: "GraphView") -> None:
    from ripple.errors import InvalidInput
    from ripple.viz import write_page

    try:
        write_page(out, view)
    except OSError as exc:
        raise InvalidInput(f"cannot write {out}: {exc.strerror or exc}") from exc
    print(f"wrote {out}: {view.summary()}", file=sys.stderr)
