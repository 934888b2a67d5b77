"""Where a Neo4j ingest's server work goes, per statement, in figures a loaded machine does not move.

Why: wall-clock rates on a shared machine are the scheduler's.  This ingests a synthetic store with the
benchmark's own ripple method (``benchmarks.methods``: the same ``add_many`` chunks as
``python -m benchmarks run``) and records, per Cypher statement of ``graphstore.neo4j`` (named by its
constant) and per commit:

* how many ran, the rows they returned, the server's own time (``result_available_after`` +
  ``result_consumed_after`` of the result summary) and the Neo4j JVM's CPU seconds around each one
  (utime + stime from ``/proc/<pid>/stat``; the idle server's own threads land on whatever runs);
* with ``--profile``, each statement runs as ``PROFILE`` (the same work, plus the profiler's): database
  hits per statement, and for the batch write per operator (which part of it does the work);
* the totals: JVM CPU, client CPU (``time.process_time()``), Bolt round trips (socket flushes).

``--state`` hashes the user's whole stored state after the ingest (memories, entities, edges, postings,
BM25 totals, aliases, entity degrees; memory ids replaced by their documents' ids, creation and access
times left out), so two code versions can be shown to store the same thing.  ``--delete`` times
``delete_all`` of the user afterwards (server CPU and db hits of each step).

    python -m benchmarks.neo4j_ingest_profile --size 2000 --store bolt://127.0.0.1:7700 \\
        --neo4j-pid-file .neo4j-dev/neo4j.pid --embedder hash-384 --extractor gazetteer --no-dedup --state
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

__all__ = ["main", "state_hash"]

_MEMORY_ID = re.compile(r"m_[0-9a-f]{24}")


def _jvm_cpu(pid: int | None) -> float:
    """utime + stime of a process in seconds (0 without a pid)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Ledger:
    """Per statement name: count, rows, server ms, JVM CPU s, wall s, db hits; per batch-write operator: hits."""

    def __init__(self, pid: int | None, profile: bool) -> None:
        self.pid, self.profile, self.on = pid, profile, False
        self.rows: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.ops: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))

    def add(self, name: str, **values: float) -> None:
        if self.on:
            row = self.rows[name]
            row["count"] += 1
            for k, v in values.items():
                row[k] += v


def _walk(plan: Any, out: list[tuple[str, int, int]]) -> int:
    """(operator with details, db hits, rows) of every operator of a profiled plan; the total hits."""
    args = plan.get("args") or {}
    op = (plan.get("operatorType") or "?").split("@")[0]
    hits = int(plan.get("dbHits", 0) or 0)
    out.append((f"{op} {str(args.get('Details') or '')[:110]}".strip(), hits, int(plan.get("rows", 0) or 0)))
    return hits + sum(_walk(child, out) for child in plan.get("children", []) or [])


def _install(ledger: _Ledger) -> None:
    """Patch the store's statement runner and the driver's commit to record into ``ledger``."""
    import graphstore.neo4j as backend
    from neo4j._sync.work.transaction import Transaction

    from benchmarks.neo4j_profile import _name_of, _statement_names

    known = _statement_names()
    names: dict[str, str] = {}

    def run_body(tx: Any, body: Any) -> Any:
        gen = body()
        rows: Any = None
        while True:
            try:
                stmt = gen.send(rows)
            except StopIteration as done:
                return done.value
            if stmt.explain:
                rows = [backend.plan_of(tx.run("EXPLAIN " + stmt.cypher, stmt.params).consume())]
                continue
            name = names.get(stmt.cypher) or names.setdefault(stmt.cypher, _name_of(stmt.cypher, known))
            profiled = ledger.profile and ledger.on and not stmt.cypher.lstrip().upper().startswith(("CREATE ", "DROP ", "SHOW "))
            c0, t0 = _jvm_cpu(ledger.pid), time.perf_counter()
            result = tx.run(("PROFILE " if profiled else "") + stmt.cypher, stmt.params)  # (PROFILE CYPHER ... is valid)
            rows = list(result)
            summary = result.consume()
            wall, cpu = time.perf_counter() - t0, _jvm_cpu(ledger.pid) - c0
            server = (summary.result_available_after or 0) + (summary.result_consumed_after or 0)
            hits = 0
            if profiled and summary.profile:
                ops: list[tuple[str, int, int]] = []
                hits = _walk(summary.profile, ops)
                if name == "_WRITE_BATCH" or name.startswith("_DELETE_USER"):
                    for op, h, n in ops:
                        ledger.ops[name + " | " + op]["hits"] += h
                        ledger.ops[name + " | " + op]["rows"] += n
            ledger.add(name, rows=len(rows), server_ms=server, jvm_cpu_s=cpu, wall_s=wall, db_hits=hits)

    backend._run_body = run_body  # (looked up at call time by the store's transaction runner)
    commit = Transaction.commit

    def timed_commit(self: Any) -> Any:
        c0, t0 = _jvm_cpu(ledger.pid), time.perf_counter()
        try:
            return commit(self)
        finally:
            ledger.add("COMMIT", jvm_cpu_s=_jvm_cpu(ledger.pid) - c0, wall_s=time.perf_counter() - t0)

    Transaction.commit = timed_commit  # type: ignore[method-assign]


def state_hash(store: Any, user: str, dump: Path | None = None) -> dict[str, Any]:
    """A hash of everything stored for ``user`` (ids of memories replaced by their documents' ids)."""
    records = list(store.export(user))
    doc_of = {}
    for r in records:
        if type(r).__name__ == "StoredMemory":
            doc_of[r.id] = json.loads(r.metadata_json).get("doc_id", r.id)

    def norm(value: Any) -> Any:
        if isinstance(value, bytes):
            return hashlib.sha1(value).hexdigest()
        if isinstance(value, str):  # (ids inside metadata too: a supersession note names the memory)
            return doc_of.get(value) or _MEMORY_ID.sub(lambda m: doc_of.get(m.group(0), m.group(0)), value)
        if isinstance(value, (list, tuple)):
            return [norm(v) for v in value]
        if isinstance(value, float):
            return round(value, 9)
        return value

    lines = []
    for r in records:
        d = {k: norm(v) for k, v in dataclasses.asdict(r).items() if k not in ("created_at", "last_access")}
        lines.append(type(r).__name__ + json.dumps(d, sort_keys=True, ensure_ascii=False))
    extra = {
        "postings": "MATCH (t:Term {user_id: $user})-[p:POSTING]->(m:Memory) RETURN t.term AS a, m.id AS b, p.tf AS c",
        "terms": "MATCH (t:Term {user_id: $user}) RETURN t.term AS a, 0 AS b, 0 AS c",
        "lexicon": "MATCH (x:Lexicon {user_id: $user}) RETURN x.n_docs AS a, x.total_len AS b, 0 AS c",
        "aliases": "MATCH (a:Alias {user_id: $user}) RETURN a.alias AS a, a.entity_id AS b, 0 AS c",
        "degrees": "MATCH (e:Entity {user_id: $user}) RETURN e.id AS a, e.degree AS b, 0 AS c",
        "doclen": "MATCH (m:Memory {user_id: $user}) RETURN m.id AS a, m.doc_len AS b, labels(m) AS c",
    }
    counts = {"records": len(records)}
    for key, cypher in extra.items():
        with store._driver.session(database=store._database) as session:
            got = [[norm(r["a"]), norm(r["b"]), norm(r["c"])] for r in session.run(cypher, user=user)]
        counts[key] = len(got)
        lines.extend(key + json.dumps(g, ensure_ascii=False) for g in got)
    lines.sort()
    if dump is not None:
        dump.write_text("\n".join(lines) + "\n")
    return {"sha1": hashlib.sha1("\n".join(lines).encode()).hexdigest()[:16], **counts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=2000)
    parser.add_argument("--store", required=True, help="the Neo4j URI (bolt://...)")
    parser.add_argument("--neo4j-pid-file", type=Path, default=None, help="the server's pid file (server CPU)")
    parser.add_argument("--embedder", default="hash-384", help="'default' for the default embedder")
    parser.add_argument("--extractor", default="gazetteer", help="'default' for the default extractor")
    parser.add_argument("--no-dedup", action="store_true")
    parser.add_argument("--profile", action="store_true", help="run every statement as PROFILE (db hits)")
    parser.add_argument("--state", action="store_true", help="hash the user's stored state after the ingest")
    parser.add_argument("--dump", type=Path, default=None, help="with --state: write the hashed lines here")
    parser.add_argument("--delete", action="store_true", help="time delete_all of the user after the ingest")
    parser.add_argument("--out", type=Path, default=None, help="write the full figures as JSON here")
    args = parser.parse_args()

    from benchmarks.datasets import synthetic
    from benchmarks.methods import make_method
    from benchmarks.neo4j_profile import BoltMeter

    pid = int(args.neo4j_pid_file.read_text().strip()) if args.neo4j_pid_file else None
    ledger = _Ledger(pid, args.profile)
    _install(ledger)
    dataset = synthetic(args.size, n_users=1, n_queries=1)
    users = sorted({d.user_id for d in dataset.docs})
    extractor = None if args.extractor == "default" else args.extractor
    embedder = None if args.embedder == "default" else args.embedder
    method = make_method("ripple", store=args.store, embedder=embedder, extractor=extractor,
                         dedup=not args.no_dedup)
    method.prepare()  # type: ignore[attr-defined]  # model loading is not ingest
    meter = BoltMeter()
    ingest = method._ingest  # type: ignore[attr-defined]
    totals: dict[str, Any] = {}

    def measured(data: Any) -> None:
        meter.reset()
        ledger.on = True
        load0 = os.getloadavg()[0]
        c0, s0, t0 = time.process_time(), _jvm_cpu(pid), time.perf_counter()
        ingest(data)
        totals.update(wall_s=time.perf_counter() - t0, client_cpu_s=time.process_time() - c0,
                      server_cpu_s=_jvm_cpu(pid) - s0, load=[round(load0, 2), round(os.getloadavg()[0], 2)],
                      flushes=meter.counts.flushes, statements=meter.counts.statements)
        ledger.on = False

    method._ingest = measured  # type: ignore[attr-defined]
    with meter.installed():
        method.index(dataset)  # (deletes the users' earlier copies first, unmeasured)
    out: dict[str, Any] = {"size": args.size, "memories": method.indexed_count(), "profile": args.profile, **totals}
    per_k = 1000.0 / max(out["memories"], 1)
    out["server_cpu_s_per_1k"] = out["server_cpu_s"] * per_k
    out["client_cpu_s_per_1k"] = out["client_cpu_s"] * per_k
    out["statements_by_name"] = {k: {f: round(v, 4) for f, v in row.items()}
                                 for k, row in sorted(ledger.rows.items(), key=lambda kv: -kv[1]["jvm_cpu_s"])}
    out["batch_write_ops"] = {k: dict(v) for k, v in sorted(ledger.ops.items(), key=lambda kv: -kv[1]["hits"])[:40]}
    store = method._mem._store  # type: ignore[attr-defined]
    if args.state:
        out["state"] = {u: state_hash(store, u, args.dump) for u in users}
    if args.delete:
        ledger.rows.clear()
        ledger.ops.clear()
        ledger.on = True
        c0, t0 = _jvm_cpu(pid), time.perf_counter()
        for u in users:
            method._mem.delete_all(user_id=u)  # type: ignore[attr-defined]
        out["delete"] = {"wall_s": time.perf_counter() - t0, "server_cpu_s": _jvm_cpu(pid) - c0,
                         "steps": {k: dict(v) for k, v in ledger.rows.items()},
                         "ops": {k: dict(v) for k, v in sorted(ledger.ops.items(), key=lambda kv: -kv[1]["hits"])[:15]}}
        ledger.on = False
    method.close()  # type: ignore[attr-defined]
    if args.out:
        args.out.write_text(json.dumps(out, indent=1))
    _print(out)


def _print(out: dict[str, Any]) -> None:
    head = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in out.items()
            if k not in ("statements_by_name", "batch_write_ops", "delete", "state")}
    print(json.dumps(head))
    if "state" in out:
        print("state", json.dumps(out["state"]))
    print(f"{'statement':<32} {'count':>6} {'rows':>8} {'server ms':>10} {'JVM cpu s':>9} {'wall s':>8} {'db hits':>10}")
    for name, row in out["statements_by_name"].items():
        print(f"{name[:32]:<32} {row['count']:>6.0f} {row.get('rows', 0):>8.0f} {row.get('server_ms', 0):>10.0f}"
              f" {row['jvm_cpu_s']:>9.2f} {row['wall_s']:>8.2f} {row.get('db_hits', 0):>10.0f}")
    if out["batch_write_ops"]:
        print("top operators (db hits):")
        for op, v in list(out["batch_write_ops"].items())[:25]:
            print(f"  {v['hits']:>9.0f} hits {v['rows']:>8.0f} rows  {op[:150]}")
    if "delete" in out:
        d = out["delete"]
        print(f"delete_all: wall {d['wall_s']:.2f} s, server CPU {d['server_cpu_s']:.2f} s")
        for name, row in d["steps"].items():
            print(f"  {name[:40]:<40} x{row['count']:.0f} rows {row.get('rows', 0):.0f} server {row.get('server_ms', 0):.0f} ms"
                  f" JVM {row['jvm_cpu_s']:.2f} s hits {row.get('db_hits', 0):.0f}")


if __name__ == "__main__":
    main()
