"""A real ``ripple serve`` / ``ripple mcp`` process for tests: a free loopback port, wait until ready, stop it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import httpx

ROOT = Path(__file__).resolve().parents[1]
READY_TIMEOUT = float(os.environ.get("RIPPLE_TEST_SERVER_TIMEOUT", "300"))  # model loading on a busy machine


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env.pop("RIPPLE_SERVER", None)
    env.pop("RIPPLE_SERVER_TOKEN", None)
    env.update(extra)
    return env


@dataclass
class ServerProcess:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM, then wait (SIGKILL only if it hangs); returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return int(self.proc.returncode)


@contextmanager
def ripple_process(store: str, command: Sequence[str], *, log: Path, ready_path: str = "/health/ready",
                   any_answer: bool = False, env: dict[str, str] | None = None) -> Iterator[ServerProcess]:
    """Start ``ripple --store STORE <command> --port P`` and wait until ``ready_path`` answers 200
    (with ``any_answer``: answers at all, for servers that listen only once they are ready)."""
    port = free_port()
    argv = [sys.executable, "-m", "ripple.cli", "--store", store, *command, "--port", str(port)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env or child_env(), cwd=ROOT)
    server = ServerProcess(f"http://127.0.0.1:{port}", proc, log)
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"server exited with {proc.returncode}:\n{server.log_text()[-3000:]}")
            try:
                answer = httpx.get(server.url + ready_path, timeout=2)
                if any_answer or answer.status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"server not ready after {READY_TIMEOUT:.0f} s:\n{server.log_text()[-3000:]}")
            time.sleep(0.2)
        yield server
    finally:
        server.stop()
