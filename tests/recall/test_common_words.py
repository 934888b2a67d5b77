"""Query words the lexical route ignores as too common (a speaker's name, in every turn of a chat) are
also left out of the query's token vectors (MaxSim) and its sentence vector (the dense route):
``SeedConfig.late_skip_common`` and ``SeedConfig.dense_skip_common``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ripple.recall.seed import informative_rows, too_common, without_words


def test_too_common_is_the_lexical_share_not_the_cost_cap() -> None:
    df = {"melanie": 7, "pottery": 2, "caroline": 5}
    assert too_common(df, 10, 0.5) == frozenset({"melanie"})  # 5 of 10 is not more than half
    assert too_common(df, 100, 0.5) == frozenset()
    assert too_common({"x": 1}, 1, 0.5) == frozenset()  # a store of one memory: nothing is too common


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


_TURNS = [
    "Melanie: Hey Caroline! Good to see you!",
    "Caroline: Melanie, so good to see you too, Melanie!",
    "Melanie: I went swimming with the kids yesterday.",
    "Caroline: Melanie, how are the kids?",
    "Melanie: Painting keeps me calm.",
    "Caroline: I read a lot these days.",
]


def _config(late: bool, dense: bool):  # type: ignore[no-untyped-def]
    from ripple import RecallConfig

    cfg = RecallConfig()
    return cfg.model_copy(update={"seed": cfg.seed.model_copy(update={"late_skip_common": late, "dense_skip_common": dense})})


def test_maxsim_and_dense_leave_out_the_speakers_name(tmp_path: Path, embedder, extractor) -> None:
    """On a chat where 'melanie' is in most turns, a hit's MaxSim is that of the question's other words
    and its dense cosine that of the question without the name; with the settings off, both keep it."""
    from ripple import Memory
    from ripple.recall.seed import maxsim_blobs

    query = "What activities does Melanie do?"
    with Memory(path=str(tmp_path / "s"), embedder=embedder, extractor=extractor, config=_config(True, True)) as mem:
        mem.add_many([{"text": t, "user_id": "u", "session_id": "s1"} for t in _TURNS])
        on = mem.recall(query, user_id="u", k=6, touch=False)
        mem.config = _config(False, False)
        off = mem.recall(query, user_id="u", k=6, touch=False)
        ids = [h.memory.id for h in on.hits]
        stored = {m.id: m for m in mem.store.get_memories(ids, with_vectors=True)}
    words = embedder.token_words(query)
    vector, tokens = embedder.encode_with_tokens([query])
    keep = [i for i, w in enumerate(words) if w != "melanie"]
    assert 0 < len(keep) < len(words)
    blobs = {i: m.token_vectors for i, m in stored.items() if m.token_vectors}
    without, _ = maxsim_blobs(tokens[0][keep], blobs, embedder.dim)
    full, _ = maxsim_blobs(tokens[0], blobs, embedder.dim)
    plain = embedder.encode(["What activities does do?"])[0]
    for h in on.hits:
        assert h.parts.late == pytest.approx(without[h.memory.id], abs=1e-5)
        vec = np.frombuffer(stored[h.memory.id].embedding, dtype=np.float32)
        assert h.parts.dense == pytest.approx(float(vec @ plain), abs=1e-4)
    for h in off.hits:
        assert h.parts.late == pytest.approx(full[h.memory.id], abs=1e-5)
        vec = np.frombuffer(stored[h.memory.id].embedding, dtype=np.float32)
        assert h.parts.dense == pytest.approx(float(vec @ vector[0]), abs=1e-4)
    # the turn that answers outranks the greeting that only names her, which the name lifts with the settings off
    top = on.hits[0].memory.text
    assert "swimming" in top or "Painting" in top, [h.memory.text for h in on.hits]
