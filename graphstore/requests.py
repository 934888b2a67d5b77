"""Typed requests to a store: one small class per :class:`~graphstore.GraphStore` method.

The engine's plans (recall, ingest, lifecycle, the API's operations) are
I/O-free generators: they *yield* a request and receive its answer.  A request
knows which store method answers it and calls it itself (:meth:`StoreRequest.call`),
so a type checker holds every request against the protocol, and a misspelt
method is an error before anything runs (there is no ``getattr(store, name)``
anywhere).  The sync driver calls :meth:`~StoreRequest.call`, the async one
awaits :meth:`~StoreRequest.acall`; the two cannot drift apart because an
async store has the same method names and arguments (see
:class:`~graphstore.AsyncGraphStore`).

Optional capabilities (batch searches, Cypher) are checked here with the
capability protocols, never with attribute probes, and a store without a batch
search gets one search per vector.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, ClassVar, Generator, Generic, Iterator, Sequence, TypeVar, cast

from .protocol import (
    ACTIVE,
    AsyncGraphStore,
    GraphStore,
    SupportsBatchEntitySearch,
    SupportsBatchMemorySearch,
    SupportsCypher,
    SupportsLexicalRoute,
    SupportsNeighbourhood,
    SupportsLocalWalks,
    SupportsNeighbourhoods,
    SupportsWarm,
)
from .records import (DocumentRecord, EdgeRecord, EntityRecord, LexicalRows, StoredMemory, Neighbor, NeighbourhoodAsk, UserState,
                      WriteBatch,
                      usable_terms)

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "StoreRequest",
    "Write",
    "Touch",
    "SetStatus",
    "DeleteMemories",
    "DeleteUser",
    "GetMemories",
    "ListMemories",
    "HasMemories",
    "LastMemoryInSession",
    "SessionTails",
    "GetEntities",
    "EntityNames",
    "Users",
    "NearestMemories",
    "NearestMemoriesBatch",
    "NearestEntities",
    "NearestEntitiesBatch",
    "NearestMultilingual",
    "HasMultilingual",
    "GetUserState",
    "WalksLocally",
    "Warm",
    "LexicalStats",
    "Postings",
    "LexicalRoute",
    "TokenVectors",
    "RelatedEdges",
    "Expand",
    "MemoriesMentioning",
    "ListEdges",
    "ExpandWalk",
    "ExpandWalks",
    "Walk",
    "GetDocument",
    "PutDocument",
    "Documents",
    "RestoreDocuments",
    "Export",
    "Stats",
    "Cypher",
]

R = TypeVar("R")


class StoreRequest(Generic[R]):
    """A request a plan yields; the driver answers it with :meth:`call` or :meth:`acall`."""

    __slots__ = ()
    #: the protocol method that answers the request (for traces and error messages)
    method: ClassVar[str] = ""

    def call(self, store: GraphStore) -> R:
        """Answer with a synchronous store."""
        raise NotImplementedError

    async def acall(self, store: AsyncGraphStore) -> R:
        """Answer with an asynchronous store: the same method, awaited.

        An :class:`~graphstore.AsyncGraphStore` has the sync protocol's method
        names and arguments, so :meth:`call` made against it returns the
        coroutine to await.
        """
        return await cast(Awaitable[R], self.call(cast(GraphStore, store)))


# ---------------------------------------------------------------------------------------- writes


@dataclass(frozen=True, slots=True)
class Write(StoreRequest[None]):
    batch: WriteBatch
    replace_mentions_of: Sequence[str] = ()
    method: ClassVar[str] = "write"

    def call(self, store: GraphStore) -> None:
        return store.write(self.batch, replace_mentions_of=self.replace_mentions_of)


@dataclass(frozen=True, slots=True)
class Touch(StoreRequest[None]):
    memory_ids: Sequence[str]
    at: float
    method: ClassVar[str] = "touch"

    def call(self, store: GraphStore) -> None:
        return store.touch(self.memory_ids, self.at)


@dataclass(frozen=True, slots=True)
class SetStatus(StoreRequest[int]):
    memory_ids: Sequence[str]
    status: str
    method: ClassVar[str] = "set_status"

    def call(self, store: GraphStore) -> int:
        return store.set_status(self.memory_ids, self.status)


@dataclass(frozen=True, slots=True)
class DeleteMemories(StoreRequest[dict[str, int]]):
    memory_ids: Sequence[str]
    method: ClassVar[str] = "delete_memories"

    def call(self, store: GraphStore) -> dict[str, int]:
        return store.delete_memories(self.memory_ids)


@dataclass(frozen=True, slots=True)
class DeleteUser(StoreRequest[dict[str, int]]):
    user_id: str
    method: ClassVar[str] = "delete_user"

    def call(self, store: GraphStore) -> dict[str, int]:
        return store.delete_user(self.user_id)


# ---------------------------------------------------------------------------------------- reads


@dataclass(frozen=True, slots=True)
class GetMemories(StoreRequest[list[StoredMemory]]):
    memory_ids: Sequence[str]
    with_vectors: bool = False
    method: ClassVar[str] = "get_memories"

    def call(self, store: GraphStore) -> list[StoredMemory]:
        return store.get_memories(self.memory_ids, with_vectors=self.with_vectors)


@dataclass(frozen=True, slots=True)
class ListMemories(StoreRequest[list[StoredMemory]]):
    user_id: str
    session_id: str | None = None
    statuses: Sequence[str] | None = None
    limit: int | None = None
    offset: int = 0
    method: ClassVar[str] = "list_memories"

    def call(self, store: GraphStore) -> list[StoredMemory]:
        return store.list_memories(self.user_id, session_id=self.session_id, statuses=self.statuses,
                                   limit=self.limit, offset=self.offset)


@dataclass(frozen=True, slots=True)
class HasMemories(StoreRequest[bool]):
    user_id: str
    method: ClassVar[str] = "has_memories"

    def call(self, store: GraphStore) -> bool:
        return store.has_memories(self.user_id)


@dataclass(frozen=True, slots=True)
class LastMemoryInSession(StoreRequest["str | None"]):
    user_id: str
    session_id: str
    method: ClassVar[str] = "last_memory_in_session"

    def call(self, store: GraphStore) -> str | None:
        return store.last_memory_in_session(self.user_id, self.session_id)


@dataclass(frozen=True, slots=True)
class SessionTails(StoreRequest[dict[str, str]]):
    user_id: str
    session_ids: Sequence[str]
    method: ClassVar[str] = "session_tails"

    def call(self, store: GraphStore) -> dict[str, str]:
        return store.session_tails(self.user_id, self.session_ids)


@dataclass(frozen=True, slots=True)
class GetEntities(StoreRequest[list[EntityRecord]]):
    user_id: str
    keys: Sequence[str]
    method: ClassVar[str] = "get_entities"

    def call(self, store: GraphStore) -> list[EntityRecord]:
        return store.get_entities(self.user_id, self.keys)


@dataclass(frozen=True, slots=True)
class EntityNames(StoreRequest[dict[str, str]]):
    entity_ids: Sequence[str]
    method: ClassVar[str] = "entity_names"

    def call(self, store: GraphStore) -> dict[str, str]:
        return store.entity_names(self.entity_ids)


@dataclass(frozen=True, slots=True)
class Users(StoreRequest[list[str]]):
    method: ClassVar[str] = "users"

    def call(self, store: GraphStore) -> list[str]:
        return store.users()


# ---------------------------------------------------------------------------------------- search


@dataclass(frozen=True, slots=True)
class NearestMemories(StoreRequest[list[tuple[str, float]]]):
    user_id: str
    vector: "np.ndarray"
    k: int
    statuses: Sequence[str] = (ACTIVE,)
    method: ClassVar[str] = "nearest_memories"

    def call(self, store: GraphStore) -> list[tuple[str, float]]:
        return store.nearest_memories(self.user_id, self.vector, self.k, statuses=self.statuses)


@dataclass(frozen=True, slots=True)
class NearestEntities(StoreRequest[list[tuple[str, float]]]):
    user_id: str
    vector: "np.ndarray"
    k: int
    method: ClassVar[str] = "nearest_entities"

    def call(self, store: GraphStore) -> list[tuple[str, float]]:
        return store.nearest_entities(self.user_id, self.vector, self.k)


@dataclass(frozen=True, slots=True)
class NearestMultilingual(StoreRequest[list[tuple[str, float]]]):
    """Nearest memories by their multilingual vectors (ripple's multilingual recall route)."""

    user_id: str
    vector: "np.ndarray"
    k: int
    statuses: Sequence[str] = (ACTIVE,)
    method: ClassVar[str] = "nearest_multilingual"

    def call(self, store: GraphStore) -> list[tuple[str, float]]:
        return store.nearest_multilingual(self.user_id, self.vector, self.k, statuses=self.statuses)


@dataclass(frozen=True, slots=True)
class GetUserState(StoreRequest[UserState]):
    """Whether the user has memories, and multilingual ones: a recall's first read, one call."""

    user_id: str
    method: ClassVar[str] = "get_user_state"

    def call(self, store: GraphStore) -> UserState:
        return store.get_user_state(self.user_id)


@dataclass(frozen=True, slots=True)
class WalksLocally(StoreRequest[bool]):
    """Whether the user's walks are answered in process now (:class:`~graphstore.SupportsLocalWalks`);
    ``False`` for a store that does not say."""

    user_id: str
    method: ClassVar[str] = "walks_locally"

    def call(self, store: GraphStore) -> bool:
        return isinstance(store, SupportsLocalWalks) and store.walks_locally(self.user_id)

    async def acall(self, store: AsyncGraphStore) -> bool:
        return isinstance(store, SupportsLocalWalks) and store.walks_locally(self.user_id)


@dataclass(frozen=True, slots=True)
class Warm(StoreRequest[None]):
    """Load what the store keeps in process for the user's recalls (:class:`~graphstore.SupportsWarm`);
    nothing where the store keeps nothing."""

    user_id: str
    method: ClassVar[str] = "warm"

    def call(self, store: GraphStore) -> None:
        if isinstance(store, SupportsWarm):
            store.warm(self.user_id)

    async def acall(self, store: AsyncGraphStore) -> None:
        if isinstance(store, SupportsWarm):
            await cast(Awaitable[None], store.warm(self.user_id))


@dataclass(frozen=True, slots=True)
class HasMultilingual(StoreRequest[bool]):
    """Whether any memory of the user has a multilingual vector."""

    user_id: str
    method: ClassVar[str] = "has_multilingual"

    def call(self, store: GraphStore) -> bool:
        return store.has_multilingual(self.user_id)


@dataclass(frozen=True, slots=True)
class NearestMemoriesBatch(StoreRequest[list[list[tuple[str, float]]]]):
    """Nearest memories of many vectors (near-duplicate checks on ingest): one call when the store
    can (:class:`~graphstore.SupportsBatchMemorySearch`), else one search per vector."""

    user_id: str
    vectors: "np.ndarray"
    k: int
    statuses: Sequence[str] = (ACTIVE,)
    method: ClassVar[str] = "nearest_memories_batch"

    def call(self, store: GraphStore) -> list[list[tuple[str, float]]]:
        if isinstance(store, SupportsBatchMemorySearch):
            return store.nearest_memories_batch(self.user_id, self.vectors, self.k, statuses=self.statuses)
        return [store.nearest_memories(self.user_id, v, self.k, statuses=self.statuses) for v in self.vectors]

    async def acall(self, store: AsyncGraphStore) -> list[list[tuple[str, float]]]:
        if isinstance(store, SupportsBatchMemorySearch):
            return await cast(Any, store).nearest_memories_batch(self.user_id, self.vectors, self.k,
                                                                 statuses=self.statuses)
        return [await store.nearest_memories(self.user_id, v, self.k, statuses=self.statuses) for v in self.vectors]


@dataclass(frozen=True, slots=True)
class NearestEntitiesBatch(StoreRequest[list[list[tuple[str, float]]]]):
    """Nearest entities of many name vectors (entity resolution on ingest); see :class:`NearestMemoriesBatch`."""

    user_id: str
    vectors: "np.ndarray"
    k: int
    method: ClassVar[str] = "nearest_entities_batch"

    def call(self, store: GraphStore) -> list[list[tuple[str, float]]]:
        if isinstance(store, SupportsBatchEntitySearch):
            return store.nearest_entities_batch(self.user_id, self.vectors, self.k)
        return [store.nearest_entities(self.user_id, v, self.k) for v in self.vectors]

    async def acall(self, store: AsyncGraphStore) -> list[list[tuple[str, float]]]:
        if isinstance(store, SupportsBatchEntitySearch):
            return await cast(Any, store).nearest_entities_batch(self.user_id, self.vectors, self.k)
        return [await store.nearest_entities(self.user_id, v, self.k) for v in self.vectors]


@dataclass(frozen=True, slots=True)
class LexicalStats(StoreRequest[tuple[int, float, dict[str, int]]]):
    user_id: str
    terms: Sequence[str]
    method: ClassVar[str] = "lexical_stats"

    def call(self, store: GraphStore) -> tuple[int, float, dict[str, int]]:
        return store.lexical_stats(self.user_id, self.terms)


@dataclass(frozen=True, slots=True)
class Postings(StoreRequest[list[tuple[str, str, int, int]]]):
    user_id: str
    terms: Sequence[str]
    method: ClassVar[str] = "postings"

    def call(self, store: GraphStore) -> list[tuple[str, str, int, int]]:
        return store.postings(self.user_id, self.terms)


@dataclass(frozen=True, slots=True)
class LexicalRoute(StoreRequest[LexicalRows]):
    """The lexical route of a query: BM25 totals, document frequencies, and the postings of the usable
    terms (:func:`~graphstore.records.usable_terms`).  One call when the store can
    (:class:`~graphstore.SupportsLexicalRoute`: one round trip to a server), else
    :meth:`~graphstore.GraphStore.lexical_stats` then :meth:`~graphstore.GraphStore.postings`."""

    user_id: str
    terms: Sequence[str]
    max_df_ratio: float
    max_df: int | None
    method: ClassVar[str] = "lexical_route"

    def call(self, store: GraphStore) -> LexicalRows:
        if isinstance(store, SupportsLexicalRoute):
            return store.lexical_route(self.user_id, self.terms, max_df_ratio=self.max_df_ratio, max_df=self.max_df)
        n_docs, avg_len, df = store.lexical_stats(self.user_id, self.terms)
        usable = usable_terms(self.terms, df, n_docs, self.max_df_ratio, self.max_df)
        return LexicalRows(n_docs, avg_len, df, store.postings(self.user_id, usable) if usable else [])

    async def acall(self, store: AsyncGraphStore) -> LexicalRows:
        if isinstance(store, SupportsLexicalRoute):
            return await cast(Any, store).lexical_route(self.user_id, self.terms, max_df_ratio=self.max_df_ratio,
                                                        max_df=self.max_df)
        n_docs, avg_len, df = await store.lexical_stats(self.user_id, self.terms)
        usable = usable_terms(self.terms, df, n_docs, self.max_df_ratio, self.max_df)
        return LexicalRows(n_docs, avg_len, df, await store.postings(self.user_id, usable) if usable else [])


@dataclass(frozen=True, slots=True)
class TokenVectors(StoreRequest[dict[str, bytes]]):
    memory_ids: Sequence[str]
    method: ClassVar[str] = "token_vectors"

    def call(self, store: GraphStore) -> dict[str, bytes]:
        return store.token_vectors(self.memory_ids)


# ---------------------------------------------------------------------------------------- graph


@dataclass(frozen=True, slots=True)
class RelatedEdges(StoreRequest[list[EdgeRecord]]):
    user_id: str
    source_ids: Sequence[str]
    predicates: Sequence[str]
    method: ClassVar[str] = "related_edges"

    def call(self, store: GraphStore) -> list[EdgeRecord]:
        return store.related_edges(self.user_id, self.source_ids, self.predicates)


@dataclass(frozen=True, slots=True)
class Expand(StoreRequest[list[Neighbor]]):
    user_id: str
    frontier: Sequence[str]
    edge_types: Sequence[str]
    max_degree: int | None = None
    method: ClassVar[str] = "expand"

    def call(self, store: GraphStore) -> list[Neighbor]:
        return store.expand(self.user_id, self.frontier, self.edge_types, max_degree=self.max_degree)


@dataclass(frozen=True, slots=True)
class MemoriesMentioning(StoreRequest[list[tuple[str, str]]]):
    """The latest memories mentioning each entity (a new statement's candidates to replace)."""

    user_id: str
    entity_ids: Sequence[str]
    statuses: Sequence[str] = (ACTIVE,)
    per_entity: int = 4
    method: ClassVar[str] = "memories_mentioning"

    def call(self, store: GraphStore) -> list[tuple[str, str]]:
        return store.memories_mentioning(self.user_id, self.entity_ids, statuses=self.statuses,
                                         per_entity=self.per_entity)


@dataclass(frozen=True, slots=True)
class ListEdges(StoreRequest[list[EdgeRecord]]):
    """Every edge of a user of some types (the open conflicts: CONFLICTS edges)."""

    user_id: str
    edge_types: Sequence[str]
    method: ClassVar[str] = "list_edges"

    def call(self, store: GraphStore) -> list[EdgeRecord]:
        return store.list_edges(self.user_id, self.edge_types)


#: A walk over the graph: yields each hop's frontier, receives that frontier's ``expand`` rows,
#: returns what it found (spreading activation, a PageRank neighbourhood).
Walk = Generator[list[str], list[Neighbor], R]


@dataclass(frozen=True, slots=True)
class ExpandWalk(StoreRequest[R]):
    """Drive a walk of at most ``max_hops`` hops over ``edge_types``; the answer is the walk's result.

    Every hop is an :meth:`~graphstore.GraphStore.expand` of the frontier the walk yields, unless the
    store reads the whole neighbourhood at once (:class:`~graphstore.SupportsNeighbourhood`): then
    the hops are answered from that one read (one round trip to a server instead of one per hop),
    with the same rows in the same order, and a frontier node outside it (data written meanwhile)
    is expanded on its own.  ``labels`` tells the store which entities the walk may continue from
    (None: any): a hint that spares reads, never a filter on the rows the walk receives.
    """

    user_id: str
    edge_types: tuple[str, ...]
    walk: Walk[R]
    max_hops: int
    max_degree: int | None = None
    labels: tuple[str, ...] | None = None
    method: ClassVar[str] = "expand"

    def _steps(self, whole: bool) -> Generator[StoreRequest[Any], Any, R]:
        """The walk as store reads (:class:`Expand` per hop, or one :class:`_Neighbourhood` first):
        yields the requests, receives their answers."""
        try:
            frontier = next(self.walk)
            rows_of: dict[str, list[Neighbor]] | None = None
            if whole and self.max_hops > 0:
                rows_of = yield _Neighbourhood(self.user_id, frontier, self.edge_types, self.max_hops - 1,
                                               self.max_degree, self.labels)
            while True:
                if rows_of is None:
                    rows: list[Neighbor] = yield Expand(self.user_id, frontier, self.edge_types, self.max_degree)
                else:
                    ids = list(dict.fromkeys(frontier))
                    missing = [i for i in ids if i not in rows_of]
                    if missing:  # reached through data written since the neighbourhood was read
                        for i in missing:
                            rows_of[i] = []
                        for row in (yield Expand(self.user_id, missing, self.edge_types, self.max_degree)):
                            rows_of[row.source].append(row)
                    rows = [row for i in ids for row in rows_of[i]]
                frontier = self.walk.send(rows)
        except StopIteration as done:
            return cast(R, done.value)

    def call(self, store: GraphStore) -> R:
        return _run_steps(self._steps(isinstance(store, SupportsNeighbourhood)), store)

    async def acall(self, store: AsyncGraphStore) -> R:
        return await _arun_steps(self._steps(isinstance(store, SupportsNeighbourhood)), store)


@dataclass(frozen=True, slots=True)
class ExpandWalks(StoreRequest[list[Any]]):
    """Several walks of one user (the recall's spreading channels), answered in order: each walk's
    result, as :class:`ExpandWalk` would give it.

    Where the store reads neighbourhoods several at a time (:class:`~graphstore.SupportsNeighbourhoods`)
    the walks' first reads go to it together: one round trip to a server for all of them instead of one
    per walk; what each walk reads after that (a node outside its neighbourhood) it reads on its own.
    Otherwise the walks run one after the other.  Walks only read, so the answers do not depend on it.
    """

    user_id: str
    walks: tuple[ExpandWalk[Any], ...]
    method: ClassVar[str] = "expand"

    def _steps(self, whole: bool, together: bool) -> Generator[StoreRequest[Any], Any, list[Any]]:
        runs = [walk._steps(whole) for walk in self.walks]
        results: list[Any] = [None] * len(runs)
        first: dict[int, StoreRequest[Any]] = {}
        for i, run in enumerate(runs):
            try:
                first[i] = next(run)
            except StopIteration as done:  # a walk with nothing to expand
                results[i] = done.value
        shared = [i for i, step in first.items() if isinstance(step, _Neighbourhood)] if together else []
        answers: dict[int, Any] = {}
        if len(shared) > 1:
            asks = [cast(_Neighbourhood, first[i]).ask() for i in shared]
            answers = dict(zip(shared, (yield _Neighbourhoods(self.user_id, asks))))
        for i, step in first.items():
            try:
                answer = answers[i] if i in answers else (yield step)
                while True:
                    answer = yield runs[i].send(answer)
            except StopIteration as done:
                results[i] = done.value
        return results

    def call(self, store: GraphStore) -> list[Any]:
        whole = isinstance(store, SupportsNeighbourhood)
        return _run_steps(self._steps(whole, whole and isinstance(store, SupportsNeighbourhoods)), store)

    async def acall(self, store: AsyncGraphStore) -> list[Any]:
        whole = isinstance(store, SupportsNeighbourhood)
        return await _arun_steps(self._steps(whole, whole and isinstance(store, SupportsNeighbourhoods)), store)


def _run_steps(steps: Generator[StoreRequest[Any], Any, R], store: GraphStore) -> R:
    """Answer each store request a compound request's steps yield, with the store; their result."""
    try:
        step = next(steps)
        while True:
            step = steps.send(step.call(store))
    except StopIteration as done:
        return cast(R, done.value)


async def _arun_steps(steps: Generator[StoreRequest[Any], Any, R], store: AsyncGraphStore) -> R:
    """:func:`_run_steps`, awaited."""
    try:
        step = next(steps)
        while True:
            step = steps.send(await step.acall(store))
    except StopIteration as done:
        return cast(R, done.value)


@dataclass(frozen=True, slots=True)
class _Neighbourhood(StoreRequest[dict[str, list[Neighbor]]]):
    """:meth:`~graphstore.SupportsNeighbourhood.neighbourhood`, asked by :class:`ExpandWalk` only of a
    store that offers it."""

    user_id: str
    sources: Sequence[str]
    edge_types: Sequence[str]
    reach: int
    max_degree: int | None
    labels: Sequence[str] | None
    method: ClassVar[str] = "neighbourhood"

    def ask(self) -> NeighbourhoodAsk:
        return NeighbourhoodAsk(self.sources, self.edge_types, self.reach, self.max_degree, self.labels)

    def call(self, store: GraphStore) -> dict[str, list[Neighbor]]:
        return cast(SupportsNeighbourhood, store).neighbourhood(
            self.user_id, self.sources, self.edge_types, reach=self.reach, max_degree=self.max_degree,
            labels=self.labels)


@dataclass(frozen=True, slots=True)
class _Neighbourhoods(StoreRequest[list[dict[str, list[Neighbor]]]]):
    """:meth:`~graphstore.SupportsNeighbourhoods.neighbourhoods`, asked by :class:`ExpandWalks` only of a
    store that offers it."""

    user_id: str
    asks: Sequence[NeighbourhoodAsk]
    method: ClassVar[str] = "neighbourhood"

    def call(self, store: GraphStore) -> list[dict[str, list[Neighbor]]]:
        return cast(SupportsNeighbourhoods, store).neighbourhoods(self.user_id, self.asks)


# ---------------------------------------------------------------------------------------- documents


@dataclass(frozen=True, slots=True)
class GetDocument(StoreRequest["tuple[int, str, float] | None"]):
    user_id: str
    key: str
    method: ClassVar[str] = "get_document"

    def call(self, store: GraphStore) -> tuple[int, str, float] | None:
        return store.get_document(self.user_id, self.key)


@dataclass(frozen=True, slots=True)
class PutDocument(StoreRequest[tuple[bool, int]]):
    user_id: str
    key: str
    value_json: str | None
    expected_version: int | None
    at: float
    method: ClassVar[str] = "put_document"

    def call(self, store: GraphStore) -> tuple[bool, int]:
        return store.put_document(self.user_id, self.key, self.value_json, expected_version=self.expected_version,
                                  at=self.at)


@dataclass(frozen=True, slots=True)
class Documents(StoreRequest[list[DocumentRecord]]):
    user_id: str
    method: ClassVar[str] = "documents"

    def call(self, store: GraphStore) -> list[DocumentRecord]:
        return store.documents(self.user_id)


@dataclass(frozen=True, slots=True)
class RestoreDocuments(StoreRequest[None]):
    documents: Sequence[DocumentRecord]
    method: ClassVar[str] = "restore_documents"

    def call(self, store: GraphStore) -> None:
        return store.restore_documents(self.documents)


# ---------------------------------------------------------------------------------------- housekeeping


@dataclass(frozen=True, slots=True)
class Export(StoreRequest[Any]):
    """Every record of a user: an iterator from a sync store, an async iterator from an async one."""

    user_id: str
    method: ClassVar[str] = "export"

    def call(self, store: GraphStore) -> Iterator[StoredMemory | EntityRecord | EdgeRecord]:
        return store.export(self.user_id)

    async def acall(self, store: AsyncGraphStore) -> Any:
        return store.export(self.user_id)  # an async iterator: nothing to await yet


@dataclass(frozen=True, slots=True)
class Stats(StoreRequest[dict[str, int]]):
    user_id: str | None = None
    method: ClassVar[str] = "stats"

    def call(self, store: GraphStore) -> dict[str, int]:
        return store.stats(self.user_id)


@dataclass(frozen=True, slots=True)
class Cypher(StoreRequest[tuple[list[str], list[list[Any]]]]):
    """A Cypher query, for stores that run them (:class:`~graphstore.SupportsCypher`)."""

    query: str
    params: dict[str, Any] = field(default_factory=dict)
    write: bool = False
    allow_procedures: bool = False
    allow_admin: bool = False
    method: ClassVar[str] = "cypher"

    def call(self, store: GraphStore) -> tuple[list[str], list[list[Any]]]:
        return _cypher_store(store).cypher(self.query, self.params, write=self.write,
                                           allow_procedures=self.allow_procedures, allow_admin=self.allow_admin)

    async def acall(self, store: AsyncGraphStore) -> tuple[list[str], list[list[Any]]]:
        return await cast(Any, _cypher_store(store)).cypher(
            self.query, self.params, write=self.write, allow_procedures=self.allow_procedures,
            allow_admin=self.allow_admin)


def _cypher_store(store: GraphStore | AsyncGraphStore) -> SupportsCypher:
    if not isinstance(store, SupportsCypher):
        from ripple.errors import ConfigError

        raise ConfigError(f"the store {store.uri} does not run Cypher (a Neo4j store does: bolt://... or neo4j://...)")
    return store
