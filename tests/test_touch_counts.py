"""Recall touches, counted after close: whether a store writes them at once (SQLite) or beside the
caller (Neo4j: graphstore.touches), a recall's hits are counted exactly once per recall, and what is
pending when a client closes is written by ``close()``.  English and Chinese memories and users."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from ripple import AsyncMemory, Memory, RippleSettings
from tests.graphstore.test_neo4j import driver  # noqa: F401 - fixture (the Neo4j cases)
from tests.test_api import TWO_HOP

pytestmark = pytest.mark.slow

ZH = [("我们把北风公司的品牌重塑叫做蓝鸟项目。", "s1"), ("蓝鸟项目必须在六月十四日之前上线。", "s1"),
      ("打印机经销商在乌得勒支。", "s2")]
QUERIES = [("u1", "When is the deadline for the Northwind work?"), ("u1", "printer dealer"),
           ("用户甲", "蓝鸟项目什么时候上线？"), ("用户甲", "打印机经销商在哪里？")]
ROUNDS = 3


def _items() -> list[dict[str, Any]]:
    rows = [("u1", t, s) for t, s in TWO_HOP] + [("用户甲", t, s) for t, s in ZH]
    return [{"text": t, "user_id": u, "session_id": s, "at": datetime(2026, 3, 1 + i)} for i, (u, t, s) in enumerate(rows)]


def _open(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> dict[str, Any]:
    if backend == "sqlite":
        return {"path": str(tmp_path / "store")}
    from tests.graphstore.test_neo4j import PASSWORD, URI, wipe

    wipe(request.getfixturevalue("driver"))
    request.addfinalizer(lambda: wipe(request.getfixturevalue("driver")))
    return {"store": URI, "settings": RippleSettings(neo4j_password=PASSWORD)}


def _counts(where: dict[str, Any], embedder: Any, extractor: Any) -> dict[str, int]:
    with Memory(**where, embedder=embedder, extractor=extractor) as mem:
        return {m.id: m.access_count for u in ("u1", "用户甲") for m in mem.get_all(user_id=u)}


BACKENDS = ["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_sync_recall_touches_are_exact_after_close(backend: str, tmp_path: Path, request: pytest.FixtureRequest,
                                                   embedder: Any, extractor: Any) -> None:
    where = _open(backend, tmp_path, request)
    hits: Counter[str] = Counter()
    with Memory(**where, embedder=embedder, extractor=extractor) as mem:
        mem.add_many(_items())
        for _ in range(ROUNDS):
            for user, q in QUERIES:
                hits.update(h.memory.id for h in mem.recall(q, user_id=user, k=4).hits)
        # this process reads its own touches at once
        first = next(iter(hits))
        assert mem.get(first).access_count == hits[first]
        for user, q in QUERIES:  # (one more round, left pending at close)
            hits.update(h.memory.id for h in mem.recall(q, user_id=user, k=4).hits)
    counts = _counts(where, embedder, extractor)
    assert {i: n for i, n in counts.items() if n} == dict(hits)


@pytest.mark.parametrize("backend", BACKENDS)
def test_async_recall_touches_are_exact_after_close(backend: str, tmp_path: Path, request: pytest.FixtureRequest,
                                                    embedder: Any, extractor: Any) -> None:
    import anyio

    where = _open(backend, tmp_path, request)
    with Memory(**where, embedder=embedder, extractor=extractor) as mem:
        mem.add_many(_items())

    async def main() -> Counter[str]:
        hits: Counter[str] = Counter()
        async with AsyncMemory(**where, embedder=embedder, extractor=extractor) as amem:
            for _ in range(ROUNDS):
                for user, q in QUERIES:
                    hits.update(h.memory.id for h in (await amem.recall(q, user_id=user, k=4)).hits)
        return hits

    hits = anyio.run(main)
    counts = _counts(where, embedder, extractor)
    assert {i: n for i, n in counts.items() if n} == dict(hits)
