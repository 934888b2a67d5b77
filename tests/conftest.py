"""Shared fixtures: real models loaded once per session, stores per test.

Tests use the real packaged models (MiniLM, spaCy, jieba) and, for Neo4j, the
real server that ``scripts/test.sh`` starts.  With ``RIPPLE_REQUIRE_ALL=1``
(set by CI) a missing model or server is a failure, never a skip.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

REQUIRE_ALL = os.environ.get("RIPPLE_REQUIRE_ALL") == "1"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def need(reason: str) -> None:
    """Fail in CI, skip locally: for a missing model or server."""
    if REQUIRE_ALL:
        pytest.fail(f"required in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def embedder():
    from ripple.embedding import default_embedder
    from ripple.errors import ModelNotInstalled

    try:
        return default_embedder()
    except ModelNotInstalled as exc:
        need(str(exc))


@pytest.fixture(scope="session")
def extractor():
    from extractors import default_extractor

    return default_extractor()


@pytest.fixture
def mem(tmp_path: Path, embedder, extractor) -> Iterator["object"]:
    from ripple import Memory

    m = Memory(path=str(tmp_path / "store"), embedder=embedder, extractor=extractor)
    yield m
    m.close()
