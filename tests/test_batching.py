"""Concurrent queries share encoder calls (ripple._batching), with the vectors of a query encoded alone."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

import numpy as np
import pytest

from ripple._batching import BatchEncoder

QUERIES = [
    "When is the Northwind deadline?", "Who runs procurement in Berlin?", "我们的预算是多少？",
    "What did Dana say about the venue?", "周五的例会改到几点了？", "Any allergies I should know about?",
    "Which hotel is near the conference?", "What is the budget for new laptops?",
]


class SlowEncoder:
    """An encoder that takes a while per call and records the batches it was given."""

    def __init__(self, delay: float = 0.05, fail_on: str | None = None) -> None:
        self.delay, self.fail_on, self.batches = delay, fail_on, []  # type: ignore[var-annotated]
        self._lock = threading.Lock()

    def __call__(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        with self._lock:  # one call at a time, as a real embedder
            self.batches.append(list(texts))
            time.sleep(self.delay)
            if self.fail_on is not None and self.fail_on in texts:
                raise RuntimeError("encoder failed")
            vecs = np.array([[float(len(t)), float(sum(map(ord, t)) % 97)] for t in texts], dtype=np.float32)
            return vecs, [v[None, :] for v in vecs]


def _all_at_once(enc: BatchEncoder, texts: Sequence[str]) -> list[Any]:
    with ThreadPoolExecutor(len(texts)) as pool:
        return list(pool.map(enc.encode_one, texts))


def test_alone_a_query_is_encoded_at_once() -> None:
    inner = SlowEncoder(delay=0.0)
    enc = BatchEncoder(inner)
    vec, tokens = enc.encode_one("hello")
    assert inner.batches == [["hello"]] and vec.shape == (2,) and tokens.shape == (1, 2)


def test_queries_that_wait_are_encoded_together_and_each_gets_its_own() -> None:
    inner = SlowEncoder(delay=0.05)
    enc = BatchEncoder(inner)
    got = _all_at_once(enc, QUERIES)
    for text, (vec, _tokens) in zip(QUERIES, got):
        assert vec[0] == len(text)  # each caller its own vector, whichever batch carried it
    assert sum(len(b) for b in inner.batches) == len(QUERIES)
    assert len(inner.batches) < len(QUERIES)  # the ones that waited shared a call
    assert enc.stats.queries == len(QUERIES) and enc.stats.largest > 1


def test_a_query_asked_again_is_not_encoded_again() -> None:
    """The recent queries' vectors are kept (an agent's context asks one question of each scope)."""
    inner = SlowEncoder(delay=0.0)
    enc = BatchEncoder(inner, recent=2)
    first = enc.encode_one("hello")
    assert enc.encode_one("hello") is first and inner.batches == [["hello"]] and enc.stats.reused == 1
    assert not first[0].flags.writeable  # shared by every caller: nobody may change it
    enc.encode_one("a"), enc.encode_one("b")  # "hello" is now the oldest of three: dropped
    enc.encode_one("hello")
    assert inner.batches == [["hello"], ["a"], ["b"], ["hello"]]
    enc.forget()
    enc.encode_one("b")
    assert inner.batches[-1] == ["b"]
    plain = BatchEncoder(inner, recent=0)
    plain.encode_one("c"), plain.encode_one("c")
    assert inner.batches[-2:] == [["c"], ["c"]] and plain.stats.reused == 0
    with pytest.raises(ValueError):
        BatchEncoder(inner, recent=-1)


def test_batches_are_capped() -> None:
    inner = SlowEncoder(delay=0.05)
    enc = BatchEncoder(inner, max_batch=3)
    _all_at_once(enc, QUERIES)
    assert max(len(b) for b in inner.batches) <= 3
    with pytest.raises(ValueError):
        BatchEncoder(inner, max_batch=0)


def test_an_encoder_error_reaches_every_caller_of_its_batch_and_no_one_hangs() -> None:
    inner = SlowEncoder(delay=0.05, fail_on=QUERIES[3])
    enc = BatchEncoder(inner)
    outcomes = []

    def one(text: str) -> str:
        try:
            enc.encode_one(text)
            return "ok"
        except RuntimeError:
            return "error"

    with ThreadPoolExecutor(len(QUERIES)) as pool:
        outcomes = list(pool.map(one, QUERIES))
    failed = next(b for b in inner.batches if QUERIES[3] in b)
    assert [o for t, o in zip(QUERIES, outcomes) if t in failed] == ["error"] * len(failed)
    assert all(o == "ok" for t, o in zip(QUERIES, outcomes) if t not in failed)
    assert enc.encode_one("after") is not None  # the encoder is free again


def test_batched_vectors_are_the_vectors_of_a_query_alone(embedder: Any) -> None:
    """The real model (English and Chinese): padding in a batch changes nothing beyond rounding."""
    alone = [embedder.encode_with_tokens([q]) for q in QUERIES]
    vecs, tokens = embedder.encode_with_tokens(QUERIES)
    for n, (v1, t1) in enumerate(alone):
        assert float(v1[0] @ vecs[n]) > 0.9999
        assert t1[0].shape == tokens[n].shape
        assert np.allclose(t1[0], tokens[n], atol=2e-3)


def test_queries_encoded_together_get_the_vectors_of_a_query_alone(embedder: Any) -> None:
    """The query side (the int8 copy by default): a query's vectors do not depend on whether other
    recalls' queries were handed over with it (bitwise: each goes through the copy alone)."""
    alone = [embedder.encode_query_with_tokens([q]) for q in QUERIES]
    vecs, tokens = embedder.encode_query_with_tokens(QUERIES)
    for n, (v1, t1) in enumerate(alone):
        assert np.array_equal(v1[0], vecs[n]) and np.array_equal(t1[0], tokens[n]), QUERIES[n]


def test_memory_recalls_from_many_threads_share_encoder_calls(mem: Any) -> None:
    mem.add_many([{"text": t, "user_id": "u", "session_id": "s"} for t in (
        "The Northwind deadline is March 3.", "Dana runs procurement at Northwind in Berlin.",
        "我们的预算是五万。", "The venue is the Grand Hyatt.")])
    alone = {q: [h.memory.id for h in mem.recall(q, user_id="u", k=3).hits] for q in QUERIES}
    mem._runtime.query_encoder().forget()  # encode them again, together this time
    mem._runtime.multilingual_encoder().forget()
    with ThreadPoolExecutor(8) as pool:
        together = dict(zip(QUERIES, pool.map(lambda q: [h.memory.id for h in mem.recall(q, user_id="u", k=3).hits],
                                               QUERIES)))
    assert together == alone
    stats = mem._runtime.query_encoder().stats
    assert stats.queries == 2 * len(QUERIES)
    # the user holds a Chinese memory: every query also took the multilingual route, batched the same way
    assert mem._runtime.multilingual_encoder().stats.queries == 2 * len(QUERIES)
