"""Calibrated relevance: the pure parts against hand computations, then recall with the real models
(an unrelated question falls below the floor in English and Chinese, a related one does not)."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import pytest

from extractors.text import name_tokens

from ripple.recall.activation import Edge
from ripple.recall.candidates import Candidate, Seeded
from ripple.recall.config import RelevanceConfig
from ripple.recall.relevance import FEATURES, QuerySignals, assign_relevance, features, query_signals, relevance
from ripple.recall.scoring import term_coverage


# -- pure parts -------------------------------------------------------------------------------------
def test_term_coverage_weighs_words_by_idf_and_counts_unknown_words() -> None:
    rows = [("tea", "d1", 1, 4), ("rotterdam", "d1", 1, 4), ("tea", "d2", 1, 4)]
    df = {"tea": 2, "rotterdam": 1}  # "peru" is in no memory
    cov, known = term_coverage(["tea", "rotterdam", "peru", "tea"], rows, n_docs=10, df=df, cap=5)
    idf = {t: math.log(1 + (10 - n + 0.5) / (n + 0.5)) for t, n in {"tea": 2, "rotterdam": 1, "peru": 0}.items()}
    total = sum(idf.values())
    assert cov == pytest.approx({"d1": (idf["tea"] + idf["rotterdam"]) / total, "d2": idf["tea"] / total})
    assert known == pytest.approx((idf["tea"] + idf["rotterdam"]) / total)
    # a term in more memories than the cap says nothing: it is left out of both shares
    cov, known = term_coverage(["tea", "rotterdam"], rows, n_docs=10, df=df, cap=1)
    assert cov == {"d1": 1.0} and known == 1.0
    assert term_coverage([], [], n_docs=0, df={}, cap=1) == ({}, 1.0)


def test_name_tokens_english_and_chinese() -> None:
    assert name_tokens("What did Nate cook for Joanna's party in New York?") == ["nate", "joanna", "new", "york"]
    assert name_tokens("Where did Maria go in December 2023?") == ["maria"]  # month names are dates
    assert name_tokens("What is the best way to learn?") == []
    assert "王芳" in name_tokens("王芳的丈夫是干什么工作的？")
    assert name_tokens("预算是多少？") == []


def test_relevance_is_the_logistic_model_of_the_features() -> None:
    cfg = RelevanceConfig(late=1.0, dense=2.0, coverage=0.0, multilingual=4.0, known=0.0, names_known=0.0,
                          top_late=0.0, top_dense=0.0, top_coverage=0.0, cjk=-1.0, top_multilingual=1.0,
                          multilingual_route=-2.0, bias=-1.0)
    x = (0.5, 0.25, 0.9, 0.8, 1.0, 1.0, 0.5, 0.5, 0.9, 1.0, 0.9, 1.0)
    assert len(x) == len(FEATURES)
    assert relevance(x, cfg) == pytest.approx(1 / (1 + math.exp(-(0.5 + 0.5 + 3.2 - 1.0 + 0.9 - 2.0 - 1.0))))
    assert 0.0 < relevance((-1e6,) * len(FEATURES), RelevanceConfig(late=1.0)) < 1e-20  # no overflow


def test_a_spread_hit_is_as_relevant_as_its_source_times_its_activation() -> None:
    seed = Candidate("m_seed", late=0.9, dense=0.8, coverage=1.0)
    near = Candidate("m_near", late=0.1, dense=0.1, via="session", channels={"session": 0.5},
                     path=[Edge("m_seed", "m_near", 1.0, type="NEXT")])
    pool = {c.id: c for c in (seed, near)}
    signals = query_signals(_query("en"), Seeded(pool, final=False, known=1.0, names_known=1.0))
    assert signals == QuerySignals(known=1.0, names_known=1.0, top_late=0.9, top_dense=0.8, top_coverage=1.0, cjk=0.0)
    cfg = RelevanceConfig(late=4.0, dense=4.0, coverage=0.0, known=0.0, names_known=0.0, top_late=0.0,
                          top_dense=0.0, top_coverage=0.0, cjk=0.0, bias=-4.0)
    assign_relevance([seed, near], pool, signals, cfg)
    own_near = relevance(features(near, signals), cfg)
    assert seed.relevance == pytest.approx(relevance(features(seed, signals), cfg))
    assert near.relevance == pytest.approx(max(own_near, seed.relevance * 0.5))
    assert near.relevance > own_near


def _query(language: str) -> Any:
    from ripple.recall.query import QueryInput

    return QueryInput(text="q", user_id="u", k=5, mode="ripple", now=0.0, terms=[], vector=None, tokens=None,
                      token_dim=0, entity_keys=[], language=language)


# -- recall with the real models ------------------------------------------------------------------
WORK = {
    "en": ["The Q3 roadmap review with the platform team is on Thursday.",
           "Dana wants the vendor contract renewed before March.",
           "Our sprint velocity dropped because two engineers were on call.",
           "The API latency target is 60 ms at p95.",
           "Dana asked me to draft the hiring plan for the data team."],
    "zh": ["周四和平台组开第三季度路线图评审会。", "王总希望三月前续签供应商合同。", "这周有两个工程师值班，迭代速度下降了。",
           "接口延迟的目标是p95不超过60毫秒。", "王总让我起草数据团队的招聘计划。"],
}
QUESTIONS = {  # (unrelated, related, the same about someone the user mentioned / never mentioned)
    "en": ("What is the capital of Peru?", "When is the roadmap review?",
           "What did Dana say about the hiring plan?", "What did Priya say about the hiring plan?"),
    "zh": ("秘鲁的首都是哪里？", "路线图评审是哪天？", "王总对招聘计划说了什么？", "李娜对招聘计划说了什么？"),
}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_unrelated_questions_fall_below_the_floor_and_related_ones_do_not(mem: Any, lang: str) -> None:
    mem.add_many([{"text": t, "user_id": "u1"} for t in WORK[lang]])
    floor = RelevanceConfig().floor
    unrelated, related, known_name, stranger = QUESTIONS[lang]
    res = mem.recall(unrelated, user_id="u1", k=5)
    assert res.hits and max(h.relevance for h in res.hits) < floor
    assert mem.recall(unrelated, user_id="u1", k=5, min_relevance=floor).hits == ()
    # a question about someone the user never mentioned is less likely about these memories
    best = {q: max(h.relevance for h in mem.recall(q, user_id="u1", k=5).hits) for q in (known_name, stranger)}
    assert best[stranger] < best[known_name]
    res = mem.recall(related, user_id="u1", k=5)
    assert res.hits[0].relevance >= floor and ("roadmap" in res.hits[0].memory.text or "路线图" in res.hits[0].memory.text)
    kept = mem.recall(related, user_id="u1", k=5, min_relevance=floor).hits
    assert kept and all(h.relevance >= floor for h in kept)
    # the signals are in the trace, for whoever wants to see why
    stage = next(s for s in res.trace.stages if s.name == "relevance")
    assert set(stage.detail) == set(QuerySignals.__dataclass_fields__)


def test_min_relevance_is_validated_in_both_twins(tmp_path: Path, embedder: Any, extractor: Any) -> None:
    from ripple import AsyncMemory, InvalidInput, Memory

    with Memory(path=str(tmp_path / "s"), embedder=embedder, extractor=extractor) as m:
        m.add("Anna lives in Lisbon.", user_id="u1")
        for bad in (-0.1, 1.5, "high", True):
            with pytest.raises(InvalidInput, match="min_relevance"):
                m.recall("Where does Anna live?", user_id="u1", min_relevance=bad)
        assert m.recall("Where does Anna live?", user_id="u1", min_relevance=0.0).hits

    async def main() -> None:
        async with AsyncMemory(path=str(tmp_path / "s"), embedder=embedder, extractor=extractor) as am:
            with pytest.raises(InvalidInput, match="min_relevance"):
                await am.recall("Where does Anna live?", user_id="u1", min_relevance=2)
            sync_hits = (await am.recall("Where does Anna live?", user_id="u1")).hits
            assert sync_hits and 0.0 <= sync_hits[0].relevance <= 1.0

    asyncio.run(main())
