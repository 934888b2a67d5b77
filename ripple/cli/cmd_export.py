"""``ripple export``: a user's whole graph as JSONL (ids, times, provenance, vectors)."""

from __future__ import annotations

import argparse
import itertools
import json
import sys

from ripple.settings import RippleSettings

from ._files import open_output
from ._store import open_memory


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--user", "-u", required=True, help="user id")
    p.add_argument("--out", "-o", default="-", help="output file (default: stdout)")


def run(args: argparse.Namespace, settings: RippleSettings) -> int:
    with open_memory(settings) as mem:
        records = mem.export(user_id=args.user)
        first = next(records, None)  # (a bad user id is an error before the file is created)
        out = open_output(args.out)
        n = 0
        try:
            for obj in itertools.chain([] if first is None else [first], records):
                out.write(json.dumps(obj, ensure_ascii=False) + "\n")
                n += 1
        finally:
            if out is not sys.stdout:
                out.close()
    if args.out != "-":
        print(f"wrote {n} records to {args.out}", file=sys.stderr)
    return 0
