"""Entry point: parse arguments, then import only the chosen command's module.

Each command module has ``register(parser)`` and ``run(args, settings) -> int``
and is a client of the public API; ``--help`` imports no model or driver.
Every :class:`~ripple.RippleError` (bad input, a missing file, a store error)
ends the command with one line on stderr and exit status 2, never a
traceback; ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from ripple.settings import RippleSettings

__all__ = ["main", "COMMANDS", "ERROR_EXIT"]

# name -> (module, summary)
COMMANDS: dict[str, tuple[str, str]] = {
    "add": ("ripple.cli.cmd_add", "store a text (or a JSONL file of items) as memories"),
    "recall": ("ripple.cli.cmd_recall", "recall memories related to a query"),
    "demo": ("ripple.cli.cmd_demo", "ingest a sample conversation and compare ripple with flat recall"),
    "forget": ("ripple.cli.cmd_forget", "invalidate a memory (by id, or the best match of --query)"),
    "maintain": ("ripple.cli.cmd_maintain", "forgetting tiers of a user's memories now"),
    "stats": ("ripple.cli.cmd_stats", "counts of memories, entities and edges"),
    "doctor": ("ripple.cli.cmd_doctor", "check a store: schema, integrity, derived indexes, vectors, counts"),
    "reindex": ("ripple.cli.cmd_reindex", "rebuild a store's derived indexes (postings, aliases, degrees) from its memories"),
    "export": ("ripple.cli.cmd_export", "write a user's graph as JSONL"),
    "import": ("ripple.cli.cmd_import", "load a JSONL export into the store"),
    "bench": ("ripple.cli.cmd_bench", "run the benchmark harness (python -m benchmarks)"),
    "cypher": ("ripple.cli.cmd_cypher", "run a Cypher query against the Neo4j store"),
    "graph": ("ripple.cli.cmd_graph", "write a user's memory graph as an interactive HTML page"),
    "serve": ("ripple.cli.cmd_serve", "serve the HTTP API (models loaded once; see /docs)"),
    "mcp": ("ripple.cli.cmd_mcp", "serve ripple to MCP clients (stdio, or streamable HTTP)"),
    "chat": ("ripple.cli.cmd_chat", "a session on stdin: watch the window, budget, alerts and recall work"),
    "trace": ("ripple.cli.cmd_trace", "the timeline of traces saved by ripple chat --trace-out"),
    "shards": ("ripple.cli.cmd_shards", "users per shard, move a user between shards, add or remove a shard"),
}


#: Exit status of a command that failed with a ripple error (bad input, a store error, ...): the
#: status argparse gives a bad command line, so every refusal of what was asked exits the same way.
ERROR_EXIT = 2


def one_line(exc: BaseException) -> str:
    """An error's message on one line (no traceback, no embedded newlines)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def _settings(store: str | None) -> "RippleSettings":
    """Settings from the environment and ``--store``; a bad value is a one-line ConfigError."""
    from pydantic import ValidationError

    from ripple._validate import from_validation
    from ripple.errors import ConfigError
    from ripple.settings import RippleSettings

    try:
        return RippleSettings(store=store) if store else RippleSettings()
    except ValidationError as exc:
        raise ConfigError(f"bad setting: {from_validation(exc)}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ripple", description="Graph-based associative memory for AI agents.")
    parser.add_argument("--store", help="store URI or folder (default: $RIPPLE_STORE, $RIPPLE_HOME or ~/.ripple)")
    parser.add_argument("--debug", action="store_true", help="show full tracebacks")
    from ripple import __version__

    parser.add_argument("--version", action="version", version=f"ripple {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, summary) in COMMANDS.items():
        sub.add_parser(name, help=summary, description=summary, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if args.command is None:
        parser.print_help()
        return 0 if not rest else 2
    module = importlib.import_module(COMMANDS[args.command][0])
    sub = argparse.ArgumentParser(prog=f"ripple {args.command}", description=COMMANDS[args.command][1])
    module.register(sub)
    sub_args = sub.parse_args(rest)
    from ripple.errors import RippleError

    try:
        settings = _settings(args.store)
        return int(module.run(sub_args, settings))
    except RippleError as exc:
        if args.debug:
            raise
        print(f"ripple: error: {one_line(exc)}", file=sys.stderr)
        return ERROR_EXIT
    except KeyboardInterrupt:
        print("ripple: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
