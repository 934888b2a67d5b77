"""SIGKILL in the middle of ``add_many``: every acknowledged batch survives, whole; no batch survives in part.

A writer process (``tests/faults/add_worker.py``: the real ``Memory.add_many`` on the embedded
store, model-free) adds batches of 40 memories in a loop and prints each batch's number when
``add_many`` returned; the test kills it with SIGKILL at a random moment inside a batch, twice,
each time restarting the writer on the same store with the batch it was in the middle of.

What the caller can tell: every batch it saw acknowledged is stored completely; the batch in
flight is either stored completely or not at all (a batch of up to 256 items is one transaction),
and sending it again is safe: a text already stored is reinforced, not stored twice.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from graphstore.sqlite import SQLiteStore
from tests.faults.procs import ROOT, child_env

SIZE = 40


def _run_until_killed(store: Path, first: int, rng: random.Random) -> tuple[list[int], int]:
    """Start a writer at batch ``first``, kill it inside a batch after a few acknowledgements."""
    proc = subprocess.Popen([sys.executable, "-m", "tests.faults.add_worker", str(store), str(first), str(SIZE)],
                            stdout=subprocess.PIPE, text=True, env=child_env(), cwd=ROOT)
    assert proc.stdout is not None
    acked: list[int] = []
    try:
        assert proc.stdout.readline().strip() == "ready"
        times: list[float] = []
        t = time.monotonic()
        while len(acked) < 2:
            line = proc.stdout.readline().split()
            assert line and line[0] == "ok", f"writer failed: {line}"
            acked.append(int(line[1]))
            times.append(time.monotonic() - t)
            t = time.monotonic()
        time.sleep(rng.uniform(0.1, 0.9) * min(times))  # somewhere inside the next batch
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    return acked, acked[-1] + 1


def test_sigkill_mid_add_many_keeps_whole_acknowledged_batches(tmp_path: Path) -> None:
    rng = random.Random(18)
    store = tmp_path / "store"
    acked: list[int] = []
    in_flight: list[int] = []
    first = 1
    for _ in range(2):
        got, flying = _run_until_killed(store, first, rng)
        acked += got
        in_flight.append(flying)
        first = flying  # the caller sends the batch it does not know about again

    s = SQLiteStore(store)
    try:
        import json

        per_batch = Counter(json.loads(m.metadata_json)["batch"] for m in s.list_memories("u1"))
        texts = Counter(m.text for m in s.list_memories("u1"))
        assert all(per_batch[b] == SIZE for b in acked), f"an acknowledged batch was lost or cut: {per_batch}"
        assert set(per_batch) <= set(acked) | set(in_flight), "a batch nobody sent"
        assert all(n == SIZE for n in per_batch.values()), f"a partial batch survived: {per_batch}"
        assert max(texts.values()) == 1, "a batch sent again was stored twice"
        assert [f.line() for f in s.check() if f.level != "ok"] == [], "derived indexes out of step after SIGKILL"
    finally:
        s.close()
