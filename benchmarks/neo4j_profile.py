"""``python -m benchmarks neo4j-profile``: where a recall's time goes on a Neo4j store, in counts.

Wall-clock latency on a shared machine moves by half from one minute to the next; what a
recall *asks of the server* does not.  For each method (``flat``, ``ripple``, ...) on a
synthetic store this measures, per recall:

* the store requests the plan made (by request type: how many, and their wall time);
* on the wire: Bolt flushes (each one a round trip: the driver sends, then waits for the
  answer), Cypher statements (RUN messages), bytes sent and received, and the time spent
  blocked in ``recv`` (the server's work plus the loopback and scheduler latency);
* the Python side: CPU time of the process during the recall;
* server side, for the first ``--profile-queries`` recalls: every statement the recall sent,
  run again under ``PROFILE`` with the same parameters: database hits, rows, and the
  operators of its plan (which index each one uses).

``--cprofile`` adds a cProfile pass over the same queries (main thread only) and splits its
time by package: the neo4j driver (Bolt, PackStream decoding), graphstore (rows to
records), ripple (the plan) and the rest.

``--ab`` measures the store's fast paths against its generic route in the same process: every
query is recalled through both (:class:`graphstore.testing.GenericView` hides the read-combining
capabilities), in alternating order, and the two rankings must agree id for id and score for
score; the latencies, flushes and CPU of both are reported side by side.

The store is ingested as ``python -m benchmarks run`` would (the same method objects), or, with
``--reuse-store``, taken as an earlier run left it (``--dataset locomo`` works too).  Results go
to a JSON file and a Markdown summary on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import pstats
import re
import statistics
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

__all__ = ["BoltMeter", "register", "run"]


# --------------------------------------------------------------------------- the wire


@dataclass
class WireCounts:
    """What crossed the Bolt connection(s) while a meter was on."""

    flushes: int = 0
    statements: int = 0
    bytes_out: int = 0
    bytes_in: int = 0
    recv_s: float = 0.0
    captured: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


class BoltMeter:
    """Counts Bolt traffic by patching the sync driver's socket and its RUN message (all threads).

    ``capture=True`` also keeps every statement's Cypher and parameters (for ``PROFILE``).
    """

    def __init__(self) -> None:
        self.counts = WireCounts()
        self.capture = False
        self._lock = threading.Lock()
        self._undo: list[Callable[[], None]] = []

    def reset(self) -> WireCounts:
        with self._lock:
            done, self.counts = self.counts, WireCounts()
        return done

    def _patch(self, cls: type, name: str, make: Callable[[Any], Any]) -> None:
        owner = next(c for c in cls.__mro__ if name in c.__dict__)  # the class that defines it
        original = owner.__dict__[name]
        setattr(owner, name, make(original))
        self._undo.append(lambda: setattr(owner, name, original))

    def install(self) -> None:
        from neo4j._sync.io._bolt import Bolt
        from neo4j._sync.io._bolt._bolt_socket import BoltSocket

        meter = self

        def sendall(original: Any) -> Any:
            def wrapped(sock: Any, data: Any) -> Any:
                with meter._lock:
                    meter.counts.flushes += 1
                    meter.counts.bytes_out += len(data)
                return original(sock, data)
            return wrapped

        def recv_into(original: Any) -> Any:
            def wrapped(sock: Any, buffer: Any, nbytes: Any) -> Any:
                t0 = time.perf_counter()
                n = original(sock, buffer, nbytes)
                with meter._lock:
                    meter.counts.recv_s += time.perf_counter() - t0
                    meter.counts.bytes_in += n or 0
                return n
            return wrapped

        def run(original: Any) -> Any:
            def wrapped(conn: Any, query: Any, parameters: Any = None, *args: Any, **kwargs: Any) -> Any:
                with meter._lock:
                    meter.counts.statements += 1
                    if meter.capture:
                        meter.counts.captured.append((str(query), dict(parameters or {})))
                return original(conn, query, parameters, *args, **kwargs)
            return wrapped

        self._patch(BoltSocket, "sendall", sendall)
        self._patch(BoltSocket, "recv_into", recv_into)
        for cls in _subclasses(Bolt):
            if "run" in cls.__dict__:
                self._patch(cls, "run", run)

    def uninstall(self) -> None:
        while self._undo:
            self._undo.pop()()

    @contextlib.contextmanager
    def installed(self) -> Iterator["BoltMeter"]:
        self.install()
        try:
            yield self
        finally:
            self.uninstall()


def _subclasses(cls: type) -> list[type]:
    out = [cls]
    for sub in cls.__subclasses__():
        out.extend(_subclasses(sub))
    return out


# --------------------------------------------------------------------------- naming statements


def _statement_names() -> list[tuple[str, str]]:
    """(Cypher, constant name) of every statement graphstore.neo4j defines, to name captured ones."""
    import graphstore.neo4j as backend

    out: list[tuple[str, str]] = []

    def walk(name: str, value: Any) -> None:
        value = getattr(value, "cypher", value)  # (a statement planned once: graphstore.neo4j._Planned)
        if isinstance(value, str) and ("MATCH" in value or "CALL" in value or "UNWIND" in value):
            out.append((value, name))
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(f"{name}[{k}]", v)
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                walk(f"{name}[{i}]", v)

    for name, value in vars(backend).items():
        if name.startswith("_") and name[1:].replace("_", "").isupper():
            walk(name, value)
    return out


def _name_of(cypher: str, known: list[tuple[str, str]]) -> str:
    for text, name in known:
        if cypher == text:
            return name
    for text, name in known:  # templates with %(...)s or {...} holes: match the text around them
        parts = [re.escape(p) for p in re.split(r"%\(\w+\)s", text)]
        if len(parts) > 1 and re.fullmatch(".*?".join(parts), cypher, flags=re.S):
            return name
    first = " ".join(cypher.split())[:60]
    return f"<{first}>"


# --------------------------------------------------------------------------- server-side PROFILE


@dataclass
class PlanStats:
    db_hits: int
    rows: int
    operators: list[str]


def _walk_plan(plan: dict[str, Any], ops: list[str]) -> int:
    args = plan.get("args") or {}
    details = args.get("Details") or ""
    op = plan.get("operatorType", "?").split("@")[0]
    ops.append(f"{op}({details[:90]})" if details else op)
    hits = int(plan.get("dbHits", 0) or 0)
    for child in plan.get("children", []) or []:
        hits += _walk_plan(child, ops)
    return hits


def profile_statement(session: Any, cypher: str, params: dict[str, Any]) -> PlanStats:
    """Run ``PROFILE cypher`` with its parameters in a read transaction: hits, rows and operators."""
    def work(tx: Any) -> Any:
        result = tx.run("PROFILE " + cypher, params)
        rows = len(list(result))
        return rows, result.consume().profile

    rows, plan = session.execute_read(work)
    ops: list[str] = []
    hits = _walk_plan(plan or {}, ops)
    return PlanStats(hits, rows, ops)


# --------------------------------------------------------------------------- recall instrumentation


@dataclass
class RecallSample:
    latency_ms: float
    cpu_ms: float
    requests: Counter[str]
    request_ms: dict[str, float]
    wire: WireCounts


def _instrument(mem: Any) -> dict[str, Any]:
    """Time every request the memory's driver answers (and the dense search run beside the encoder)."""
    from ripple._requests import LocalRequest

    log: dict[str, Any] = {"counts": Counter(), "ms": defaultdict(float)}
    store, runtime = mem._store, mem._runtime

    def drive(op: Any) -> Any:
        try:
            req = next(op)
            while True:
                t0 = time.perf_counter()
                answer = req.run(runtime) if isinstance(req, LocalRequest) else req.call(store)
                name = type(req).__name__
                log["counts"][name] += 1
                log["ms"][name] += (time.perf_counter() - t0) * 1000.0
                req = op.send(answer)
        except StopIteration as stop:
            return stop.value

    mem._drive = drive
    beside = runtime._search_beside
    if beside is not None:
        def search(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            out = beside(*args, **kwargs)
            log["counts"]["NearestMemories(beside)"] += 1
            log["ms"]["NearestMemories(beside)"] += (time.perf_counter() - t0) * 1000.0
            return out
        runtime._search_beside = search
    return log


def measure(method: Any, queries: list[Any], k: int, meter: BoltMeter, log: dict[str, Any],
            capture_first: int) -> tuple[list[RecallSample], list[list[tuple[str, dict[str, Any]]]]]:
    samples: list[RecallSample] = []
    captured: list[list[tuple[str, dict[str, Any]]]] = []
    for n, q in enumerate(queries):
        meter.capture = n < capture_first
        meter.reset()
        log["counts"].clear()
        log["ms"].clear()
        c0, t0 = time.process_time(), time.perf_counter()
        method.recall(q, k)
        latency = (time.perf_counter() - t0) * 1000.0
        cpu = (time.process_time() - c0) * 1000.0
        wire = meter.reset()
        if meter.capture:
            captured.append(wire.captured)
        samples.append(RecallSample(latency, cpu, Counter(log["counts"]), dict(log["ms"]), wire))
    meter.capture = False
    return samples, captured


def python_split(method: Any, queries: list[Any], k: int) -> dict[str, float]:
    """Main-thread time of the queries under cProfile, by package (ms per recall)."""
    prof = cProfile.Profile()
    prof.enable()
    for q in queries:
        method.recall(q, k)
    prof.disable()
    stats = pstats.Stats(prof)
    buckets: dict[str, float] = defaultdict(float)
    for (filename, _line, func), (_cc, _nc, tottime, _ct, _callers) in getattr(stats, "stats").items():
        if func in ("recv_into", "recv", "<method 'recv_into' of '_socket.socket' objects>") or "recv_into" in func:
            key = "socket wait (recv)"
        elif "select" in func or "poll" in func:
            key = "socket wait (select)"
        elif "/neo4j/" in filename:
            key = "neo4j driver"
        elif "/graphstore/" in filename:
            key = "graphstore"
        elif "/ripple/" in filename:
            key = "ripple"
        elif "acquire" in func or "wait" in func:
            key = "thread waits"
        else:
            key = "other (numpy, stdlib, ...)"
        buckets[key] += tottime * 1000.0 / max(len(queries), 1)
    return dict(sorted(buckets.items(), key=lambda kv: -kv[1]))


# --------------------------------------------------------------------------- summary


def _pct(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    xs = sorted(values)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def _recall_detail(mem: Any, method: Any, q: Any, k: int) -> tuple[list[tuple[str, float]], float]:
    """One recall through ``mem`` at the query user's present (as the method recalls): (id, score)
    pairs and the wall-clock milliseconds."""
    method._query_now = method._user_now.get(q.user_id)
    try:
        t0 = time.perf_counter()
        res = mem.recall(q.text, user_id=q.user_id, k=k, mode=method.mode, touch=False)
        ms = (time.perf_counter() - t0) * 1000.0
    finally:
        method._query_now = None
    return [(h.memory.id, h.score) for h in res.hits], ms


def compare_generic(method: Any, queries: list[Any], k: int, meter: BoltMeter) -> dict[str, Any]:
    """Every query through the store's fast paths and through its generic route (interleaved, the
    order alternating): identical rankings required; latency, flushes and CPU of both."""
    from graphstore.testing import GenericView
    from ripple import Memory

    fast = method._mem
    generic = Memory(store=GenericView(fast.store), embedder=fast.embedder, extractor=fast.extractor,
                     config=fast.config, clock=method._clock)
    sides: dict[str, dict[str, list[float]]] = {name: {"ms": [], "flushes": [], "cpu": []} for name in ("fast", "generic")}
    differ: list[str] = []
    for n, q in enumerate(queries):
        got: dict[str, list[tuple[str, float]]] = {}
        order = [("fast", fast), ("generic", generic)]
        for name, mem in (order if n % 2 == 0 else order[::-1]):
            meter.reset()
            c0 = time.process_time()
            got[name], ms = _recall_detail(mem, method, q, k)
            sides[name]["cpu"].append((time.process_time() - c0) * 1000.0)
            sides[name]["ms"].append(ms)
            sides[name]["flushes"].append(meter.reset().flushes)
        if got["fast"] != got["generic"]:
            differ.append(q.id)
    generic.close()
    return {
        "queries": len(queries), "differ": differ,
        **{name: {"p50": _pct(v["ms"], 50), "p95": _pct(v["ms"], 95), "flushes_mean": statistics.fmean(v["flushes"]),
                  "cpu_ms_mean": statistics.fmean(v["cpu"])} for name, v in sides.items()},
    }


def summarise(samples: list[RecallSample]) -> dict[str, Any]:
    n = max(len(samples), 1)
    req_names = sorted({name for s in samples for name in s.requests})
    return {
        "recalls": len(samples),
        "latency_ms": {"p50": _pct([s.latency_ms for s in samples], 50), "p95": _pct([s.latency_ms for s in samples], 95)},
        "cpu_ms_mean": sum(s.cpu_ms for s in samples) / n,
        "flushes_mean": sum(s.wire.flushes for s in samples) / n,
        "statements_mean": sum(s.wire.statements for s in samples) / n,
        "bytes_in_mean": sum(s.wire.bytes_in for s in samples) / n,
        "bytes_out_mean": sum(s.wire.bytes_out for s in samples) / n,
        "recv_ms_p50": _pct([s.wire.recv_s * 1000.0 for s in samples], 50),
        "requests": {
            name: {"per_recall": sum(s.requests[name] for s in samples) / n,
                   "ms_p50": _pct([s.request_ms[name] for s in samples if name in s.request_ms], 50),
                   "ms_p95": _pct([s.request_ms[name] for s in samples if name in s.request_ms], 95)}
            for name in req_names
        },
    }


def server_side(uri: str, password: str | None, database: str | None,
                captured: list[list[tuple[str, dict[str, Any]]]]) -> dict[str, Any]:
    import neo4j

    known = _statement_names()
    per: dict[str, dict[str, list[float]]] = defaultdict(lambda: {"hits": [], "rows": []})
    operators: dict[str, list[str]] = {}
    calls: Counter[str] = Counter()
    auth = None if password is None else ("neo4j", password)
    with neo4j.GraphDatabase.driver(uri, auth=auth, notifications_min_severity="OFF") as driver:
        with driver.session(database=database) as session:
            for recall in captured:
                for cypher, params in recall:
                    name = _name_of(cypher, known)
                    calls[name] += 1
                    if cypher.lstrip().upper().startswith(("SHOW", "CALL DB.AWAIT")):
                        continue
                    stats = profile_statement(session, cypher, params)
                    per[name]["hits"].append(stats.db_hits)
                    per[name]["rows"].append(stats.rows)
                    operators.setdefault(name, stats.operators)
    n = max(len(captured), 1)
    return {
        name: {
            "per_recall": calls[name] / n,
            "db_hits_p50": _pct(v["hits"], 50), "db_hits_mean": statistics.fmean(v["hits"]) if v["hits"] else 0.0,
            "rows_p50": _pct(v["rows"], 50),
            "operators": operators.get(name, []),
        }
        for name, v in per.items()
    }


def markdown(report: dict[str, Any]) -> str:
    lines = [f"## {report['dataset']} on {report['store']}", ""]
    for method, body in report["methods"].items():
        s = body["client"]
        lines += [
            f"### {method}", "",
            f"recalls {s['recalls']}, latency p50/p95 {s['latency_ms']['p50']:.1f}/{s['latency_ms']['p95']:.1f} ms,"
            f" process CPU {s['cpu_ms_mean']:.1f} ms, Bolt flushes {s['flushes_mean']:.1f}, statements"
            f" {s['statements_mean']:.1f}, bytes in {s['bytes_in_mean'] / 1024:.0f} KiB, out"
            f" {s['bytes_out_mean'] / 1024:.1f} KiB, blocked in recv p50 {s['recv_ms_p50']:.1f} ms", "",
            "| request | per recall | ms p50 | ms p95 |", "|---|---:|---:|---:|",
        ]
        for name, r in s["requests"].items():
            lines.append(f"| {name} | {r['per_recall']:.2f} | {r['ms_p50']:.2f} | {r.get('ms_p95', float('nan')):.2f} |")
        if body.get("server"):
            lines += ["", "| statement | per recall | db hits p50 (mean) | rows p50 | plan |", "|---|---:|---:|---:|---|"]
            total = 0.0
            for name, r in sorted(body["server"].items(), key=lambda kv: -kv[1]["db_hits_mean"] * kv[1]["per_recall"]):
                total += r["db_hits_mean"] * r["per_recall"]
                plan = " <- ".join(r["operators"][:8])
                lines.append(f"| {name} | {r['per_recall']:.2f} | {r['db_hits_p50']:.0f} ({r['db_hits_mean']:.0f})"
                             f" | {r['rows_p50']:.0f} | {plan} |")
            lines.append(f"| **total db hits per recall** | | {total:.0f} | | |")
        if body.get("ab"):
            ab = body["ab"]
            lines += ["", f"fast path vs generic route, {ab['queries']} queries interleaved: rankings differ on"
                      f" {len(ab['differ'])} {ab['differ'][:5]}", "", "| route | p50 ms | p95 ms | flushes | CPU ms |",
                      "|---|---:|---:|---:|---:|"]
            for side in ("fast", "generic"):
                r = ab[side]
                lines.append(f"| {side} | {r['p50']:.1f} | {r['p95']:.1f} | {r['flushes_mean']:.1f} | {r['cpu_ms_mean']:.1f} |")
        if body.get("python"):
            lines += ["", "main thread under cProfile, ms per recall: "
                      + ", ".join(f"{k} {v:.1f}" for k, v in body["python"].items())]
        lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------- CLI


def register(parser: argparse.ArgumentParser) -> None:
    from benchmarks.run import _int_list

    parser.add_argument("--store", required=True, help="Neo4j URI (password from RIPPLE_NEO4J_PASSWORD)")
    parser.add_argument("--dataset", choices=["synthetic", "locomo"], default="synthetic")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--size", type=_int_list, default=[10_000], help="synthetic store size (default 10k)")
    parser.add_argument("--users", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-queries", type=int, default=200)
    parser.add_argument("--methods", default="flat,ripple")
    parser.add_argument("--k", type=int, default=25)
    parser.add_argument("--embedder", default=None)
    parser.add_argument("--extractor", choices=["gazetteer"], default=None)
    parser.add_argument("--no-dedup", action="store_true")
    parser.add_argument("--reuse-store", action="store_true", help="recall from the server's copy of the dataset")
    parser.add_argument("--profile-queries", type=int, default=20, help="recalls whose statements are PROFILEd")
    parser.add_argument("--cprofile", action="store_true", help="add a cProfile pass (main thread) split by package")
    parser.add_argument("--ab", action="store_true",
                        help="recall every query through the fast paths and the generic route, interleaved: the"
                             " rankings must agree; latency, flushes and CPU of both")
    parser.add_argument("--limit", type=int, default=None, help="only the first N queries")
    parser.add_argument("--out", type=Path, default=None, help="JSON report (default: print only)")


def run(args: argparse.Namespace, argv: list[str] | None = None) -> int:
    from benchmarks.datasets import default_data_dir, load_locomo, synthetic
    from benchmarks.methods import make_method

    password = os.environ.get("RIPPLE_NEO4J_PASSWORD")
    report: dict[str, Any] = {"store": args.store, "methods": {}, "command": "python -m benchmarks " + " ".join(argv or [])}
    meter = BoltMeter()
    if args.dataset == "locomo":
        data_dir = args.data_dir or default_data_dir()
        datasets = [load_locomo(Path(data_dir) / "locomo" / "locomo-dev.json")]
    else:
        datasets = [synthetic(size, n_users=args.users, seed=args.seed, n_queries=args.n_queries) for size in args.size]
    for ds in datasets:
        report["dataset"] = ds.name
        for name in [m.strip() for m in args.methods.split(",") if m.strip()]:
            method: Any = make_method(name, store=args.store, embedder=args.embedder, dedup=not args.no_dedup,
                                      extractor=args.extractor, reuse=args.reuse_store)
            method.progress = False
            method.prepare()
            method.index(ds)
            queries = list(ds.queries)[: args.limit]
            warm = getattr(method, "warm", None)
            if callable(warm):  # the users' vectors and walk edges loaded in process first, as `run` does
                warm(ds)
            method.recall(queries[0], args.k)  # warm-up, as the benchmark does
            log = _instrument(method._mem)
            with meter.installed():
                samples, captured = measure(method, queries, args.k, meter, log, args.profile_queries)
            body: dict[str, Any] = {"client": summarise(samples)}
            body["server"] = server_side(args.store, password, None, captured) if captured else {}
            if args.ab:
                with meter.installed():
                    body["ab"] = compare_generic(method, queries, args.k, meter)
            if args.cprofile:
                body["python"] = python_split(method, queries, args.k)
            report["methods"][method.name] = body
            method.close()
    print(markdown(report))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1, default=str))
        print(f"wrote {args.out}", file=sys.stderr)
    return 0
