"""``ripple import``: load a JSONL export (from any backend) into the store."""

from __future__ import annotations

import argparse
import sys

from ripple.settings import RippleSettings

from ._store import open_memory


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="JSONL file written by ripple export ('-' = stdin)")


def run(args: argparse.Namespace, settings: RippleSettings) -> int:
    from graphstore.jsonl import records_from_lines

    stream = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")
    with stream, open_memory(settings, write=True) as mem:
        counts = mem.import_records(records_from_lines(stream))
    print(", ".join(f"{v} {k}" for k, v in counts.items()) + " imported")
    return 0
