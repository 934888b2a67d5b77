"""Encode a write batch while the extractor parses it, on every core.

Ingest has two CPU-bound models: the extractor (spaCy, Python and Cython,
one core) and the embedder (torch, which releases the GIL).  They run side by
side.  An embedder that offers ``sharing_cores()`` is fed batch by batch from
a shared cursor: a worker thread encodes while this thread extracts, and then
this thread encodes too, until every batch is done.  Any other embedder
encodes the whole batch in the worker while this thread extracts.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypeVar

if TYPE_CHECKING:
    import numpy as np

    Encoded = tuple[np.ndarray, list[np.ndarray]]

__all__ = ["encode_beside"]

T = TypeVar("T")


def encode_beside(embedder: Any, texts: Sequence[str], side: Callable[[], T]) -> tuple[T, "Encoded"]:
    """``side()`` in this thread while ``texts`` are encoded; returns both, vectors in input order."""
    sharing = getattr(embedder, "sharing_cores", None)
    with ThreadPoolExecutor(1, thread_name_prefix="ripple-embed") as pool:
        if sharing is None:
            encoded = pool.submit(embedder.encode_with_tokens, list(texts))
            return side(), encoded.result()
        size = max(1, int(getattr(embedder, "batch_size", 32)))
        # longest first, as sentence-transformers orders them: similar lengths share a batch, less padding
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        batches = [order[j : j + size] for j in range(0, len(order), size)]
        done: dict[int, Encoded] = {}
        cursor = iter(range(len(batches)))
        claim = threading.Lock()
        stop = threading.Event()

        def work(encode: Callable[[Sequence[str]], Encoded]) -> None:
            while not stop.is_set():
                with claim:
                    b = next(cursor, None)
                if b is None:
                    return
                done[b] = encode([texts[i] for i in batches[b]])

        with sharing() as encode:
            helper = pool.submit(work, encode)
            try:
                result = side()
                work(encode)
            except BaseException:
                stop.set()  # the helper ends after its current batch, before the cores are given back
                wait([helper])
                raise
            helper.result()
    return result, _in_order(done, batches, len(texts))


def _in_order(done: "dict[int, Encoded]", batches: list[list[int]], n: int) -> "Encoded":
    import numpy as np

    first = done[0][0] if batches else np.zeros((0, 0), dtype=np.float32)
    vectors = np.zeros((n, first.shape[1]), dtype=np.float32)
    tokens: list[np.ndarray] = [first[:0]] * n
    for b, rows in enumerate(batches):
        vecs, toks = done[b]
        vectors[rows] = vecs
        for j, i in enumerate(rows):
            tokens[i] = toks[j]
    return vectors, tokens
