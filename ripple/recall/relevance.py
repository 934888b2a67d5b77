"""Calibrated relevance: a score that means the same for every query, so "nothing relevant" can be said.

Ranking scores are normalised per query (the best hit always scores about
1), so an unrelated question ("what is the capital of Peru?" asked of a user
who only talked about work) returns the user's memories at full score.  An
agent needs the opposite: a number in [0, 1] it can hold against a fixed
floor.  Every hit gets one from signals that are absolute rather than
per-query, of two kinds:

* the hit's own: the dense cosine and the token MaxSim between query and
  memory (one embedder always gives the same scale) and the share of the
  query's informative words the memory holds;
* the query's: how much of the query the user's memories know at all (the
  share of its informative words, the share of the names it asks about: a
  question about "Joanna" asked of a user who never mentioned her is about
  something else), and the best cosine, MaxSim and word share any candidate
  reached (an answerable question has at least one close memory);
* the query's script: the default embedder (MiniLM) was trained on English,
  and its cosines between Chinese texts sit on another scale;
* the multilingual route (:mod:`ripple.recall.multilingual`), when it ran: the
  hit's e5 cosine, the best one in the pool, and that it ran at all (e5's
  cosines sit in a narrow band of their own, ~.7-.9).

A logistic model maps them to a probability; its coefficients are fitted on
development data by ``python -m benchmarks calibrate`` (see
:class:`~ripple.recall.config.RelevanceConfig` for the fitted values, the
data and the command).  A memory reached by spreading is as relevant as the
seed it was reached from, scaled by the activation that reached it, unless
its own signals say more.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from .candidates import Candidate, Seeded
from .config import RelevanceConfig
from .query import QueryInput

__all__ = ["QuerySignals", "query_signals", "features", "relevance", "assign_relevance", "through_source", "FEATURES",
           "HIT_FEATURES", "QUERY_FEATURES"]

#: The hit's own inputs (named as in :class:`~ripple.models.ScoreParts`) ...
HIT_FEATURES: tuple[str, ...] = ("late", "dense", "coverage", "multilingual")
#: ... and the query's (named as in :class:`QuerySignals`, which the recall trace's "relevance" stage shows).
QUERY_FEATURES: tuple[str, ...] = ("known", "names_known", "top_late", "top_dense", "top_coverage", "cjk",
                                   "top_multilingual", "multilingual_route")
#: The model's inputs, in the order of :func:`features` (and of RelevanceConfig's weights).
FEATURES: tuple[str, ...] = HIT_FEATURES + QUERY_FEATURES


@dataclass(frozen=True, slots=True)
class QuerySignals:
    """What the whole query has: how much of it the user knows, and its best candidate signals."""

    known: float = 1.0
    names_known: float = 1.0
    top_late: float = 0.0
    top_dense: float = 0.0
    top_coverage: float = 0.0
    cjk: float = 0.0  # 1 for a query in a CJK script, else 0
    top_multilingual: float = 0.0  # the best cosine of the multilingual route (0 when it did not run)
    multilingual_route: float = 0.0  # 1 when the multilingual route ran, else 0


def query_signals(q: QueryInput, seeded: Seeded, speakers_named: int = 0) -> QuerySignals:
    """The query's signals from every scored candidate (the seed pool, not only the hits).

    A memory only spreading reached has none of these signals (0.0 each); the
    merge scored such memories without making candidates of them all
    (``seeded.scored`` counts them), so they count here as a 0.0 floor.
    ``speakers_named``: how many of the names no memory's words hold are a
    candidate's speaker after all (:func:`ripple.recall.merge.names_of_speakers`).
    """
    pool = seeded.cands.values()
    floor = (0.0,) if seeded.scored > len(seeded.cands) else ()
    top_multilingual = max((*floor, *(c.multilingual for c in pool)), default=0.0)
    return QuerySignals(
        known=seeded.known,
        names_known=min(1.0, seeded.names_known + speakers_named / seeded.n_names) if seeded.n_names else seeded.names_known,
        top_late=max((*floor, *(c.late for c in pool)), default=0.0),
        top_dense=max((*floor, *(c.dense for c in pool)), default=0.0),
        top_coverage=max((*floor, *(c.coverage for c in pool)), default=0.0), cjk=0.0 if q.language == "en" else 1.0,
        top_multilingual=top_multilingual, multilingual_route=1.0 if top_multilingual > 0 else 0.0,
    )


def features(c: Candidate, s: QuerySignals) -> tuple[float, ...]:
    """The model's inputs for one candidate (see :data:`FEATURES`)."""
    return (c.late, c.dense, c.coverage, c.multilingual, s.known, s.names_known, s.top_late, s.top_dense,
            s.top_coverage, s.cjk, s.top_multilingual, s.multilingual_route)


def relevance(x: Sequence[float], cfg: RelevanceConfig) -> float:
    """The logistic model: ``sigmoid(bias + sum(weight * input))``."""
    z = cfg.bias + sum(getattr(cfg, name) * v for name, v in zip(FEATURES, x))
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


def assign_relevance(cands: Sequence[Candidate], pool: Mapping[str, Candidate], signals: QuerySignals,
                     cfg: RelevanceConfig) -> None:
    """Set ``relevance`` on ``cands``; ``pool`` holds every scored candidate, so the source of a
    spread hit's path can be looked up even when it did not make the list."""
    own: dict[str, float] = {}

    def of(c: Candidate) -> float:
        if c.id not in own:
            own[c.id] = relevance(features(c, signals), cfg)
        return own[c.id]

    for c in cands:
        source = pool.get(c.path[0].source) if c.path and c.via in c.channels else None
        c.relevance = through_source(of(c), None if source is None else of(source), c.channels.get(c.via, 0.0))


def through_source(own: float, source: float | None, activation: float) -> float:
    """A spread hit's relevance: its own, or its source's scaled by the activation that reached it."""
    return own if source is None else max(own, source * min(1.0, activation))
