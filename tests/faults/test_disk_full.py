"""A full disk: a typed error, no acknowledged write lost, recall keeps working, writes work again after.

The writer (``tests/faults/disk_worker.py``, the real ``Memory`` on the embedded store) adds
batches of 20 memories until the disk is full, recalls, gets the space back and writes again.
Two ways to fill the disk, both real OS failures: ``rlimit`` (the process may not grow a file:
EFBIG; works without privileges) and, where the test runs as root, ``tmpfs`` (a 4 MB file system
mounted for the test, filled to the last 800 KiB: ENOSPC, SQLite's "database or disk is full").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Iterator

import pytest

from graphstore.sqlite import SQLiteStore
from tests.faults.procs import ROOT, child_env


def _can_mount() -> bool:
    if os.geteuid() != 0:
        return False
    with tempfile.TemporaryDirectory() as d:
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", d], capture_output=True).returncode:
            return False
        subprocess.run(["umount", d], check=True)
    return True


MODES = ["rlimit", *(["tmpfs"] if _can_mount() else [])]


@pytest.fixture
def disk(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """The folder the store goes in: on its own 4 MB file system in ``tmpfs`` mode."""
    mount = tmp_path / "disk"
    mount.mkdir()
    mode = request.node.callspec.params["mode"]
    if mode == "tmpfs":
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], check=True)
    try:
        yield mount / "store"
    finally:
        if mode == "tmpfs":
            subprocess.run(["umount", str(mount)], check=True)


@pytest.mark.parametrize("mode", MODES)
def test_full_disk_is_a_typed_error_and_loses_nothing(disk: Path, mode: str, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "tests.faults.disk_worker", str(disk), mode], capture_output=True,
                          text=True, env=child_env(), cwd=ROOT, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(out["acked"]) >= 2 and "failed" in out, out
    if mode == "tmpfs":  # the disk is full: retry later
        assert out["error"] == "StoreUnavailable" and "no space left" in out["message"], out
    else:  # the file may not grow: an I/O error
        assert out["error"] == "StoreError" and "I/O error" in out["message"], out
    assert out["recall_hits"] > 0, "recall failed on a full disk"
    s = SQLiteStore(disk)
    try:
        import json as _json

        per_batch = Counter(_json.loads(m.metadata_json)["batch"] for m in s.list_memories("u1"))
        assert all(per_batch[b] == 20 for b in out["acked"]), f"an acknowledged batch was lost: {per_batch}"
        assert per_batch[out["failed"]] == 0, "part of the batch that did not fit was stored"
        assert per_batch[out["after"]] == 20, "writes did not work again once there was space"
        assert [f.line() for f in s.check() if f.level != "ok"] == []
    finally:
        s.close()
