"""Spreading activation over a weighted graph, hop by hop.

Collins & Loftus (1975), "A spreading-activation theory of semantic
processing"; Anderson (1983), "A spreading activation theory of memory".
Activation starts at the seeds and flows along weighted edges, multiplied by
``decay`` at each hop and divided by ``degree ** damping`` when it leaves a
node with many neighbours (a hub: "the user", a speaker, "work"), pruned
below ``threshold`` and capped to the ``frontier_cap`` strongest nodes.

The function is pure: ``neighbors`` is any callable that returns the weighted
neighbours of a whole frontier in one call, so the same code serves a store
(one batched query per hop), a dict in tests, or the async driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generator, Iterable, Mapping, NamedTuple, Protocol, Sequence, TypeVar

__all__ = ["Edge", "Step", "SpreadResult", "spread", "spread_flow", "spread_steps", "spread_reference"]


class Edge(NamedTuple):
    """A neighbour step as the activation function sees it (a tuple: built per row on the hot path)."""

    source: str
    target: str
    weight: float
    source_degree: int = 1
    type: str = ""
    predicate: str = ""


@dataclass(slots=True)
class SpreadResult:
    """Activation per reached node (seeds excluded) and the best incoming edge of each."""

    activation: dict[str, float]
    parent: dict[str, Edge]
    frontier_sizes: list[int]


NeighborsFn = Callable[[Sequence[str]], Iterable[Edge]]


def spread_flow(
    seeds: Mapping[str, float],
    *,
    max_hops: int = 2,
    decay: float | Sequence[float] = 0.5,
    damping: float = 1.0,
    threshold: float = 1e-4,
    frontier_cap: int = 400,
    aggregate: str = "sum",
    degree_offset: int = 0,
) -> Generator[list[str], Iterable[Edge], SpreadResult]:
    """:func:`spread` as a generator: yields each hop's frontier, receives its edges.

    This is the form the recall pipeline drives, so that each hop becomes one
    batched store call (sync or async) without the algorithm knowing about I/O.
    """
    decays = _hop_decays(decay, max_hops)
    seed_set = set(seeds)
    total: dict[str, float] = {}
    best_in: dict[str, tuple[float, Edge]] = {}
    current = {n: a for n, a in seeds.items() if a > threshold}
    sizes: list[int] = []
    divisors: dict[int, float] = {}  # hub damping per source degree: the power is the costly part of the loop
    for hop in range(max_hops):
        if not current:
            break
        frontier = sorted(current, key=lambda n: (-current[n], n))[:frontier_cap]
        current = {n: current[n] for n in frontier}
        sizes.append(len(frontier))
        edges = yield frontier
        gained: dict[str, float] = {}
        for e in edges:
            a = current.get(e.source)
            if a is None or e.target == e.source or e.target in seed_set:
                continue
            divisor = divisors.get(e.source_degree)
            if divisor is None:
                divisor = divisors[e.source_degree] = max(e.source_degree - degree_offset, 1) ** damping if damping else 1.0
            flow = a * e.weight * decays[hop] / divisor
            if flow <= threshold:
                continue
            if aggregate == "max":
                gained[e.target] = max(gained.get(e.target, 0.0), flow)
            else:
                gained[e.target] = gained.get(e.target, 0.0) + flow
            prev = best_in.get(e.target)
            if e.target not in total and (prev is None or flow > prev[0]):
                best_in[e.target] = (flow, e)
        for n, a in gained.items():
            total[n] = max(total.get(n, 0.0), a) if aggregate == "max" else total.get(n, 0.0) + a
        current = {n: a for n, a in gained.items() if a > threshold}
    return SpreadResult(total, {n: e for n, (_, e) in best_in.items()}, sizes)


class Step(Protocol):
    """What :func:`spread_steps` reads of a neighbour row (a store's row as it comes)."""

    @property
    def source(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def weight(self) -> float: ...


S = TypeVar("S", bound=Step)


def spread_steps(
    seeds: Mapping[str, float],
    to_edge: Callable[[S, int], Edge],
    *,
    max_hops: int = 2,
    decay: float | Sequence[float] = 0.5,
    damping: float = 1.0,
    threshold: float = 1e-4,
    frontier_cap: int = 400,
    aggregate: str = "sum",
    degree_offset: int = 0,
) -> Generator[list[str], tuple[Sequence[S], Mapping[str, int]], SpreadResult]:
    """:func:`spread_flow` over a store's rows as they come: each hop receives ``(rows, degree)``,
    ``degree`` the degree of every row's source, and ``to_edge(row, degree)`` makes an :class:`Edge`
    of the few rows that become a node's best incoming edge.

    The same arithmetic in the same order as :func:`spread_flow` (the spec it is tested against),
    without an :class:`Edge` per row: the thousand rows a recall's entity hop reads cost one pass.
    """
    decays = _hop_decays(decay, max_hops)
    seed_set = set(seeds)
    total: dict[str, float] = {}
    best_in: dict[str, tuple[float, S, int]] = {}
    current = {n: a for n, a in seeds.items() if a > threshold}
    sizes: list[int] = []
    divisors: dict[int, float] = {}
    keep_max = aggregate == "max"
    for hop in range(max_hops):
        if not current:
            break
        frontier = sorted(current, key=lambda n: (-current[n], n))[:frontier_cap]
        current = {n: current[n] for n in frontier}
        sizes.append(len(frontier))
        rows, degree = yield frontier
        d = decays[hop]
        gained: dict[str, float] = {}
        for r in rows:
            source = r.source
            a = current.get(source)
            if a is None:
                continue
            target = r.target
            if target == source or target in seed_set:
                continue
            deg = degree[source]
            divisor = divisors.get(deg)
            if divisor is None:
                divisor = divisors[deg] = max(deg - degree_offset, 1) ** damping if damping else 1.0
            flow = a * r.weight * d / divisor
            if flow <= threshold:
                continue
            had = gained.get(target)
            if had is None:
                gained[target] = flow
            elif keep_max:
                if flow > had:
                    gained[target] = flow
            else:
                gained[target] = had + flow
            if target not in total:
                prev = best_in.get(target)
                if prev is None or flow > prev[0]:
                    best_in[target] = (flow, r, deg)
        for n, a in gained.items():
            old = total.get(n)
            total[n] = a if old is None else (max(old, a) if keep_max else old + a)
        current = {n: a for n, a in gained.items() if a > threshold}
    return SpreadResult(total, {n: to_edge(r, deg) for n, (_, r, deg) in best_in.items()}, sizes)


def _hop_decays(decay: float | Sequence[float], max_hops: int) -> list[float]:
    """One decay per hop: a single value for every hop, or a sequence whose last value repeats."""
    decays = [float(decay)] * max_hops if isinstance(decay, (int, float)) else [float(d) for d in decay]
    if len(decays) < max_hops:
        decays += [decays[-1] if decays else 0.5] * (max_hops - len(decays))
    return decays


def spread(
    neighbors: NeighborsFn,
    seeds: Mapping[str, float],
    **options: Any,
) -> SpreadResult:
    """Spread activation from ``seeds`` hop by hop.

    Parameters
    ----------
    neighbors:
        ``neighbors(frontier) -> edges`` for every node of the frontier at once.
    seeds:
        Starting activation per node (typically the normalised seed scores).
    max_hops:
        Edge traversals (2 = memory -> entity -> memory).
    decay:
        Multiplier per hop, or a sequence with one multiplier per hop.
    damping:
        Exponent of the source-degree divisor: 1.0 divides by the degree, 0 disables.
    degree_offset:
        Subtracted from the degree before dividing: with 1, an entity shared by
        exactly two memories passes all of one's activation to the other (it
        divides among the *other* memories), while a hub still passes almost nothing.
    threshold, frontier_cap:
        Activation below ``threshold`` is dropped; each hop expands at most the
        ``frontier_cap`` strongest nodes.
    aggregate:
        ``"sum"`` adds what reaches a node over all paths (classic spreading
        activation); ``"max"`` keeps the strongest single path.

    Returns
    -------
    SpreadResult
        Activation of every non-seed node reached, and for each the edge that
        first brought it the most activation (to rebuild explanation paths).

    Examples
    --------
    >>> graph = {"a": [Edge("a", "x", 1.0)], "x": [Edge("x", "b", 1.0)]}
    >>> res = spread(lambda f: [e for n in f for e in graph.get(n, [])], {"a": 1.0}, decay=0.5)
    >>> round(res.activation["b"], 3)
    0.25
    """
    flow = spread_flow(seeds, **options)
    try:
        frontier = next(flow)
        while True:
            frontier = flow.send(list(neighbors(frontier)))
    except StopIteration as stop:
        result: SpreadResult = stop.value
        return result


def spread_reference(
    graph: Mapping[str, Sequence[Edge]],
    seeds: Mapping[str, float],
    *,
    max_hops: int = 2,
    decay: float = 0.5,
    damping: float = 1.0,
    degree_offset: int = 0,
) -> dict[str, float]:
    """Readable per-path reference of :func:`spread` (``aggregate="sum"``, no pruning).

    Enumerates every walk of up to ``max_hops`` edges that does not pass through
    a seed, adding ``seed * prod(weight * decay / degree**damping)`` to its end.
    """
    out: dict[str, float] = {}

    def walk(node: str, act: float, hop: int) -> None:
        if hop == max_hops:
            return
        for e in graph.get(node, ()):
            if e.target == e.source:
                continue
            flow = act * e.weight * decay / (max(e.source_degree - degree_offset, 1) ** damping if damping else 1.0)
            if e.target in seeds:
                continue
            out[e.target] = out.get(e.target, 0.0) + flow
            walk(e.target, flow, hop + 1)

    for s, a in seeds.items():
        walk(s, a, 0)
    return out
