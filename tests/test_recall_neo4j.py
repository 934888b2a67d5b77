"""The same recall on the embedded store and on Neo4j: a graph moved with export/import
answers every mode with the same hits and the same scores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from graphstore.jsonl import batches_from_lines
from ripple import Memory, RippleSettings
from tests.graphstore.test_neo4j import PASSWORD, URI, driver, wipe  # noqa: F401  (fixture)
from tests.test_api import TWO_HOP, _add_two_hop

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]

QUERIES = [
    "When is the deadline for the Northwind work?",
    "printer dealer",
    "Who is visiting from Lagos?",
]


def test_recall_matches_between_backends(
    tmp_path: Path, driver: Any, embedder, extractor, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]  # noqa: F811
) -> None:
    import json

    from ripple.cli.__main__ import main

    wipe(driver)
    with Memory(path=str(tmp_path / "s"), embedder=embedder, extractor=extractor) as local:
        _add_two_hop(local)
        lines = [json.dumps(r) for r in local.export(user_id="u1")]
        expected = {
            (q, mode): local.recall(q, user_id="u1", k=5, mode=mode, touch=False)
            for q in QUERIES for mode in ("ripple", "flat", "bm25", "hybrid")
        }
    settings = RippleSettings(neo4j_password=PASSWORD)
    try:
        with Memory(store=URI, settings=settings, embedder=embedder, extractor=extractor) as remote:
            for batch in batches_from_lines(lines):
                remote.store.write(batch)
            assert len(remote.get_all(user_id="u1")) == len(TWO_HOP)
            for (q, mode), want in expected.items():
                got = remote.recall(q, user_id="u1", k=5, mode=mode, touch=False)
                assert [h.memory.id for h in got.hits] == [h.memory.id for h in want.hits], (q, mode)
                for a, b in zip(got.hits, want.hits):
                    assert a.score == pytest.approx(b.score, abs=1e-4), (q, mode)
                    assert a.via == b.via and [s.target for s in a.path] == [s.target for s in b.path]
        # the CLI against a routing URI (what a cluster user types) gives the same hits
        monkeypatch.setenv("RIPPLE_NEO4J_PASSWORD", PASSWORD)
        routing = URI.replace("bolt://", "neo4j://")
        capsys.readouterr()
        assert main(["--store", routing, "recall", QUERIES[0], "--user", "u1", "-k", "5", "--json"]) == 0
        got_ids = [h["memory"]["id"] for h in json.loads(capsys.readouterr().out)["hits"]]
        assert got_ids == [h.memory.id for h in expected[(QUERIES[0], "ripple")].hits]
    finally:
        wipe(driver)
