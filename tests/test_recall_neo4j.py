"""The same recall on the embedded store and on Neo4j: a graph moved with export/import
answers every mode with the same hits and the same scores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from graphstore.jsonl import batches_from_lines
from graphstore.testing import GenericView
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
            # the store's combined reads (lexical route, neighbourhood) against its generic route: exactly equal
            with Memory(store=GenericView(remote.store), embedder=embedder, extractor=extractor) as generic:
                for q, mode in expected:
                    fast = remote.recall(q, user_id="u1", k=5, mode=mode, touch=False)
                    slow = generic.recall(q, user_id="u1", k=5, mode=mode, touch=False)
                    assert [(h.memory.id, h.score, h.via) for h in fast.hits] == [
                        (h.memory.id, h.score, h.via) for h in slow.hits], (q, mode)
        # the CLI against a routing URI (what a cluster user types) gives the same hits
        monkeypatch.setenv("RIPPLE_NEO4J_PASSWORD", PASSWORD)
        routing = URI.replace("bolt://", "neo4j://")
        capsys.readouterr()
        assert main(["--store", routing, "recall", QUERIES[0], "--user", "u1", "-k", "5", "--json"]) == 0
        got_ids = [h["memory"]["id"] for h in json.loads(capsys.readouterr().out)["hits"]]
        assert got_ids == [h.memory.id for h in expected[(QUERIES[0], "ripple")].hits]
    finally:
        wipe(driver)


def test_async_memory_drives_the_native_async_driver(driver: Any, embedder, extractor) -> None:  # noqa: F811
    """AsyncMemory on a Neo4j URI talks through ``AsyncNeo4jStore`` (no worker thread per store call)
    and gives what the sync class gives on the same server: writes, recall, update, forget, export."""
    import anyio

    from graphstore.neo4j import AsyncNeo4jStore
    from ripple import AsyncMemory
    from ripple.errors import MemoryNotFound

    wipe(driver)
    settings = RippleSettings(neo4j_password=PASSWORD)
    q = QUERIES[0]

    async def main() -> tuple[list[str], list[str], int, str]:
        async with AsyncMemory(store=URI, settings=settings, embedder=embedder, extractor=extractor) as amem:
            assert isinstance(amem.store, AsyncNeo4jStore)
            await amem.add_many([{"text": t, "user_id": "u1", "session_id": s} for t, s in TWO_HOP])
            got = await amem.recall(q, user_id="u1", k=5, touch=False)
            first = got.hits[0].memory
            changed = await amem.update(first.id, text=first.text + " Confirmed by Dana.")
            await amem.forget(got.hits[1].memory.id)
            after = await amem.recall(q, user_id="u1", k=5, touch=False)
            unknown = await amem.recall(q, user_id="nobody", k=5)
            assert unknown.hits == () and not unknown.user_known
            with pytest.raises(MemoryNotFound):
                await amem.get("m_missing")
            exported = [r async for r in amem.export(user_id="u1")]
            return got.texts(), [h.memory.id for h in after.hits], len(exported), changed.text

    try:
        texts, after_ids, n_exported, changed = anyio.run(main)
        assert changed.endswith("Confirmed by Dana.")
        with Memory(store=URI, settings=settings, embedder=embedder, extractor=extractor) as mem:
            assert len(mem.get_all(user_id="u1")) == len(TWO_HOP)
            sync_after = mem.recall(q, user_id="u1", k=5, touch=False)
            assert [h.memory.id for h in sync_after.hits] == after_ids
            forgotten = [m for m in mem.get_all(user_id="u1") if m.status == "invalidated"]
            assert len(forgotten) == 1 and forgotten[0].id not in after_ids
            assert n_exported == sum(1 for _ in mem.export(user_id="u1"))
        assert len(texts) == 5
    finally:
        wipe(driver)


ZH_MEMORIES = [("我们把北风公司的品牌重塑叫做蓝鸟项目。", "s1"), ("蓝鸟项目必须在六月十四日之前上线。", "s1"),
               ("打印机经销商在乌得勒支。", "s2"), ("我妹妹下周从拉各斯来看我。", "s3")]
ZH_QUERIES = ["蓝鸟项目什么时候上线？", "打印机经销商在哪里？"]


def test_recall_paths_agree(tmp_path: Path, driver: Any, embedder, extractor) -> None:  # noqa: F811
    """A recall's first read answers the user check, the multilingual check and (Neo4j) the near cache's
    revision in one request, and the async client runs its dense search beside the query encoder as the
    sync one does: every path gives the embedded store's hits and scores, English and Chinese users."""
    import anyio

    from ripple import AsyncMemory

    wipe(driver)
    items = ([{"text": t, "user_id": "u1", "session_id": s} for t, s in TWO_HOP]
             + [{"text": t, "user_id": "用户甲", "session_id": s} for t, s in ZH_MEMORIES])
    asks = [("u1", q) for q in QUERIES] + [("用户甲", q) for q in ZH_QUERIES]
    modes = ("ripple", "flat")

    def key(res: Any) -> list[tuple[str, float]]:
        return [(h.memory.id, round(h.score, 4)) for h in res.hits]

    with Memory(path=str(tmp_path / "s"), embedder=embedder, extractor=extractor) as local:
        local.add_many(items)
        lines = [json_line for u in ("u1", "用户甲") for json_line in _export_lines(local, u)]
        want = {(u, q, m): key(local.recall(q, user_id=u, k=5, mode=m, touch=False)) for u, q in asks for m in modes}
    settings = RippleSettings(neo4j_password=PASSWORD)
    try:
        with Memory(store=URI, settings=settings, embedder=embedder, extractor=extractor) as remote:
            for batch in batches_from_lines(lines):
                remote.store.write(batch)
            for _ in range(3):  # (the near cache loads a user at its second search at one revision)
                got = {(u, q, m): key(remote.recall(q, user_id=u, k=5, mode=m, touch=False))
                       for u, q in asks for m in modes}
                assert got == want

        async def run_async() -> dict[tuple[str, str, str], list[tuple[str, float]]]:
            async with AsyncMemory(store=URI, settings=settings, embedder=embedder, extractor=extractor) as amem:
                out = {}
                for _ in range(3):
                    out = {(u, q, m): key(await amem.recall(q, user_id=u, k=5, mode=m, touch=False))
                           for u, q in asks for m in modes}
                    assert out == want
                return out

        assert anyio.run(run_async) == want
    finally:
        wipe(driver)


def _export_lines(mem: Memory, user: str) -> list[str]:
    import json

    return [json.dumps(r, ensure_ascii=False) for r in mem.export(user_id=user)]
