"""The plain data a recall plan passes from stage to stage."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from graphstore.records import StoredMemory

from .activation import Edge

__all__ = ["Candidate", "Seeded", "ChannelResult", "PlanResult", "StageTimer"]


@dataclass(slots=True)
class Candidate:
    """One memory on its way through the plan, with every part of its score."""

    id: str
    score: float = 0.0
    seed: float = 0.0
    lexical: float = 0.0
    dense: float = 0.0
    late: float = 0.0
    multilingual: float = 0.0  # cosine in the multilingual route's space (CJK memories; ripple.recall.multilingual)
    coverage: float = 0.0  # share of the query's informative words the memory holds
    activation: float = 0.0  # the channels' weighted sum
    channels: dict[str, float] = field(default_factory=dict)  # channel name -> activation (before its weight)
    recency: float = 1.0
    importance: float = 0.5
    confidence: float = 1.0
    tier: str = "hot"
    rerank: float | None = None
    relevance: float = 0.0  # calibrated: how likely this memory is relevant at all (see ripple.recall.relevance)
    via: str = "seed"  # "seed", or the name of the channel that gave it most of its score
    path: list[Edge] = field(default_factory=list)


@dataclass(slots=True)
class Seeded:
    """What the seed stage hands on.

    ``final`` marks a baseline's ranking (dense, BM25, RRF): it is used as it
    is, with no spreading and no merge formula.  Otherwise ``norm`` holds each
    seed's score divided by the best one (``top``), which the channels spread
    from, and ``ranked`` the seeds best first.
    """

    cands: dict[str, Candidate]
    final: bool
    norm: dict[str, float] = field(default_factory=dict)
    ranked: list[str] = field(default_factory=list)
    top: float = 1.0
    n_docs: int | None = None  # the user's memories as the lexical route counted them (None: it did not run)
    known: float = 1.0  # share of the query's informative words the user's memories hold at all
    names_known: float = 1.0  # share of the names the query asks about that the user's memories hold
    unknown_names: tuple[str, ...] = ()  # the names no memory's words hold (see merge.names_of_speakers)
    n_names: int = 0  # how many names the query asks about
    # memories the merge scored: the seeds and every memory only spreading reached, of which only the
    # kept ones join ``cands`` (0 before the merge; see ripple.recall.merge.merge_channels)
    scored: int = 0


@dataclass(slots=True)
class ChannelResult:
    """What a spreading channel returns: activation of the memories it reached (before its weight), the
    best incoming edge of each reached node (for explanation paths), the sources it spread from, and the
    display names of entities it learned on the way."""

    activation: dict[str, float] = field(default_factory=dict)
    parents: dict[str, Edge] = field(default_factory=dict)
    sources: set[str] = field(default_factory=set)
    entity_names: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class PlanResult:
    hits: list[Candidate]
    records: dict[str, StoredMemory]
    entity_names: dict[str, str]
    stages: list[tuple[str, float, int, dict[str, Any]]]


class StageTimer:
    """Wall time and size of each stage, in order (the result's trace)."""

    def __init__(self, encode_ms: float = 0.0, load_ms: float = 0.0) -> None:
        self.stages: list[tuple[str, float, int, dict[str, Any]]] = []
        if load_ms:
            self.stages.append(("load.models", load_ms, 1, {}))
        if encode_ms:
            self.stages.append(("seed.encode", encode_ms, 1, {}))
        self._t = time.perf_counter()

    def lap(self, name: str, size: int, **detail: Any) -> None:
        now = time.perf_counter()
        self.stages.append((name, (now - self._t) * 1000.0, size, detail))
        self._t = now
