"""Run ``ripple serve`` / ``ripple mcp`` as a child process: a free loopback port, wait until ready, stop it.

What the tests and ``python -m benchmarks serve-load`` use to talk to a real
server process; the child imports the same ripple as this process.  Standard
library only (the readiness poll is a plain HTTP GET).
"""

from __future__ import annotations

import json
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
from typing import Callable, Iterator, Sequence

__all__ = ["ServerProcess", "ripple_process", "wait_ready", "free_port", "child_env", "ROOT"]

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
                   timeout: float = READY_TIMEOUT, workers: int = 1) -> Iterator[ServerProcess]:
    """Start ``ripple --store STORE <command> --port P`` and wait until ``ready_path`` answers 200
    (with ``any_answer``: answers at all, for servers that listen only once they are ready) from
    ``workers`` distinct processes (``ripple serve --workers N``: see :func:`wait_ready`)."""
    port = free_port()
    argv = [sys.executable, "-m", "ripple.cli", "--store", store, *command, "--port", str(port)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env or child_env(), cwd=ROOT)
    server = ServerProcess(f"http://127.0.0.1:{port}", proc, log)

    def exited() -> str | None:
        return None if proc.poll() is None else f"server exited with {proc.returncode}:\n{server.log_text()[-3000:]}"

    try:
        try:
            wait_ready(lambda: _answer(server.url + ready_path), workers=workers, timeout=timeout,
                       any_answer=any_answer, exited=exited)
        except TimeoutError as exc:
            raise RuntimeError(f"{exc}:\n{server.log_text()[-3000:]}") from None
        yield server
    finally:
        server.stop()


Answer = tuple[int | None, int | None]
"""One readiness probe: the HTTP status (None: nothing answered) and the ``pid`` the body names (if any)."""


def wait_ready(probe: Callable[[], Answer], *, workers: int = 1, timeout: float = READY_TIMEOUT,
               any_answer: bool = False, exited: Callable[[], str | None] = lambda: None,
               clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
               interval: float = 0.2) -> set[int]:
    """Probe until ``workers`` distinct processes answered ready; the pids that did.

    Why: ``ripple serve --workers N`` answers on one port from N processes that each load the models
    on their own, and the first ready answer says nothing of the others; a benchmark that starts
    timing then measures the other workers' start-up (issue 18: the one-client cells of the 2-worker
    column did).  Each probe must be a new connection (the kernel hands it to whichever worker
    accepts), so all of them answer sooner or later.  A ready answer without a pid counts as one
    process (a server of one).  Raises :class:`TimeoutError` (how many were ready, which pids) after
    ``timeout`` seconds, and :class:`RuntimeError` with ``exited()``'s text when the server died."""
    deadline = clock() + timeout
    ready: set[int] = set()
    waiting: set[int] = set()
    while True:
        why = exited()
        if why is not None:
            raise RuntimeError(why)
        status, pid = probe()
        if status == 200 or (any_answer and status is not None):
            ready.add(-1 if pid is None else pid)
            waiting.discard(-1 if pid is None else pid)
            if len(ready) >= workers:
                return ready
        elif pid is not None:
            waiting.add(pid)
        if clock() > deadline:
            known = sorted(p for p in ready if p >= 0)
            raise TimeoutError(
                f"{len(ready)} of {workers} server process(es) ready after {timeout:.0f} s"
                f" (ready pids {known or 'none'}; not ready: {sorted(waiting) or 'none answered'})")
        sleep(interval)


def _answer(url: str) -> Answer:
    """A GET on a new connection: its status and the ``pid`` of its JSON body (None when nothing answers)."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status), _pid(response.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), _pid(exc.read())
    except (urllib.error.URLError, OSError):
        return None, None


def _pid(body: bytes) -> int | None:
    try:
        pid = json.loads(body).get("pid")
    except (ValueError, AttributeError):
        return None
    return pid if isinstance(pid, int) else None
