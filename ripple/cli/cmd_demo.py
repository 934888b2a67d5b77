"""``ripple demo``: ingest the bundled sample conversation, then compare ripple with flat recall.

The sample (``ripple/data/sample_conversation.jsonl``) was written for ripple:
a designer talks to an assistant over five sessions about a client, its
project code name, people, money and a trip, in English and Chinese.  Several
questions are answered by a turn that shares no words with the question and
is reached only through an entity that a second turn links to it.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from importlib import resources
from typing import Any

from ripple import Memory
from ripple.settings import RippleSettings

from ._format import clip, width

USER = "sam"
QUERIES: list[tuple[str, str]] = [
    ("When is the Northwind deadline?", "Bluebird has to go live"),
    ("Who approves the invoices at our client?", "Dana has to approve every invoice"),
    ("Can we hold the client meeting at Dana's house?", "Mei is allergic to cats"),
    ("谁负责联系上海的展会？", "梅负责联系展会"),
    ("How much did the studio spend on equipment?", "new large-format printer"),
]


def load_sample() -> list[dict[str, Any]]:
    text = resources.files("ripple").joinpath("data/sample_conversation.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("-k", type=int, default=5, help="hits per method (default 5)")
    p.add_argument("--keep", metavar="FOLDER", help="keep the demo store in this folder (default: a temporary one)")


def _column(hits: list[str], expected: str, cols: int) -> list[str]:
    return [("✓ " if expected in text else "  ") + clip(text, cols - 2) for text in hits]


def run(args: argparse.Namespace, settings: RippleSettings) -> int:
    items = [dict(item, user_id=USER) for item in load_sample()]
    with tempfile.TemporaryDirectory(prefix="ripple-demo-") as tmp:
        folder = args.keep or tmp
        t0 = time.perf_counter()
        with Memory(path=folder, settings=settings) as mem:
            stored = mem.add_many(items)
            t1 = time.perf_counter()
            print(f"ingested {len(stored)} of {len(items)} turns into {folder} in {t1 - t0:.1f} s "
                  f"({len(items) - len(stored)} contentless turns skipped; models load on first use)")
            stats = mem.stats(user_id=USER)
            print(f"graph: {stats['memories']} memories, {stats['entities']} entities, "
                  f"{stats['edges_mentions']} MENTIONS, {stats['edges_related']} RELATED, {stats['edges_next']} NEXT\n")
            # the first recall of a process loads the query side of the model: not recall time
            t2 = time.perf_counter()
            mem.recall("warm-up", user_id=USER, k=1, touch=False)
            mem.recall("warm-up", user_id=USER, k=1, mode="flat", touch=False)
            print(f"(query encoder warmed up in {(time.perf_counter() - t2) * 1000:.0f} ms; not counted below)\n")
            cols = 58
            found = {"ripple": 0, "flat": 0}
            for query, expected in QUERIES:
                rip = mem.recall(query, user_id=USER, k=args.k, touch=False)
                flat = mem.recall(query, user_id=USER, k=args.k, mode="flat", touch=False)
                rcol = _column(rip.texts(), expected, cols)
                fcol = _column(flat.texts(), expected, cols)
                found["ripple"] += any(expected in t for t in rip.texts())
                found["flat"] += any(expected in t for t in flat.texts())
                print(f"Q: {query}")
                print(f"   {'ripple':<{cols}} │ flat")
                for a, b in zip(rcol, fcol):
                    print(f"   {a}{' ' * max(0, cols - width(a))} │ {b}")
                for h in rip.hits:
                    if expected in h.memory.text and h.path:
                        route = " → ".join(s.label or s.edge for s in h.path)
                        print(f"   ripple reached the answer via {h.via}: {route}")
                print(f"   ({rip.trace.total_ms:.0f} ms ripple, {flat.trace.total_ms:.0f} ms flat)\n")
            n = len(QUERIES)
            print(f"answer in top {args.k}: ripple {found['ripple']}/{n}, flat {found['flat']}/{n}")
    return 0
