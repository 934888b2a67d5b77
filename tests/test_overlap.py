"""encode_beside: the extractor's thread and a worker share the encoding of a write batch."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Iterator, Sequence

import numpy as np
import pytest

from ripple._overlap import encode_beside


class _SharingEmbedder:
    """Vectors that name their text; records which thread encoded what and whether cores are shared."""

    batch_size = 3

    def __init__(self, delay: float = 0.0, fail_on: str | None = None) -> None:
        self.delay = delay
        self.fail_on = fail_on
        self.threads: set[int] = set()
        self.sharing = False
        self.batches: list[list[str]] = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def sharing_cores(self) -> Iterator[object]:
        self.sharing = True
        try:
            yield self._encode
        finally:
            self.sharing = False

    def _encode(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        assert self.sharing, "encoded outside sharing_cores()"
        time.sleep(self.delay)
        with self._lock:
            self.threads.add(threading.get_ident())
            self.batches.append(list(texts))
        if self.fail_on in texts:
            raise RuntimeError("encoder failed")
        return _vectors(texts)


def _vectors(texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
    vecs = np.array([[len(t), sum(map(ord, t)) % 97] for t in texts], dtype=np.float32)
    return vecs, [np.full((len(t), 2), len(t), dtype=np.float32) for t in texts]


TEXTS = [f"turn {'x' * (i % 7)} {i}" for i in range(17)]


def test_vectors_come_back_in_input_order_and_both_threads_encode() -> None:
    emb = _SharingEmbedder(delay=0.02)
    started = threading.Event()

    def side() -> str:  # the extractor: busy until the worker has encoded something
        while not emb.batches:
            time.sleep(0.001)
        started.set()
        return "extracted"

    result, (vecs, toks) = encode_beside(emb, TEXTS, side)
    assert result == "extracted" and started.is_set()
    want_vecs, want_toks = _vectors(TEXTS)
    np.testing.assert_array_equal(vecs, want_vecs)
    assert all(np.array_equal(a, b) for a, b in zip(toks, want_toks))
    assert len(emb.threads) == 2  # the worker and, once extraction was done, the caller
    assert sorted(t for b in emb.batches for t in b) == sorted(TEXTS)  # each text once
    assert all(len(b) <= emb.batch_size for b in emb.batches)
    assert not emb.sharing  # cores given back


def test_an_extractor_error_stops_the_encoder_and_gives_the_cores_back() -> None:
    emb = _SharingEmbedder(delay=0.01)

    def side() -> None:
        raise ValueError("parse failed")

    with pytest.raises(ValueError, match="parse failed"):
        encode_beside(emb, TEXTS, side)
    assert not emb.sharing
    assert len(emb.batches) < -(-len(TEXTS) // emb.batch_size)  # stopped before the last batch


def test_an_encoder_error_reaches_the_caller() -> None:
    emb = _SharingEmbedder(fail_on=TEXTS[5])
    with pytest.raises(RuntimeError, match="encoder failed"):
        encode_beside(emb, TEXTS, lambda: None)
    assert not emb.sharing


def test_an_embedder_without_sharing_encodes_the_whole_batch_in_the_worker() -> None:
    from ripple.embedding import HashEmbedder

    class Recording(HashEmbedder):
        def encode_with_tokens(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
            calls.append((threading.get_ident(), len(texts)))
            return super().encode_with_tokens(texts)

    calls: list[tuple[int, int]] = []
    emb = Recording(16)
    result, (vecs, toks) = encode_beside(emb, TEXTS, lambda: 42)
    assert result == 42
    assert len(calls) == 1 and calls[0][0] != threading.get_ident() and calls[0][1] == len(TEXTS)
    np.testing.assert_allclose(vecs, HashEmbedder(16).encode_with_tokens(TEXTS)[0])
    assert len(toks) == len(TEXTS)


def test_minilm_shared_encoding_matches_encode_with_tokens(embedder) -> None:
    import torch

    texts = [f"Dana: sprint {i} of the Northwind project {'really ' * (i % 5)}ends on Friday." for i in range(40)]
    texts[7] = "我叫王芳，在上海做产品经理。"
    threads = torch.get_num_threads()
    _, (vecs, toks) = encode_beside(embedder, texts, lambda: None)
    assert torch.get_num_threads() == threads
    want_vecs, want_toks = embedder.encode_with_tokens(texts)
    assert float(np.min(np.sum(vecs * want_vecs, axis=1))) > 0.999
    for got, want in zip(toks, want_toks):
        assert got.shape == want.shape
        assert float(np.min(np.sum(got * want, axis=1))) > 0.99
