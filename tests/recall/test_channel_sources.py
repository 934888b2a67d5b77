"""What a spreading channel's sources spread: their rank-normalised score, or that weighed by their own
evidence (calibrated relevance), so that a pool of weak seeds does not spread as strongly as a sure one,
while a lone best seed keeps spreading in a store too small for the calibrator to be sure of anything."""

from __future__ import annotations

import pytest

from ripple.recall.candidates import Candidate
from ripple.recall.channels import ChannelContext
from ripple.recall.config import RecallConfig, RelevanceConfig, SessionChannelConfig
from ripple.recall.query import QueryInput
from ripple.recall.relevance import QuerySignals, features, relevance

# relevance = sigmoid(8 * dense - 4): a seed with cosine .8 is likely relevant (.92), one with .3 not (.12)
REL = RelevanceConfig(late=0.0, dense=8.0, coverage=0.0, multilingual=0.0, known=0.0, names_known=0.0, top_late=0.0,
                      top_dense=0.0, top_coverage=0.0, cjk=0.0, top_multilingual=0.0, multilingual_route=0.0,
                      bias=-4.0, floor=0.5)


def _query(language: str) -> QueryInput:
    return QueryInput(text="q", user_id="u", k=5, mode="ripple", now=0.0, terms=[], vector=None, tokens=None,
                      token_dim=0, entity_keys=[], language=language)


def _ctx(language: str) -> ChannelContext:
    # "m_sure" is close to the query; "m_weak" ranks almost as high after min-max but is far from it;
    # "m_low" is below source_min
    cands = {"m_sure": Candidate("m_sure", dense=0.8), "m_weak": Candidate("m_weak", dense=0.3),
             "m_low": Candidate("m_low", dense=0.7)}
    seeds = {"m_sure": 1.0, "m_weak": 0.95, "m_low": 0.4}
    return ChannelContext(_query(language), seeds, ["m_sure", "m_weak", "m_low"], None, RecallConfig(relevance=REL),
                          cands, QuerySignals())


@pytest.mark.parametrize("language", ["en", "zh"])
def test_sources_spread_their_rank_or_their_own_evidence(language: str) -> None:
    ctx = _ctx(language)
    rel = {i: relevance(features(ctx.cands[i], ctx.signals), REL) for i in ("m_sure", "m_weak")}
    assert rel["m_sure"] == pytest.approx(1 / (1 + 2.718281828 ** -2.4), rel=1e-6) and rel["m_weak"] < 0.5
    cfg = SessionChannelConfig(source_strength="rank")
    assert ctx.sources(cfg) == {"m_sure": 1.0, "m_weak": 0.95}  # the weak seed spreads almost as much
    by = {mode: ctx.sources(cfg.model_copy(update={"source_strength": mode}))
          for mode in ("relevance", "sure", "floor", "first", "relative", "lead")}
    assert by["relevance"] == pytest.approx(rel)
    assert by["sure"] == pytest.approx({"m_sure": rel["m_sure"], "m_weak": 0.95 * rel["m_weak"]})
    assert by["floor"] == {"m_sure": 1.0}  # the weak seed is below the calibrated floor: it does not spread
    assert by["first"] == pytest.approx({"m_sure": 1.0, "m_weak": 0.95 * rel["m_weak"]})
    # relative evidence: the most relevant source spreads its rank, the others as much less as their evidence is
    ratio = rel["m_weak"] / rel["m_sure"]
    assert by["relative"] == pytest.approx({"m_sure": 1.0, "m_weak": 0.95 * ratio})
    assert by["lead"] == pytest.approx({"m_sure": 1.0, "m_weak": 0.95 * ratio})
    assert ctx.relevance("m_unknown") == 0.0
    # without the seeds' signals there is no evidence to tell them apart by: the default spreads their rank
    blind = ChannelContext(ctx.query, ctx.seeds, ctx.ranked, None, ctx.config)
    assert blind.sources(SessionChannelConfig()) == {"m_sure": 1.0, "m_weak": 0.95}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_best_seed_the_calibrator_doubts_still_spreads_fully_by_default(language: str) -> None:
    """In a store of five memories the calibrator (fitted on conversations of hundreds of turns) rated the
    best seed .118; spreading it .118 lost the neighbour it should bring (the server test's explained path)."""
    cands = {"m_best": Candidate("m_best", dense=0.25), "m_next": Candidate("m_next", dense=0.1)}
    seeds = {"m_best": 1.0, "m_next": 0.7}
    ctx = ChannelContext(_query(language), seeds, ["m_best", "m_next"], None, RecallConfig(relevance=REL), cands,
                         QuerySignals())
    rel = {i: ctx.relevance(i) for i in cands}
    assert rel["m_best"] < 0.15 and rel["m_next"] < rel["m_best"]
    got = ctx.sources(SessionChannelConfig())
    assert got["m_best"] == 1.0  # not .12: the query-wide doubt does not stop the best seed spreading
    assert got["m_next"] == pytest.approx(0.7 * rel["m_next"] / rel["m_best"])  # still told apart by evidence
    # the odds ratio of two seeds of one query depends on their own inputs only, not on the bias (the query's part)
    shifted = RecallConfig(relevance=REL.model_copy(update={"bias": -6.0}))
    low = ChannelContext(ctx.query, seeds, ctx.ranked, None, shifted, cands, QuerySignals()).sources(SessionChannelConfig())
    assert low["m_best"] == 1.0 and low["m_next"] == pytest.approx(got["m_next"], rel=0.1)


def test_a_lone_seed_in_a_tiny_store_brings_its_neighbour(mem) -> None:
    """End to end, the server test's five-memory store: the answer's neighbouring turn arrives by the
    session channel with its explained path, though the calibrator rates the seed low there."""
    uid = "tiny"
    budget = mem.add("Our budget is 50,000 CNY.", user_id=uid, session_id="s1")
    dana = mem.add("Dana Whitfield runs procurement at Northwind Traders.", user_id=uid, session_id="s1")
    mem.add("我叫张伟，在北京的阿里巴巴工作。", user_id=uid, session_id="s2")
    mem.add_many([{"text": "Bluebird must ship before the fourteenth of June.", "user_id": uid, "session_id": "s3"},
                  {"text": "项目代号是青鸟。", "user_id": uid, "session_id": "s3"}])
    hits = mem.recall("Who signs off purchases for the Northwind rebrand?", user_id=uid, k=5).hits
    by_id = {h.memory.id: h for h in hits}
    assert hits[0].memory.id == dana[0].id and hits[0].relevance < 0.5  # rated more likely unrelated than not
    spread = by_id[budget[0].id]
    assert spread.via == "session" and spread.path and spread.path[0].source == dana[0].id
    assert spread.parts.channels["session"] == pytest.approx(1.0)


def test_source_strength_is_validated() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        SessionChannelConfig(source_strength="softmax")
    assert RecallConfig.model_validate(RecallConfig().model_dump(mode="json")) == RecallConfig()
