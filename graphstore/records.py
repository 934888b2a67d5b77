"""Plain records that cross the store protocol.

Stores speak in these frozen dataclasses (and one named tuple), not in
pydantic models: they are built and read in bulk on the hot path (a recall
touches thousands of edges), and validation already happened where the data
entered ripple.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, NamedTuple, Sequence


__all__ = [
    "StoredMemory",
    "EntityRecord",
    "EdgeRecord",
    "Neighbor",
    "NeighbourhoodAsk",
    "WriteBatch",
    "Finding",
    "DocumentRecord",
    "ShardStatus",
    "ShardMove",
    "ShardsReport",
    "MoveReport",
    "LexicalRows",
    "UserState",
    "usable_terms",
    "df_cap",
    "EDGE_MENTIONS",
    "EDGE_RELATED",
    "EDGE_NEXT",
    "EDGE_SUPERSEDES",
    "EDGE_RETRACTS",
    "EDGE_CONFLICTS",
    "EDGE_TYPES",
]

EDGE_MENTIONS = "MENTIONS"  # memory -> entity
EDGE_RELATED = "RELATED"  # entity -> entity (predicate, weight, evidence memory)
EDGE_NEXT = "NEXT"  # memory -> next memory of the same session
EDGE_SUPERSEDES = "SUPERSEDES"  # newer memory -> the memory whose fact it replaced (or corrected)
EDGE_RETRACTS = "RETRACTS"  # a retraction ("forget that") -> the memory it invalidated
EDGE_CONFLICTS = "CONFLICTS"  # newer memory -> an older one it may replace (weight 1 open, 0 resolved)
EDGE_TYPES = (EDGE_MENTIONS, EDGE_RELATED, EDGE_NEXT, EDGE_SUPERSEDES, EDGE_RETRACTS, EDGE_CONFLICTS)


@dataclass(frozen=True, slots=True)
class StoredMemory:
    """A stored memory node, as a backend reads and writes it. Times are POSIX seconds (UTC).

    Not :class:`ripple.models.MemoryRecord`, the public pydantic record the API returns
    (``ripple._shape.to_model`` turns one into the other)."""

    id: str
    user_id: str
    text: str
    at: float
    created_at: float
    agent_id: str | None = None
    session_id: str | None = None
    kind: str = "message"
    importance: float = 0.5
    status: str = "active"
    access_count: int = 0
    last_access: float | None = None
    metadata_json: str = "{}"
    language: str = "en"
    confidence: float = 1.0  # 0-1: hedged statements ("I think", "可能") start low, repetition raises it
    mentions: int = 1  # times this was said (a near-duplicate reinforces instead of adding a copy)
    last_seen: float | None = None  # when it was last said again
    valid_to: float | None = None  # set when a newer fact superseded it
    pinned: bool = False  # pinned memories keep full weight in every forgetting tier
    terms: tuple[str, ...] = ()  # lexical tokens (BM25 route)
    embedding: bytes | None = None  # float32 sentence vector, L2-normalised
    token_vectors: bytes | None = None  # int8 content-token vectors (MaxSim), see ripple.embedding
    # float32 multilingual sentence vector (L2-normalised), in a vector space of its own: only memories
    # whose text is in a CJK script have one (ripple's multilingual route, ripple.recall.multilingual);
    # searched by GraphStore.nearest_multilingual, never mixed with ``embedding``
    multilingual: bytes | None = None


@dataclass(frozen=True, slots=True)
class EntityRecord:
    """An entity node: one per (user, normalised key)."""

    id: str
    user_id: str
    name: str
    key: str
    label: str
    aliases: tuple[str, ...] = ()
    embedding: bytes | None = None


@dataclass(frozen=True, slots=True)
class EdgeRecord:
    """A typed, weighted edge. ``predicate`` is "" except on RELATED edges."""

    src: str
    type: str
    dst: str
    user_id: str
    weight: float = 1.0
    predicate: str = ""
    evidence: str | None = None  # memory id that supports a RELATED edge
    at: float | None = None


class Neighbor(NamedTuple):
    """One step of expansion from a frontier node.

    ``degree`` is the number of memories that mention ``target`` when it is an
    entity (what hub damping divides by), else 1; ``label`` is the target
    entity's label, so the engine can choose which kinds of entity carry
    activation.

    A named tuple rather than a frozen dataclass: one recall builds a thousand
    or more of these, and a tuple is built in a third of the time.
    """

    source: str
    target: str
    type: str
    weight: float
    degree: int = 1
    predicate: str = ""
    label: str = ""  # the target entity's label; "" when the target is a memory


class NeighbourhoodAsk(NamedTuple):
    """The arguments of one :meth:`~graphstore.SupportsNeighbourhood.neighbourhood` read (its user
    aside): one of the reads :meth:`~graphstore.SupportsNeighbourhoods.neighbourhoods` answers together."""

    sources: Sequence[str]
    edge_types: Sequence[str]
    reach: int
    max_degree: int | None = None
    labels: Sequence[str] | None = None


@dataclass(slots=True)
class WriteBatch:
    """Everything one ingest call writes; a store applies it atomically or not at all."""

    memories: list[StoredMemory] = field(default_factory=list)
    entities: list[EntityRecord] = field(default_factory=list)
    edges: list[EdgeRecord] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.memories or self.entities or self.edges)

    def extend(self, other: "WriteBatch") -> None:
        self.memories.extend(other.memories)
        self.entities.extend(other.entities)
        self.edges.extend(other.edges)


@dataclass(frozen=True, slots=True)
class Finding:
    """One line of a store check (:meth:`graphstore.SupportsMaintenance.check`).

    ``level`` is ``"ok"``, ``"warn"`` (works, but not as it should) or
    ``"error"`` (recall or writes are wrong or failing); ``fix`` names what
    repairs it (``"ripple reindex"``), empty when nothing ripple does can.
    """

    level: str
    area: str
    message: str
    fix: str = ""

    def line(self) -> str:
        """The finding on one line, as ``ripple doctor`` prints it."""
        fix = f" (fix: {self.fix})" if self.fix and self.level != "ok" else ""
        return f"{self.level:<5} {self.area}: {self.message}{fix}"


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    """A user's versioned JSON document, whole: what copying a user to another store carries
    (the version too, so a compare-and-set against the copy means what it meant against the original)."""

    user_id: str
    key: str
    version: int
    value_json: str
    updated_at: float


# -- sharded stores (graphstore.sharded) -----------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ShardStatus:
    """One shard as ``ripple shards status`` shows it.

    ``users`` counts the users this shard serves; ``memories``/``entities`` count everything stored
    on it, including ``stray_users``: copies of users served by another shard (a move that was
    interrupted after its switch, until it is resumed).  ``error`` is why the shard could not be
    read (the counts are then 0).
    """

    name: str
    uri: str
    in_ring: bool
    users: int
    memories: int
    entities: int
    stray_users: tuple[str, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ShardMove:
    """A move of one user between shards that has started and not finished.

    ``state`` is ``copying`` (the user is served by ``source``; its writes wait) or ``switched``
    (served by ``target``; the copy left on ``source`` is still to be deleted).
    """

    user_id: str
    source: str
    target: str
    state: str
    started_at: float


@dataclass(frozen=True, slots=True)
class ShardsReport:
    """Every shard's counts, the routing state shared by all processes, and the moves under way."""

    shards: tuple[ShardStatus, ...]
    ring: tuple[str, ...]
    ring_next: tuple[str, ...] | None
    pinned_users: int  # moved on purpose: they stay where they are
    parked_users: int  # left in place by a ring change: ``ripple shards rebalance`` moves them
    moves: tuple[ShardMove, ...]


@dataclass(frozen=True, slots=True)
class MoveReport:
    """What a finished move copied, checked and deleted."""

    user_id: str
    source: str
    target: str
    memories: int
    entities: int
    edges: int
    documents: int
    checked_reads: int
    seconds: float
    resumed: bool = False


@dataclass(frozen=True, slots=True)
class LexicalRows:
    """The lexical route's raw material for one query (see :class:`graphstore.requests.LexicalRoute`):
    the user's BM25 totals, every query term's document frequency (terms in no active memory are
    absent), and the ``(term, memory_id, tf, doc_len)`` postings of the usable terms
    (:func:`usable_terms`), grouped by term."""

    n_docs: int
    avg_len: float
    df: dict[str, int]
    postings: list[tuple[str, str, int, int]]


@dataclass(frozen=True, slots=True)
class UserState:
    """What a recall asks about a user before it reads anything else (see
    :meth:`graphstore.GraphStore.get_user_state`): whether any memory of the user is stored (whatever
    its status; :meth:`~graphstore.GraphStore.has_memories`) and whether any has a multilingual vector
    (:meth:`~graphstore.GraphStore.has_multilingual`).  One request, so one round trip on a server."""

    memories: bool
    multilingual: bool


def df_cap(n_docs: int, max_df_ratio: float, max_df: int | None) -> float:
    """The most memories a query term may be in and still count: ``max(1, max_df_ratio * n_docs)``,
    and at most ``max_df``: a commoner word's postings cost far more to read than its low IDF adds."""
    cap: float = max(1, max_df_ratio * n_docs)
    return cap if max_df is None else min(cap, max_df)


def usable_terms(terms: Sequence[str], df: Mapping[str, int], n_docs: int, max_df_ratio: float,
                 max_df: int | None) -> list[str]:
    """Distinct query terms worth reading postings for: in at least one active memory and in at most
    :func:`df_cap` of them."""
    cap = df_cap(n_docs, max_df_ratio, max_df)
    return [t for t in dict.fromkeys(terms) if 0 < df.get(t, 0) <= cap]
