"""``ripple chat`` driven through a pipe, and the README's agent-loop examples run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_chat_over_a_pipe(tmp_path: Path) -> None:
    lines = "\n".join([
        "I'm allergic to peanuts and our offsite budget is capped at 60k.",
        "/pin The user is allergic to peanuts.",
        "We decided to hold the offsite in Lisbon.",
        "The plan costs 80k in total.",
        "/context",
        "/jobs",
        "/quit",
    ]) + "\n"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RIPPLE_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1"}
    env.pop("RIPPLE_STORE", None)
    traces = tmp_path / "traces.jsonl"
    out = subprocess.run([sys.executable, "-m", "ripple.cli", "chat", "--user", "u1", "--window", "2000",
                          "--trace-out", str(traces)], input=lines, capture_output=True, text=True, env=env,
                         timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "[turn 1] window 1 turns" in text and "ledger: pins" in text
    assert "pinned pin_" in text and "alert (conflict" in text and "60k" in text
    assert "Pinned facts" in text and "background job(s), 0 failed" in text
    timeline = subprocess.run([sys.executable, "-m", "ripple.cli", "trace", str(traces), "--name", "session.add"],
                              capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)
    assert timeline.returncode == 0 and "session.add" in timeline.stdout and "store.add" in timeline.stdout


def test_readme_agent_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- agent-example:begin -->")[1].split("<!-- agent-example:end -->")[0]
    examples = re.findall(r"```python\n(.*?)```", block, re.DOTALL)
    assert len(examples) == 2 and len(examples[0].splitlines()) <= 20
    monkeypatch.chdir(tmp_path)
    for code in examples:
        exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})
    out = capsys.readouterr().out
    assert "reminder:" in out and "60k" in out and "total" in out
