"""``python -m benchmarks shards``: what routing by id costs on a sharded store, and how long a move takes.

Needs two Neo4j servers (``--uris bolt://127.0.0.1:7687,bolt://127.0.0.1:7688``; ``scripts/test.sh``
starts such a pair; they are wiped).  Measures, p50/p95 per call:

* ``get_memories`` of 10 ids of one user: on that user's server directly (no sharding), through
  the sharded store when it has seen the ids (one shard asked), and when it has not (every shard
  asked at once: what a store without the id memory would do on every call);
* ``recall`` (``Memory``, hash embedder, no model) of one user: directly and through the sharded
  store, with the number of calls each shard answered (the other shard must answer none);
* ``ripple shards move`` of one user of ``--memories`` memories (copy, verify, switch, delete).

Prints a Markdown table; raw numbers go to ``results/shards/routing.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "results" / "shards"


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--uris", required=True, help="two Neo4j URIs, comma-separated (they are wiped)")
    p.add_argument("--password", default="ripple-dev-password")
    p.add_argument("--users", type=int, default=8)
    p.add_argument("--memories", type=int, default=200, help="memories per user (default 200)")
    p.add_argument("--calls", type=int, default=200, help="timed calls per measurement (default 200)")


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def _timed(fn: Callable[[], Any], n: int, before: Callable[[], None] | None = None) -> dict[str, float]:
    for _ in range(max(5, n // 10)):  # warm up (query plans, connections); not timed
        if before is not None:
            before()
        fn()
    times = []
    for _ in range(n):
        if before is not None:
            before()
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return {"p50_ms": round(statistics.median(times), 2), "p95_ms": round(_pct(times, 0.95), 2), "n": n}


def run(args: argparse.Namespace, argv: list[str]) -> int:
    import neo4j

    from extractors import GazetteerExtractor
    from graphstore import Credentials, open_store
    from graphstore.neo4j import Neo4jStore
    from graphstore.sharded import ShardedStore
    from ripple import Memory
    from ripple.embedding import HashEmbedder

    uris = [u.strip() for u in args.uris.split(",")]
    assert len(uris) == 2, "--uris wants two servers"
    for uri in uris:
        with neo4j.GraphDatabase.driver(uri, auth=("neo4j", args.password)) as drv, drv.session() as s:
            s.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()
    hosts = ",".join(u.split("://", 1)[1] for u in uris)
    creds = Credentials(password=args.password)
    sharded: ShardedStore = open_store(f"bolt+shards://{hosts}", credentials=creds)  # type: ignore[assignment]
    gaz = GazetteerExtractor({"Dana": "PERSON", "Northwind": "ORG", "Acme": "ORG", "张伟": "PERSON"})
    embedder = HashEmbedder(384)
    users = [f"user{i}" for i in range(args.users)]
    texts = ["Dana runs procurement at Northwind.", "张伟在北京的Acme工作。", "The boiler was serviced in March.",
             "Dana prefers green tea.", "Acme ships on Fridays."]
    with Memory(store=sharded, embedder=embedder, extractor=gaz) as mem:
        for u in users:
            mem.add_many([{"text": f"{texts[i % len(texts)]} #{i}", "user_id": u, "session_id": "s"}
                          for i in range(args.memories)])
    placement = {n: [u for u in users if sharded.shard_of(u) == n] for n in sharded.names}
    user = placement[sharded.names[1]][0]
    home = sharded.names[1]
    direct = Neo4jStore(f"bolt://{home}", password=args.password)
    ids = [m.id for m in direct.list_memories(user, limit=10)]
    results: dict[str, Any] = {"users": args.users, "memories_per_user": args.memories,
                               "placement": {n: len(us) for n, us in placement.items()}}
    results["get_memories_direct"] = _timed(lambda: direct.get_memories(ids), args.calls)
    sharded.get_memories(ids)
    results["get_memories_sharded_known_ids"] = _timed(lambda: sharded.get_memories(ids), args.calls)
    results["get_memories_sharded_fan_out"] = _timed(lambda: sharded.get_memories(ids), args.calls,
                                                     before=sharded._user_of.clear)
    counted: dict[str, int] = {n: 0 for n in sharded.names}
    directory_reads = [0]
    strays: list[str] = []
    answer = sharded._answer

    def counting(call: Any) -> Any:  # every call a shard answers, the routing table's reads apart
        if getattr(call.request, "key", None) == "shards/routing":
            directory_reads[0] += 1
        else:
            counted[call.shard] += 1
            if call.shard != home:
                strays.append(f"{call.request.method}: {str(call.request)[:200]}")
        return answer(call)

    sharded._answer = counting  # type: ignore[method-assign]
    queries = ["who runs procurement?", "张伟在哪里工作", "when was the boiler serviced?", "what does Dana drink?"]
    with Memory(store=direct, embedder=embedder, extractor=gaz) as mem:
        results["recall_direct"] = _timed(lambda: mem.recall(queries[0], user_id=user, k=5), args.calls // 2)
    with Memory(store=sharded, embedder=embedder, extractor=gaz) as mem:
        for n in counted:
            counted[n] = 0
        directory_reads[0] = 0
        results["recall_sharded"] = _timed(lambda: mem.recall(queries[1], user_id=user, k=5), args.calls // 2)
    results["shard_calls_during_sharded_recalls"] = dict(counted)
    results["routing_table_reads_during_sharded_recalls"] = directory_reads[0]
    assert counted[sharded.names[0]] == 0, f"a recall asked the other shard: {strays[:5]}"
    t0 = time.perf_counter()
    report = sharded.move_user(user, sharded.names[0])
    results["move"] = {"seconds": round(time.perf_counter() - t0, 2), "memories": report.memories,
                       "edges": report.edges, "grace_seconds": sharded.grace}
    direct.close()
    sharded.close()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "routing.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    print("| measurement | p50 ms | p95 ms |\n|---|---:|---:|")
    for key in ("get_memories_direct", "get_memories_sharded_known_ids", "get_memories_sharded_fan_out",
                "recall_direct", "recall_sharded"):
        print(f"| {key} | {results[key]['p50_ms']} | {results[key]['p95_ms']} |")
    print(f"\nshard calls during {args.calls // 2} sharded recalls: {results['shard_calls_during_sharded_recalls']};"
          f" routing table reads (one per {sharded.refresh:g} s):"
          f" {results['routing_table_reads_during_sharded_recalls']}")
    print(f"move of {report.memories} memories, {report.edges} edges: {results['move']['seconds']} s"
          f" (of which 2 x {sharded.grace} s waiting for other processes to read the routing change)")
    return 0
