"""``python -m benchmarks {run,report,supersession}``: argparse dispatch; a command's module loads only when used."""

from __future__ import annotations

import argparse
import importlib
import sys

# command -> (module, one-line summary); each module has register(parser) and run(args, argv)
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("benchmarks.run", "index datasets with methods and store raw per-query results as JSONL"),
    "embedders": ("benchmarks.embedders", "embedding models alone: dense-only recall@k and encode timings"),
    "report": ("benchmarks.report", "compute metrics from stored results; write summary.md/json and plots"),
    "supersession": ("benchmarks.supersession", "score fact supersession on the labelled set (benchmarks/data/supersession)"),
    "pair-judge": ("benchmarks.pair_judge", "train the supersession pair judge, or score it leave-one-split-out"),
    "serve-load": ("benchmarks.server_load", "requests/s and p50/p95/p99 of ripple serve beside in-process calls"),
    "neo4j-profile": ("benchmarks.neo4j_profile", "per recall on Neo4j: store requests, Bolt round trips, db hits, plans"),
    "calibrate": ("benchmarks.calibrate", "fit calibrated relevance and measure abstention on foreign questions"),
    "loo": ("benchmarks.loo", "compare recall plans per conversation and choose by leave-one-conversation-out"),
    "agent": ("benchmarks.agent", "agent layer: token estimate, add and context latency, patrol precision"),
    "limits": ("benchmarks.limits", "the oversized writes of issue 18 (huge metadata, huge text), timed"),
    "shards": ("benchmarks.shards", "sharded store on two Neo4j servers: routing by id, recall, a move"),
    "batching": ("benchmarks.batching", "recalls/s from concurrent threads, query batching on and off"),
    "users": ("benchmarks.users", "one user's recall and delete_all as the number of other users grows"),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description="ripple benchmark harness")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_module, summary) in COMMANDS.items():
        sub.add_parser(name, help=summary, description=summary, add_help=False)
    # parse the command name first, then let only that command's module define its flags
    if not argv or argv[0] not in COMMANDS:
        parser.parse_args(argv)  # prints help or an error
        parser.print_help()
        return 2
    module = importlib.import_module(COMMANDS[argv[0]][0])
    cmd_parser = argparse.ArgumentParser(prog=f"python -m benchmarks {argv[0]}", description=COMMANDS[argv[0]][1])
    module.register(cmd_parser)
    args = cmd_parser.parse_args(argv[1:])
    return int(module.run(args, argv) or 0)


if __name__ == "__main__":
    sys.exit(main())
