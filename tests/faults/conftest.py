"""Every fault test gets a hang guard (pytest-timeout): these tests wait on real processes, signals and
servers, and a bug that makes one of them wait forever must fail the run, not stall CI.

The guard is far above the slowest run seen on the shared, loaded 2-core machine (the Neo4j restart
test sets its own, longer one); the tests themselves wait for events (a line from a child process,
a server's readiness), never for fixed sleeps that a slow machine could outrun.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HANG_GUARD_S = 600
_HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.fspath)).parents and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(HANG_GUARD_S))
