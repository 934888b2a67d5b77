"""Warm-up: what a server does once at start-up so that no request pays for loading a model."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from ripple import AsyncMemory

__all__ = ["warm_up"]

# Texts that load every lazily built model: the embedder, spaCy (English) and jieba (Chinese).
_WARM_TEXTS = ["Dana Whitfield runs procurement at Northwind Traders.", "张伟在北京的阿里巴巴工作。"]


async def warm_up(memory: "AsyncMemory") -> None:
    """Check that the store answers, then load the embedder and the extractor (English and Chinese)."""
    await memory.stats()

    def load() -> None:
        memory.embedder.encode_with_tokens(_WARM_TEXTS)
        memory.extractor.extract_many(_WARM_TEXTS)

    await anyio.to_thread.run_sync(load)
