"""A writer that runs out of disk space, in its own process (the space limit is the process's or its file system's).

``python -m tests.faults.disk_worker STORE MODE``, MODE one of:

* ``tmpfs``: STORE is on a small file system of its own; a filler file takes all its space but
  ``_ROOM`` bytes, and is deleted to give the space back (a real ENOSPC);
* ``rlimit``: the process may not grow any file past ``_ROOM`` bytes more than its store files
  have now (``RLIMIT_FSIZE``, SIGXFSZ ignored: writes fail with EFBIG), then the limit is lifted.

Prints one JSON line: the batches acknowledged before the disk filled, the error of the batch
that did not fit, what a recall (with touch) returned meanwhile, and whether writes work again.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
from pathlib import Path
from typing import Any

from ripple.errors import StoreError
from tests.faults.light import batch_items, light_memory

_ROOM = 800 * 1024  # (a batch of 20 grows the write-ahead log by ~200 KB)


def _fill(store: Path, mode: str) -> Any:
    """Leave about ``_ROOM`` bytes of room; returns what gives the space back."""
    if mode == "rlimit":
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        biggest = max(p.stat().st_size for p in store.iterdir())
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (biggest + _ROOM, hard))
        return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    filler = store.parent / "filler"
    with filler.open("wb") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError:
            pass
    with filler.open("r+b") as fh:
        fh.truncate(max(0, filler.stat().st_size - _ROOM))
    return filler.unlink


def main() -> None:
    store, mode = Path(sys.argv[1]), sys.argv[2]
    out: dict[str, Any] = {"acked": [], "mode": mode}
    with light_memory(str(store)) as mem:
        mem.add_many(batch_items("u1", 0, 20))
        out["acked"].append(0)
        give_back = _fill(store, mode)
        for batch in range(1, 1000):
            try:
                mem.add_many(batch_items("u1", batch, 20))
            except StoreError as exc:
                out.update(failed=batch, error=type(exc).__name__, message=str(exc))
                break
            out["acked"].append(batch)
        res = mem.recall("budget deadline 预算", user_id="u1", k=5)
        touch = next((s.detail for s in res.trace.stages if s.name == "touch"), None)
        out.update(recall_hits=len(res.hits), touch=touch)
        give_back()
        mem.add_many(batch_items("u1", 1000, 20))
        out["after"] = 1000
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
