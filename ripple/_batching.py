"""Queries that arrive together are encoded together: one encoder call for all who wait.

Why: a recall's query encoding is one forward pass of the model (about 9 ms for MiniLM on one
core), and the embedder runs one pass at a time.  Under concurrent recalls (a server, threads,
``AsyncMemory`` with many tasks) the queries queue behind that lock and are encoded one by one; a
forward pass over eight short queries costs far less than eight passes.  So whoever finds the
encoder free encodes at once (a query alone is encoded exactly as before: no waiting window, no
added latency), and the queries that arrive meanwhile wait and are encoded in one call when it
frees, by one of them.  Each caller gets its own vectors back, or the error of the call that
encoded it.

A query encoded in a batch has the vectors of one encoded alone: exactly through the query's int8
copy (the default, which encodes each query of a batch alone), up to float rounding through the model
(the padding of a batch is masked out of attention and pooling); tests/test_batching.py checks both.
The last queries' vectors are kept (``recent``, 64 by default): an agent's context recalls
the same question in each scope it reads (the user's memories, the session's), and a question
asked again is not encoded again.  Thread-based on purpose: the sync API's threads and the async API's worker threads (model
work always runs in one) meet here alike.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Generic, Sequence, TypeVar

if TYPE_CHECKING:
    import numpy as np

__all__ = ["BatchEncoder", "MAX_BATCH", "RECENT"]

#: The most queries one call encodes (more wait for the next call).
MAX_BATCH = 32
#: How many of the last queries' vectors are kept (a query asked again is not encoded again).
RECENT = 64

T = TypeVar("T")
Encode = Callable[[Sequence[str]], "tuple[np.ndarray, list[np.ndarray]]"]


@dataclass(eq=False)
class _Waiting(Generic[T]):
    text: str
    done: bool = False
    value: T | None = None
    error: BaseException | None = None


@dataclass
class BatchStats:
    """What the batcher did: calls made and queries encoded (``queries / calls`` is the mean batch)."""

    calls: int = 0
    queries: int = 0
    largest: int = 0
    reused: int = 0  # queries answered from the recent ones, without an encoder call
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, n: int) -> None:
        with self._lock:
            self.calls += 1
            self.queries += n
            self.largest = max(self.largest, n)


class BatchEncoder:
    """``encode_one(text) -> (sentence vector, token vectors)`` over an ``encode(texts)`` callable,
    batching the callers that wait for it (see the module docstring)."""

    def __init__(self, encode: Encode, *, max_batch: int = MAX_BATCH, recent: int = RECENT) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, got {max_batch}")
        if recent < 0:
            raise ValueError(f"recent must be at least 0, got {recent}")
        self.encode = encode  # the wrapped call (a baseline without batching is BatchEncoder(b.encode, max_batch=1))
        self._max = max_batch
        self._keep = recent
        self._recent: OrderedDict[str, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._cond = threading.Condition()
        self._queue: list[_Waiting[tuple[np.ndarray, np.ndarray]]] = []
        self._busy = False
        self.stats = BatchStats()

    def encode_one(self, text: str) -> "tuple[np.ndarray, np.ndarray]":
        me: _Waiting[tuple[np.ndarray, np.ndarray]] = _Waiting(text)
        with self._cond:
            known = self._recent.get(text)
            if known is not None:
                self._recent.move_to_end(text)
                self.stats.reused += 1
                return known
            self._queue.append(me)
            while self._busy and not me.done:
                self._cond.wait()
            if not me.done:  # the encoder is free: this caller encodes its query and all who wait
                self._busy = True
                self._queue.remove(me)
                batch = [me, *self._queue[: self._max - 1]]
                del self._queue[: self._max - 1]
        if not me.done:
            self._run(batch)
        if me.error is not None:
            raise me.error
        assert me.value is not None
        return me.value

    def _run(self, batch: list[_Waiting[tuple[np.ndarray, np.ndarray]]]) -> None:
        try:
            vectors, tokens = self.encode([w.text for w in batch])
            results = list(zip(vectors, tokens))
            error: BaseException | None = None
        except BaseException as exc:  # every caller of this batch gets the error, none waits forever
            results, error = [], exc
        self.stats.count(len(batch))
        with self._cond:
            for n, w in enumerate(batch):
                if error is None:
                    w.value = results[n]
                    self._remember(w.text, results[n])
                else:
                    w.error = error
                w.done = True
            self._busy = False
            self._cond.notify_all()

    def forget(self) -> None:
        """Drop the recent queries' vectors (for a measurement or a test that wants every query encoded)."""
        with self._cond:
            self._recent.clear()

    def _remember(self, text: str, value: "tuple[np.ndarray, np.ndarray]") -> None:
        """Keep a query's vectors among the recent ones (read-only: every caller shares them)."""
        if not self._keep:
            return
        for array in value:
            array.flags.writeable = False
        self._recent[text] = value
        self._recent.move_to_end(text)
        while len(self._recent) > self._keep:
            self._recent.popitem(last=False)
