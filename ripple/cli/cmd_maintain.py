"""``ripple maintain``: the forgetting tiers of a user's memories now (and the superseded, invalidated, pinned)."""

from __future__ import annotations

import argparse
import json

from ripple.settings import RippleSettings

from ._store import open_memory


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--user", "-u", required=True, help="the user whose memories to walk")
    p.add_argument("--json", action="store_true")


def run(args: argparse.Namespace, settings: RippleSettings) -> int:
    with open_memory(settings) as mem:
        counts = mem.maintain(user_id=args.user)
    if args.json:
        print(json.dumps(counts))
    else:
        for key in ("hot", "warm", "cold", "frozen", "superseded", "invalidated", "pinned"):
            print(f"  {key:<12} {counts[key]:>10,}")
    return 0
