"""The default embedder: precision modes, token vectors, and batch/overlap equivalence."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

TEXTS = [
    "Caroline: I went to an LGBTQ support group yesterday and it was so powerful.",
    "Melanie: We painted a sunrise together at the lake last weekend.",
    "我叫王芳，在上海做产品经理。",
    "ok",
]


def test_bad_precision_is_a_config_error() -> None:
    from ripple.embedding import default_embedder
    from ripple.errors import ConfigError

    with pytest.raises(ConfigError, match="precision"):
        default_embedder(precision="fp8")


def test_settings_reject_an_unknown_precision() -> None:
    from pydantic import ValidationError

    from ripple import RippleSettings

    with pytest.raises(ValidationError):
        RippleSettings(embed_precision="half")


def test_bf16_vectors_match_fp32(embedder) -> None:
    """bf16 autocast (chosen automatically on CPUs with native bf16) must not move vectors."""
    from ripple.embedding import SentenceTransformerEmbedder

    fp32 = SentenceTransformerEmbedder(precision="fp32")
    bf16 = SentenceTransformerEmbedder(precision="bf16")
    assert not fp32.bf16 and bf16.bf16
    s32, t32 = fp32.encode_with_tokens(TEXTS)
    s16, t16 = bf16.encode_with_tokens(TEXTS)
    assert s16.dtype == np.float32 and s16.shape == s32.shape
    assert float((s32 * s16).sum(axis=1).min()) > 0.999
    for a, b in zip(t32, t16):
        assert a.shape == b.shape
        assert float((a * b).sum(axis=1).min()) > 0.99
    q32, q16 = fp32.encode(["support group"]), bf16.encode(["support group"])
    assert q16.dtype == np.float32 and float((q32 * q16).sum()) > 0.999


def test_overlapped_ingest_equals_one_by_one(tmp_path: Path, embedder, extractor) -> None:
    """A large batch is embedded in a worker thread while it is extracted; it must store
    exactly what adding the same turns one at a time stores (content-free turns dropped)."""
    from ripple import Memory
    from ripple._runtime import OVERLAP_MIN_BATCH as _OVERLAP_MIN_BATCH

    turns = [f"Dana: Sprint {i} of the Northwind project ends on Friday, budget review {i}." for i in range(20)]
    turns[3] = "ok"
    turns[11] = "thanks!"
    assert len(turns) >= _OVERLAP_MIN_BATCH
    def texts(m: Memory) -> set[str]:
        return {r["text"] for r in m.export(user_id="u") if r["type"] == "memory"}

    with Memory(path=str(tmp_path / "batch"), embedder=embedder, extractor=extractor) as m1:
        batch = m1.add_many([{"text": t, "user_id": "u", "session_id": "s"} for t in turns])
        with Memory(path=str(tmp_path / "single"), embedder=embedder, extractor=extractor) as m2:
            for t in turns:
                m2.add(t, user_id="u", session_id="s")
            assert texts(m1) == texts(m2) == {t for t in turns if t not in ("ok", "thanks!")}
            counts = [{k: v for k, v in m.stats(user_id="u").items() if k != "bytes_on_disk"} for m in (m1, m2)]
            assert counts[0] == counts[1]
        assert len(batch) == 18
        res = m1.recall("When does sprint 7 end?", user_id="u", k=3)
        assert "Sprint 7 " in res.hits[0].memory.text


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_one_text_runs_through_a_checked_trace_with_the_batch_vectors(precision: str) -> None:
    """A single text (a query) goes through a TorchScript trace of the transformer; its vectors
    must be the ones the batched eager path gives for the same text, whatever the text's length."""
    from ripple.embedding import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder(precision=precision)
    batch_vecs, batch_tokens = emb.encode_with_tokens(TEXTS + ["one more, so the batch is not the direct path"])
    for n, text in enumerate(TEXTS):
        vec, tokens = emb.encode_with_tokens([text])
        assert emb._traced not in (None, False), "the trace was not built or failed its check"
        assert float(vec[0] @ batch_vecs[n]) > 0.9999
        assert tokens[0].shape == batch_tokens[n].shape
        assert float((tokens[0] * batch_tokens[n]).sum(axis=1).min()) > 0.999
        assert float(emb.encode([text])[0] @ batch_vecs[n]) > 0.9999


def _shifted(module):  # a "trace" whose hidden states are off by one
    def run(ids, mask):
        out = module(ids, mask)
        return ((out["last_hidden_state"] if isinstance(out, dict) else out[0]) + 1.0,)
    return run


def _broken(*args, **kwargs):
    raise RuntimeError("cannot trace this architecture")


@pytest.mark.parametrize("name, replacement", [("optimize_for_inference", _shifted), ("trace", _broken)])
def test_a_trace_that_fails_or_disagrees_is_not_used(monkeypatch, name: str, replacement) -> None:
    """The trace is checked against the eager model when it is built; a mismatch or a tracer
    error keeps the eager path for good, with the same vectors."""
    import torch

    from ripple.embedding import SentenceTransformerEmbedder

    monkeypatch.setattr(torch.jit, name, replacement)
    emb = SentenceTransformerEmbedder(precision="fp32")
    want = emb.encode(TEXTS)
    got = emb.encode(TEXTS[:1])
    assert emb._traced is False
    assert float(got[0] @ want[0]) > 0.9999
