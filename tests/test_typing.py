"""The type checker runs in the test command: store requests are held against the protocol, the
layers' signatures against each other (configuration in pyproject.toml, ``[tool.mypy]``)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_is_clean_over_the_engine_the_stores_and_the_extractors() -> None:
    from mypy import api

    out, err, status = api.run(["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(ROOT / ".mypy_cache"),
                                *(str(ROOT / p) for p in ("ripple", "graphstore", "extractors"))])
    assert status == 0, out + err
