"""Shared fixtures: real models loaded once per session, stores per test.

Tests use the real packaged models (MiniLM, spaCy, jieba) and, for Neo4j, the
real server that ``scripts/test.sh`` starts.  With ``RIPPLE_REQUIRE_ALL=1``
(set by CI) a missing model or server is a failure, never a skip.

``scripts/test.sh`` runs the suite in parallel worker processes (pytest-xdist, ``--dist
loadgroup``).  Every test that uses the Neo4j servers wipes them, so those tests (the ones marked
``neo4j``) form one xdist group: one worker runs them one after the other on the one set of
servers, while the other workers run the rest (a test with a server of its own, the outage test of
tests/faults, names a group of its own).  A test that reaches for a server without the
marker fails (:func:`check_own_server`) rather than racing the worker that owns the servers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

REQUIRE_ALL = os.environ.get("RIPPLE_REQUIRE_ALL") == "1"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
NEO4J_GROUP = "neo4j"  # the xdist group of every test marked neo4j
_runs_neo4j_group: list[bool] = []  # [True] once this process has started a test of the Neo4j group


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> Iterator[None]:
    """Put every Neo4j test in one xdist group, so that one worker at a time uses the servers."""
    xdist = config.pluginmanager.hasplugin("xdist")
    if xdist:
        for item in items:  # (a test with a server of its own names a group of its own)
            if item.get_closest_marker("neo4j") is not None and item.get_closest_marker("xdist_group") is None:
                item.add_marker(pytest.mark.xdist_group(NEO4J_GROUP))
    result = yield
    if xdist:
        _adopt_group_ids(items)
    return result


def _adopt_group_ids(items: list[pytest.Item]) -> None:
    """pytest-xdist 3.8 writes a test's group into ``item._nodeid`` ("...@neo4j"), which pytest 9 no
    longer reads (its id is ``item._id``): without this the groups silently do nothing and two
    workers wipe one server under each other's tests."""
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # pytest 8 reads _nodeid itself
        return
    for item in items:
        grouped = getattr(item, "_nodeid", None)
        if isinstance(grouped, str) and grouped != item.nodeid:
            item._id = NodeId.parse(grouped)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    group = item.get_closest_marker("xdist_group")
    if item.get_closest_marker("neo4j") is not None and (group is None or group.args[:1] == (NEO4J_GROUP,)):
        _runs_neo4j_group[:] = [True]


def check_own_server() -> None:
    """Fail a test that wipes a Neo4j server in an xdist worker that does not run the Neo4j group:
    another worker may be using the server at that moment.  (The group's worker may wipe in the
    teardown of a later unmarked test: a fixture shared by a module is finished there.)"""
    if WORKER and not _runs_neo4j_group:
        pytest.fail(f"xdist worker {WORKER} uses the Neo4j servers in a test not marked neo4j: under xdist only"
                    f" the tests marked neo4j run, one after the other, on the servers (tests/conftest.py)",
                    pytrace=False)


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
