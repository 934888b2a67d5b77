"""Stage 4, rerank: reorder the head of the merged list with a sharper (and dearer) scorer."""

from __future__ import annotations

from typing import Any, Generator, Mapping

from graphstore.records import StoredMemory
from graphstore.requests import TokenVectors

from .._requests import CrossEncode, Request
from .candidates import Candidate, StageTimer
from .config import RerankConfig, RerankMethod
from .query import QueryInput
from .scoring import minmax
from .seed import maxsim_blobs

__all__ = ["rerank_stage", "blend_rerank"]


def rerank_stage(q: QueryInput, cands: list[Candidate], records: Mapping[str, StoredMemory], rr: RerankConfig,
                 timer: StageTimer) -> Generator[Request, Any, list[Candidate]]:
    """Token MaxSim or a cross-encoder over the top ``top_n``, blended into their scores."""
    if rr.method == RerankMethod.NONE:
        return cands
    head = cands[: rr.top_n]
    if rr.method == RerankMethod.MAXSIM and q.tokens is not None:
        import numpy as np

        blobs = yield TokenVectors([c.id for c in head])
        raw, _ = maxsim_blobs(np.asarray(q.tokens, dtype=np.float32), blobs, q.token_dim)
    else:
        pairs = [(q.text, records[c.id].text) for c in head]
        scored: list[float] = yield CrossEncode(rr.model, pairs)
        raw = {c.id: float(s) for c, s in zip(head, scored)}
    out = blend_rerank(head, minmax(raw), rr.weight) + cands[rr.top_n :]
    timer.lap(f"rerank.{rr.method.value}", len(head))
    return out


def blend_rerank(head: list[Candidate], scores: Mapping[str, float], weight: float) -> list[Candidate]:
    """Mix normalised reranker scores into the merged scores of the head, and re-sort it."""
    base = minmax({c.id: c.score for c in head})
    for c in head:
        c.rerank = scores.get(c.id, 0.0)
        c.score = (1 - weight) * base.get(c.id, 0.0) + weight * c.rerank
    return sorted(head, key=lambda c: (-c.score, c.id))
