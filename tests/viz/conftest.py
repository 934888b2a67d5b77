"""Headless Chromium for the graph page tests, and the folder their pictures are kept in.

``scripts/test.sh`` runs ``scripts/chromium.sh ensure`` first (it installs Debian's chromium and a
CJK font when they are missing).  A missing or broken browser fails in CI (``RIPPLE_REQUIRE_ALL=1``).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import need

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Rendered:
    state: str
    nodes: int
    edges: int
    error: str
    dom: str


class Chromium:
    """Loads a page file headless, the way ``--dump-dom`` and ``--screenshot`` see it after the layout."""

    def __init__(self, binary: str) -> None:
        self.binary = binary

    def _run(self, page: Path, *flags: str) -> subprocess.CompletedProcess[str]:
        with tempfile.TemporaryDirectory(prefix="ripple-chromium-") as profile:
            cmd = [self.binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                   "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
                   f"--user-data-dir={profile}", "--window-size=1500,950", "--virtual-time-budget=60000",
                   *flags, page.resolve().as_uri()]
            return subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)

    def render(self, page: Path) -> Rendered:
        proc = self._run(page, "--dump-dom")
        tag = re.search(r'<output id="ripple-status"[^>]*>', proc.stdout)
        assert tag, f"no status element in the dumped DOM (exit {proc.returncode}): {proc.stderr[-2000:]}"
        attrs = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', tag.group(0)))
        return Rendered(state=attrs.get("state", ""), nodes=int(attrs.get("nodes", -1)),
                        edges=int(attrs.get("edges", -1)), error=attrs.get("error", ""), dom=proc.stdout)

    def screenshot(self, page: Path, png: Path) -> Path:
        proc = self._run(page, f"--screenshot={png.resolve()}")
        assert png.exists() and png.stat().st_size > 0, f"no screenshot (exit {proc.returncode}): {proc.stderr[-2000:]}"
        return png


@pytest.fixture(scope="session")
def chromium() -> Chromium:
    binary = os.environ.get("RIPPLE_CHROMIUM") or subprocess.run(
        [str(ROOT / "scripts" / "chromium.sh"), "path"], capture_output=True, text=True, check=False).stdout.strip()
    if not binary:
        need("headless Chromium is not installed (run scripts/chromium.sh ensure)")
    try:
        version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        need(f"headless Chromium does not start: {exc}")
    if version.returncode != 0:
        need(f"headless Chromium does not start: {version.stderr.strip()[-500:]}")
    return Chromium(binary)


@pytest.fixture(scope="session")
def output_dir() -> Path:
    """Where the pages and screenshots are kept for a person to look at (git-ignored)."""
    out = Path(os.environ.get("RIPPLE_TEST_OUTPUT", ROOT / "test-output")) / "viz"
    out.mkdir(parents=True, exist_ok=True)
    return out
