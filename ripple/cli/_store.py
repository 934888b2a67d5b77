"""How a command opens the memory: read commands never create a store, write commands say when they do."""

from __future__ import annotations

import sys

from ripple import Memory
from ripple.settings import RippleSettings


def open_memory(settings: RippleSettings, *, write: bool = False) -> Memory:
    """The configured memory.  A read command on a store that does not exist is an error naming
    the path (``--store /typo/path stats`` must not report an empty store as if memories were
    lost); a write command creates the store and says so once, on stderr."""
    from graphstore import store_exists

    new = write and not store_exists(settings.store_uri())
    mem = Memory(settings=settings, create=write)
    if new:
        print(f"ripple: created a new store at {mem.store.uri}", file=sys.stderr)
    return mem
