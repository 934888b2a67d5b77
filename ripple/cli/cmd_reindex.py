"""``ripple reindex``: rebuild a store's derived indexes from its memories, then check it.

Derived indexes (lexical postings and totals, aliases, entity degrees, vector
caches) are rebuilt one user per transaction, so an interrupted reindex can
simply be run again.  The memories, entities and edges are read, never
changed.  Exit 0 when the check afterwards finds no error.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from graphstore import SupportsMaintenance, open_store
from ripple.errors import ConfigError
from ripple.settings import RippleSettings

_BAR_FROM = 10_000  # memories: a store this large gets a progress bar


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-progress", action="store_true", help="no progress bar, even on a large store")


def run(args: argparse.Namespace, settings: RippleSettings) -> int:
    uri = settings.store_uri()
    store = open_store(uri, maintenance=True, **settings.store_options())
    bar: Any = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None and total >= _BAR_FROM and not args.no_progress:
            from tqdm import tqdm

            bar = tqdm(total=total, unit="mem", desc="reindex", file=sys.stderr)
        if bar is not None:
            bar.update(done - bar.n)

    try:
        maintained = store
        if not isinstance(maintained, SupportsMaintenance):
            raise ConfigError(f"{uri} keeps no derived indexes to rebuild")
        counts = maintained.reindex(progress=progress)
        if bar is not None:
            bar.close()
        print("rebuilt: " + ", ".join(f"{k} {v:,}" for k, v in counts.items()))
        left = [f for f in maintained.check() if f.level == "error"]
    finally:
        store.close()
    for f in left:
        print(f.line())
    return 1 if left else 0
