"""Query words the lexical route ignores as too common (a speaker's name, in every turn of a chat) are
also left out of the query's token vectors (MaxSim) and its sentence vector (the dense route):
``SeedConfig.late_skip_common`` and ``SeedConfig.dense_skip_common``."""

from __future__ import annotations

import numpy as np
import pytest

from ripple.recall.candidates import Seeded

from ripple.recall.seed import informative_rows, too_common, without_words


def test_too_common_is_the_lexical_share_not_the_cost_cap() -> None:
    df = {"melanie": 7, "pottery": 2, "caroline": 5}
    assert too_common(df, 10, 0.5) == frozenset({"melanie"})  # 5 of 10 is not more than half
    assert too_common(df, 100, 0.5) == frozenset()
    assert too_common({"x": 1}, 1, 0.5) == frozenset()  # a store of one memory: nothing is too common
    assert too_common(df, 10, 0.5, 7) == frozenset()  # nor in a store too small for the share to say so
    assert too_common({"melanie": 300}, 400, 0.5, 50) == frozenset({"melanie"})


def test_informative_rows_drop_the_common_words_rows_only_when_they_are_known() -> None:
    rows = np.eye(4, dtype=np.float32)
    terms = ("activ", "melanie", "partak", "partak")
    assert informative_rows(rows, terms, frozenset({"melanie"})).tolist() == rows[[0, 2, 3]].tolist()
    assert informative_rows(rows, None, frozenset({"melanie"})) is rows  # the embedder cannot tell
    assert informative_rows(rows, terms[:3], frozenset({"melanie"})) is rows  # not one word per row
    assert informative_rows(rows, terms, frozenset({"activ", "melanie", "partak"})) is rows  # all would go
    assert informative_rows(rows, terms, frozenset()) is rows


@pytest.mark.parametrize("text, common, expected", [
    ("What activities does Melanie partake in?", {"melanie"}, "What activities does partake in?"),
    ("What is Melanie's dog called, Caroline?", {"melanie", "caroline"}, "What is dog called, ?"),
    ("Melanie?", {"melanie"}, "Melanie?"),  # nothing would be left: the query as it is
    ("小雨最近在忙什么", {"小雨"}, "小雨最近在忙什么"),  # a Chinese run is several words: kept whole
])
def test_without_words(text: str, common: set[str], expected: str) -> None:
    assert without_words(text, frozenset(common)) == expected


def test_token_words_name_the_word_of_each_token_vector(embedder) -> None:
    words = embedder.token_words("What activities does Melanie partake in?")
    _, tokens = embedder.encode_with_tokens(["What activities does Melanie partake in?"])
    assert len(words) == len(tokens[0])
    assert "melanie" in words and "activities" in words and "what" not in words  # stop words have no vector




def _seed(query_rows: np.ndarray, token_terms: tuple[str, ...] | None, *, late: bool, dense: bool,
          min_df: int = 1, method: str = "fused") -> tuple[Seeded, list[object]]:
    """Run the seed stage on a scripted store of four memories in a 2-d space (no model, no store).

    m_name matches only the query's name ("melanie", in 3 of 4 memories: too common) and is the whole
    query's nearest; m_answer matches its other word ("swim") and is the nearest of the query without
    the name.  Returns the seeds and the requests the plan made."""
    from graphstore.records import LexicalRows
    from graphstore.requests import LexicalRoute, NearestMemories, TokenVectors
    from ripple._requests import EncodeQuery
    from ripple.embedding import pack_tokens
    from ripple.recall.candidates import StageTimer
    from ripple.recall.config import RecallConfig
    from ripple.recall.query import QueryInput
    from ripple.recall.seed import seed_stage

    name, swim = np.array([1.0, 0.0], dtype=np.float32), np.array([0.0, 1.0], dtype=np.float32)
    both = 0.6 * name + 0.8 * swim
    tokens = {"m_name": np.stack([name]), "m_answer": np.stack([swim]), "m_both": np.stack([name, both]),
              "m_other": np.stack([-name])}
    whole, plain = np.array([0.8, 0.6], dtype=np.float32), swim
    vectors = {"m_name": name, "m_answer": swim, "m_both": both, "m_other": -name}
    cfg = RecallConfig()
    cfg = cfg.model_copy(update={"seed": cfg.seed.model_copy(update={
        "late_skip_common": late, "dense_skip_common": dense, "common_min_df": min_df, "multilingual": 0.0,
        "method": method})})
    q = QueryInput(text="Where does Melanie swim?", user_id="u", k=4, mode="ripple", now=0.0, terms=["melanie", "swim"],
                   vector=whole, tokens=query_rows, token_dim=2, entity_keys=[], token_terms=token_terms)
    plan = seed_stage(q, cfg, StageTimer())
    asked: list[object] = []
    answer: object = None
    try:
        while True:
            request = plan.send(answer)
            asked.append(request)
            if isinstance(request, LexicalRoute):
                answer = LexicalRows(n_docs=4, avg_len=3.0, df={"melanie": 3, "swim": 2},
                                     postings=[("swim", "m_answer", 1, 3), ("swim", "m_both", 1, 3)])
            elif isinstance(request, NearestMemories):
                v = np.asarray(request.vector, dtype=np.float32)
                answer = sorted(((i, float(v @ x)) for i, x in vectors.items()), key=lambda kv: -kv[1])
            elif isinstance(request, EncodeQuery):
                assert request.text == "Where does swim?"
                answer = plain
            elif isinstance(request, TokenVectors):
                answer = {i: pack_tokens(tokens[i]) for i in request.memory_ids}
            else:
                raise AssertionError(f"unexpected request {request!r}")
    except StopIteration as done:
        seeded: Seeded = done.value[1]
    return seeded, asked


_ROWS = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)  # the query's token vectors: "melanie", "swim"
_TERMS = ("melanie", "swim")


def test_maxsim_without_the_common_words_rows() -> None:
    """late_skip_common: the seeds rank by the MaxSim of the query's other words; each candidate still
    reports (and calibrated relevance still reads) the whole query's MaxSim."""
    off, _ = _seed(_ROWS, _TERMS, late=False, dense=False)
    on, _ = _seed(_ROWS, _TERMS, late=True, dense=False)
    assert on.cands["m_name"].late == pytest.approx(off.cands["m_name"].late, abs=1e-6)
    assert on.cands["m_name"].late == pytest.approx(0.5, abs=0.01)
    assert on.norm["m_answer"] > off.norm["m_answer"] and on.norm["m_name"] < off.norm["m_name"]
    # without the words behind the rows, nothing is dropped
    unknown, _ = _seed(_ROWS, None, late=True, dense=False)
    assert unknown.norm == pytest.approx(off.norm)


def test_dense_route_searches_without_the_common_words() -> None:
    """dense_skip_common: one more search, with the query encoded without 'Melanie'; the seeds rank by it,
    the candidates keep the whole query's cosine."""
    from graphstore.requests import NearestMemories
    from ripple._requests import EncodeQuery

    off, asked_off = _seed(_ROWS, _TERMS, late=False, dense=False)
    on, asked_on = _seed(_ROWS, _TERMS, late=False, dense=True)
    assert not any(isinstance(r, EncodeQuery) for r in asked_off)
    # the vector without 'Melanie' is the mean of the query's other token rows: no second encoding
    assert not any(isinstance(r, EncodeQuery) for r in asked_on)
    assert sum(isinstance(r, NearestMemories) for r in asked_on) == 2
    # without the words behind the rows, the text is encoded again without the name
    encoded, asked_encoded = _seed(_ROWS, None, late=False, dense=True)
    assert any(isinstance(r, EncodeQuery) for r in asked_encoded)
    assert encoded.norm["m_answer"] > off.norm["m_answer"]
    assert on.cands["m_name"].dense == pytest.approx(0.8)
    assert off.cands["m_name"].dense == pytest.approx(0.8)
    assert on.norm["m_answer"] > off.norm["m_answer"] and on.norm["m_name"] < off.norm["m_name"]
    both, _ = _seed(_ROWS, _TERMS, late=True, dense=True)
    assert both.ranked[0] == "m_answer" and off.ranked[0] != "m_answer"


def test_on_by_default_for_ripples_seeds_only() -> None:
    """The default plan skips too-common words; the baselines' routes (flat, BM25, hybrid) never do."""
    from ripple import RecallConfig

    assert RecallConfig().seed.late_skip_common and RecallConfig().seed.dense_skip_common


def test_a_small_store_keeps_the_name() -> None:
    """With the default common_min_df (50), four memories are too few for 'melanie' to count as noise."""
    from ripple._requests import EncodeQuery
    from ripple.recall.config import SeedConfig

    off, _ = _seed(_ROWS, _TERMS, late=False, dense=False)
    small, asked = _seed(_ROWS, _TERMS, late=True, dense=True, min_df=SeedConfig().common_min_df)
    assert small.norm == pytest.approx(off.norm) and not any(isinstance(r, EncodeQuery) for r in asked)


@pytest.mark.parametrize("method", ["rrf", "dense"])
def test_baselines_search_with_the_whole_query(method: str) -> None:
    """A baseline's routes are what a user of that baseline gets: no second search, whatever the setting."""
    from ripple._requests import EncodeQuery

    seeded, asked = _seed(_ROWS, _TERMS, late=True, dense=True, method=method)
    assert seeded.final and not any(isinstance(r, EncodeQuery) for r in asked)
