"""Stage 2, spread: recall channels as plug-ins.

A channel is a function ``channel(ctx, cfg)`` that returns a generator of
store requests (one batched request per hop, like every plan in ripple) and
finally a :class:`~ripple.recall.candidates.ChannelResult`: the activation of
the memories it reached, the best incoming edge of each (for explanation
paths) and the sources it spread from.  It is registered under the name of
its settings class (:func:`register_channel`), and a recall plan names the
channels it runs in :attr:`SpreadConfig.channels <ripple.recall.config.SpreadConfig.channels>`.
The merge stage adds each channel's activation times its weight to the seed
score; the channel that gave a memory the most becomes the hit's ``via``, and
its activation shows in ``hit.parts.channels[name]``.  Adding a channel needs
no change anywhere else::

    class RecentConfig(ChannelConfig):
        name: Literal["recent"] = "recent"

    @register_channel(RecentConfig)
    def recent(ctx: ChannelContext, cfg: RecentConfig) -> ChannelPlan:
        rows = yield ListMemories(ctx.query.user_id, limit=5)   # any store request
        return ChannelResult(activation={r.id: 0.5 for r in rows}, sources=set(ctx.sources(cfg)))

Built in: ``session`` (neighbouring turns over NEXT), ``entity`` (memory ->
entity -> memory, hub-damped) and ``ppr`` (personalised PageRank).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Mapping, Sequence, TypeVar

from graphstore.records import EDGE_MENTIONS, EDGE_NEXT, EDGE_RELATED, Neighbor
from graphstore.requests import ExpandWalk, ExpandWalks, GetEntities

from .._requests import Request
from .activation import Edge, SpreadResult, spread_steps
from .candidates import Candidate, ChannelResult, Seeded, StageTimer
from .config import ChannelConfig, EntityChannelConfig, PPRChannelConfig, RecallConfig, SessionChannelConfig
from .query import QueryInput
from .relevance import QuerySignals, features, query_signals, relevance
from .scoring import minmax

__all__ = ["ChannelContext", "ChannelPlan", "CHANNELS", "register_channel", "spread_stage", "edges_from_rows", "source_degrees"]

ChannelPlan = Generator[Request, Any, ChannelResult]
C = TypeVar("C", bound=ChannelConfig)

#: Channel name -> channel function.
CHANNELS: dict[str, Callable[["ChannelContext", Any], ChannelPlan]] = {}


def register_channel(config_type: type[C]) -> Callable[[Callable[["ChannelContext", C], ChannelPlan]],
                                                        Callable[["ChannelContext", C], ChannelPlan]]:
    """Register a channel function under its settings class's ``name`` (a decorator)."""
    name = config_type.model_fields["name"].default
    if not isinstance(name, str) or not name:
        raise TypeError(f"{config_type.__name__}.name needs a default: the channel's name")

    def register(fn: Callable[["ChannelContext", C], ChannelPlan]) -> Callable[["ChannelContext", C], ChannelPlan]:
        ChannelConfig.registry[name] = config_type
        CHANNELS[name] = fn
        return fn

    return register


@dataclass(frozen=True, slots=True)
class ChannelContext:
    """What a channel may read: the query, the normalised seeds (best first) and the plan."""

    query: QueryInput
    seeds: Mapping[str, float]  # seed score / best seed score
    ranked: Sequence[str]  # seed ids, best first
    n_docs: int | None  # the user's memories as the lexical route counted them, if it ran
    config: RecallConfig
    cands: Mapping[str, Candidate] = field(default_factory=dict)  # the seeds with their route scores
    signals: QuerySignals = QuerySignals()  # the query's absolute signals (for the seeds' relevance)

    def sources(self, cfg: ChannelConfig) -> dict[str, float]:
        """The seeds a channel spreads from, and what each spreads: its ``sources`` strongest scoring at
        least ``source_min`` of the best, each with the strength ``cfg.source_strength`` names.

        Scores are normalised per query, so the best seed spreads 1 whether it is a sure match or
        the least bad of a pool of weak ones (e5's cosines sit in a narrow band: after min-max five
        near-equal seeds all spread about 1).  The calibrated relevance is the seed's own evidence,
        on a scale that means the same for every query.  ``relative`` (the session channel's default)
        divides it by the largest among the sources: for a logistic model that ratio is about the two
        seeds' odds ratio, in which the query's own inputs and the bias cancel, so seeds are told apart
        by their evidence while a store too small for the calibrator to be sure of anything (a lone
        best seed rated .1) still spreads as under ``rank``."""
        strong = [i for i in self.ranked if self.seeds[i] >= cfg.source_min][: cfg.sources]
        if cfg.source_strength == "rank":
            return {i: self.seeds[i] for i in strong}
        rel = {i: self.relevance(i) for i in strong}
        if cfg.source_strength == "relevance":
            return {i: rel[i] for i in strong if rel[i] > 0}
        if cfg.source_strength == "sure":
            return {i: self.seeds[i] * rel[i] for i in strong if rel[i] > 0}
        if cfg.source_strength == "first":
            return {i: self.seeds[i] * (rel[i] if n else 1.0) for n, i in enumerate(strong) if rel[i] > 0 or not n}
        if cfg.source_strength in ("relative", "lead"):
            if cfg.source_strength == "relative":
                ref = max(rel.values(), default=0.0)
            else:
                ref = rel[strong[0]] if strong else 0.0
            if ref <= 0:  # no evidence to tell the seeds apart by
                return {i: self.seeds[i] for i in strong}
            return {i: self.seeds[i] * min(1.0, rel[i] / ref) for i in strong if rel[i] > 0}
        floor = self.config.relevance.floor
        return {i: self.seeds[i] for i in strong if rel[i] >= floor}

    def relevance(self, memory_id: str) -> float:
        """A seed's calibrated relevance from its own signals (see :mod:`ripple.recall.relevance`)."""
        c = self.cands.get(memory_id)
        return 0.0 if c is None else relevance(features(c, self.signals), self.config.relevance)

    def memory_count(self) -> int:
        """How many memories the user has, as far as the plan knows (for hub cut-offs by share)."""
        return max(len(self.seeds), self.n_docs) if self.n_docs is not None else len(self.seeds)


def spread_stage(q: QueryInput, config: RecallConfig, seeded: Seeded,
                 timer: StageTimer) -> Generator[Request, Any, dict[str, ChannelResult]]:
    """Run every channel of the plan with a positive weight; nothing spreads from a final ranking.

    The channels run side by side up to their first walk (:class:`~graphstore.requests.ExpandWalk`),
    whatever each asks before it answered in the plan's order; those walks go to the store as one
    :class:`~graphstore.requests.ExpandWalks` (a server answers their first reads in one round trip),
    then each channel finishes in order.  A channel only reads, so the results are those of running
    them one after the other.  (The first channel's stage time holds the walks' shared read.)"""
    results: dict[str, ChannelResult] = {}
    if seeded.final:
        return results
    ctx = ChannelContext(q, seeded.norm, seeded.ranked, seeded.n_docs, config, seeded.cands, query_signals(q, seeded))
    plans = {cfg.name: _channel(cfg.name)(ctx, cfg) for cfg in config.spread.channels if cfg.weight > 0}
    walks: dict[str, ExpandWalk[Any]] = {}
    for name, plan in plans.items():
        try:
            request = next(plan)
            while not isinstance(request, ExpandWalk):
                request = plan.send((yield request))
            walks[name] = request
        except StopIteration as done:
            results[name] = done.value
    answers: dict[str, Any] = {}
    if len(walks) > 1:
        answers = dict(zip(walks, (yield ExpandWalks(q.user_id, tuple(walks.values())))))
    for cfg in config.spread.channels:
        name = cfg.name
        if name in walks:
            plan = plans[name]
            try:
                request = plan.send(answers[name] if name in answers else (yield walks[name]))
                while True:
                    request = plan.send((yield request))
            except StopIteration as done:
                results[name] = done.value
        timer.lap(f"spread.{name}", len(results[name].activation) if name in results else 0)
    return results


def _channel(name: str) -> Callable[["ChannelContext", Any], ChannelPlan]:
    try:
        return CHANNELS[name]
    except KeyError:
        from ..errors import ConfigError

        raise ConfigError(f"no recall channel {name!r} is registered; known: {', '.join(CHANNELS)}") from None


# ------------------------------------------------------------------------------------------- built-in channels


@register_channel(SessionChannelConfig)
def session_channel(ctx: ChannelContext, cfg: SessionChannelConfig) -> ChannelPlan:
    """Neighbouring turns of the same session over NEXT edges; the strongest path wins."""
    sources = ctx.sources(cfg)
    if not sources or not cfg.weights:
        return ChannelResult()
    res = yield from _drive_spread(
        ctx.query.user_id, (EDGE_NEXT,), sources,
        max_hops=len(cfg.weights), decay=list(cfg.weights), damping=0.0, threshold=cfg.threshold,
        frontier_cap=cfg.frontier_cap, aggregate="max", max_degree=None, labels=(),
    )
    return ChannelResult(res.activation, res.parent, set(sources))


@register_channel(EntityChannelConfig)
def entity_channel(ctx: ChannelContext, cfg: EntityChannelConfig) -> ChannelPlan:
    """Memory -> entity -> memory (-> entity over RELATED when ``hops > 2``), hub-damped."""
    sources = ctx.sources(cfg)
    names: dict[str, str] = {}
    q = ctx.query
    if q.entity_keys and ctx.config.seed.query_entities > 0:
        for e in (yield GetEntities(q.user_id, q.entity_keys)):
            sources[e.id] = ctx.config.seed.query_entities
            names[e.id] = e.name
    if not sources or cfg.hops <= 0:
        return ChannelResult(entity_names=names)
    ratio_cap = max(cfg.min_hub_degree, int(cfg.max_degree_ratio * ctx.memory_count()))
    cap = min(cfg.max_degree, ratio_cap) if cfg.max_degree is not None else ratio_cap
    types = (EDGE_MENTIONS, EDGE_RELATED) if cfg.hops > 2 else (EDGE_MENTIONS,)
    res = yield from _drive_spread(
        q.user_id, types, sources,
        max_hops=cfg.hops, decay=cfg.hop_decay, damping=cfg.hub_damping, threshold=cfg.threshold,
        frontier_cap=cfg.frontier_cap, degree_offset=cfg.degree_offset, aggregate=cfg.aggregate,
        max_degree=cap, labels=cfg.labels,
    )
    memory_act = {n: a for n, a in res.activation.items() if n.startswith("m_")}
    peak = max(memory_act.values(), default=0.0) if cfg.scale == "peak" else 1.0
    activation = {n: a / peak for n, a in memory_act.items()} if peak > 0 else {}
    return ChannelResult(activation, res.parent, set(sources), names)


@register_channel(PPRChannelConfig)
def ppr_channel(ctx: ChannelContext, cfg: PPRChannelConfig) -> ChannelPlan:
    """Personalised PageRank (HippoRAG-style) over the seeds' 2-hop neighbourhood, with networkx."""
    import networkx as nx

    sources = ctx.sources(cfg)
    if not sources:
        return ChannelResult()
    walk = _ppr_walk(list(sources), cfg.frontier_cap * 4)
    graph = yield ExpandWalk(ctx.query.user_id, (EDGE_MENTIONS, EDGE_NEXT), walk, max_hops=2)
    if graph.number_of_nodes() == 0:
        return ChannelResult(sources=set(sources))
    pers = {n: sources.get(n, 0.0) for n in graph.nodes}
    if sum(pers.values()) <= 0:
        return ChannelResult(sources=set(sources))
    pr = nx.pagerank(graph, alpha=cfg.alpha, personalization=pers, weight="weight", max_iter=200, tol=1e-8)
    return ChannelResult(minmax({n: s for n, s in pr.items() if n.startswith("m_")}), sources=set(sources))


def _ppr_walk(sources: list[str], frontier_cap: int) -> Generator[list[str], list[Neighbor], Any]:
    """The seeds' two-hop neighbourhood as a networkx graph, read hop by hop."""
    import networkx as nx

    graph = nx.Graph()
    frontier = sources
    seen = set(frontier)
    for _ in range(2):
        rows = yield frontier
        nxt = []
        for r in rows:
            graph.add_edge(r.source, r.target, weight=r.weight)
            if r.target not in seen:
                seen.add(r.target)
                nxt.append(r.target)
        frontier = nxt[:frontier_cap]
        if not frontier:
            break
    return graph


# ------------------------------------------------------------------------------------------- spreading over the store


def _drive_spread(
    user_id: str,
    types: tuple[str, ...],
    seeds: dict[str, float],
    *,
    max_hops: int,
    max_degree: int | None,
    labels: tuple[str, ...] | None = None,
    **options: Any,
) -> Generator[Request, Any, SpreadResult]:
    """Drive :func:`~ripple.recall.activation.spread_steps` (:func:`~ripple.recall.activation.spread_flow`
    over the rows as they come) as an :class:`~graphstore.requests.ExpandWalk`: one batched ``expand``
    per hop, or one read of the whole neighbourhood where the store offers it."""
    walk = _spread_walk(spread_steps(seeds, _edge, max_hops=max_hops, **options), labels)
    # (``labels``: the walk never continues from an entity whose label it drops, a hint for the store)
    result: SpreadResult = yield ExpandWalk(user_id, types, walk, max_hops=max_hops,
                                            max_degree=max_degree, labels=labels)
    return result


def _spread_walk(flow: Generator[list[str], tuple[Sequence[Neighbor], Mapping[str, int]], SpreadResult],
                 labels: tuple[str, ...] | None) -> Generator[list[str], list[Neighbor], SpreadResult]:
    """The activation flow as a walk: frontiers out, neighbour rows in (with their sources' degrees)."""
    known_degree: dict[str, int] = {}
    try:
        frontier = next(flow)
        while True:
            rows = _keep_labels((yield frontier), labels)
            frontier = flow.send((rows, source_degrees(rows, known_degree)))
    except StopIteration as stop:
        result: SpreadResult = stop.value
        return result


def _keep_labels(rows: list[Neighbor], labels: tuple[str, ...] | None) -> list[Neighbor]:
    """Drop steps into entities whose label does not carry activation (DATE by default)."""
    if labels is None:
        return [r for r in rows if r.label != "DATE"]
    allowed = set(labels)
    return [r for r in rows if not r.label or r.label in allowed]


def _edge(n: Neighbor, source_degree: int) -> Edge:
    return Edge(n.source, n.target, n.weight, source_degree, n.type, n.predicate)


def source_degrees(neighbors: Sequence[Neighbor], known_degree: dict[str, int]) -> dict[str, int]:
    """The degree of each row's source (what damping divides by).

    A row carries the degree of its *target*.  For the entity -> memory step the
    entity is the source: its degree was learned from the previous hop's rows
    (``known_degree``, updated here), or, for an entity that started as a seed,
    it is the number of MENTIONS rows leaving it in this hop.
    """
    rows_from: dict[str, int] = {}
    for n in neighbors:
        if n.type == EDGE_MENTIONS:
            rows_from[n.source] = rows_from.get(n.source, 0) + 1
            if n.label:  # the target is an entity
                known_degree.setdefault(n.target, n.degree)
    return {
        s: known_degree.get(s, rows_from.get(s, 1) if s.startswith("e_") else 1)
        for s in {n.source for n in neighbors}
    }


def edges_from_rows(neighbors: Sequence[Neighbor], known_degree: dict[str, int]) -> list[Edge]:
    """Neighbour rows as activation edges, each with its source's degree (:func:`source_degrees`)."""
    degree = source_degrees(neighbors, known_degree)
    return [_edge(n, degree[n.source]) for n in neighbors]
