"""Run ``ripple serve`` / ``ripple mcp`` as a child process: a free loopback port, wait until ready, stop it.

What the tests and ``python -m benchmarks serve-load`` use to talk to a real
server process; the child imports the same ripple as this process.  Standard
library only (the readiness poll is a plain HTTP GET).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

__all__ = ["ServerProcess", "ripple_process", "free_port", "child_env", "ROOT"]

ROOT = Path(__file__).resolve().parents[2]  # the folder that holds the ripple package
READY_TIMEOUT = 300.0  # seconds: loading the models on a busy 2-core machine has taken over 2 minutes


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def child_env(**extra: str) -> dict[str, str]:
    """This environment for a child ripple: the same package, offline models, no client settings."""
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
                   any_answer: bool = False, env: dict[str, str] | None = None,
                   timeout: float = READY_TIMEOUT) -> Iterator[ServerProcess]:
    """Start ``ripple --store STORE <command> --port P`` and wait until ``ready_path`` answers 200
    (with ``any_answer``: answers at all, for servers that listen only once they are ready)."""
    port = free_port()
    argv = [sys.executable, "-m", "ripple.cli", "--store", store, *command, "--port", str(port)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env or child_env(), cwd=ROOT)
    server = ServerProcess(f"http://127.0.0.1:{port}", proc, log)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}:\n{server.log_text()[-3000:]}")
            status = _status(server.url + ready_path)
            if status == 200 or (any_answer and status is not None):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"server not ready after {timeout:.0f} s:\n{server.log_text()[-3000:]}")
            time.sleep(0.2)
        yield server
    finally:
        server.stop()


def _status(url: str) -> int | None:
    """The HTTP status of a GET, or None when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (urllib.error.URLError, OSError):
        return None
