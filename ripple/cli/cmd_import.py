"""``ripple import``: load a JSONL export (from any backend) as one user's memories.

The user is always named (``--user``): records of another user_id in the file
are imported as this user's under new ids, and nothing of another user in the
store is ever written (see :meth:`ripple.Memory.import_records`).  Each record
is validated; bad ones are refused and listed (up to ``--show``), the rest are
imported in transactions of ``limits.import_batch`` records.  The exit status
is 0 when every record was imported or skipped, 2 when some were refused.
"""

from __future__ import annotations

import argparse
import sys

from ripple.settings import RippleSettings

from ._files import open_input
from ._store import open_memory


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="JSONL file written by ripple export ('-' = stdin)")
    p.add_argument("--user", "-u", required=True, help="the user whose memories these become")
    p.add_argument("--show", type=int, default=20, help="refused records to list (default 20)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace, settings: RippleSettings) -> int:
    with open_input(args.file) as stream, open_memory(settings, write=True) as mem:
        report = mem.import_records(stream, user_id=args.user)
    if args.json:
        print(report.model_dump_json())
    else:
        print(report.summary())
        for line in report.refusals[: max(0, args.show)]:
            print(f"  refused {line}", file=sys.stderr)
        if report.refused > min(len(report.refusals), max(0, args.show)):
            print(f"  ... and {report.refused - min(len(report.refusals), max(0, args.show))} more refused",
                  file=sys.stderr)
    return 2 if report.refused else 0
