"""``ripple shards``: users per shard, moving a user, adding or removing a shard.

Works on a sharded store (``--store neo4j+shards://db1:7687,db2:7687`` or ``RIPPLE_STORE``)::

    ripple shards status                      users, memories and strays per shard; moves under way
    ripple shards move --user U --to SHARD    move a user without loss (run again to resume)
    ripple shards move --user U --abort       roll back a move that has not switched yet
    ripple shards add SHARD                   put a configured shard in the ring (nobody moves yet)
    ripple shards remove SHARD                take a shard out of the ring (nobody moves yet)
    ripple shards rebalance [--limit N]       move the users an add/remove left in place

SHARD is a name (``host:port``), an address, or a position (0-based) in the store URI.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any, cast

from graphstore import SupportsShards
from ripple import Memory
from ripple.errors import ConfigError
from ripple.settings import RippleSettings

from ._format import table


def register(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    status = sub.add_parser("status", help="users, memories and strays per shard; moves under way")
    status.add_argument("--json", action="store_true")
    move = sub.add_parser("move", help="move a user to another shard without loss (run again to resume)")
    move.add_argument("--user", "-u", required=True)
    target = move.add_mutually_exclusive_group(required=True)
    target.add_argument("--to", help="the target shard: name, address or position")
    target.add_argument("--abort", action="store_true", help="roll back an unfinished move that has not switched")
    move.add_argument("--batch-size", type=int, default=500, help="records per write transaction on the target")
    move.add_argument("--json", action="store_true")
    for name, text in (("add", "put a configured shard in the ring (users whose hash changes stay, parked)"),
                       ("remove", "take a shard out of the ring (its users stay, parked, until rebalance)")):
        ring = sub.add_parser(name, help=text)
        ring.add_argument("shard", help="name, address or position of the shard")
    rebalance = sub.add_parser("rebalance", help="move the parked users to the shard the hash gives them")
    rebalance.add_argument("--limit", type=int, default=None, help="move at most this many users")
    rebalance.add_argument("--batch-size", type=int, default=500)


def _sharded(mem: Memory) -> Any:
    store = mem.store
    if not isinstance(store, SupportsShards):
        raise ConfigError(f"the store {store.uri} is not sharded: use --store neo4j+shards://host1:7687,host2:7687"
                          " (or shards:URI1;URI2)")
    return store


def run(args: argparse.Namespace, settings: RippleSettings) -> int:
    with Memory(settings=settings) as mem:
        store = _sharded(mem)
        if args.action == "status":
            return _status(store, args.json)
        if args.action == "move":
            if args.abort:
                gone = store.abort_move(args.user)
                print(f"rolled back the move of {gone.user_id} to {gone.target}: it stays on {gone.source}")
                return 0
            report = store.move_user(args.user, store.shard_name(args.to), batch_size=args.batch_size)
            if args.json:
                print(json.dumps(asdict(report), ensure_ascii=False))
            else:
                print(f"moved {report.user_id} from {report.source} to {report.target}"
                      f"{' (resumed)' if report.resumed else ''}: {report.memories} memories, {report.entities}"
                      f" entities, {report.edges} edges, {report.documents} documents; {report.checked_reads}"
                      f" reads compared; {report.seconds:.1f}s")
            return 0
        if args.action in ("add", "remove"):
            name = store.shard_name(args.shard)
            ring = list(cast(Any, store.shards_report()).ring)
            if args.action == "add":
                if name in ring:
                    raise ConfigError(f"shard {name} is already in the ring")
                ring.append(name)
            else:
                if name not in ring:
                    raise ConfigError(f"shard {name} is not in the ring")
                ring.remove(name)
            parked = store.change_ring(ring)
            print(f"ring: {', '.join(ring)}; {len(parked)} users stay where they are until `ripple shards rebalance`")
            return 0
        reports = store.rebalance(limit=args.limit, batch_size=args.batch_size)
        for r in reports:
            print(f"moved {r.user_id} from {r.source} to {r.target}: {r.memories} memories ({r.seconds:.1f}s)")
        print(f"{len(reports)} users moved")
        return 0


def _status(store: Any, as_json: bool) -> int:
    report = store.shards_report()
    if as_json:
        print(json.dumps(asdict(report), ensure_ascii=False))
        return 0
    rows = [[s.name, s.uri, "yes" if s.in_ring else "no", str(s.users), str(s.memories), str(s.entities),
             ", ".join(s.stray_users) or "-", s.error or "ok"] for s in report.shards]
    print(table(["shard", "uri", "ring", "users", "memories", "entities", "strays", "state"], rows))
    print(f"pinned users: {report.pinned_users}; parked users: {report.parked_users}")
    if report.ring_next is not None:
        print(f"ring change under way to: {', '.join(report.ring_next)} (run ripple shards add/remove again)")
    for m in report.moves:
        print(f"move under way: {m.user_id} {m.source} -> {m.target} ({m.state}); resume with"
              f" `ripple shards move --user {m.user_id} --to {m.target}`")
    return 0 if all(s.error is None for s in report.shards) else 1
