"""``ripple doctor``: check a store (file, schema, integrity, derived indexes, vectors, counts).

One line per finding (``ok``, ``warn`` or ``error`` with what fixes it); exit 0
when nothing is an error, 1 otherwise.  Read-only: the store is opened as it
is (``maintenance=True``), so a damaged store is examined, not repaired or
migrated; ``ripple reindex`` rebuilds what ``fix: ripple reindex`` names.
"""

from __future__ import annotations

import argparse
import json

from graphstore import Finding, SupportsMaintenance, open_store
from ripple.errors import StoreDamaged, StoreError
from ripple.settings import RippleSettings


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="the findings as a JSON list")


def findings(settings: RippleSettings) -> list[Finding]:
    """The findings of the store ``settings`` name (a store that cannot be opened is one finding)."""
    uri = settings.store_uri()
    try:
        store = open_store(uri, maintenance=True, **settings.store_options())
    except StoreDamaged as exc:
        return [Finding("error", "file", str(exc))]
    except StoreError as exc:
        return [Finding("error", "open", str(exc))]
    try:
        if not isinstance(store, SupportsMaintenance):
            return [Finding("ok", "store", f"{uri} keeps nothing to check")]
        return store.check()
    finally:
        store.close()


def run(args: argparse.Namespace, settings: RippleSettings) -> int:
    found = findings(settings)
    errors = sum(f.level == "error" for f in found)
    if args.json:
        print(json.dumps([{"level": f.level, "area": f.area, "message": f.message, "fix": f.fix} for f in found],
                         ensure_ascii=False))
    else:
        for f in found:
            print(f.line())
        warnings = sum(f.level == "warn" for f in found)
        print(f"{settings.store_uri()}: {errors} error(s), {warnings} warning(s)")
    return 1 if errors else 0
