"""Fixtures for the agent layer: one ``Memory`` per store (embedded SQLite and the real Neo4j).

``store_mem`` is parametrised over both stores, so every test that takes it
is the conformance of the agent layer on both: the layer is a client of the
public API, and these tests prove that it behaves the same on each backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.conftest import need


def _neo4j_driver() -> Any:
    import neo4j

    from tests.graphstore.test_neo4j import PASSWORD, URI

    drv = neo4j.GraphDatabase.driver(URI, auth=("neo4j", PASSWORD), connection_timeout=5,
                                     notifications_min_severity="OFF")
    try:
        drv.verify_connectivity()
    except Exception as exc:  # noqa: BLE001
        drv.close()
        need(f"no Neo4j server at {URI} ({type(exc).__name__}: {exc}); run scripts/neo4j.sh start")
    return drv


@pytest.fixture(scope="session")
def neo4j_driver() -> Iterator[Any]:
    drv = _neo4j_driver()
    yield drv
    drv.close()


def open_memory(kind: str, tmp_path: Path, embedder: Any, extractor: Any, *, asynchronous: bool = False) -> Any:
    """A Memory (or AsyncMemory) on the store ``kind`` ("sqlite" or "neo4j"), for the test's data."""
    from ripple import AsyncMemory, Memory, RippleSettings

    cls = AsyncMemory if asynchronous else Memory
    if kind == "sqlite":
        return cls(path=str(tmp_path / "store"), embedder=embedder, extractor=extractor)
    from tests.graphstore.test_neo4j import PASSWORD, URI

    return cls(store=URI, settings=RippleSettings(neo4j_password=PASSWORD), embedder=embedder, extractor=extractor)


@pytest.fixture(params=["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def store_kind(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "neo4j":
        from tests.graphstore.test_neo4j import wipe

        drv = request.getfixturevalue("neo4j_driver")
        wipe(drv)
        yield "neo4j"
        wipe(drv)
    else:
        yield "sqlite"


@pytest.fixture
def store_mem(store_kind: str, tmp_path: Path, embedder: Any, extractor: Any) -> Iterator[Any]:
    mem = open_memory(store_kind, tmp_path, embedder, extractor)
    yield mem
    mem.close()
