"""The recall walk, written once as an I/O-free generator: seed -> spread -> merge -> rerank.

``recall_plan`` yields requests (:mod:`graphstore.requests`: "neighbours of
these ids", "token vectors of these candidates"; :mod:`ripple._requests`: "the
query's vectors") and receives their answers; it never touches a store
itself.  :class:`ripple.Memory` drives it with plain calls,
:class:`ripple.AsyncMemory` with ``await``, so the two APIs cannot disagree
(the pattern of httpx's ``Auth.auth_flow``).

The pipeline only orders the stages; what each does is data in the
:class:`~ripple.recall.config.RecallConfig` and code in its own module:
:mod:`.seed` (the seed methods), :mod:`.channels` (spreading channels, as
plug-ins), :mod:`.merge` (activation and the record priors) and :mod:`.rerank`.
Every candidate keeps its score parts and, when it was reached by spreading,
the edge path from a seed.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any, Generator

from graphstore.records import StoredMemory
from graphstore.requests import EntityNames, GetMemories, WalksLocally

from .._requests import CollectAhead, ReadAhead, Request
from .candidates import PlanResult, Seeded, StageTimer
from .channels import spread_stage
from .config import RecallConfig
from .merge import apply_priors, kept_count, merge_channels, names_of_speakers, title_links
from .query import QueryInput
from .relevance import assign_relevance, query_signals
from .rerank import rerank_stage
from .scoring import top
from .seed import seed_stage

__all__ = ["recall_plan"]


def recall_plan(q: QueryInput, config: RecallConfig) -> Generator[Request, Any, PlanResult]:
    """Run one recall; see the module docstring for the protocol."""
    timer = StageTimer(q.encode_ms, q.load_ms)
    q, seeded = yield from seed_stage(q, config, timer)
    # the records the merge will most likely keep, read beside the spreading while it waits on the store
    # (a server store's walks; one answered in this process would only take turns with the read)
    ahead = None
    if not seeded.final and seeded.cands and not (yield WalksLocally(q.user_id)):
        ahead = yield ReadAhead(GetMemories(_likely_kept(seeded, config, q.k)))
    results = yield from spread_stage(q, config, seeded, timer)
    cands = merge_channels(seeded, results, config, q.k)
    if not seeded.final:
        timer.lap("merge", seeded.scored)
    records = yield from _records([c.id for c in cands], ahead)
    statuses = tuple(config.merge.include_statuses)
    cands = [c for c in cands if c.id in records and records[c.id].status in statuses]
    cands, time_w = apply_priors(q, cands, records, config.merge)
    cands = title_links(cands, records, config.merge.title_link_weight, config.merge.title_link_sources,
                        config.merge.title_link_fan_damping)
    timer.lap("merge.records", len(cands), time_weight=time_w)
    cands = yield from rerank_stage(q, cands, records, config.rerank, timer)
    hits = cands[: q.k]
    named = names_of_speakers(seeded.unknown_names, records.values(), q.text) if config.merge.speaker_aliases else 0
    signals = query_signals(q, seeded, named)
    assign_relevance(hits, seeded.cands, signals, config.relevance)
    timer.lap("relevance", len(hits), **{k: round(v, 4) for k, v in asdict(signals).items()})
    names: dict[str, str] = {}
    for res in results.values():
        names.update(res.entity_names)
    need = sorted({e.source for c in hits for e in c.path if e.source.startswith("e_")}
                  | {e.target for c in hits for e in c.path if e.target.startswith("e_")})
    if need:
        names.update((yield EntityNames(need)))
    for c in hits:
        if not math.isfinite(c.score):
            c.score = 0.0
    timer.lap("trim", len(hits))
    return PlanResult(hits, records, names, timer.stages)


def _likely_kept(seeded: Seeded, config: RecallConfig, k: int) -> list[str]:
    """The seeds the merge will most likely keep: as many as it keeps, best seed score first.  Why a
    guess is enough: spreading adds to seed scores, so the kept ones are mostly the best seeds (at 100k
    synthetic memories, 91 of 100 on median); the plan reads the few others after the merge."""
    return top({i: c.seed for i, c in seeded.cands.items()}, kept_count(config, k))


def _records(ids: list[str], ahead: Any) -> Generator[Request, Any, dict[str, StoredMemory]]:
    """The records of ``ids`` (in that order): those a read beside the spreading brought, then the rest."""
    got: dict[str, StoredMemory] = {}
    early = (yield CollectAhead(ahead)) if ahead is not None else None
    if early is not None:
        got = {r.id: r for r in early}
    missing = [i for i in ids if i not in got]
    if missing:
        got.update((r.id, r) for r in (yield GetMemories(missing)))
    return {i: got[i] for i in ids if i in got}
