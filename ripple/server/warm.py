"""Warm-up: what a server does once at start-up so that no request pays for loading a model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import anyio

if TYPE_CHECKING:
    from ripple import AsyncMemory

__all__ = ["warm_up"]

# Texts that load every lazily built model: the embedder, spaCy (English) and jieba (Chinese).
_WARM_TEXTS = ["Dana Whitfield runs procurement at Northwind Traders.", "张伟在北京的阿里巴巴工作。"]
_WARM_QUESTION = "Who runs procurement at Northwind?"


async def warm_up(memory: "AsyncMemory") -> None:
    """Check that the store answers, then load the embedder and the extractor (English and Chinese)."""
    await memory.stats()

    def load() -> None:
        embedder = memory.embedder
        embedder.encode_with_tokens(_WARM_TEXTS)
        embedder.encode_with_tokens(_WARM_TEXTS[:1])  # one text (an add): its trace, built on first use
        query_side = getattr(embedder, "encode_query_with_tokens", None)
        if query_side is not None:  # a recall's query: the default model's int8 copy, built on first use (~1 s)
            query_side([_WARM_QUESTION])
        memory.extractor.extract_many(_WARM_TEXTS)

    await anyio.to_thread.run_sync(load)


async def warm_users(memory: "AsyncMemory", users: Sequence[str]) -> None:
    """Load what the store keeps of each user for its searches (:meth:`ripple.AsyncMemory.warm`: a Neo4j
    store's near cache of vectors and walk edges, the embedded store's vector indexes), one after the
    other, so that these users' first recalls are not the ones that load them."""
    for user in users:
        await memory.warm(user_id=user)
