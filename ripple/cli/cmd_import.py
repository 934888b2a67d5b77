"""``ripple import``: load a JSONL export (from any backend) into the store."""

from __future__ import annotations

import argparse
import sys

from graphstore.jsonl import batches_from_lines
from ripple import Memory
from ripple.errors import InvalidInput
from ripple.settings import RippleSettings


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="JSONL file written by ripple export ('-' = stdin)")


def run(args: argparse.Namespace, settings: RippleSettings) -> int:
    stream = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")
    counts = {"memories": 0, "entities": 0, "edges": 0}
    with stream, Memory(settings=settings) as mem:
        try:
            for batch in batches_from_lines(stream):
                mem.store.write(batch)
                counts["memories"] += len(batch.memories)
                counts["entities"] += len(batch.entities)
                counts["edges"] += len(batch.edges)
        except ValueError as exc:
            raise InvalidInput(f"{args.file}: {exc}") from exc
    print(", ".join(f"{v} {k}" for k, v in counts.items()) + " imported")
    return 0
