"""What a spreading channel's sources spread: their rank-normalised score, or their own evidence
(calibrated relevance), so that a pool of weak seeds does not spread as strongly as a sure one."""

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


def _ctx(language: str) -> ChannelContext:
    q = QueryInput(text="q", user_id="u", k=5, mode="ripple", now=0.0, terms=[], vector=None, tokens=None,
                   token_dim=0, entity_keys=[], language=language)
    # "m_sure" is close to the query; "m_weak" ranks almost as high after min-max but is far from it;
    # "m_low" is below source_min
    cands = {"m_sure": Candidate("m_sure", dense=0.8), "m_weak": Candidate("m_weak", dense=0.3),
             "m_low": Candidate("m_low", dense=0.7)}
    seeds = {"m_sure": 1.0, "m_weak": 0.95, "m_low": 0.4}
    return ChannelContext(q, seeds, ["m_sure", "m_weak", "m_low"], None, RecallConfig(relevance=REL), cands,
                          QuerySignals())


@pytest.mark.parametrize("language", ["en", "zh"])
def test_sources_spread_their_rank_or_their_own_evidence(language: str) -> None:
    ctx = _ctx(language)
    rel = {i: relevance(features(ctx.cands[i], ctx.signals), REL) for i in ("m_sure", "m_weak")}
    assert rel["m_sure"] == pytest.approx(1 / (1 + 2.718281828 ** -2.4), rel=1e-6) and rel["m_weak"] < 0.5
    # the session channel's default: rank-normalised score times relevance (benchmarks/RESULTS.md,
    # "Recall generalisation (issue 17)": zh-conv-2 R@10 .812 -> .893, LoCoMo unchanged)
    assert SessionChannelConfig().source_strength == "sure"
    cfg = SessionChannelConfig(source_strength="rank")
    assert ctx.sources(cfg) == {"m_sure": 1.0, "m_weak": 0.95}  # the weak seed spreads almost as much
    by = {mode: ctx.sources(cfg.model_copy(update={"source_strength": mode})) for mode in ("relevance", "sure", "floor")}
    assert by["relevance"] == pytest.approx(rel)
    assert by["sure"] == pytest.approx({"m_sure": rel["m_sure"], "m_weak": 0.95 * rel["m_weak"]})
    assert by["floor"] == {"m_sure": 1.0}  # the weak seed is below the calibrated floor: it does not spread
    assert ctx.relevance("m_unknown") == 0.0


def test_source_strength_is_validated() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        SessionChannelConfig(source_strength="softmax")
    assert RecallConfig.model_validate(RecallConfig().model_dump(mode="json")) == RecallConfig()
