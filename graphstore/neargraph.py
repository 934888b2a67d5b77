"""A server store's near graph: the walk edges of a hot user, in its own process.

Why: at 100k memories a Neo4j recall's spreading read (the session and entity channels' neighbourhoods,
one statement) took 15-19 ms p50 and 28 ms p95 on the server, against ~7 ms for the embedded store's
walk of the same rows: most of the gap between the two stores' recalls.  The rows a walk reads are few
(~1,500) but the server builds each one in its Cypher runtime.  Kept here, a user's MENTIONS, NEXT and
RELATED edges (with the degree and label of its entities) answer the same reads in-process.

What it holds: the user's edges of :data:`WALK_TYPES` as two compressed adjacency arrays (out and in,
numpy), an int per node and the entities' degree and label: ~20 bytes an edge each way (a 100k-memory
user of ~400k edges: ~25 MB with its id strings), against ~110 bytes a row as Python tuples.

Coherence is the near cache's (:mod:`graphstore.nearcache`): a graph is read after the user's revision
and answers only while the user is still at it.  Unlike the vectors, a write of this process does not
update it in place (the degrees of the entities a write touches are counted on the server): the graph is
dropped, and read again (beside the recalls) once two walks in a row find the user at one revision.  A
user written between every two recalls therefore stays on the server's walk, as before, and costs no
reload.

This module does no I/O: :mod:`graphstore.neo4j` reads the rows and hands them to :meth:`NearGraph.from_rows`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, NamedTuple, Sequence

from .records import EDGE_MENTIONS, EDGE_NEXT, EDGE_RELATED, Neighbor, NeighbourhoodAsk

if TYPE_CHECKING:
    import numpy as np

__all__ = ["NearGraph", "WALK_TYPES", "holds", "row_order"]

WALK_TYPES: tuple[str, ...] = (EDGE_MENTIONS, EDGE_NEXT, EDGE_RELATED)
"""The edge types a near graph holds: those the recall's walks read (a read of any other goes to the server)."""

_NOT_ENTITY = -2  # a node's degree when it is not an entity (a memory: degree 1 in its rows, never a hub)
_NO_DEGREE = -1  # an entity without a degree (no hub cut-off lets it pass, as ``null <= $cap`` does not)
_ROW_OVERHEAD = 120  # bytes of Python objects per node (its id string, its slot in the position dict)


def holds(edge_types: Sequence[str]) -> bool:
    """Whether a near graph can answer a walk over ``edge_types``: each is one of :data:`WALK_TYPES`."""
    return all(t in WALK_TYPES for t in edge_types)


def row_order(row: Neighbor) -> tuple[str, str, str, float]:
    """The order of a node's rows in a Neo4j store's reads, from its cache or from the server: by type,
    target, predicate and weight.  (The server gives a node's relationships in the order of its
    relationship chain, which the cache cannot know; a walk adds the flows of one source in row order,
    so both must agree on one for their sums to be the same to the bit.)"""
    return (row.type, row.target, row.predicate or "", row.weight)


class _Adjacency(NamedTuple):
    """One direction's edges, grouped by the node they are read from (rows ``ptr[i]:ptr[i + 1]`` of node ``i``)."""

    ptr: "np.ndarray"  # int64, one more than the nodes
    other: "np.ndarray"  # int32: the node at the edge's other end
    type: "np.ndarray"  # int8: index into WALK_TYPES
    weight: "np.ndarray"  # float64: the edge's weight, as the server gives it
    predicate: "np.ndarray"  # int32: index into the graph's predicate table

    @property
    def nbytes(self) -> int:
        return int(self.ptr.nbytes + self.other.nbytes + self.type.nbytes + self.weight.nbytes + self.predicate.nbytes)


class NearGraph:
    """A user's walk edges; :meth:`neighbourhood` answers what the server's neighbourhood read answers."""

    __slots__ = ("_ids", "_pos", "_degree", "_label", "_predicates", "_out", "_in", "edges")

    def __init__(self, ids: list[str], degree: list[int], label: list[str | None], predicates: list[str | None],
                 out: _Adjacency, into: _Adjacency, edges: int) -> None:
        self._ids = ids
        self._pos = {n: i for i, n in enumerate(ids)}
        self._degree = degree
        self._label = label
        self._predicates = predicates
        self._out = out
        self._in = into
        self.edges = edges

    @classmethod
    def from_rows(
        cls,
        entities: Iterable[tuple[str, int | None, str | None]],
        edges: Iterable[tuple[str, str, str, float, str | None]],
    ) -> "NearGraph":
        """From the user's entities ``(id, degree, label)`` and edges ``(source, type, target, weight,
        predicate)`` (edges of other types are left out)."""
        import numpy as np

        ids: list[str] = []
        pos: dict[str, int] = {}
        degree: list[int] = []
        label: list[str | None] = []

        def node(n: str) -> int:
            i = pos.get(n)
            if i is None:
                i = pos[n] = len(ids)
                ids.append(n)
                degree.append(_NOT_ENTITY)
                label.append("")
            return i

        for eid, deg, lab in entities:
            i = node(eid)
            degree[i] = _NO_DEGREE if deg is None else int(deg)
            label[i] = lab
        type_of = {t: k for k, t in enumerate(WALK_TYPES)}
        predicates: list[str | None] = []
        pred_of: dict[str | None, int] = {}
        src: list[int] = []
        dst: list[int] = []
        types: list[int] = []
        weights: list[float] = []
        preds: list[int] = []
        for s, typ, t, w, p in edges:
            k = type_of.get(typ)
            if k is None:
                continue
            q = pred_of.get(p)
            if q is None:
                q = pred_of[p] = len(predicates)
                predicates.append(p)
            src.append(node(s))
            dst.append(node(t))
            types.append(k)
            weights.append(float(w))
            preds.append(q)
        a = np.asarray(src, dtype=np.int32)
        b = np.asarray(dst, dtype=np.int32)
        ty = np.asarray(types, dtype=np.int8)
        we = np.asarray(weights, dtype=np.float64)
        pr = np.asarray(preds, dtype=np.int32)
        n = len(ids)
        return cls(ids, degree, label, predicates, _group(a, b, ty, we, pr, n), _group(b, a, ty, we, pr, n), len(src))

    @property
    def nbytes(self) -> int:
        """What the graph holds in memory (its arrays and, roughly, its nodes' Python objects)."""
        return self._out.nbytes + self._in.nbytes + len(self._ids) * (_ROW_OVERHEAD + 16)

    def neighbourhood(self, ask: NeighbourhoodAsk) -> dict[str, list[Neighbor]]:
        """Every node a walk of at most ``ask.reach`` steps can expand from the sources, with its rows:
        the server's neighbourhood read (``graphstore.neo4j._neighbourhood``), level by level: the
        edges of the asked types both ways (a self-loop in both), no step into an entity above the degree
        cap nor out of one, continuing only from entities of ``ask.labels`` (None: any); each node's rows
        in :func:`row_order`."""
        allowed = {k for k, t in enumerate(WALK_TYPES) if t in set(ask.edge_types)}
        cap = -1 if ask.max_degree is None else int(ask.max_degree)
        labels = None if ask.labels is None else set(ask.labels)
        sources = list(dict.fromkeys(ask.sources))
        out: dict[str, list[Neighbor]] = {}
        level = [self._pos[s] for s in sources if s in self._pos]
        seen = set(level)
        reach = max(0, int(ask.reach))
        for k in range(reach + 1):
            onward: list[int] = []
            for i in level:
                out[self._ids[i]] = self._rows(i, allowed, cap, labels, onward if k < reach else None) if allowed else []
            if k == reach:
                break
            level = []
            for j in onward:
                if j not in seen:
                    seen.add(j)
                    level.append(j)
        for s in sources:
            out.setdefault(s, [])
        return out

    def _rows(self, i: int, allowed: set[int], cap: int, labels: set[str] | None,
              onward: list[int] | None) -> list[Neighbor]:
        """Node ``i``'s rows (in :func:`row_order`) and, into ``onward``, the nodes a walk continues to from it."""
        degree, label, ids, preds = self._degree, self._label, self._ids, self._predicates
        d = degree[i]
        if cap >= 0 and d != _NOT_ENTITY and not 0 <= d <= cap:
            return []  # a hub (or an entity without a degree) is not left
        source = ids[i]
        rows: list[Neighbor] = []
        for adj in (self._out, self._in):
            lo, hi = int(adj.ptr[i]), int(adj.ptr[i + 1])
            if lo == hi:
                continue
            for t, ty, w, p in zip(adj.other[lo:hi].tolist(), adj.type[lo:hi].tolist(),
                                   adj.weight[lo:hi].tolist(), adj.predicate[lo:hi].tolist()):
                if ty not in allowed:
                    continue
                td = degree[t]
                if td == _NOT_ENTITY:  # a memory: degree 1
                    if cap == 0:
                        continue
                    rows.append(Neighbor(source, ids[t], WALK_TYPES[ty], w, 1, preds[p], ""))
                    if onward is not None:
                        onward.append(t)
                    continue
                if cap >= 0 and not 0 <= td <= cap:
                    continue
                tl = label[t]
                rows.append(Neighbor(source, ids[t], WALK_TYPES[ty], w, td, preds[p], tl))
                if onward is not None and (labels is None or tl in labels):
                    onward.append(t)
        rows.sort(key=row_order)
        return rows


def _group(frm: "np.ndarray", to: "np.ndarray", types: "np.ndarray", weights: "np.ndarray",
           preds: "np.ndarray", n: int) -> _Adjacency:
    """Edges grouped by ``frm``."""
    import numpy as np

    order = np.argsort(frm, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(frm, minlength=n), out=ptr[1:])
    return _Adjacency(ptr, to[order], types[order], weights[order], preds[order])
