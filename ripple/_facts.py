"""A user's facts, read from the graph: what :meth:`ripple.Memory.facts` returns.

The write path stores a first-person fact ("my budget is 60k", "我对花生过敏")
as a ``RELATED`` edge from the user's ``@self`` entity to the value, with the
stating memory as its evidence, and only when the statement passed the
confidence gate (hedged statements stay in their memory).  A newer value of a
single-valued attribute supersedes the old memory, so a fact's validity is
its evidence memory's: from its event time until ``valid_to``.  This module
turns those edges into :class:`ripple.models.Fact` rows; like the rest of the
engine it is an I/O-free generator of store requests, shared by the sync and
async APIs.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import cast

from graphstore.protocol import ACTIVE, INVALIDATED, SUPERSEDED
from graphstore.records import EDGE_RELATED
from graphstore.requests import EntityNames, Expand, GetEntities, GetMemories, RelatedEdges

from ._ingest import SELF_KEY
from .models import Fact
from ._requests import Op
from .models import MemoryStatus

__all__ = ["facts_plan"]

_NOT_FACTS = frozenset({"co_mention"})


def _dt(ts: float | None) -> datetime | None:
    return None if ts is None else datetime.fromtimestamp(ts, tz=timezone.utc)


def facts_plan(user_id: str, *, include_history: bool = False) -> Op[list[Fact]]:
    """The user's facts, current ones only unless ``include_history`` (then superseded ones too).

    Retracted (invalidated) evidence never makes a fact.  Ordered by
    predicate, then by when the fact was stated.
    """
    selves = [e for e in (yield GetEntities(user_id, [SELF_KEY])) if e.key == SELF_KEY]
    if not selves:
        return []
    self_id = selves[0].id
    # expand() names the predicates on the user's edges (both directions); related_edges() then
    # reads the outgoing ones with their evidence
    around = yield Expand(user_id, [self_id], [EDGE_RELATED])
    predicates = sorted({n.predicate for n in around if n.predicate and n.predicate not in _NOT_FACTS})
    if not predicates:
        return []
    edges = [e for e in (yield RelatedEdges(user_id, [self_id], predicates)) if e.evidence]
    if not edges:
        return []
    names = yield EntityNames(sorted({e.dst for e in edges}))
    records = {r.id: r for r in (yield GetMemories(sorted({e.evidence for e in edges if e.evidence})))}
    wanted = (ACTIVE, SUPERSEDED) if include_history else (ACTIVE,)
    out: list[Fact] = []
    for e in edges:
        rec = records.get(e.evidence or "")
        if rec is None or rec.status not in wanted or rec.status == INVALIDATED:
            continue
        out.append(Fact(
            subject=SELF_KEY, predicate=e.predicate, value=names.get(e.dst, e.dst).strip().rstrip(".。,，;；!！"), memory_id=rec.id, text=rec.text,
            confidence=rec.confidence, valid_from=datetime.fromtimestamp(rec.at, tz=timezone.utc),
            valid_to=_dt(rec.valid_to), status=cast(MemoryStatus, rec.status), session_id=rec.session_id,
        ))
    out.sort(key=lambda f: (f.predicate, f.valid_from, f.memory_id))
    return out
