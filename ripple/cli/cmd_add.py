"""``ripple add``: store a text, or every item of a JSONL file."""

from __future__ import annotations

import argparse
import json
from datetime import datetime

from ripple.errors import InvalidInput
from ripple.settings import RippleSettings

from ._files import json_objects, open_input
from ._remote import add_server_flags, remote
from ._store import open_memory


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("text", nargs="?", help="text to remember (omit with --file)")
    p.add_argument("--user", "-u", required=True, help="user id")
    p.add_argument("--session", "-s", help="session id")
    p.add_argument("--agent", help="agent id")
    p.add_argument("--at", help="event time, ISO 8601 (default: now)")
    p.add_argument("--metadata", help="JSON object stored with the memory")
    p.add_argument("--file", "-f", help="JSONL file of items {text, session_id?, at?, metadata?} ('-' = stdin);"
                   " a line naming another user_id than --user is refused")
    p.add_argument("--json", action="store_true", help="print stored memories as JSON")
    add_server_flags(p)


def _items(args: argparse.Namespace) -> list[dict[str, object]]:
    base: dict[str, object] = {"user_id": args.user}
    if args.session:
        base["session_id"] = args.session
    if args.agent:
        base["agent_id"] = args.agent
    if args.file:
        # --user names whose memories these are: a line may repeat it, never change it (a file
        # that names another user is a mistake or an attempt to write for someone else; the
        # whole file is refused, as add_many refuses every item when one is bad).
        items = []
        with open_input(args.file) as stream:
            for n, obj in json_objects(stream, args.file):
                if "user_id" in obj and obj["user_id"] != args.user:
                    raise InvalidInput(f"{args.file}:{n}: user_id {obj['user_id']!r} is not --user {args.user!r};"
                                       " a file adds memories of the --user only")
                items.append({**base, **obj})
        return items
    if args.text is None:
        raise InvalidInput("give a text or --file")
    item = dict(base, text=args.text)
    if args.at:
        try:
            item["at"] = datetime.fromisoformat(args.at)
        except ValueError as exc:
            raise InvalidInput(f"--at: {exc}") from None
    if args.metadata:
        try:
            item["metadata"] = json.loads(args.metadata)
        except (ValueError, RecursionError) as exc:
            raise InvalidInput(f"--metadata is not JSON: {str(exc)[:120]}") from None
    return [item]


def run(args: argparse.Namespace, settings: RippleSettings) -> int:
    from ripple._validate import items as validated

    items = _items(args)
    validated(items)  # before the store is opened (or created): bad input writes nothing
    client = remote(args)
    if client is not None:
        stored = client.add_many(items)
    else:
        with open_memory(settings, write=True) as mem:
            stored = mem.add_many(items, progress=True)
    if args.json:
        for m in stored:
            print(m.model_dump_json())
    else:
        skipped = len(items) - len(stored)
        print(f"stored {len(stored)} memor{'y' if len(stored) == 1 else 'ies'}"
              + (f" ({skipped} without content skipped)" if skipped else ""))
    return 0
