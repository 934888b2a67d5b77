"""Real OS processes for the fault tests: a JSON-lines client of :mod:`tests.faults.store_worker`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a child process that imports this checkout."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env.update(extra)
    return env


class StoreWorker:
    """One process with its own store connection, answering one command at a time."""

    def __init__(self, uri: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.faults.store_worker", uri],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=child_env(), cwd=ROOT,
        )
        assert self.read() == {"ready": True}

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"store worker {self.proc.pid} died (exit {self.proc.wait()})")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def send(self, op: str, **args: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.proc.stdin.flush()

    def ask(self, op: str, **args: Any) -> dict[str, Any]:
        self.send(op, **args)
        return self.read()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.ask("quit")
            except (OSError, RuntimeError):
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
