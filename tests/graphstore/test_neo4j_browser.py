"""Neo4j Browser on the local server: the launcher serves it over HTTP when RIPPLE_NEO4J_HTTP_PORT is set.

``scripts/test.sh`` starts the test server with HTTP on (port 7474 unless
RIPPLE_NEO4J_HTTP_PORT says otherwise) and passes its address as
RIPPLE_TEST_NEO4J_HTTP_URL.  The Browser itself talks Bolt over a WebSocket to
the Bolt port that the discovery document names.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request

import pytest

from tests.conftest import need

HTTP = os.environ.get("RIPPLE_TEST_NEO4J_HTTP_URL", "")
BOLT = os.environ.get("RIPPLE_TEST_NEO4J_URI", "bolt://127.0.0.1:7687")

pytestmark = pytest.mark.neo4j


def _get(path: str) -> tuple[int, str, str]:
    if not HTTP:
        need("no Neo4j HTTP connector to test (scripts/test.sh sets RIPPLE_TEST_NEO4J_HTTP_URL)")
    try:
        with urllib.request.urlopen(HTTP.rstrip("/") + path, timeout=30) as resp:
            return resp.status, resp.headers.get("Content-Type", ""), resp.read().decode("utf-8")
    except (urllib.error.URLError, OSError) as exc:
        need(f"Neo4j's HTTP connector at {HTTP} does not answer ({exc}); start the server with "
             "RIPPLE_NEO4J_HTTP_PORT set")
        raise


def test_browser_page_is_served() -> None:
    status, ctype, body = _get("/browser/")
    assert status == 200 and ctype.startswith("text/html")
    assert "<title>Neo4j Browser</title>" in body


def test_discovery_names_the_bolt_port_the_browser_connects_to() -> None:
    status, _, body = _get("/")
    doc = json.loads(body)
    assert status == 200 and doc["bolt_direct"] == BOLT.replace("neo4j://", "bolt://")
    assert doc["neo4j_edition"] == "community"
