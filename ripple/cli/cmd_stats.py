"""``ripple stats``: counts of nodes and edges."""

from __future__ import annotations

import argparse
import json

from ripple.settings import RippleSettings

from ._store import open_memory


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--user", "-u", help="only this user")
    p.add_argument("--json", action="store_true")


def run(args: argparse.Namespace, settings: RippleSettings) -> int:
    with open_memory(settings) as mem:
        stats = mem.stats(user_id=args.user)
        uri = mem.store.uri
    if args.json:
        print(json.dumps(stats))
    else:
        print(f"store: {uri}")
        for key, value in sorted(stats.items()):
            print(f"  {key:<22} {value:>12,}")
    return 0
