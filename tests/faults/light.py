"""A model-free :class:`ripple.Memory` for fault tests: the real engine and stores, hashed vectors,
a gazetteer instead of spaCy, so that a child process is ready in a second rather than ten."""

from __future__ import annotations

import random
from typing import Any

NAMES = {"Dana Whitfield": "PERSON", "Northwind": "ORG", "Bluebird": "PRODUCT", "张伟": "PERSON", "北京": "GPE",
         "阿里巴巴": "ORG"}

_WORDS = ("shipment warehouse invoice budget deadline review meeting supplier contract launch design"
          " customer renewal audit payroll roadmap hiring office travel dinner offsite training").split()
_ZH = "预算 会议 合同 供应商 发票 上线 设计 客户 审计 招聘 办公室 出差 晚餐 培训 路线图".split()


def light_memory(path: str | None, **kwargs: Any) -> Any:
    from extractors import GazetteerExtractor
    from ripple import Memory
    from ripple.embedding import HashEmbedder

    return Memory(path, embedder=HashEmbedder(64), extractor=GazetteerExtractor(NAMES), **kwargs)


def light_async_memory(path: str, **kwargs: Any) -> Any:
    from extractors import GazetteerExtractor
    from ripple import AsyncMemory
    from ripple.embedding import HashEmbedder

    return AsyncMemory(path, embedder=HashEmbedder(64), extractor=GazetteerExtractor(NAMES), **kwargs)


def batch_items(user: str, batch: int, size: int) -> list[dict[str, Any]]:
    """``size`` distinct texts (English and Chinese) for one ``add_many`` call, tagged with the batch number."""
    rng = random.Random(batch)
    items = []
    for i in range(size):
        if i % 4 == 3:
            text = f"{rng.choice(list(NAMES))} 说 " + "，".join(rng.sample(_ZH, 4)) + f"（第 {batch} 批 {i} 条）"
        else:
            text = f"{rng.choice(list(NAMES))} mentioned the " + " and the ".join(rng.sample(_WORDS, 4)) \
                + f" (batch {batch}, item {i})."
        items.append({"text": text, "user_id": user, "session_id": f"s{batch}",
                      "metadata": {"batch": batch, "item": i}})
    return items
