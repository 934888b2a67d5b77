"""Shared fixtures: real models loaded once per session, stores per test.

Tests use the real packaged models (MiniLM, spaCy, jieba) and, for Neo4j, the
real server that ``scripts/test.sh`` starts.  With ``RIPPLE_REQUIRE_ALL=1``
(set by CI) a missing model or server is a failure, never a skip.

``scripts/test.sh`` runs the suite in parallel worker processes (pytest-xdist).  Every test
that uses the Neo4j servers wipes them, so each worker has servers of its own: worker ``gwN``
(N >= 1) takes ``RIPPLE_TEST_NEO4J_URI_GWN`` (and ``_URI2_GWN``, ``_HTTP_URL_GWN``) in place of
``RIPPLE_TEST_NEO4J_URI`` (and so on), which ``gw0`` and a run without xdist use.  This is set
here, before any test module reads it.  A worker without servers of its own fails the first
test that would wipe a server (:func:`check_own_server`), rather than racing another worker.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

REQUIRE_ALL = os.environ.get("RIPPLE_REQUIRE_ALL") == "1"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


_NEO4J_VARIABLES = ("RIPPLE_TEST_NEO4J_URI", "RIPPLE_TEST_NEO4J_URI2", "RIPPLE_TEST_NEO4J_HTTP_URL")
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")


def _take_worker_servers() -> bool:
    """Point this worker's RIPPLE_TEST_NEO4J_* at its own servers; False if it has none of its own."""
    if WORKER in ("", "gw0"):
        return True
    own = {name: os.environ.get(f"{name}_{WORKER.upper()}") for name in _NEO4J_VARIABLES}
    for name, value in own.items():
        if value:
            os.environ[name] = value
        else:
            os.environ.pop(name, None)
    return bool(own["RIPPLE_TEST_NEO4J_URI"])


OWN_SERVERS = _take_worker_servers()


def check_own_server() -> None:
    """Fail a test that is about to wipe a Neo4j server that another xdist worker also uses."""
    if not OWN_SERVERS:
        pytest.fail(f"xdist worker {WORKER} has no Neo4j servers of its own (RIPPLE_TEST_NEO4J_URI_{WORKER.upper()}"
                    f" is not set), and sharing another worker's would make both flaky: run the suite with"
                    f" scripts/test.sh (RIPPLE_TEST_WORKERS=N), or -m 'not neo4j', or without -n", pytrace=False)


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
