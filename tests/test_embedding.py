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
    import torch

    def run(ids, mask):
        out = module(ids, mask)
        if not isinstance(out, torch.Tensor):
            out = out["last_hidden_state"] if isinstance(out, dict) else out[0]
        return (out + 1.0,)
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


def test_vectors_do_not_depend_on_torch_threads(embedder) -> None:
    """An encode beside a sharing_cores block runs on its one thread: the vectors must be the same bitwise."""
    import torch

    names = ["Project Bluebird", "Northwind Traders", "Dana", "上海的王芳", "the Orion launch"]
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = [embedder.encode(names), embedder.encode(names[:1]), *embedder.encode_with_tokens(names[:2])[1]]
        torch.set_num_threads(2)
        two = [embedder.encode(names), embedder.encode(names[:1]), *embedder.encode_with_tokens(names[:2])[1]]
    finally:
        torch.set_num_threads(before)
    for a, b in zip(one, two):
        assert np.array_equal(a, b)


def test_an_encode_does_not_wait_for_an_open_sharing_block(embedder) -> None:
    """A write's entity names (or a query) are encoded while another thread prepares the next batch in a
    sharing_cores block, with the vectors the same encode gives when no block is open."""
    import threading

    names = ["Northwind Traders", "王芳", "Project Bluebird"]
    alone = [embedder.encode(names), embedder.encode(names[:1])]
    opened, release, beside = threading.Event(), threading.Event(), []

    def prepare_next_batch() -> None:
        with embedder.sharing_cores() as encode:
            encode(["Dana: the sprint ends on Friday."])
            opened.set()
            release.wait(60)

    worker = threading.Thread(target=prepare_next_batch)
    worker.start()
    try:
        assert opened.wait(60)
        done = threading.Thread(target=lambda: beside.extend([embedder.encode(names), embedder.encode(names[:1])]))
        done.start()
        done.join(60)
        assert not done.is_alive(), "the encode waited for the sharing block"
    finally:
        release.set()
        worker.join(60)
    for a, b in zip(alone, beside):
        assert np.array_equal(a, b)


def test_the_default_model_runs_on_ripples_own_forward_with_sentence_transformers_vectors() -> None:
    """ripple._bert runs all-MiniLM-L6-v2 without sentence-transformers (an import of ~12 CPU-s);
    its word pieces and vectors must be the ones sentence-transformers computes from the same files,
    including a text past the model's 256 word pieces (truncated), Chinese, padding whitespace, nothing."""
    from sentence_transformers import SentenceTransformer

    from ripple import _bert
    from ripple.embedding import SentenceTransformerEmbedder, _resolve_model_path

    path = _resolve_model_path("all-MiniLM-L6-v2")
    assert isinstance(SentenceTransformerEmbedder(precision="fp32")._model, _bert.BertSentenceModel)
    texts = [*TEXTS, "  padded with spaces  ", "", "the Orion launch " * 120, "Émile's café 😀 预算是五万元"]
    ours = _bert.load(path).outputs(texts, batch_size=3)
    theirs = SentenceTransformer(path, device="cpu").encode(texts, batch_size=3, output_value=None)
    for text, a, b in zip(texts, ours, theirs):
        n = int(b["attention_mask"].sum())
        assert a["input_ids"].tolist() == b["input_ids"][:n].tolist(), text
        sa, sb = a["sentence_embedding"].numpy(), b["sentence_embedding"].numpy()
        assert float(sa @ sb) / float(np.linalg.norm(sa) * np.linalg.norm(sb)) > 0.99999, text
        assert float(np.abs(a["token_embeddings"].numpy() - b["token_embeddings"][:n].numpy()).max()) < 1e-4, text
    assert len(ours[-2]["input_ids"]) == 256


def test_the_default_embedder_does_not_import_sentence_transformers() -> None:
    """The point of ripple._bert: a process that encodes with the default model never imports
    sentence-transformers or transformers' model code."""
    import subprocess
    import sys

    code = ("import sys; from ripple.embedding import default_embedder; default_embedder().encode_with_tokens(['hi'])\n"
            "print(sorted(m for m in ('sentence_transformers', 'transformers', 'sklearn') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr


def test_a_model_ripple_cannot_run_itself_loads_through_sentence_transformers(tmp_path: Path) -> None:
    """Anything but BERT with mean pooling (here: the same weights pooled by [CLS]) is sentence-transformers' job."""
    import json
    import os

    from ripple import _bert
    from ripple.embedding import SentenceTransformerEmbedder, _resolve_model_path, _SentenceTransformersModel

    src = Path(_resolve_model_path("all-MiniLM-L6-v2"))
    for entry in src.iterdir():
        if entry.name != "1_Pooling":
            os.symlink(entry, tmp_path / entry.name)
    (tmp_path / "1_Pooling").mkdir()
    pooling = json.loads((src / "1_Pooling" / "config.json").read_text())
    pooling.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    with pytest.raises(_bert.Unsupported, match="pooling"):
        _bert.load(str(tmp_path))
    emb = SentenceTransformerEmbedder(str(tmp_path), precision="fp32")
    assert isinstance(emb._model, _SentenceTransformersModel)
    mean = SentenceTransformerEmbedder(precision="fp32")
    cls_vec, mean_vec = emb.encode(TEXTS[:1])[0], mean.encode(TEXTS[:1])[0]
    assert abs(float(np.linalg.norm(cls_vec)) - 1) < 1e-5 and float(cls_vec @ mean_vec) < 0.999


# -- the int8 query copy (ripple._int8) -------------------------------------------------------------

QUESTIONS = ["When did Caroline go to the LGBTQ support group?", "What activities does Melanie partake in?",
             "我上周去哪里出差了？", "ok", "Which hotel is near the conference venue in Lisbon and how far is it from the "
             "airport if I land at 11:30?"]


def test_a_query_runs_through_a_checked_int8_copy_close_to_the_model() -> None:
    """query_precision="int8": one question goes through the int8 copy, whose vectors stay within the
    quantisation's noise of the model's (and the token rows are the same rows); stored texts do not."""
    from ripple.embedding import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder(precision="fp32", query_precision="int8")
    for question in QUESTIONS:
        vec, tokens = emb.encode_query_with_tokens([question])
        assert emb._query_traced not in (None, False), "the int8 copy was not built or failed its check"
        want, want_tokens = emb.encode_with_tokens([question])
        assert vec.dtype == np.float32 and abs(float(np.linalg.norm(vec[0])) - 1) < 1e-5
        assert 0.98 < float(vec[0] @ want[0]) < 0.99999, question  # close, and really the int8 copy
        assert tokens[0].shape == want_tokens[0].shape
        assert float((tokens[0] * want_tokens[0]).sum(axis=1).min()) > 0.97, question
    # two questions at once go through the copy each (as alone); memories keep the model's own vectors
    two = emb.encode_query_with_tokens(QUESTIONS[:2])[0]
    assert all(np.array_equal(two[n], emb.encode_query_with_tokens([QUESTIONS[n]])[0][0]) for n in range(2))
    assert not np.array_equal(two, emb.encode_with_tokens(QUESTIONS[:2])[0])


def test_query_precision_model_encodes_a_query_as_a_memory() -> None:
    from ripple.embedding import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder(query_precision="model")
    for question in QUESTIONS[:3]:
        got, want = emb.encode_query_with_tokens([question]), emb.encode_with_tokens([question])
        assert np.array_equal(got[0], want[0]) and all(np.array_equal(a, b) for a, b in zip(got[1], want[1]))
    assert emb._query_traced is None


def test_an_int8_copy_that_fails_or_disagrees_is_not_used(monkeypatch, caplog) -> None:
    """A quantised engine torch lacks (an error) or an int8 copy whose vectors are off keeps the model,
    and says so once (a recall still works, only slower than the default promises)."""
    import logging
    from ripple import _int8
    from ripple.embedding import SentenceTransformerEmbedder

    real = _int8.int8_copy

    def off(module, run, *args, **kwargs):  # an int8 copy that is wrong by a constant
        import torch

        copy = real(module, run, *args, **kwargs)

        class Off(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.inner = copy

            def forward(self, ids, mask):
                return self.inner(ids, mask) + 0.5
        return Off()

    def missing(*args, **kwargs):
        raise RuntimeError("Didn't find engine for operation quantized::linear_prepack NoQEngine")

    for replacement in (off, missing):
        monkeypatch.setattr(_int8, "int8_copy", replacement)
        emb = SentenceTransformerEmbedder(precision="fp32", query_precision="int8")
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="ripple.embedding"):
            got = emb.encode_query_with_tokens([QUESTIONS[0]])
            emb.encode_query_with_tokens([QUESTIONS[1]])
        assert emb._query_traced is False
        assert np.array_equal(got[0], emb.encode_with_tokens([QUESTIONS[0]])[0])
        said = [r.getMessage() for r in caplog.records if "int8 copy" in r.getMessage()]
        assert len(said) == 1 and "model's precision" in said[0], said


def test_a_bad_query_precision_is_a_config_error() -> None:
    from pydantic import ValidationError

    from ripple import RippleSettings
    from ripple.embedding import default_embedder
    from ripple.errors import ConfigError

    with pytest.raises(ConfigError, match="query precision"):
        default_embedder(query_precision="int4")
    with pytest.raises(ValidationError):
        RippleSettings(query_precision="fp16")


def test_a_recall_encodes_its_query_in_the_settings_query_precision(tmp_path: Path, monkeypatch) -> None:
    """RippleSettings.query_precision reaches the embedder a Memory loads; recall asks it for the query side."""
    from ripple import Memory, RippleSettings
    from ripple.embedding import SentenceTransformerEmbedder

    seen: list[tuple[str, bool]] = []
    original = SentenceTransformerEmbedder.encode_query_with_tokens

    def spy(self, texts):
        seen.append((texts[0], self._query_int8))
        return original(self, texts)

    monkeypatch.setattr(SentenceTransformerEmbedder, "encode_query_with_tokens", spy)
    for precision in ("int8", "model"):
        settings = RippleSettings(home=tmp_path / precision, query_precision=precision)
        with Memory(settings=settings) as mem:
            mem.add("Caroline went to the LGBTQ support group on 7 May.", user_id="u")
            hits = mem.recall("When did Caroline go to the support group?", user_id="u", k=1).hits
            assert "support group" in hits[0].memory.text
        assert seen[-1] == ("When did Caroline go to the support group?", precision == "int8")


def test_a_servers_warm_up_builds_the_query_copy_and_the_one_text_trace(tmp_path: Path) -> None:
    """ripple serve / ripple mcp warm up before their first request: the int8 query copy (~1 s to build)
    and the one-text trace are built then, not in a client's first recall or add."""
    import anyio

    from ripple import AsyncMemory, RippleSettings
    from ripple.embedding import _cached_embedder
    from ripple.server.warm import warm_up

    _cached_embedder.cache_clear()  # a process whose model was never used

    async def main() -> tuple[object, object]:
        async with AsyncMemory(settings=RippleSettings(home=tmp_path)) as mem:
            await warm_up(mem)
            emb = mem.embedder
            return emb._query_traced, emb._traced

    query_copy, one_text = anyio.run(main)
    assert query_copy not in (None, False) and one_text not in (None, False)
