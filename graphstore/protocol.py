"""The contract every ripple store backend implements.

The protocol is domain-level: upsert nodes and edges in atomic batches, fetch
weighted neighbours of a whole frontier in one call, look memories up by id,
key, vector or lexical term.  No query language crosses this boundary, so the
recall engine never knows which backend it talks to (the embedded SQLite store
or Neo4j), and one conformance suite (:mod:`graphstore.testing`) proves every
backend against the same expectations.

Scoring that must agree across backends (BM25, activation, fusion) lives in
the engine; stores only return raw material (postings, neighbours, vectors).
The one exception is vector search, where a backend may use an approximate
index (Neo4j's HNSW) and is expected to be exact on small data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Iterator, Literal, Protocol, Sequence, runtime_checkable

from .records import (
    DocumentRecord,
    EdgeRecord,
    EntityRecord,
    Finding,
    LexicalRows,
    StoredMemory,
    MoveReport,
    Neighbor,
    NeighbourhoodAsk,
    ShardMove,
    ShardsReport,
    UserState,
    WriteBatch,
)

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "GraphStore",
    "AsyncGraphStore",
    "SupportsBatchEntitySearch",
    "SupportsBatchMemorySearch",
    "SupportsCypher",
    "SupportsMaintenance",
    "SupportsLexicalRoute",
    "SupportsNeighbourhood",
    "SupportsNeighbourhoods",
    "SupportsShards",
    "InProcessStore",
    "ACTIVE",
    "SUPERSEDED",
    "INVALIDATED",
    "STATUSES",
]

ACTIVE = "active"
SUPERSEDED = "superseded"
INVALIDATED = "invalidated"
STATUSES = (ACTIVE, SUPERSEDED, INVALIDATED)


@runtime_checkable
class GraphStore(Protocol):
    """Synchronous store protocol. All methods are scoped by ``user_id`` or by ids
    that belong to one user; no method ever returns another user's node.

    Optional capabilities are protocols of their own (:class:`InProcessStore`,
    :class:`SupportsCypher`, the batch searches): the engine checks them with
    ``isinstance``, and a store without one gets the generic path.
    """

    uri: str

    # -- writes ---------------------------------------------------------
    def write(self, batch: WriteBatch, *, replace_mentions_of: Sequence[str] = ()) -> None:
        """Apply a batch atomically: all of it is durable on return, or none of it.

        Memories and entities are upserted by id (an entity upsert merges
        aliases); edges are upserted by ``(src, type, dst, predicate)``: a
        RELATED edge's weight accumulates, other edges are replaced.
        ``replace_mentions_of`` first drops the MENTIONS edges of those memories
        (used when a memory's text is updated and re-extracted).
        """
        ...

    def touch(self, memory_ids: Sequence[str], at: float) -> None:
        """Count one access of each memory (recall hits) at time ``at``.  A server store may write it
        after returning (:mod:`graphstore.touches`): its own reads of access counts still see it,
        ``close`` writes what is pending, other clients see it once written."""
        ...

    def set_status(self, memory_ids: Sequence[str], status: str) -> int:
        """Set the lifecycle status of memories; returns how many changed."""
        ...

    def delete_memories(self, memory_ids: Sequence[str]) -> dict[str, int]:
        """Delete memories with their edges and index entries; counts by kind."""
        ...

    def delete_user(self, user_id: str) -> dict[str, int]:
        """Delete every node, edge and index entry of a user; counts by kind."""
        ...

    # -- reads by id / key ------------------------------------------------
    def get_memories(self, memory_ids: Sequence[str], *, with_vectors: bool = False) -> list[StoredMemory]:
        """Records of the memories that exist, in the order asked; missing ids are skipped."""
        ...

    def list_memories(
        self,
        user_id: str,
        *,
        session_id: str | None = None,
        statuses: Sequence[str] | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[StoredMemory]:
        """A user's memories ordered by event time, then creation."""
        ...

    def has_memories(self, user_id: str) -> bool:
        """True if any memory of the user is stored (whatever its status); cheap at any size."""
        ...

    def last_memory_in_session(self, user_id: str, session_id: str) -> str | None:
        """Id of the latest memory of a session (the tail a NEXT edge extends)."""
        ...

    def session_tails(self, user_id: str, session_ids: Sequence[str]) -> dict[str, str]:
        """:meth:`last_memory_in_session` of many sessions in one request (the write path chains a
        whole batch's sessions at once); sessions without memories are left out."""
        ...

    def get_entities(self, user_id: str, keys: Sequence[str]) -> list[EntityRecord]:
        """Entities of a user whose key or an alias equals one of ``keys``."""
        ...

    def entity_names(self, entity_ids: Sequence[str]) -> dict[str, str]:
        """Display names of entities (for explanation paths)."""
        ...

    def users(self) -> list[str]:
        """Every user id that has at least one node."""
        ...

    # -- search ----------------------------------------------------------
    def nearest_memories(
        self, user_id: str, vector: "np.ndarray", k: int, *, statuses: Sequence[str] = (ACTIVE,)
    ) -> list[tuple[str, float]]:
        """Top-``k`` memories by cosine similarity to a normalised vector."""
        ...

    def nearest_entities(self, user_id: str, vector: "np.ndarray", k: int) -> list[tuple[str, float]]:
        """Top-``k`` entities by cosine similarity of their name embedding."""
        ...

    def nearest_multilingual(
        self, user_id: str, vector: "np.ndarray", k: int, *, statuses: Sequence[str] = (ACTIVE,)
    ) -> list[tuple[str, float]]:
        """Top-``k`` memories by cosine similarity of their *multilingual* vector
        (:attr:`~graphstore.records.StoredMemory.multilingual`, a vector space of its own: never
        compared with ``embedding``); memories without one are never found."""
        ...

    def has_multilingual(self, user_id: str) -> bool:
        """True if any memory of the user (whatever its status) has a multilingual vector; cheap at
        any size (recall asks it before encoding a query with the multilingual model)."""
        ...

    def get_user_state(self, user_id: str) -> UserState:
        """:meth:`has_memories` and :meth:`has_multilingual` in one call (a recall's first read; one
        round trip on a server store).  A store that keeps a cache of a user's data may also check
        that cache's currency here, for the user's next vector search in the same context (thread or
        task) shortly after: that search then sees what was committed before this call (Neo4j's
        near cache: :mod:`graphstore.nearcache`)."""
        ...

    def lexical_stats(self, user_id: str, terms: Sequence[str]) -> tuple[int, float, dict[str, int]]:
        """``(n_docs, avg_doc_len, {term: document frequency})`` over active memories."""
        ...

    def postings(self, user_id: str, terms: Sequence[str]) -> list[tuple[str, str, int, int]]:
        """``(term, memory_id, term frequency, doc length)`` rows of active memories."""
        ...

    def token_vectors(self, memory_ids: Sequence[str]) -> dict[str, bytes]:
        """Packed content-token vectors of memories (for late-interaction scoring)."""
        ...

    # -- graph -------------------------------------------------------------
    def related_edges(self, user_id: str, source_ids: Sequence[str], predicates: Sequence[str]) -> list[EdgeRecord]:
        """The user's RELATED edges leaving ``source_ids`` whose predicate is one of ``predicates``.

        This is how the engine finds the stored value of a fact (subject entity,
        attribute predicate, value entity, evidence memory) before a new one
        supersedes it.
        """
        ...

    def expand(
        self,
        user_id: str,
        frontier: Sequence[str],
        edge_types: Sequence[str],
        *,
        max_degree: int | None = None,
    ) -> list[Neighbor]:
        """Neighbours of every frontier node over the given edge types, both directions.

        One call per hop, never one per node.  Entities mentioned by more than
        ``max_degree`` memories are neither entered nor left (hub cut-off).
        """
        ...

    # -- housekeeping ------------------------------------------------------
    def export(self, user_id: str) -> Iterator[StoredMemory | EntityRecord | EdgeRecord]:
        """Every node and edge of a user, vectors included (memories, then entities, then edges)."""
        ...

    def stats(self, user_id: str | None = None) -> dict[str, int]:
        """Node and edge counts, for one user or the whole store."""
        ...

    def close(self) -> None: ...

    # -- documents (appended for the agent layer) ---------------------------------
    def get_document(self, user_id: str, key: str) -> tuple[int, str, float] | None:
        """A user's versioned JSON document: ``(version, value_json, updated_at)``, or None if absent."""
        ...

    def put_document(
        self, user_id: str, key: str, value_json: str | None, *, expected_version: int | None, at: float
    ) -> tuple[bool, int]:
        """Compare-and-set a user's document in one transaction: ``(written, version now)``.

        The write happens only when ``expected_version`` is None (unconditional) or
        equals the stored version (0: the document must not exist yet); a write
        bumps the version by one.  ``value_json=None`` deletes the document (the
        version then reads 0).  A refused write changes nothing and returns
        ``(False, the stored version)``.  Documents are deleted with their user.
        """
        ...

    def documents(self, user_id: str) -> list[DocumentRecord]:
        """Every document of a user, by key, with its version (to copy the user to another store)."""
        ...

    def restore_documents(self, documents: Sequence[DocumentRecord]) -> None:
        """Store documents exactly as given, versions included, in one transaction.

        Not a compare-and-set: this is the other half of copying a user to another store
        (:meth:`documents` on the source), so the copy's versions continue the original's.
        """
        ...

    # -- lifecycle questions (issue 16) ------------------------------------
    def memories_mentioning(
        self, user_id: str, entity_ids: Sequence[str], *, statuses: Sequence[str] = (ACTIVE,), per_entity: int = 4
    ) -> list[tuple[str, str]]:
        """``(entity id, memory id)`` of the latest ``per_entity`` memories (by event time, then
        creation, then id; one of ``statuses``) that mention each entity, newest first per entity.

        This is how a new statement finds the older ones about the same subject ("the Atlas
        go-live", "Tom") that it may replace, however large the store."""
        ...

    def list_edges(self, user_id: str, edge_types: Sequence[str]) -> list[EdgeRecord]:
        """Every edge of a user of one of ``edge_types``, ordered by type, source, target, predicate
        (the open conflicts for review: CONFLICTS edges)."""
        ...


@runtime_checkable
class AsyncGraphStore(Protocol):
    """The async twin: the same method names, awaited."""

    uri: str

    async def write(self, batch: WriteBatch, *, replace_mentions_of: Sequence[str] = ()) -> None: ...
    async def touch(self, memory_ids: Sequence[str], at: float) -> None: ...
    async def set_status(self, memory_ids: Sequence[str], status: str) -> int: ...
    async def delete_memories(self, memory_ids: Sequence[str]) -> dict[str, int]: ...
    async def delete_user(self, user_id: str) -> dict[str, int]: ...
    async def get_memories(self, memory_ids: Sequence[str], *, with_vectors: bool = False) -> list[StoredMemory]: ...
    async def list_memories(
        self,
        user_id: str,
        *,
        session_id: str | None = None,
        statuses: Sequence[str] | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[StoredMemory]: ...
    async def has_memories(self, user_id: str) -> bool: ...
    async def last_memory_in_session(self, user_id: str, session_id: str) -> str | None: ...
    async def session_tails(self, user_id: str, session_ids: Sequence[str]) -> dict[str, str]: ...
    async def get_entities(self, user_id: str, keys: Sequence[str]) -> list[EntityRecord]: ...
    async def entity_names(self, entity_ids: Sequence[str]) -> dict[str, str]: ...
    async def users(self) -> list[str]: ...
    async def nearest_memories(
        self, user_id: str, vector: "np.ndarray", k: int, *, statuses: Sequence[str] = (ACTIVE,)
    ) -> list[tuple[str, float]]: ...
    async def nearest_entities(self, user_id: str, vector: "np.ndarray", k: int) -> list[tuple[str, float]]: ...
    async def nearest_multilingual(
        self, user_id: str, vector: "np.ndarray", k: int, *, statuses: Sequence[str] = (ACTIVE,)
    ) -> list[tuple[str, float]]: ...
    async def has_multilingual(self, user_id: str) -> bool: ...
    async def get_user_state(self, user_id: str) -> UserState: ...
    async def lexical_stats(self, user_id: str, terms: Sequence[str]) -> tuple[int, float, dict[str, int]]: ...
    async def postings(self, user_id: str, terms: Sequence[str]) -> list[tuple[str, str, int, int]]: ...
    async def token_vectors(self, memory_ids: Sequence[str]) -> dict[str, bytes]: ...
    async def related_edges(
        self, user_id: str, source_ids: Sequence[str], predicates: Sequence[str]
    ) -> list[EdgeRecord]: ...
    async def expand(
        self,
        user_id: str,
        frontier: Sequence[str],
        edge_types: Sequence[str],
        *,
        max_degree: int | None = None,
    ) -> list[Neighbor]: ...
    def export(self, user_id: str) -> AsyncIterator[StoredMemory | EntityRecord | EdgeRecord]: ...
    async def stats(self, user_id: str | None = None) -> dict[str, int]: ...
    async def aclose(self) -> None: ...
    async def get_document(self, user_id: str, key: str) -> tuple[int, str, float] | None: ...
    async def put_document(
        self, user_id: str, key: str, value_json: str | None, *, expected_version: int | None, at: float
    ) -> tuple[bool, int]: ...
    async def documents(self, user_id: str) -> list[DocumentRecord]: ...
    async def restore_documents(self, documents: Sequence[DocumentRecord]) -> None: ...

    async def memories_mentioning(
        self, user_id: str, entity_ids: Sequence[str], *, statuses: Sequence[str] = (ACTIVE,), per_entity: int = 4
    ) -> list[tuple[str, str]]: ...
    async def list_edges(self, user_id: str, edge_types: Sequence[str]) -> list[EdgeRecord]: ...


@runtime_checkable
class SupportsBatchEntitySearch(Protocol):
    """Optional: nearest entities for many vectors in one call (entity resolution on ingest).

    Without it the engine calls :meth:`GraphStore.nearest_entities` once per vector.
    """

    def nearest_entities_batch(
        self, user_id: str, vectors: "np.ndarray", k: int
    ) -> list[list[tuple[str, float]]]: ...


@runtime_checkable
class SupportsBatchMemorySearch(Protocol):
    """Optional: nearest memories for many vectors in one call (near-duplicate check on ingest).

    Without it the engine calls :meth:`GraphStore.nearest_memories` once per vector.
    """

    def nearest_memories_batch(
        self, user_id: str, vectors: "np.ndarray", k: int, *, statuses: Sequence[str] = (ACTIVE,)
    ) -> list[list[tuple[str, float]]]: ...


@runtime_checkable
class SupportsLexicalRoute(Protocol):
    """Optional: :meth:`GraphStore.lexical_stats` and the :meth:`GraphStore.postings` of the usable
    terms (:func:`~graphstore.records.usable_terms`) in one call: one round trip to a server instead
    of two.  The answer must equal the two calls' (postings in the order :meth:`GraphStore.postings`
    gives them).

    Without it :class:`~graphstore.requests.LexicalRoute` makes the two calls.
    """

    def lexical_route(
        self, user_id: str, terms: Sequence[str], *, max_df_ratio: float, max_df: int | None
    ) -> LexicalRows: ...


@runtime_checkable
class SupportsNeighbourhood(Protocol):
    """Optional: the :meth:`GraphStore.expand` rows of a whole neighbourhood in one call, so that a
    walk of several hops (spreading activation) costs one round trip to a server instead of one per hop.

    Returns, for every node within ``reach`` steps of ``sources`` (the sources included), the rows
    ``expand(user_id, [node], edge_types, max_degree=max_degree)`` would return, in the same order;
    the keys are exactly the nodes expanded (a node without neighbours maps to ``[]``).  A step
    counts only through nodes that ``expand`` enters and leaves (hubs above ``max_degree`` are
    neither), and, when ``labels`` is given, only through entities with one of those labels (the
    walk ignores the others: this only spares the reads).  A store may return more nodes than that.

    Without it :class:`~graphstore.requests.ExpandWalk` calls :meth:`GraphStore.expand` once per hop.
    """

    def neighbourhood(
        self, user_id: str, sources: Sequence[str], edge_types: Sequence[str], *, reach: int,
        max_degree: int | None = None, labels: Sequence[str] | None = None,
    ) -> dict[str, list[Neighbor]]: ...


@runtime_checkable
class SupportsNeighbourhoods(Protocol):
    """Optional, beside :class:`SupportsNeighbourhood`: several neighbourhood reads of one user in one
    call, so that the walks of several recall channels, whose sources are known before any of them
    starts, cost one round trip to a server together.  Answer ``i`` must equal
    ``neighbourhood(user_id, *asks[i])``.

    Without it :class:`~graphstore.requests.ExpandWalks` runs the walks one after the other.
    """

    def neighbourhoods(self, user_id: str, asks: Sequence[NeighbourhoodAsk]) -> list[dict[str, list[Neighbor]]]: ...


@runtime_checkable
class SupportsLocalWalks(Protocol):
    """Optional: whether a user's neighbourhood reads are answered in this process right now, without
    waiting on a server (a Neo4j store's near graph, :mod:`graphstore.neargraph`).  A hint, read without
    I/O: the recall reads its records beside the spreading only while the spreading waits on the store
    (read beside a walk done in process, they only take turns with it on the GIL and the 2 cores).  The
    async twin's method is a plain method too.

    Without it a server store's walks are taken to wait on the server.
    """

    def walks_locally(self, user_id: str) -> bool: ...


@runtime_checkable
class SupportsWarm(Protocol):
    """Optional: load now what the store keeps in this process for a user's recalls (its vectors, its walk
    edges), so that its first recalls are as fast as the rest: a server that knows its users warms them at
    start, a benchmark before it times.  Returns when it is loaded (or when the store decided it does not keep
    the user: over its budget).  The async twin's method is a coroutine of the same name.

    Without it there is nothing to warm: every recall reads what it needs.
    """

    def warm(self, user_id: str) -> None: ...


@runtime_checkable
class SupportsCypher(Protocol):
    """Optional: run a Cypher query (the Neo4j store).  ``write=False`` runs it in a read
    transaction, where a query that writes is refused; procedures and administration commands
    (``SHOW``, ``LOAD CSV``, ``dbms.*``, schema) are refused unless ``allow_procedures`` /
    ``allow_admin`` (:mod:`graphstore.cypher_policy`); returns ``(keys, rows)``."""

    def cypher(
        self, query: str, params: dict[str, Any] | None = None, *, write: bool = False,
        allow_procedures: bool = False, allow_admin: bool = False,
    ) -> tuple[list[str], list[list[Any]]]: ...


@runtime_checkable
class SupportsShards(Protocol):
    """Optional: the store spreads users over several stores (:class:`graphstore.sharded.ShardedStore`).

    ``ripple shards`` drives it; the async twin has the same methods, awaited.
    """

    def shard_of(self, user_id: str) -> str:
        """The name of the shard that serves the user now."""
        ...

    def shards_report(self) -> ShardsReport:
        """Users and counts per shard, and the routing state every process shares."""
        ...

    def move_user(self, user_id: str, to: str, *, batch_size: int = 500) -> MoveReport:
        """Move a user to shard ``to`` without loss (or resume its interrupted move)."""
        ...

    def abort_move(self, user_id: str) -> ShardMove:
        """Roll back a move that has not switched yet: the copy is deleted, the user stays."""
        ...

    def change_ring(self, ring: Sequence[str]) -> dict[str, str]:
        """Make ``ring`` the shards the hash spreads users over, moving nobody: the users whose
        shard would change stay where they are (parked; returned as user -> shard)."""
        ...

    def rebalance(self, *, limit: int | None = None, batch_size: int = 500) -> list[MoveReport]:
        """Move parked users (and users pinned to a shard outside the ring) to their hash owner."""
        ...

    def shard_name(self, name_or_index: str | int) -> str:
        """A shard's name from its name, its address or its position in the store URI."""
        ...


@runtime_checkable
class InProcessStore(Protocol):
    """Optional marker: the store's reads run in the caller's process and hold the GIL
    (the embedded SQLite store).  Recall then encodes the query *before* reading: an
    encoder thread beside Python reads waits for the GIL after every operation it
    releases it for.  A server store (Neo4j) reads over a socket, so the query is
    encoded beside its reads instead."""

    in_process: Literal[True]


@runtime_checkable
class SupportsMaintenance(Protocol):
    """Optional: check a store and rebuild the indexes it derives from the memories
    (``ripple doctor`` and ``ripple reindex``; the embedded store and Neo4j).

    Derived indexes are what a store keeps beside the memories and entities so
    that recall is fast: lexical postings and their totals, alias lookups,
    entity degrees, vector caches.  They can always be rebuilt from the
    memories, entities and edges, which cannot be rebuilt from anything.
    """

    def check(self) -> list[Finding]:
        """Read-only: one finding per area (schema, integrity, each derived index, vectors, counts)."""
        ...

    def reindex(self, *, progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
        """Rebuild every derived index from the memories, one user per transaction; counts of rows written.

        ``progress(done, total)`` is called after each user with memories done so far.
        """
        ...
