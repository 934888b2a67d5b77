"""``ripple forget``: invalidate a memory by id, or the best match of a query."""

from __future__ import annotations

import argparse

from ripple.settings import RippleSettings

from ._store import open_memory


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("memory_id", nargs="?", help="the memory to forget")
    p.add_argument("--query", "-q", help="forget the user's best recall hit for this query instead")
    p.add_argument("--user", "-u", help="the user (with --query)")


def run(args: argparse.Namespace, settings: RippleSettings) -> int:
    with open_memory(settings) as mem:
        gone = mem.forget(args.memory_id, query=args.query, user_id=args.user)
    print(f"forgot {gone.id}: {gone.text}")
    return 0
