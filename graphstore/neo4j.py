"""The Neo4j backend: the same protocol as the embedded store, on a Neo4j 5 server.

Graph model (every node and relationship carries ``user_id``)::

    (:Memory {id, user_id, agent_id, session_id, text, at, at_iso, created_at, kind, importance,
              status, access_count, last_access, metadata, language, terms, doc_len,
              embedding, token_vectors})
    (:Entity {id, user_id, name, key, label, aliases, degree, embedding})
    (:Memory)-[:MENTIONS {user_id, weight, predicate, evidence, at}]->(:Entity)
    (:Entity)-[:RELATED  {user_id, weight, predicate, evidence, at}]->(:Entity)
    (:Memory)-[:NEXT     {user_id, weight, predicate, evidence, at}]->(:Memory)

    (:Term {user_id, term})-[:POSTING {tf}]->(:Memory)     lexical postings, active memories only
    (:Lexicon {user_id, n_docs, total_len})                BM25 totals, active memories only
    (:Alias {user_id, alias, entity_id})                   key/alias lookup (SQLite's ``aliases``)
    (:RippleMeta {key: 'schema', version})

Times are the records' POSIX seconds, stored as they come; ``at_iso`` is a
convenience copy of ``at`` for people reading the graph in Cypher.  ``metadata``
is the record's JSON string; ``embedding`` is stored as a float32 array (half
the size of a Cypher float list) and comes back bit-identical.

Postings: why ``(:Term)-[:POSTING]->(:Memory)`` and not a full-text index.
The engine computes BM25 itself from :meth:`lexical_stats` and :meth:`postings`,
so the store must return SQLite's exact numbers (document frequencies, term
frequencies, document lengths), not Lucene scores.  Measured on this server at
100k memories (one user, then 100 users of 1k; 6-20 terms a memory from a 50k-word
Zipf vocabulary without stop words; 5-term queries, p50 per call; 2 cores shared
with other jobs)::

                                              1 user x 100k      100 users x 1k
    Term nodes + POSTING rels   postings         8.2 ms             1.6 ms
                                df               1.2 ms             1.4 ms
                                ingest           1.5k memories/s    1.4k memories/s
    full-text index on a        postings        13.0 ms             2.4 ms
    terms_text property         df               2.9 ms             1.7 ms
    (whitespace analyzer,       ingest           6.7k memories/s    7.1k memories/s
    user_id in the index)

(a 5-term query returns ~2,100 postings for the big user, ~27 for a small one).
A posting lookup is one seek on the ``(user_id, term)`` uniqueness index and a
walk over that term's relationships; ``df`` is the Term node's degree, which
Neo4j keeps per relationship type (``COUNT {(t)-[:POSTING]->()}`` plans as
``GetDegree``), so there is no counter to drift, and writers adding postings to
a common term do not queue on an exclusive lock the way they would to update a
``df`` property (since 4.3 Neo4j locks a dense node's relationship chains, not
the node).
The full-text route runs one Lucene query per term, must filter by user, count
``tf`` from the ``terms`` list and count ``df`` by enumerating the hits, and it
gets slower as more users share a term.  Term nodes make writes ~4x dearer
(a MERGE and a relationship per distinct term), but reads are the hot path of
recall, and ingest is bounded by text analysis long before the store.  Rows
come back as one list per term (``collect``): one record per posting took
45 ms instead of 8 ms to decode.  Copying the memory id and length onto each
POSTING would save a further ~1.5 ms; each fact is kept once instead.

Vector search: a vector index per label (``ripple_memory_embedding``,
``ripple_entity_embedding``, cosine) is created on the first write that carries
an embedding, with that vector's dimension; a later write with another
dimension is an error while vectors of the old dimension remain (the index is
rebuilt if none remain).  The index is approximate (HNSW, quantised) and global,
so a search asks it for ``max(4k, 64)`` candidates, keeps the user's nodes of
the wanted statuses and re-scores them exactly with ``vector.similarity.cosine``
(``cos = 2s - 1``).  The result is accepted when ``k`` candidates survive and the
k-th is nearer than the farthest candidate (so every node nearer than the k-th
was a candidate, up to the index's own approximation); otherwise the candidate
count grows 8x, and past ``_MAX_CANDIDATES`` the search becomes an exact scan
of the user's nodes.  A user with fewer than ``_EXACT_SCAN_BELOW`` memories never
goes through the index: an exact server-side scan over the user's nodes is
cheap and exact, and it is the only way to find a small user's nodes in a large
store, where the global top candidates belong to other users.  The price of a
user whose memories are a small share of a huge store, or of a status filter
that excludes most of the nearest candidates, is one scan over that user's
vectors: ~22 us per 384-d vector here, so the 2k threshold costs at most ~45 ms,
against ~16 ms p50 for the index route at 100k memories (recall@10 1.0 on
clustered low-rank vectors like a sentence model's, with or without
quantisation; 0.26 on uniformly random 384-d vectors, which no model produces).

Near cache (:mod:`graphstore.nearcache`): a store keeps the sentence vectors of its hot users (and
the token vectors recalls asked for) in its own process, up to ``near_cache_mb`` (512 by default; 0
turns it off), and searches them exactly, as the embedded store does, instead of the index above: a
search is then one small round trip that reads the user's revision, and ranks what the embedded store
ranks.  The revision is ``(epoch, rev)`` on the user's ``Lexicon`` node: every transaction that
changes the user's memories or entities (writes, status changes, deletions, each step of
``delete_user``) bumps it first, so a search sees whatever any process committed before it began;
this store's own writes update its cached vectors in place when their revision follows the cached
one.  A user is loaded on a search (one read of every vector: ~1-3 s per 10k memories on this
machine, once) when the budget has room or when it is searched more often than the users it would
evict; others are searched on the server.  Writes made with :meth:`Neo4jStore.cypher` do not bump
revisions: this store then forgets its cache, other processes cannot know.  Beside a user's vectors at a
revision, the cache keeps the user's walk edges (:mod:`graphstore.neargraph`, ``near_graph``): the
recall's spreading read is then answered in this process too; a write of this process drops them (they
are read again, beside the recalls, once the user's vectors are current).

Transactions: every :meth:`Neo4jStore.write` is one write transaction of a
handful of ``UNWIND`` statements, whatever the batch size.  Reads run as
auto-commit queries of a session in read access mode: a ``neo4j://`` routing
URI sends them to followers, the server refuses a write in them, and one
bookmark manager per store keeps a store's reads causally after its writes.  An
auto-commit query is one round trip (RUN and PULL in one flush); a read
transaction costs two more (BEGIN, COMMIT), which was two thirds of a recall's
round trips.  Errors the driver calls retryable (lost connections, leader
switches, deadlocks) are retried here, each call anew, within the store's
retry budget (``retry_seconds``, 8 s by default; :mod:`graphstore.retries`),
then :class:`~ripple.errors.StoreUnavailable` says how long it tried.  (The
driver's own managed retries ran for 30 s, plus connection timeouts: a call to
a stopped server blocked ~38 s.)  A commit whose outcome is unknown
(``IncompleteCommit``) is never retried.  Schema changes cannot share a transaction with data,
so the lazy vector-index creation runs in its own transaction before the write.
``delete_user`` is one transaction for a small user; a large one is deleted
in transactions of at most 5k deletions per step (one transaction for 100k
memories with their postings exceeds the default transaction memory of a 1 GB
heap), so an interrupted call leaves part of the user, and calling it again
finishes the job.

Round trips of a recall: the engine asks for what it needs stage by stage, and
this store answers the two requests that would each cost several round trips in
one statement: :meth:`Neo4jStore.lexical_route` (BM25 totals, document
frequencies and the postings of the usable terms) and
:meth:`Neo4jStore.neighbourhood` (every node a spreading walk can expand within
its hops, each with exactly the rows :meth:`Neo4jStore.expand` gives it, so the
activation arithmetic stays in Python and a spread is one round trip, not one
per hop).  The vector search probes the user's size and searches in the same
statement.  Results come back as one record of lists, not a record per row
(the driver decodes one Bolt message per record).  A default recall is then
seven round trips (user check, dense search beside the encoder, lexical route,
token vectors, two spreads, records) instead of 34 (with the near cache the dense
search and the token vectors are each a revision check that reads little), and the plans of these
statements are made at open (:meth:`_Neo4jCore._warm_statements`), over two
connections, so the first recalls after a start are not the slow ones.
The recall's first read (:meth:`Neo4jStore.get_user_state`) answers the user check, the
multilingual route's check and the near cache's revision read in one statement: the user's next
cached search and walk in the same operation (:mod:`graphstore.scope`: the recall, whichever of its
threads runs them) then read no revision of their own (:class:`_SeenRevision`), and see what was
committed before the recall began.  (The recall starts its query's encoding, and with it the dense
search, before that read when the model is loaded: a search that comes before the read's answer reads
the revision itself.)
A recall's touch (access counts) is written beside the caller (:mod:`graphstore.touches`): reads of
access counts through the store wait for pending touches, ``close`` writes them.

Sync and async: each operation is written once as an I/O-free plan (a generator
yielding transactions, whose bodies yield Cypher statements and receive their
rows); :class:`Neo4jStore` and :class:`AsyncNeo4jStore` only run plans, with the
driver's sync and async APIs, and differ only in ``await``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import re
import threading
import time
from array import array
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Generator, Iterable, Iterator, Sequence, TypeVar, cast

from ripple.errors import RippleError, SchemaError, StoreError, StoreUnavailable

from . import retries
from .cypher_policy import CypherPlan, plan_of
from .cypher_policy import check as check_plan
from .neargraph import WALK_TYPES, NearGraph, holds, row_order
from .nearcache import (
    DEFAULT_BUDGET_MB, NEAR_LOAD_BESIDE_ROWS, NearCache, Part, Revision, estimate_bytes, index_bytes, nearest_from,
)
from .protocol import ACTIVE
from .records import (
    DocumentRecord,
    EDGE_MENTIONS,
    EDGE_NEXT,
    EDGE_RELATED,
    EDGE_CONFLICTS,
    EDGE_RETRACTS,
    EDGE_SUPERSEDES,
    EDGE_TYPES,
    EdgeRecord,
    EntityRecord,
    Finding,
    LexicalRows,
    StoredMemory,
    Neighbor,
    NeighbourhoodAsk,
    WriteBatch,
    UserState,
)
from .scope import current_scope
from .touches import AsyncTouchWriter, TouchWriter
from .vectors import VectorIndex

if TYPE_CHECKING:
    import numpy as np
    from neo4j import AsyncDriver, AsyncSession, AsyncTransaction, Driver, Record, Session, Transaction

__all__ = ["Neo4jStore", "AsyncNeo4jStore", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1
_EXACT_SCAN_BELOW = 2_000  # users with fewer memories (or entities) are searched exactly
_MAX_CANDIDATES = 20_000  # beyond this many index candidates, scan the user's vectors exactly
# connections opened at start: a recall reads on two at once (its dense search runs beside its reads)
_WARM_CONNECTIONS = 2

T = TypeVar("T")
_log = logging.getLogger(__name__)


# -- plans: operations as generators, no I/O ---------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Stmt:
    """One Cypher statement of a transaction body; the runner sends back its records (with
    ``explain``: it runs ``EXPLAIN`` of the statement and sends back ``[CypherPlan]``)."""

    cypher: str
    params: dict[str, Any]
    explain: bool = False


_Body = Generator[_Stmt, "list[Record]", T]

_PARAMETER = re.compile(r"\$(\w+)")


@dataclass(frozen=True, slots=True)
class _Planned:
    """A statement the server plans once and keeps: its parameters travel in one map (``$p``) and it runs
    with ``CYPHER replan=skip``.

    Why: planning, not running, was most of the server's work in an ingest (benchmarks/RESULTS.md, "Neo4j
    ingest: statements planned once").  Neo4j keys its plan cache on the statement text *and* on the type of
    every parameter, where a list's type includes its size on a log-10 scale (0, 1, 2-9, 10-99, ...): the
    batch write, with 18 lists of which any may be empty, was planned anew for each new combination, ~2 s of
    server time each, and a read with a list of ids once per size class.  A map parameter's type is just
    "map", so the statement text alone picks the plan.  And each time the graph's counts moved by more than
    the server's divergence threshold (an ingest into a new store doubles them again and again) the plan was
    made again; ``replan=skip`` keeps a valid plan (a schema change still invalidates it).  Only for
    statements whose plan the statistics cannot improve: each starts from nodes an index seek finds by the
    keys the statement names (an id, a user's session or alias), and reaches every other node by expanding
    from those (checked on an empty store: ``tests/graphstore/test_neo4j.py``, and the plans made on an
    empty store were the ones made on a populated one, operator for operator).  Where the planner has a
    worse choice that an empty store's statistics can make look as good, the statement names its index
    (``USING INDEX``: CI's server once planned ``_MEMORIES_MENTIONING`` as a seek of every MENTIONS edge of
    the user).
    """

    cypher: str

    @classmethod
    def of(cls, cypher: str) -> "_Planned":
        return cls("CYPHER replan=skip\n" + _PARAMETER.sub(r"$p.\1", cypher.strip()) + "\n")

    def __call__(self, **params: Any) -> _Stmt:
        return _Stmt(self.cypher, {"p": params})


@dataclass(frozen=True, slots=True)
class _Tx:
    """One step of a plan: a write is one managed transaction; a read's statements run as auto-commit
    queries of a read session (one round trip each).  ``body`` is called anew on every retry."""

    write: bool
    body: Callable[[], _Body[Any]]


@dataclass(frozen=True, slots=True)
class _Local:
    """A step of a plan that is work in this process, not on the server (building a near-cache part from the
    rows a load read: a second or more for a big user): the sync driver runs it in place, the async one in a
    worker thread, so that the event loop goes on serving meanwhile."""

    work: Callable[[], Any]


_Plan = Generator["_Tx | _Local", Any, T]


def _run_body(tx: "Transaction | Session", body: Callable[[], _Body[T]]) -> T:
    """Run a body's statements in a transaction, or (reads) as auto-commit queries of a session."""
    gen = body()
    rows: list[Record] | None = None
    while True:
        try:
            stmt = gen.send(rows)  # type: ignore[arg-type]
        except StopIteration as done:
            return done.value
        if stmt.explain:
            rows = cast("list[Record]", [plan_of(tx.run("EXPLAIN " + stmt.cypher, stmt.params).consume())])
        else:
            rows = list(tx.run(stmt.cypher, stmt.params))


async def _arun_body(tx: "AsyncTransaction | AsyncSession", body: Callable[[], _Body[T]]) -> T:
    gen = body()
    rows: list[Record] | None = None
    while True:
        try:
            stmt = gen.send(rows)  # type: ignore[arg-type]
        except StopIteration as done:
            return done.value
        if stmt.explain:
            summary = await (await tx.run("EXPLAIN " + stmt.cypher, stmt.params)).consume()
            rows = cast("list[Record]", [plan_of(summary)])
        else:
            rows = [r async for r in await tx.run(stmt.cypher, stmt.params)]


def _one(write: bool, cypher: str, params: dict[str, Any]) -> _Tx:
    def body() -> _Body[list[Record]]:
        return (yield _Stmt(cypher, params))

    return _Tx(write, body)


def _read(cypher: str, **params: Any) -> _Tx:
    """A read transaction of one statement, returning its records."""
    return _one(False, cypher, params)


def _reading(stmt: _Stmt) -> _Tx:
    """A read transaction of one statement (a :class:`_Planned` one's), returning its records."""
    return _one(False, stmt.cypher, stmt.params)


def _write(cypher: str, **params: Any) -> _Tx:
    """A write transaction of one statement, returning its records."""
    return _one(True, cypher, params)


def _bump(users: Sequence[str]) -> _Body[dict[str, Revision]]:
    """Bump the revisions of ``users`` (the first statement of a write transaction); their new revisions."""
    if not users:
        return {}
    rows = yield _BUMP_REVISIONS(users=list(users))
    return {str(u): (str(epoch), int(rev)) for u, epoch, rev in rows[0]["revs"]}


@dataclass(slots=True)
class _SeenRevision:
    """The revision of a user a user-state read (a recall's first read) found, kept in the operation's
    scope (:mod:`graphstore.scope`, under ``(_SEEN, store, user)``: shared by the threads the recall runs
    its searches in) for the user's next near-cache search and walk: they then need no revision read of
    their own.  Used once by each, and only when the cached entry is at exactly this revision (this
    process's own writes since moved the entry on: then the search reads)."""

    key: Revision | None
    used: set[str] = field(default_factory=set)  # what stood on it: "search" (the dense search), "walk"


_SEEN = "neo4j-seen-revision"  # (the scope key's first part)


# -- errors -----------------------------------------------------------------------------------
def _flat(exc: BaseException) -> str:
    """A driver error's text on one line (its connection errors span several)."""
    return " ".join(str(exc).split())


@contextlib.contextmanager
def _map_errors(uri: str, *, opening: bool = False) -> Iterator[None]:
    """Turn neo4j driver errors into ripple errors, chained ``from`` the original."""
    from neo4j import exceptions as nx

    try:
        yield
    except nx.AuthError as exc:
        raise StoreUnavailable(
            f"Neo4j at {uri} rejected the credentials ({exc.message}); check the user and password"
            " (RIPPLE_NEO4J_USER / RIPPLE_NEO4J_PASSWORD)"
        ) from exc
    except nx.IncompleteCommit as exc:
        raise StoreUnavailable(f"lost Neo4j at {uri} during a commit, which may or may not have been applied:"
                               f" {_flat(exc)}") from exc
    except (nx.ServiceUnavailable, nx.SessionExpired, nx.DatabaseUnavailable, nx.ConnectionAcquisitionTimeoutError) as exc:
        raise StoreUnavailable(f"cannot reach Neo4j at {uri}: {_flat(exc)} (is the server running?)") from exc
    except nx.Neo4jError as exc:
        if opening:
            raise StoreUnavailable(f"cannot open the Neo4j store at {uri}: {exc.code}: {exc.message}") from exc
        if exc.code == "Neo.ClientError.Statement.AccessMode":
            raise StoreError(f"the query writes, but ran in a read transaction: {exc.message}") from exc
        raise StoreError(f"Neo4j error {exc.code}: {exc.message}") from exc
    except nx.DriverError as exc:
        if opening:
            raise StoreUnavailable(f"cannot open the Neo4j store at {uri}: {exc}") from exc
        raise StoreError(f"Neo4j driver error: {exc}") from exc
    except RippleError:
        raise
    except (ValueError, OverflowError, UnicodeError) as exc:  # a stored value this code cannot read back
        raise StoreError(f"damaged data in the Neo4j store at {uri}: {type(exc).__name__}: {exc}") from exc


# -- Cypher -------------------------------------------------------------------------------------
_SCHEMA = [
    "CREATE CONSTRAINT ripple_memory_id IF NOT EXISTS FOR (m:Memory) REQUIRE m.id IS UNIQUE",
    "CREATE CONSTRAINT ripple_entity_id IF NOT EXISTS FOR (e:Entity) REQUIRE e.id IS UNIQUE",
    "CREATE CONSTRAINT ripple_term_key IF NOT EXISTS FOR (t:Term) REQUIRE (t.user_id, t.term) IS UNIQUE",
    "CREATE CONSTRAINT ripple_lexicon_user IF NOT EXISTS FOR (x:Lexicon) REQUIRE x.user_id IS UNIQUE",
    "CREATE CONSTRAINT ripple_alias_key IF NOT EXISTS FOR (a:Alias) REQUIRE (a.user_id, a.alias, a.entity_id) IS UNIQUE",
    "CREATE CONSTRAINT ripple_meta_key IF NOT EXISTS FOR (x:RippleMeta) REQUIRE x.key IS UNIQUE",
    "CREATE INDEX ripple_memory_user IF NOT EXISTS FOR (m:Memory) ON (m.user_id)",
    "CREATE INDEX ripple_memory_session IF NOT EXISTS FOR (m:Memory) ON (m.user_id, m.session_id)",
    # memories with a multilingual vector also carry the label Multilingual (see _UPSERT_MEMORIES)
    "CREATE INDEX ripple_multilingual_user IF NOT EXISTS FOR (m:Multilingual) ON (m.user_id)",
    "CREATE INDEX ripple_entity_user IF NOT EXISTS FOR (e:Entity) ON (e.user_id)",
    "CREATE INDEX ripple_entity_key IF NOT EXISTS FOR (e:Entity) ON (e.user_id, e.key)",
    "CREATE INDEX ripple_alias_user IF NOT EXISTS FOR (a:Alias) ON (a.user_id, a.alias)",
    "CREATE INDEX ripple_mentions_user IF NOT EXISTS FOR ()-[r:MENTIONS]-() ON (r.user_id)",
    "CREATE INDEX ripple_related_user IF NOT EXISTS FOR ()-[r:RELATED]-() ON (r.user_id)",
    "CREATE INDEX ripple_next_user IF NOT EXISTS FOR ()-[r:NEXT]-() ON (r.user_id)",
    "CREATE INDEX ripple_supersedes_user IF NOT EXISTS FOR ()-[r:SUPERSEDES]-() ON (r.user_id)",
    "CREATE INDEX ripple_retracts_user IF NOT EXISTS FOR ()-[r:RETRACTS]-() ON (r.user_id)",
    "CREATE INDEX ripple_conflicts_user IF NOT EXISTS FOR ()-[r:CONFLICTS]-() ON (r.user_id)",
    "CREATE INDEX ripple_related_evidence IF NOT EXISTS FOR ()-[r:RELATED]-() ON (r.evidence)",
    "CREATE CONSTRAINT ripple_document_key IF NOT EXISTS FOR (d:Document) REQUIRE (d.user_id, d.key) IS UNIQUE",
]
_SCHEMA_NAMES = frozenset(stmt.split()[2] for stmt in _SCHEMA)

_SHOW_SCHEMA = "SHOW INDEXES YIELD name, type, state, options RETURN name, type, state, options"
_VECTOR_INDEX = {"Memory": "ripple_memory_embedding", "Entity": "ripple_entity_embedding"}
_VECTOR_INDEX_CONFIG = "`vector.similarity_function`: 'cosine'"

_META_READ = "OPTIONAL MATCH (x:RippleMeta {key: 'schema'}) RETURN x.version AS version"
_META_WRITE = "MERGE (x:RippleMeta {key: 'schema'}) ON CREATE SET x.version = $version RETURN x.version AS version"

_MEMORY_FIELDS = (
    "id", "user_id", "agent_id", "session_id", "text", "at", "created_at", "kind", "importance", "status",
    "access_count", "last_access", "metadata", "language", "terms", "confidence", "mentions", "last_seen",
    "valid_to", "pinned",
)
_MEMORY_MAP = "{" + ", ".join(f".{f}" for f in _MEMORY_FIELDS) + "}"
_MEMORY_MAP_VECTORS = _MEMORY_MAP[:-1] + ", .embedding, .token_vectors, .multilingual}"
_ENTITY_MAP = "{.id, .user_id, .name, .key, .label, .aliases}"
_ENTITY_MAP_VECTORS = "{.id, .user_id, .name, .key, .label, .aliases, .embedding}"

_DROP_MENTIONS = """
UNWIND $ids AS id
MATCH (:Memory {id: id})-[r:MENTIONS]->(e:Entity)
DELETE r
RETURN collect(DISTINCT e.id) AS dirty
"""

_MENTIONED = """
UNWIND $ids AS id
MATCH (:Memory {id: id})-[:MENTIONS]->(e:Entity)
RETURN collect(DISTINCT e.id) AS dirty
"""

# Undo the postings and totals of memories that are active now (they are the ones indexed).
_REMOVE_POSTINGS = _Planned.of("""
UNWIND $ids AS id
MATCH (m:Memory {id: id}) WHERE m.status = 'active'
WITH m.user_id AS user, collect(m) AS ms, count(m) AS n, sum(m.doc_len) AS len
CALL (user, n, len) {
    MATCH (x:Lexicon {user_id: user})
    WITH x, n, len, x.n_docs AS n_docs, x.total_len AS total_len
    SET x.n_docs = n_docs - n, x.total_len = total_len - len
}
UNWIND ms AS m
MATCH (t:Term)-[p:POSTING]->(m)
DELETE p
WITH DISTINCT t
WHERE NOT EXISTS { (t)-[:POSTING]->() }
DELETE t
""")

_ADD_POSTINGS = """
UNWIND $rows AS row
MERGE (t:Term {user_id: row.user, term: row.term})
WITH t, row
UNWIND range(0, size(row.ids) - 1) AS i
MATCH (m:Memory {id: row.ids[i]})
CREATE (t)-[:POSTING {tf: row.tfs[i]}]->(m)
"""

_ADD_TOTALS = """
UNWIND $rows AS row
MATCH (x:Lexicon {user_id: row.user})
WITH x, row, x.n_docs AS n_docs, x.total_len AS total_len
SET x.n_docs = n_docs + row.n, x.total_len = total_len + row.len
"""

# Locks.  A write transaction takes the write lock of each of its users' Lexicon node first (the bump
# below, users in sorted order), so the writers of one user queue there, holding nothing else, and what
# they lock afterwards (terms, entities, aliases, memories) no other writer of the user can hold.  The
# totals (above) then change the Lexicon node the transaction has locked already, and must not do it as
# ``SET x.n = x.n + 1``: Cypher takes the node's lock anew for a property read in its own update, and
# Neo4j 5.26 reports that as a deadlock (``DeadlockDetected``, the waiting writer is the victim) whenever
# another writer of the user is queued on the node, which under concurrent adds of one user is nearly
# always (each retry queues again; a deadlock met after a long queue had no budget left for a retry:
# tests/graphstore/test_neo4j.py::test_concurrent_writers_of_one_user_meet_no_deadlock failed with
# StoreUnavailable).  Reading the values with ``WITH`` first
# takes no new lock, and loses no update because the bump's lock is held until the commit.  Every
# statement that changes totals runs after a bump of the same users (``neo4jmaint`` too).

# Revisions (what a near cache checks, graphstore.nearcache): every write that changes a user's memories
# or entities bumps the user's revision on its Lexicon node, first thing in its transaction (users in
# sorted order: writers of one user queue on it).  The epoch is new with each Lexicon node, so a user
# deleted and written again never has a revision of before.  (``SET x.rev = x.rev + 1`` takes the
# node's write lock before it reads, so concurrent writers never lose a bump.)
_BUMP_REVISIONS = _Planned.of("""
UNWIND $users AS user
MERGE (x:Lexicon {user_id: user})
ON CREATE SET x.n_docs = 0, x.total_len = 0
SET x.epoch = coalesce(x.epoch, randomUUID()), x.rev = coalesce(x.rev, 0) + 1
RETURN collect([user, x.epoch, x.rev]) AS revs
""")
_BUMP_EXISTING = """
MATCH (x:Lexicon {user_id: $user})
SET x.epoch = coalesce(x.epoch, randomUUID()), x.rev = coalesce(x.rev, 0) + 1
"""
_OWNERS = "UNWIND $ids AS id MATCH (m:Memory {id: id}) RETURN collect(DISTINCT m.user_id) AS users"
# a user's revision; a user without a Lexicon node has none (nothing of theirs can be cached)
_REVISION = _Planned.of("""
OPTIONAL MATCH (x:Lexicon {user_id: $user})
RETURN x IS NOT NULL AS found, coalesce(x.epoch, '') AS epoch, coalesce(x.rev, 0) AS rev
""")
# what a near cache loads: every vector of a user (records, not one list: a 10k list is one 40 MB message),
# in id order, which is the order the embedded store keeps them in (ids sort by creation): its searches
# then break ties between equal scores as the embedded store's do
_NEAR_COUNT = {
    "Memory": "MATCH (n:Memory {user_id: $user}) RETURN count(n) AS n",
    "Entity": "MATCH (n:Entity {user_id: $user}) RETURN count(n) AS n",
}
# A user's vectors in chunks of $chunk rows each (ordered by id, as the cache keeps them): a record per
# memory cost the driver more than the vectors (97k rows: 13 s, against 6 s in chunks of 200 rows; larger
# chunks were slower again, 1,000: 6.9 s, 5,000: 11 s; loaded machine, RESULTS.md "The near cache's load").
_NEAR_LOAD = {
    label: f"""MATCH (n:{label} {{user_id: $user}}) WHERE n.embedding IS NOT NULL WITH n ORDER BY n.id
WITH collect(n) AS ns UNWIND range(0, size(ns) - 1, $chunk) AS i
WITH ns[i..i + $chunk] AS part
RETURN [x IN part | x.id] AS ids, [x IN part | x.embedding] AS vs, [x IN part | {status}] AS ss"""
    for label, status in (("Memory", "x.status"), ("Entity", "null"))
}
_NEAR_LOAD_CHUNK = 200
# a user's walk edges and entities for the near graph (graphstore.neargraph), in chunks of rows: each edge
# type's relationship index on user_id finds the user's edges
_NEAR_GRAPH_EDGES = "CALL () {\n" + "\n    UNION ALL\n".join(
    f"    MATCH (a)-[r:{t}]->(b) WHERE r.user_id = $user RETURN [a.id, '{t}', b.id, r.weight, r.predicate] AS row"
    for t in WALK_TYPES) + """
}
WITH collect(row) AS rows UNWIND range(0, size(rows) - 1, $chunk) AS i
RETURN rows[i..i + $chunk] AS part"""
_NEAR_GRAPH_ENTITIES = """MATCH (e:Entity {user_id: $user}) WITH collect([e.id, e.degree, e.label]) AS rows
UNWIND range(0, size(rows) - 1, $chunk) AS i
RETURN rows[i..i + $chunk] AS part"""
_NEAR_GRAPH_CHUNK = 5_000
# token vectors with the user's revision read first: when it is the cache's, only the ids it lacks ($need)
# are read, otherwise all of them
_TOKEN_VECTORS_CHECKED = _Planned.of("""
OPTIONAL MATCH (x:Lexicon {user_id: $user})
WITH x IS NOT NULL AS found, coalesce(x.epoch, '') AS epoch, coalesce(x.rev, 0) AS rev
WITH found, epoch, rev, found AND epoch = $epoch AND rev = $rev AS current
CALL (current) {
    UNWIND CASE WHEN current THEN $need ELSE $ids END AS id
    MATCH (m:Memory {id: id}) WHERE m.token_vectors IS NOT NULL
    RETURN collect(m.id) AS ids, collect(m.token_vectors) AS blobs
}
RETURN current, found, epoch, rev, ids, blobs
""")

_UPSERT_MEMORIES = """
UNWIND $rows AS row
MERGE (m:Memory {id: row.props.id})
SET m = row.props
FOREACH (_ IN CASE WHEN row.props.multilingual IS NULL THEN [] ELSE [1] END | SET m:Multilingual)
FOREACH (_ IN CASE WHEN row.props.multilingual IS NULL THEN [1] ELSE [] END | REMOVE m:Multilingual)
WITH m, row WHERE row.embedding IS NOT NULL
CALL db.create.setNodeVectorProperty(m, 'embedding', row.embedding)
"""

# Rewrites of memories that exist (a lifecycle decision on an older memory: a new status, confidence or
# note; an update).  ``SET m = row.props`` would drop the embedding (it is not among the props) and
# re-insert the unchanged vector into the vector index, and rewrite every property, the token vectors
# too.  ``+=`` with the full map (absent fields are nulls, which remove) leaves the same properties as
# ``=`` does, and Neo4j writes only the values that differ; the embedding is set only when it changed.
_REWRITE_MEMORIES = """
UNWIND $rows AS row
MATCH (m:Memory {id: row.props.id})
SET m += row.props
FOREACH (_ IN CASE WHEN row.props.multilingual IS NULL THEN [] ELSE [1] END | SET m:Multilingual)
FOREACH (_ IN CASE WHEN row.props.multilingual IS NULL THEN [1] ELSE [] END | REMOVE m:Multilingual)
FOREACH (_ IN CASE WHEN row.embedding IS NULL THEN [1] ELSE [] END | REMOVE m.embedding)
WITH m, row WHERE row.embedding IS NOT NULL AND (m.embedding IS NULL OR m.embedding <> row.embedding)
CALL db.create.setNodeVectorProperty(m, 'embedding', row.embedding)
"""

_UPSERT_ENTITIES = """
UNWIND $rows AS row
MERGE (e:Entity {id: row.id})
ON CREATE SET e.user_id = row.user_id, e.name = row.name, e.key = row.key, e.label = row.label,
              e.aliases = row.aliases, e.degree = 0
ON MATCH SET e.aliases = reduce(acc = [], a IN e.aliases + row.aliases | CASE WHEN a IN acc THEN acc ELSE acc + a END)
WITH e, row
CALL (e, row) {
    UNWIND [row.key] + e.aliases AS alias
    MERGE (:Alias {user_id: row.user_id, alias: alias, entity_id: e.id})
}
WITH e, row WHERE row.embedding IS NOT NULL
CALL db.create.setNodeVectorProperty(e, 'embedding', row.embedding)
"""

_EDGE_ENDS = {EDGE_MENTIONS: ("Memory", "Entity"), EDGE_RELATED: ("Entity", "Entity"), EDGE_NEXT: ("Memory", "Memory"),
              EDGE_SUPERSEDES: ("Memory", "Memory"), EDGE_RETRACTS: ("Memory", "Memory"),
              EDGE_CONFLICTS: ("Memory", "Memory")}


def _upsert_edges_cypher(edge_type: str, *, new: bool = False, rows: str = "rows", done: str = "done") -> str:
    """Upsert the ``$rows`` edges of one type; returns the numbers (``row.n``) of the rows whose two ends exist.

    ``new``: every row joins a node created in the same transaction, so no such edge exists yet and
    ``CREATE`` does what ``MERGE`` would (the rows must not repeat an edge: :func:`_edge_parts`);
    MERGE costs two relationship scans between the ends and a lock per row."""
    src, dst = _EDGE_ENDS[edge_type]
    weight = "r.weight + row.weight" if edge_type == EDGE_RELATED else "row.weight"
    upsert = (f"""CREATE (a)-[r:{edge_type} {{predicate: row.predicate, user_id: row.user_id, weight: row.weight,
    evidence: row.evidence, at: row.at}}]->(b)""" if new else f"""MERGE (a)-[r:{edge_type} {{predicate: row.predicate}}]->(b)
ON CREATE SET r.user_id = row.user_id, r.weight = row.weight, r.evidence = row.evidence, r.at = row.at
ON MATCH SET r.weight = {weight}, r.evidence = coalesce(row.evidence, r.evidence), r.at = coalesce(row.at, r.at)""")
    return f"""
UNWIND ${rows} AS row
MATCH (a:{src} {{id: row.src}})
MATCH (b:{dst} {{id: row.dst}})
{upsert}
RETURN collect(row.n) AS {done}
"""


_UPSERT_EDGES = {t: _upsert_edges_cypher(t) for t in EDGE_TYPES}



_RECOUNT_DEGREES = """
UNWIND $ids AS id
MATCH (e:Entity {id: id})
SET e.degree = COUNT { (e)<-[:MENTIONS]-() }
"""


def _subquery(cypher: str, rows: str) -> str:
    """A statement over ``$rows`` as a unit subquery over ``$<rows>`` (a part of :data:`_WRITE_BATCH`)."""
    return "CALL () {" + re.sub(r"\$rows\b", "$" + rows, cypher).rstrip() + "\n}\n"


# A whole batch's nodes and edges in one statement (one round trip instead of one per record kind and edge
# type; the text is fixed, so it is planned once): the memories, their postings and the BM25 totals, the
# entities, then per edge type the rows that may exist already (MERGE) and the rows that join a node new in
# this transaction (CREATE), then the degrees of the entities whose MENTIONS changed.  Clauses see the
# effects of the clauses before them, as the separate statements did.
_EDGE_PARTS = [(t, new, f"{t.lower()}_{'new' if new else 'old'}") for t in EDGE_TYPES for new in (False, True)]
_WRITE_BATCH = _Planned.of(
    _subquery(_UPSERT_MEMORIES, "memories") + _subquery(_REWRITE_MEMORIES, "rewrites")
    + _subquery(_ADD_POSTINGS, "postings") + _subquery(_ADD_TOTALS, "totals")
    + _subquery(_UPSERT_ENTITIES, "entities")
    + "".join(f"CALL () {{{_upsert_edges_cypher(t, new=new, rows=name, done=name)}}}\n" for t, new, name in _EDGE_PARTS)
    + _subquery(_RECOUNT_DEGREES.replace("$ids", "$rows"), "dirty")
    + "RETURN " + ", ".join(name for _, _, name in _EDGE_PARTS)
)


def _edge_parts(
    rows: Sequence[dict[str, Any]], created: set[str]
) -> tuple[dict[str, list[dict[str, Any]]], dict[int, list[int]]]:
    """A batch's edge rows as the parameters of :data:`_WRITE_BATCH`'s edge parts, and for each row sent
    the numbers of the batch rows it stands for.

    The rows of one edge are folded into its first as MERGE would apply them one after another (weights
    add up on RELATED, the last weight wins elsewhere; a later evidence or time replaces an earlier one):
    a batch repeats the co-mention edges of its frequent names many times, and each MERGE of an edge
    between two entities scans the RELATED edges of one of them.  A row with an end in ``created`` (nodes
    the transaction creates) goes to its type's CREATE part, every other row to its type's MERGE part."""
    parts: dict[str, list[dict[str, Any]]] = {name: [] for _, _, name in _EDGE_PARTS}
    members: dict[int, list[int]] = {}
    folded: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for row in rows:
        members[row["n"]] = [row["n"]]
        key = (row["type"], row["src"], row["dst"], row["predicate"])
        into = folded.get(key)
        if into is None:
            folded[key] = dict(row)
            new = row["src"] in created or row["dst"] in created
            parts[f"{row['type'].lower()}_{'new' if new else 'old'}"].append(folded[key])
            continue
        members[into["n"]].append(members.pop(row["n"])[0])
        into["weight"] = into["weight"] + row["weight"] if row["type"] == EDGE_RELATED else row["weight"]
        for field in ("evidence", "at"):
            if row[field] is not None:
                into[field] = row[field]
    return parts, members


# which of a batch's memories and entities exist already (the others are created by its write), with the
# status and terms of each memory (what its postings are now: a rewrite that keeps both keeps them)
_EXISTING = _Planned.of("""
CALL () {
    UNWIND $memories AS id MATCH (m:Memory {id: id})
    RETURN collect(id) AS memories, collect([m.status = 'active', m.terms]) AS indexed
}
CALL () { UNWIND $entities AS id MATCH (e:Entity {id: id}) RETURN collect(id) AS entities }
RETURN memories, indexed, entities
""")

# (rows of distinct ids in id order, each with its count: concurrent touches then lock shared memories in
# one order, and no memory is read-modify-written twice in a transaction; see "Locks" above)
_TOUCH = """
UNWIND $rows AS row
MATCH (m:Memory {id: row.id})
SET m.access_count = m.access_count + row.n, m.last_access = row.at
"""

_CHANGED_STATUS = """
UNWIND $ids AS id
MATCH (m:Memory {id: id}) WHERE m.status <> $status
RETURN m.id AS id, m.user_id AS user_id, m.terms AS terms
"""

_SET_STATUS = "UNWIND $ids AS id MATCH (m:Memory {id: id}) SET m.status = $status"

_DELETE_MEMORY_EDGES = """
CALL () {
    UNWIND $ids AS id
    MATCH (:Memory {id: id})-[r:MENTIONS|NEXT|SUPERSEDES|RETRACTS|CONFLICTS]-()
    RETURN r
    UNION
    MATCH ()-[r:RELATED]->() WHERE r.evidence IN $ids
    RETURN r
}
DELETE r
RETURN count(r) AS n
"""

_DELETE_MEMORIES = """
UNWIND $ids AS id
MATCH (m:Memory {id: id})
DETACH DELETE m
RETURN count(m) AS n
"""

# Deleting a user: steps of at most $batch deletions each, so that a user of any size fits in
# the server's transaction memory; a small user goes in one transaction.
_DELETE_USER = [
    ("edges", "MATCH ()-[r:MENTIONS]->() WHERE r.user_id = $user WITH r LIMIT $batch DELETE r RETURN count(r) AS n"),
    ("edges", "MATCH ()-[r:RELATED]->() WHERE r.user_id = $user WITH r LIMIT $batch DELETE r RETURN count(r) AS n"),
    ("edges", "MATCH ()-[r:NEXT]->() WHERE r.user_id = $user WITH r LIMIT $batch DELETE r RETURN count(r) AS n"),
    ("edges", "MATCH ()-[r:SUPERSEDES|RETRACTS|CONFLICTS]->() WHERE r.user_id = $user WITH r LIMIT $batch DELETE r"
              " RETURN count(r) AS n"),
    # (a Term is found by a prefix seek on its (user_id, term) index: a second index on user_id
    # alone tempts the planner to scan all of a user's terms in postings())
    ("index_entries", "MATCH (t:Term) WHERE t.user_id = $user AND t.term IS NOT NULL"
                      " MATCH (t)-[p:POSTING]->() WITH p LIMIT $batch DELETE p RETURN count(p) AS n"),
    ("index_entries", "MATCH (t:Term) WHERE t.user_id = $user AND t.term IS NOT NULL"
                      " WITH t LIMIT $batch DETACH DELETE t RETURN count(t) AS n"),
    ("", "MATCH (x:Lexicon {user_id: $user}) DELETE x RETURN count(x) AS n"),
    ("memories", "MATCH (m:Memory {user_id: $user}) WITH m LIMIT $batch DETACH DELETE m RETURN count(m) AS n"),
    ("entities", "MATCH (e:Entity {user_id: $user}) WITH e LIMIT $batch DETACH DELETE e RETURN count(e) AS n"),
    ("", "MATCH (a:Alias {user_id: $user}) WITH a LIMIT $batch DELETE a RETURN count(a) AS n"),
    ("", "MATCH (d:Document {user_id: $user}) WITH d LIMIT $batch DELETE d RETURN count(d) AS n"),
]
_DELETE_BATCH = 5_000

# (reads on the recall path return one record of lists: the driver decodes one Bolt message per
# record, and a record per row cost several times the decoding of the same values in one list)
_GET_MEMORIES = _Planned.of("UNWIND $ids AS id MATCH (m:Memory {id: id}) RETURN collect(m " + _MEMORY_MAP + ") AS ms")
_GET_MEMORIES_VECTORS = _Planned.of(
    "UNWIND $ids AS id MATCH (m:Memory {id: id}) RETURN collect(m " + _MEMORY_MAP_VECTORS + ") AS ms")

_HAS_MEMORIES = _Planned.of("MATCH (m:Memory {user_id: $user}) USING INDEX m:Memory(user_id) RETURN m.id AS id LIMIT 1")

_LAST_IN_SESSION = """
MATCH (m:Memory {user_id: $user, session_id: $session})
RETURN m.id AS id ORDER BY m.at DESC, m.created_at DESC, m.id DESC LIMIT 1
"""

# the tails of many sessions: each one the top row of an index seek on (user_id, session_id)
_SESSION_TAILS = _Planned.of("""
UNWIND $sessions AS session
CALL (session) {
    MATCH (m:Memory {user_id: $user, session_id: session})
    USING INDEX m:Memory(user_id, session_id)
    RETURN m.id AS id ORDER BY m.at DESC, m.created_at DESC, m.id DESC LIMIT 1
}
RETURN collect([session, id]) AS tails
""")

_GET_ENTITIES = _Planned.of("""
UNWIND $keys AS key
MATCH (a:Alias {user_id: $user, alias: key})
MATCH (e:Entity {id: a.entity_id})
RETURN DISTINCT e """ + _ENTITY_MAP + " AS e")

_ENTITY_NAMES = _Planned.of(
    "UNWIND $ids AS id MATCH (e:Entity {id: id}) RETURN collect(e.id) AS ids, collect(e.name) AS values")

_USERS = """
MATCH (m:Memory) RETURN DISTINCT m.user_id AS user
UNION
MATCH (e:Entity) RETURN DISTINCT e.user_id AS user
"""

_LEXICAL_STATS = """
OPTIONAL MATCH (x:Lexicon {user_id: $user})
CALL () {
    UNWIND $terms AS term
    MATCH (t:Term {user_id: $user, term: term})
    RETURN collect([term, COUNT { (t)-[:POSTING]->() }]) AS df
}
RETURN x.n_docs AS n_docs, x.total_len AS total_len, df
"""

_POSTINGS = """
UNWIND $terms AS term
MATCH (:Term {user_id: $user, term: term})-[p:POSTING]->(m:Memory)
RETURN term, collect(m.id) AS ids, collect(p.tf) AS tfs, collect(m.doc_len) AS lens
"""

# lexical_stats and the postings of the usable terms (graphstore.records.usable_terms) in one statement
_LEXICAL_ROUTE = _Planned.of("""
OPTIONAL MATCH (x:Lexicon {user_id: $user})
WITH coalesce(x.n_docs, 0) AS n_docs, coalesce(x.total_len, 0) AS total_len
WITH n_docs, total_len, CASE WHEN $max_df_ratio * n_docs > 1 THEN $max_df_ratio * n_docs ELSE 1 END AS share_cap
WITH n_docs, total_len, CASE WHEN $max_df IS NOT NULL AND $max_df < share_cap THEN $max_df ELSE share_cap END AS cap
CALL (cap) {
    UNWIND $terms AS term
    MATCH (t:Term {user_id: $user, term: term})
    WITH t, term, COUNT { (t)-[:POSTING]->() } AS df
    CALL (t, df, cap) {
        WITH t WHERE df > 0 AND df <= cap
        MATCH (t)-[p:POSTING]->(m:Memory)
        RETURN collect(m.id) AS ids, collect(p.tf) AS tfs, collect(m.doc_len) AS lens
    }
    RETURN collect([term, df, ids, tfs, lens]) AS terms
}
RETURN n_docs, total_len, terms
""")

_RELATED_EDGES = """
UNWIND $ids AS id
MATCH (s:Entity {id: id})-[r:RELATED]->(d:Entity)
WHERE r.predicate IN $predicates AND r.user_id = $user
RETURN s.id AS src, d.id AS dst, r.weight AS weight, r.predicate AS predicate, r.evidence AS evidence, r.at AS at
ORDER BY src, predicate, dst
"""

_MEMORIES_MENTIONING = _Planned.of("""
UNWIND $ids AS id
MATCH (e:Entity {id: id})<-[r:MENTIONS]-(m:Memory)
USING INDEX e:Entity(id)
WHERE r.user_id = $user AND m.status IN $statuses
WITH e, m ORDER BY m.at DESC, m.created_at DESC, m.id DESC
WITH e, collect(m.id)[..$k] AS ids
RETURN e.id AS entity, ids ORDER BY entity
""")

_TOKEN_VECTORS = _Planned.of("""
UNWIND $ids AS id
MATCH (m:Memory {id: id}) WHERE m.token_vectors IS NOT NULL
RETURN collect(m.id) AS ids, collect(m.token_vectors) AS blobs
""")


_GET_DOCUMENT = """
MATCH (d:Document {user_id: $user, key: $key})
RETURN d.version AS version, d.value AS value, d.updated_at AS updated_at
"""

# Compare-and-set, step 1: the MERGE finds or creates the node under the (user_id, key) constraint,
# and setting a property takes the node's write lock before the version is read, so a concurrent
# writer waits for this transaction and then sees its version (Neo4j's documented way to avoid
# lost updates under read-committed isolation).
_LOCK_DOCUMENT = """
MERGE (d:Document {user_id: $user, key: $key})
ON CREATE SET d.version = 0
SET d.locked = true
RETURN d.version AS version
"""
_WRITE_DOCUMENT = """
MATCH (d:Document {user_id: $user, key: $key})
SET d.version = $version, d.value = $value, d.updated_at = $at
REMOVE d.locked
"""
_UNLOCK_DOCUMENT = "MATCH (d:Document {user_id: $user, key: $key}) REMOVE d.locked"
_DROP_DOCUMENT = "MATCH (d:Document {user_id: $user, key: $key}) DELETE d"
_DOCUMENTS = """
MATCH (d:Document {user_id: $user}) WHERE d.value IS NOT NULL
RETURN d.key AS key, d.version AS version, d.value AS value, d.updated_at AS updated_at ORDER BY key
"""
_RESTORE_DOCUMENTS = """
UNWIND $rows AS row
MERGE (d:Document {user_id: row.user, key: row.key})
SET d.version = row.version, d.value = row.value, d.updated_at = row.at
REMOVE d.locked
"""


def _nearest_cypher(label: str) -> dict[str, _Planned]:
    """The statements of a vector search over ``label`` nodes (scores are ``(1 + cos) / 2``), each
    planned once (:class:`_Planned`), a scan of the user's nodes hinted to their ``user_id`` index.

    ``population``: the user's node count, capped at ``$probe``.  ``exact``: the top ``$k`` of a scan
    over the user's nodes.  ``indexed``: ``$candidates`` approximate neighbours from the vector index
    (``found`` of them, the farthest at index score ``floor``) and the exact top ``$k`` of those that
    belong to the user (and have one of ``$statuses``).
    """
    status = " AND n.status IN $statuses" if label == "Memory" else ""
    # the exact top $k of the index candidates ``nodes`` that are the user's
    users_top = f"""CALL (nodes) {{
    UNWIND nodes AS n
    WITH n WHERE n.user_id = $user{status}
    WITH n, vector.similarity.cosine(n.embedding, $vector) AS s WHERE s IS NOT NULL
    ORDER BY s DESC LIMIT $k
    RETURN collect([n.id, s]) AS hits
}}"""
    statements = {
        "population": f"MATCH (n:{label} {{user_id: $user}}) WITH n LIMIT $probe RETURN count(n) AS population",
        "exact": f"""
MATCH (n:{label} {{user_id: $user}})
WHERE n.embedding IS NOT NULL{status}
WITH n, vector.similarity.cosine(n.embedding, $vector) AS s WHERE s IS NOT NULL
ORDER BY s DESC LIMIT $k
RETURN n.id AS id, s
""",
        "indexed": f"""
CALL db.index.vector.queryNodes($index, $candidates, $vector) YIELD node, score
WITH count(node) AS found, min(score) AS floor, collect(node) AS nodes
{users_top}
RETURN found, floor, hits
""",
        # ``population`` then ``exact`` or ``indexed`` in one statement (``found`` is -1 after an exact scan);
        # ``$probe = 0`` skips the probe and searches the index.  (The CASE makes the scan's index seek
        # depend on the probe: the planner otherwise seeks every node of the user and filters after.)
        "search": f"""
CALL () {{
    MATCH (n:{label} {{user_id: $user}}) WITH n LIMIT $probe RETURN count(n) AS population
}}
CALL (population) {{
    WITH population WHERE population < $probe
    MATCH (n:{label} {{user_id: CASE WHEN population < $probe THEN $user END}})
    WHERE n.embedding IS NOT NULL{status}
    WITH population, n, vector.similarity.cosine(n.embedding, $vector) AS s WHERE s IS NOT NULL
    ORDER BY s DESC LIMIT $k
    RETURN population AS p, -1 AS found, 0.0 AS floor, collect([n.id, s]) AS hits
    UNION
    WITH population WHERE population >= $probe
    CALL db.index.vector.queryNodes($index, $candidates, $vector) YIELD node, score
    WITH population, count(node) AS found, min(score) AS floor, collect(node) AS nodes
    {users_top}
    RETURN population AS p, found, floor, hits
}}
RETURN population, found, floor, hits
""",
        # the same two searches for many query vectors ($vectors) in one statement
        "exact_batch": f"""
UNWIND range(0, size($vectors) - 1) AS i
CALL (i) {{
    MATCH (n:{label} {{user_id: $user}})
    WHERE n.embedding IS NOT NULL{status}
    WITH n, vector.similarity.cosine(n.embedding, $vectors[i]) AS s WHERE s IS NOT NULL
    ORDER BY s DESC LIMIT $k
    RETURN collect([n.id, s]) AS hits
}}
RETURN i, hits
""",
        "indexed_batch": f"""
UNWIND range(0, size($vectors) - 1) AS i
CALL (i) {{
    CALL db.index.vector.queryNodes($index, $candidates, $vectors[i]) YIELD node, score
    WITH count(node) AS found, min(score) AS floor, collect(node) AS nodes
    CALL (nodes, i) {{
        UNWIND nodes AS n
        WITH n WHERE n.user_id = $user{status}
        WITH n, vector.similarity.cosine(n.embedding, $vectors[i]) AS s WHERE s IS NOT NULL
        ORDER BY s DESC LIMIT $k
        RETURN collect([n.id, s]) AS hits
    }}
    RETURN found, floor, hits
}}
RETURN i, found, floor, hits
""",
    }
    user_nodes = re.compile(r"MATCH \(n:%s \{user_id: [^}]*\}\)" % label)
    hint = f" USING INDEX n:{label}(user_id)"
    return {name: _Planned.of(user_nodes.sub(lambda m: m.group(0) + hint, cypher)) for name, cypher in statements.items()}


_NEAREST = {label: _nearest_cypher(label) for label in _VECTOR_INDEX}

# Multilingual vectors (CJK memories only, a vector space of its own) have no vector index: the
# search scans the user's Multilingual nodes exactly (scores are (1 + cos) / 2, like the index's).
_NEAREST_MULTILINGUAL = _Planned.of("""
MATCH (n:Multilingual {user_id: $user})
USING INDEX n:Multilingual(user_id)
WHERE n.status IN $statuses
WITH n, vector.similarity.cosine(n.multilingual, $vector) AS s WHERE s IS NOT NULL
ORDER BY s DESC LIMIT $k
RETURN collect([n.id, s]) AS hits
""")
_HAS_MULTILINGUAL = _Planned.of(
    "MATCH (n:Multilingual {user_id: $user}) USING INDEX n:Multilingual(user_id) RETURN n.id AS id LIMIT 1")
# a recall's first read: has_memories, has_multilingual and the near cache's revision check in one statement
_USER_STATE = _Planned.of("""
OPTIONAL MATCH (x:Lexicon {user_id: $user})
RETURN EXISTS { MATCH (m:Memory {user_id: $user}) USING INDEX m:Memory(user_id) } AS memories,
       EXISTS { MATCH (n:Multilingual {user_id: $user}) USING INDEX n:Multilingual(user_id) } AS multilingual,
       x IS NOT NULL AS found, coalesce(x.epoch, '') AS epoch, coalesce(x.rev, 0) AS rev
""")

# (``coalesce`` keeps the user filter off the relationship index: with it, a planner working from
# thin statistics seeks every edge of the user and joins on the frontier instead of expanding it)
_EXPAND = """
UNWIND $ids AS fid
CALL (fid) {
    MATCH (f:Memory {id: fid}) RETURN f
    UNION
    MATCH (f:Entity {id: fid}) WHERE $cap < 0 OR f.degree <= $cap RETURN f
}
CALL (f) {
    MATCH (f)-[r:%(types)s]->(t) WHERE coalesce(r.user_id, '') = $user RETURN r, t
    UNION ALL
    MATCH (f)<-[r:%(types)s]-(t) WHERE coalesce(r.user_id, '') = $user RETURN r, t
}
WITH f, r, t, CASE WHEN t:Entity THEN t.degree ELSE 1 END AS degree
WHERE $cap < 0 OR degree <= $cap
RETURN f.id AS source, collect(t.id) AS targets, collect(type(r)) AS types, collect(r.weight) AS weights,
       collect(degree) AS degrees, collect(r.predicate) AS predicates,
       collect(CASE WHEN t:Entity THEN t.label ELSE '' END) AS labels
"""

# A neighbourhood read: every node a walk of at most `reach` steps can expand from the sources (through
# edges of the user, entering and leaving no hub above $cap, continuing only from entities of $labels),
# each with the rows _EXPAND gives it: a whole spread in one round trip.  Read level by level, so that
# each node's relationships are read once: level k+1 is the nodes the rows of level k reach first.
# (The statement it replaces found the nodes with a breadth-first quantified path pattern and then
# expanded each of them out, then in: on a Memory node, whose one relationship chain also holds its
# POSTING and MENTIONS relationships, that walked the chain three times; see benchmarks/RESULTS.md,
# "The spreading read level by level".)  A self-loop, which both halves of _EXPAND return, is in a
# node's out rows and in its in rows; the client puts every node's rows in one order (neargraph.row_order).
_NEIGHBOURHOOD_SOURCES = """
UNWIND $ids AS sid
CALL (sid) {
    MATCH (s:Memory {id: sid}) RETURN s
    UNION
    MATCH (s:Entity {id: sid}) RETURN s
}
WITH collect(DISTINCT s) AS level0
WITH level0, level0 AS seen0
"""
# level %(k)d's rows, [source, [[target, type, weight, predicate (, degree, label)], ...]] per node (a hub
# with none), and (%(onward)s) the nodes a walk continues to from each node.  A step into a memory leaves
# out its degree and label (1 and '', as _EXPAND gives them): most rows of a recall's walks are an
# entity's steps to the memories that mention it, and a shorter row is less for the server to build and
# send (~9% of this read's server time at 10k memories).
_NEIGHBOURHOOD_LEVEL = """
CALL (level%(k)d) {
    UNWIND level%(k)d AS f
    CALL (f) {
        WITH f WHERE NOT f:Entity OR $cap < 0 OR f.degree <= $cap
        MATCH (f)-[r:%(types)s]-(t) WHERE coalesce(r.user_id, '') = $user
        WITH f, r, t, t:Entity AS entity
        WITH f, r, t, entity, CASE WHEN entity THEN t.degree ELSE 1 END AS degree
        WHERE $cap < 0 OR degree <= $cap
        WITH f, r, t, entity,
             [t.id, type(r), r.weight, r.predicate] + CASE WHEN entity THEN [degree, t.label] ELSE [] END AS row
        RETURN collect(CASE WHEN startNode(r) = f THEN row END) AS outs,
               collect(CASE WHEN endNode(r) = f THEN row END) AS ins,
               %(onward)s AS onward
    }
    RETURN collect([f.id, outs + ins]) AS rows%(k)d, collect(onward) AS onward%(k)d
}
"""
_ONWARD = "collect(CASE WHEN NOT entity OR $labels IS NULL OR t.label IN $labels THEN t END)"
# level %(next)d: the nodes level %(k)d's rows reach that no earlier level holds
_NEIGHBOURHOOD_NEXT = """
CALL (onward%(k)d, seen%(k)d) {
    UNWIND onward%(k)d AS nodes
    UNWIND nodes AS n
    WITH DISTINCT n WHERE NOT n IN seen%(k)d
    RETURN collect(n) AS level%(next)d
}
WITH *, seen%(k)d + level%(next)d AS seen%(next)d
"""


def _neighbourhood(types: str, reach: int) -> str:
    """The read of one neighbourhood over ``types`` (``A|B``) within ``reach`` steps: one row, ``rows``."""
    parts = [_NEIGHBOURHOOD_SOURCES]
    for k in range(reach + 1):
        last = k == reach
        parts.append(_NEIGHBOURHOOD_LEVEL % {"k": k, "types": types, "onward": "[]" if last else _ONWARD})
        if not last:
            parts.append(_NEIGHBOURHOOD_NEXT % {"k": k, "next": k + 1})
    return "".join(parts) + "RETURN " + " + ".join(f"rows{k}" for k in range(reach + 1)) + " AS rows\n"


_OWN_PARAMETERS = re.compile(r"\$(ids|cap|labels)\b")


@functools.lru_cache(maxsize=64)
def _neighbourhoods(shapes: tuple[tuple[str, int], ...]) -> _Planned:
    """One or more neighbourhood reads (:func:`_neighbourhood`) of one user in one statement (a ``UNION ALL``
    of them, one row each, tagged with its read's number ``ask``), read ``n`` with its own ``$ids<n>``,
    ``$cap<n>`` and ``$labels<n>``; a shape is ``(types, reach)``.  Planned once: each starts from the
    sources' unique ids and only expands from them."""
    parts = [
        "CALL () {" + _OWN_PARAMETERS.sub(lambda m: f"${m.group(1)}{n}", _neighbourhood(t, r))
        + "}\nRETURN " + str(n) + " AS ask, rows\n"
        for n, (t, r) in enumerate(shapes)
    ]
    return _Planned.of("UNION ALL\n".join(parts))

_EXPORT_MEMORIES = "MATCH (m:Memory {user_id: $user}) RETURN m " + _MEMORY_MAP_VECTORS + " AS m"
_EXPORT_ENTITIES = "MATCH (e:Entity {user_id: $user}) RETURN e " + _ENTITY_MAP_VECTORS + " AS e"
def _list_edges_cypher(types: Sequence[str]) -> str:
    """A user's edges of ``types`` (each type's own relationship index on ``user_id`` finds them)."""
    parts = [f"MATCH (a)-[r:{t}]->(b) WHERE r.user_id = $user RETURN a, r, b" for t in types if t in _EDGE_ENDS]
    return ("CALL () {\n    " + "\n    UNION ALL\n    ".join(parts) + "\n}\n"
            "RETURN a.id AS src, type(r) AS type, b.id AS dst, r {.user_id, .weight, .predicate, .evidence, .at} AS r")


_EXPORT_EDGES = _list_edges_cypher(EDGE_TYPES)

_STATS_USER = [
    ("status", "MATCH (m:Memory {user_id: $user}) RETURN m.status AS key, count(*) AS n"),
    ("entities", "MATCH (e:Entity {user_id: $user}) RETURN 'entities' AS key, count(e) AS n"),
    ("edges", """
CALL () {
    MATCH ()-[r:MENTIONS]->() WHERE r.user_id = $user RETURN 'mentions' AS key, count(r) AS n
    UNION ALL
    MATCH ()-[r:RELATED]->() WHERE r.user_id = $user RETURN 'related' AS key, count(r) AS n
    UNION ALL
    MATCH ()-[r:NEXT]->() WHERE r.user_id = $user RETURN 'next' AS key, count(r) AS n
    UNION ALL
    MATCH ()-[r:SUPERSEDES]->() WHERE r.user_id = $user RETURN 'supersedes' AS key, count(r) AS n
    UNION ALL
    MATCH ()-[r:RETRACTS]->() WHERE r.user_id = $user RETURN 'retracts' AS key, count(r) AS n
    UNION ALL
    MATCH ()-[r:CONFLICTS]->() WHERE r.user_id = $user RETURN 'conflicts' AS key, count(r) AS n
}
RETURN key, n"""),
]
_STATS_ALL = [
    ("status", "MATCH (m:Memory) RETURN m.status AS key, count(*) AS n"),
    ("entities", "MATCH (e:Entity) RETURN 'entities' AS key, count(e) AS n"),
    ("edges", """
CALL () {
    MATCH ()-[r:MENTIONS]->() RETURN 'mentions' AS key, count(r) AS n
    UNION ALL
    MATCH ()-[r:RELATED]->() RETURN 'related' AS key, count(r) AS n
    UNION ALL
    MATCH ()-[r:NEXT]->() RETURN 'next' AS key, count(r) AS n
    UNION ALL
    MATCH ()-[r:SUPERSEDES]->() RETURN 'supersedes' AS key, count(r) AS n
    UNION ALL
    MATCH ()-[r:RETRACTS]->() RETURN 'retracts' AS key, count(r) AS n
    UNION ALL
    MATCH ()-[r:CONFLICTS]->() RETURN 'conflicts' AS key, count(r) AS n
}
RETURN key, n"""),
]


# -- rows <-> records -------------------------------------------------------------------------------
def _floats(blob: bytes) -> list[float]:
    """A packed float32 vector as Python floats (exact: every float32 is a double)."""
    return array("f", blob).tolist()


def _blob(values: Sequence[float] | None) -> bytes | None:
    return None if values is None else array("f", values).tobytes()


def _iso(ts: float) -> str | None:
    try:
        return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat()
    except (OverflowError, OSError, ValueError):
        return None


def _memory_row(m: StoredMemory) -> dict[str, Any]:
    return {
        "props": {
            "id": m.id, "user_id": m.user_id, "agent_id": m.agent_id, "session_id": m.session_id,
            "text": m.text, "at": m.at, "at_iso": _iso(m.at), "created_at": m.created_at, "kind": m.kind,
            "importance": m.importance, "status": m.status, "access_count": m.access_count,
            "last_access": m.last_access, "metadata": m.metadata_json, "language": m.language,
            "terms": list(m.terms), "doc_len": len(m.terms), "confidence": m.confidence, "mentions": m.mentions,
            "last_seen": m.last_seen, "valid_to": m.valid_to, "valid_to_iso": None if m.valid_to is None else _iso(m.valid_to),
            "pinned": m.pinned,
            "token_vectors": None if m.token_vectors is None else bytes(m.token_vectors),
            "multilingual": None if m.multilingual is None else _floats(m.multilingual),
        },
        "embedding": None if m.embedding is None else _floats(m.embedding),
    }


def _memory_record(p: dict[str, Any], *, vectors: bool = False) -> StoredMemory:
    tv = p.get("token_vectors") if vectors else None
    return StoredMemory(
        id=p["id"], user_id=p["user_id"], text=p["text"], at=p["at"], created_at=p["created_at"],
        agent_id=p["agent_id"], session_id=p["session_id"], kind=p["kind"], importance=p["importance"],
        status=p["status"], access_count=p["access_count"], last_access=p["last_access"],
        metadata_json=p["metadata"], language=p["language"], terms=tuple(p["terms"] or ()),
        # (nodes written before the lifecycle fields existed have none: the defaults describe them)
        confidence=1.0 if p.get("confidence") is None else float(p["confidence"]),
        mentions=1 if p.get("mentions") is None else int(p["mentions"]), last_seen=p.get("last_seen"),
        valid_to=p.get("valid_to"), pinned=bool(p.get("pinned") or False),
        embedding=_blob(p.get("embedding")) if vectors else None, token_vectors=None if tv is None else bytes(tv),
        multilingual=_blob(p.get("multilingual")) if vectors else None,
    )


def _edge_record(r: "Record") -> EdgeRecord:
    """An edge row of :func:`_list_edges_cypher` as a record."""
    p = r["r"]
    return EdgeRecord(src=r["src"], type=r["type"], dst=r["dst"], user_id=p["user_id"], weight=p["weight"],
                      predicate=p["predicate"], evidence=p["evidence"], at=p["at"])


def _entity_row(e: EntityRecord) -> dict[str, Any]:
    return {
        "id": e.id, "user_id": e.user_id, "name": e.name, "key": e.key, "label": e.label,
        "aliases": list(dict.fromkeys(e.aliases)), "embedding": None if e.embedding is None else _floats(e.embedding),
    }


def _entity_record(p: dict[str, Any], *, vectors: bool = False) -> EntityRecord:
    return EntityRecord(
        id=p["id"], user_id=p["user_id"], name=p["name"], key=p["key"], label=p["label"],
        aliases=tuple(p["aliases"] or ()), embedding=_blob(p.get("embedding")) if vectors else None,
    )


def _posting_rows(memories: Sequence[tuple[str, str, Sequence[str]]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Posting rows grouped by (user, term), sorted so that writers lock terms in one order, and totals."""
    by_term: dict[tuple[str, str], tuple[list[str], list[int]]] = {}
    totals: dict[str, list[int]] = {}
    for mid, user, terms in memories:
        for term, tf in Counter(terms).items():
            ids, tfs = by_term.setdefault((user, term), ([], []))
            ids.append(mid)
            tfs.append(tf)
        t = totals.setdefault(user, [0, 0])
        t[0] += 1
        t[1] += len(terms)
    rows = [{"user": u, "term": t, "ids": ids, "tfs": tfs} for (u, t), (ids, tfs) in sorted(by_term.items())]
    return rows, [{"user": u, "n": n, "len": length} for u, (n, length) in sorted(totals.items())]


def _reindexed(memories: Sequence[StoredMemory], was: dict[str, list[Any]]) -> list[StoredMemory]:
    """The memories of a write whose postings change: new ones, and those that exist (``was``: id ->
    [indexed now, terms now]) unless they stay as indexed (active or not) with the same terms."""
    out = []
    for m in memories:
        old = was.get(m.id)
        if old is not None and bool(old[0]) == (m.status == ACTIVE) and (not old[0] or list(old[1] or ()) == list(m.terms)):
            continue
        out.append(m)
    return out


def _posting_tuples(groups: Iterable[tuple[str, Sequence[str], Sequence[int], Sequence[int]]]) -> list[tuple[str, str, int, int]]:
    """Postings collected per term as ``(term, memory_id, tf, doc_len)`` rows, terms in sorted order
    (as the embedded store returns them: BM25 adds a memory's terms in this order)."""
    return [
        (term, mid, int(tf), int(n))
        for term, ids, tfs, lens in sorted(groups, key=lambda g: g[0])
        for mid, tf, n in zip(ids, tfs, lens)
    ]


def _neighbours(rows: Iterable[Record]) -> dict[str, list[Neighbor]]:
    """Expansion rows collected per source node, as neighbours in :func:`~graphstore.neargraph.row_order`."""
    return {
        r["source"]: sorted((
            Neighbor(r["source"], t, typ, float(w), int(d), p, lab)
            for t, typ, w, d, p, lab in zip(r["targets"], r["types"], r["weights"], r["degrees"],
                                            r["predicates"], r["labels"])
        ), key=row_order)
        for r in rows
    }


def _neighbour_rows(nodes: Iterable[Sequence[Any]]) -> dict[str, list[Neighbor]]:
    """A neighbourhood read's ``[source, [[target, type, weight, predicate (, degree, label)], ...]]`` per
    node, as neighbours in :func:`~graphstore.neargraph.row_order` (:func:`_neighbourhood`; a step into a
    memory has no degree and label: 1 and '')."""
    return {
        source: sorted((Neighbor(source, row[0], row[1], float(row[2]), int(row[4]), row[3], row[5]) if len(row) > 4
                        else Neighbor(source, row[0], row[1], float(row[2]), 1, row[3], "") for row in rows),
                       key=row_order)
        for source, rows in nodes
    }


def _with_sources(found: dict[str, list[Neighbor]], sources: Sequence[str]) -> dict[str, list[Neighbor]]:
    """A neighbourhood read's answer with every source in it: one that does not exist has no
    neighbours, as ``expand`` says."""
    for i in sources:
        found.setdefault(i, [])
    return found


def _near_index(chunks: Sequence[Record]) -> VectorIndex | None:
    """The near cache's index of a user's vectors, read in chunks (:data:`_NEAR_LOAD`)."""
    import numpy as np

    ids = [i for c in chunks for i in c["ids"]]
    if not ids:
        return None
    try:
        matrix = np.concatenate([np.asarray(c["vs"], dtype=np.float32) for c in chunks])
    except ValueError:  # vectors of different lengths
        raise StoreError("the user's stored vectors do not all have the same number of dimensions") from None
    return VectorIndex.from_matrix(ids, matrix, [s or ACTIVE for c in chunks for s in c["ss"]])


def _cosine_top(hits: Sequence[Sequence[Any]], k: int) -> list[tuple[str, float]]:
    """``[id, (1 + cos) / 2]`` rows as the ``k`` best ``(id, cosine)``, ties broken by id."""
    return sorted(((str(i), 2.0 * float(s) - 1.0) for i, s in hits), key=lambda h: (-h[1], h[0]))[:k]


def _vector_dims(rows: Sequence[Record]) -> dict[str, int | None]:
    """Dimensions of ripple's online vector indexes, by label, from ``SHOW INDEXES`` rows."""
    dims: dict[str, int | None] = {label: None for label in _VECTOR_INDEX}
    for r in rows:
        for label, name in _VECTOR_INDEX.items():
            if r["name"] == name and r["state"] == "ONLINE":
                dims[label] = int((r["options"] or {}).get("indexConfig", {}).get("vector.dimensions"))
    return dims


def _plain(value: Any) -> Any:
    """A query result value as plain Python (graph types become dicts and lists)."""
    from neo4j.graph import Node, Path, Relationship

    if isinstance(value, Node):
        return {"_labels": sorted(value.labels), **{k: _plain(v) for k, v in value.items()}}
    if isinstance(value, Relationship):
        start = value.start_node.get("id") if value.start_node is not None else None
        end = value.end_node.get("id") if value.end_node is not None else None
        return {"_type": value.type, "_src": start, "_dst": end, **{k: _plain(v) for k, v in value.items()}}
    if isinstance(value, Path):
        return [_plain(x) for pair in zip(value.nodes, (*value.relationships, None)) for x in pair if x is not None]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (str, int, float, bool, bytes)) or value is None:
        return value
    if hasattr(value, "iso_format"):
        return value.iso_format()
    return str(value)


# -- the core: every operation as a plan ----------------------------------------------------------------
class _Neo4jCore:
    """Configuration and plans shared by the sync and async stores; no I/O happens here."""

    uri: str

    def __init__(self, uri: str, *, user: str, password: str | None, database: str | None,
                 retry_seconds: float, maintenance: bool, near_cache_mb: float,
                 near_load_beside_rows: int = NEAR_LOAD_BESIDE_ROWS, near_graph: bool = True) -> None:
        self.uri = uri
        self._auth = None if password is None else (user, password)
        self._database = database
        self._dims: dict[str, int | None] = {label: None for label in _VECTOR_INDEX}
        self._retry = retries.RetryBudget(max(0.0, float(retry_seconds)))
        self._failing = False  # a retry was logged and no transaction succeeded since
        self.maintenance = maintenance
        # users seen with at least _EXACT_SCAN_BELOW nodes of a label: their searches skip the size probe
        self._large_users: dict[str, set[str]] = {label: set() for label in _VECTOR_INDEX}
        # hot users' vectors in this process, checked against the server's revisions (graphstore.nearcache)
        self._near = NearCache(int(max(0.0, float(near_cache_mb)) * 2**20))
        self._near_beside_rows = max(0, int(near_load_beside_rows))
        self._near_graph = bool(near_graph)  # walk edges of cached users in this process (graphstore.neargraph)
        self._loading: set[tuple[str, str]] = set()  # (user, label) loads under way beside the searches
        self._loading_lock = threading.Lock()
        self._closed = False  # (close() sets it: a load beside that fails then is expected)

    @staticmethod
    def _driver_defaults(options: dict[str, Any], retry_seconds: float) -> dict[str, Any]:
        """Driver options bounded by the retry budget (a caller's own options win)."""
        options.setdefault("notifications_min_severity", "OFF")  # no "unknown label" chatter in logs
        options.setdefault("connection_timeout", 5.0)  # (the driver's 30 s default, per attempt, on a dead host)
        options.setdefault("connection_acquisition_timeout", max(10.0, retry_seconds + 5.0))
        return options

    def _after_failure(self, exc: Exception, schedule: retries.RetrySchedule) -> float:
        """The wait before retrying a transaction that failed with ``exc``, or raise when there is none.

        Only errors the driver calls retryable (lost connections, leader switches,
        deadlocks) are retried, while the budget lasts; others go to
        :func:`_map_errors` unchanged.
        """
        from neo4j import exceptions as nx

        # (a database that is shutting down or starting answers DatabaseUnavailable, which the driver does
        # not always call retryable; a commit whose outcome is unknown is never retried)
        unreachable = (nx.ServiceUnavailable, nx.SessionExpired, nx.DatabaseUnavailable)
        retryable = not isinstance(exc, nx.IncompleteCommit) and (
            isinstance(exc, unreachable) or (isinstance(exc, (nx.DriverError, nx.Neo4jError)) and exc.is_retryable()))
        wait = schedule.next_wait() if retryable else None
        if wait is None:
            if retryable:
                attempts = f"{schedule.attempts} attempt{'s' if schedule.attempts > 1 else ''}"
                # (a deadlock or a lock timeout is a server that answers: say so, not "is it running?")
                what = (f"cannot reach Neo4j at {self.uri}: {_flat(exc)} (is the server running?)"
                        if isinstance(exc, unreachable) else
                        f"Neo4j at {self.uri} kept failing with a transient error: {_flat(exc)}")
                raise StoreUnavailable(
                    f"{what}; gave up after {schedule.elapsed:.1f} s and {attempts} (retry budget"
                    f" {self._retry.seconds:g} s, RIPPLE_NEO4J_RETRY_SECONDS)"
                ) from exc
            raise exc
        if not self._failing:  # once per outage: until a transaction succeeds again
            self._failing = True
            _log.warning("Neo4j at %s: %s; retrying each call for up to %g s", self.uri, _flat(exc),
                         self._retry.seconds)
        retries.note(retries.Retry(self.uri, schedule.attempts, f"{type(exc).__name__}: {_flat(exc)}", wait))
        return wait

    def __repr__(self) -> str:
        db = f", database={self._database!r}" if self._database else ""
        return f"{type(self).__name__}({self.uri!r}{db})"

    # -- open ----------------------------------------------------------------------------
    def _plan_open(self) -> _Plan[None]:
        def inspect() -> _Body[tuple[list[Record], Any]]:
            indexes = yield _Stmt(_SHOW_SCHEMA, {})
            meta = yield _Stmt(_META_READ, {})
            return indexes, meta[0]["version"]

        def create() -> _Body[None]:
            for stmt in _SCHEMA:
                yield _Stmt(stmt, {})

        def meta() -> _Body[Any]:
            rows = yield _Stmt(_META_WRITE, {"version": SCHEMA_VERSION})
            return rows[0]["version"]

        def await_indexes() -> _Body[list[Record]]:
            yield _Stmt("CALL db.awaitIndexes(300)", {})
            return (yield _Stmt(_SHOW_SCHEMA, {}))

        indexes, version = yield _Tx(False, inspect)
        if self.maintenance:  # take the database as it is: check() says what is wrong
            self._dims = _vector_dims(indexes)
            return
        if not _SCHEMA_NAMES <= {r["name"] for r in indexes}:
            yield _Tx(True, create)
            indexes = yield _Tx(False, await_indexes)
        if version is None:
            version = yield _Tx(True, meta)
        if version != SCHEMA_VERSION:
            raise SchemaError(f"the Neo4j store at {self.uri} has schema version {version},"
                              f" this ripple reads version {SCHEMA_VERSION}")
        self._dims = _vector_dims(indexes)

    def _warm_statements(self) -> list[_Stmt]:
        """The statements a default recall sends, with parameters of the types it sends, for a user that
        does not exist: running them at open puts their plans in the server's cache, so the first
        recalls after a start are not the slow ones (planning one of these costs more than running it)."""
        nobody = "\u0000ripple-warm-up"
        ids = {"ids": [nobody]}
        out = [
            _HAS_MEMORIES(user=nobody),
            _USER_STATE(user=nobody),
            _LEXICAL_ROUTE(user=nobody, terms=[nobody], max_df_ratio=0.5, max_df=1000),
            _TOKEN_VECTORS(**ids),
            _REVISION(user=nobody),
            _TOKEN_VECTORS_CHECKED(**ids, user=nobody, need=[nobody], epoch="", rev=0),
            _GET_MEMORIES(**ids),
            _ENTITY_NAMES(**ids),
        ]
        # the built-in spreading channels, session (NEXT, 3 hops) and entity (MENTIONS, 2 hops), each alone
        # and both together, as a recall reads them (graphstore.requests.ExpandWalks)
        session = ((EDGE_NEXT, 2), {"ids0": [nobody], "cap0": -1, "labels0": []})
        entity = ((EDGE_MENTIONS, 1), {"ids0": [nobody], "cap0": 200, "labels0": ["PERSON"]})
        for shape, params in (session, entity):
            out.append(_neighbourhoods((shape,))(user=nobody, **params))
        out.append(_neighbourhoods((session[0], entity[0]))(
            user=nobody, **session[1], ids1=[nobody], cap1=200, labels1=["PERSON"]))
        dim = self._dims["Memory"]
        if dim:
            vector = [1.0] + [0.0] * (dim - 1)
            out.append(_NEAREST["Memory"]["search"](
                user=nobody, vector=vector, k=200, statuses=[ACTIVE], probe=_EXACT_SCAN_BELOW,
                index=_VECTOR_INDEX["Memory"], candidates=800))
        return out

    # -- vector indexes ---------------------------------------------------------------------
    @staticmethod
    def _batch_dims(batch: WriteBatch) -> dict[str, int]:
        dims: dict[str, set[int]] = {"Memory": set(), "Entity": set()}
        for m in batch.memories:
            if m.embedding is not None:
                dims["Memory"].add(len(m.embedding) // 4)
        for e in batch.entities:
            if e.embedding is not None:
                dims["Entity"].add(len(e.embedding) // 4)
        out: dict[str, int] = {}
        for label, found in dims.items():
            if len(found) > 1:
                raise StoreError(f"one batch carries {label.lower()} embeddings of dimensions {sorted(found)}")
            if found:
                out[label] = found.pop()
        return out

    def _plan_vector_index(self, label: str, dim: int) -> _Plan[None]:
        """Make the label's vector index exist with ``dim`` dimensions (or fail if vectors of another remain)."""
        name = _VECTOR_INDEX[label]
        create = (f"CREATE VECTOR INDEX {name} IF NOT EXISTS FOR (n:{label}) ON n.embedding OPTIONS"
                  f" {{indexConfig: {{`vector.dimensions`: {int(dim)}, {_VECTOR_INDEX_CONFIG}}}}}")

        def show() -> _Body[dict[str, int | None]]:
            return _vector_dims((yield _Stmt(_SHOW_SCHEMA, {})))

        def ddl(*stmts: str) -> Callable[[], _Body[None]]:
            def body() -> _Body[None]:
                for stmt in stmts:
                    yield _Stmt(stmt, {})
            return body

        def settle() -> _Body[dict[str, int | None]]:
            yield _Stmt("CALL db.awaitIndex($name, 300)", {"name": name})
            return _vector_dims((yield _Stmt(_SHOW_SCHEMA, {})))

        known = (yield _Tx(False, show))[label]
        if known is None:
            yield _Tx(True, ddl(create))
            known = (yield _Tx(False, settle))[label]
        if known != dim:
            rows = yield _read(f"MATCH (n:{label}) WHERE n.embedding IS NOT NULL RETURN count(n) > 0 AS found LIMIT 1")
            if rows and rows[0]["found"]:
                raise StoreError(
                    f"{label.lower()} embeddings of dimension {dim} cannot join the store's {known}-dimensional"
                    f" vector index {name}; use the same embedding model, or another database"
                )
            yield _Tx(True, ddl(f"DROP INDEX {name} IF EXISTS"))
            yield _Tx(True, ddl(create))
            known = (yield _Tx(False, settle))[label]
        self._dims[label] = known

    # -- writes -------------------------------------------------------------------------------
    def _plan_write(self, batch: WriteBatch, replace_mentions_of: Sequence[str]) -> _Plan[None]:
        if not batch and not replace_mentions_of:
            return
        for edge in batch.edges:
            if edge.type not in _EDGE_ENDS:
                raise StoreError(f"unknown edge type {edge.type!r}; the Neo4j store knows {', '.join(EDGE_TYPES)}")
        for label, dim in self._batch_dims(batch).items():
            if self._dims[label] != dim:
                yield from self._plan_vector_index(label, dim)
        memories = list({m.id: m for m in batch.memories}.values())  # the last record of an id wins
        memory_rows = [_memory_row(m) for m in sorted(memories, key=lambda m: m.id)]  # (locked in id order)
        entity_rows = [_entity_row(e) for e in sorted(batch.entities, key=lambda e: e.id)]  # (an id's rows in order)
        edge_rows: list[dict[str, Any]] = [
            {"n": n, "type": x.type, "src": x.src, "dst": x.dst, "predicate": x.predicate, "user_id": x.user_id,
             "weight": x.weight, "evidence": x.evidence, "at": x.at} for n, x in enumerate(batch.edges)]
        replace = list(dict.fromkeys(replace_mentions_of))
        # (every user whose memories, entities or edges change: a near graph holds the edges too)
        users = sorted({m.user_id for m in memories} | {e.user_id for e in batch.entities}
                       | {x.user_id for x in batch.edges})
        ids = {"memories": [m.id for m in memories], "entities": list(dict.fromkeys(e.id for e in batch.entities))}

        def body() -> _Body[dict[str, Revision]]:
            owners = (yield _Stmt(_OWNERS, {"ids": replace}))[0]["users"] if replace else []
            revs = (yield from _bump(sorted({*users, *owners})))
            dirty: set[str] = set()
            if replace:
                dirty.update((yield _Stmt(_DROP_MENTIONS, {"ids": replace}))[0]["dirty"])
            existing = (yield _EXISTING(**ids))[0] if edge_rows or memory_rows else {}
            was = dict(zip(existing["memories"], existing["indexed"])) if existing else {}
            reindex = _reindexed(memories, was)
            unindex = [m.id for m in reindex if m.id in was]  # (a new memory has no postings to remove)
            if unindex:
                yield _REMOVE_POSTINGS(ids=unindex)
            postings, totals = _posting_rows([(m.id, m.user_id, m.terms) for m in reindex if m.status == ACTIVE])
            created = ({*ids["memories"], *ids["entities"]} - {*existing["memories"], *existing["entities"]}
                       if existing else set())
            parts, members = _edge_parts(edge_rows, created)
            dirty.update(r["dst"] for r in edge_rows if r["type"] == EDGE_MENTIONS)
            if not (memory_rows or entity_rows or edge_rows or dirty):
                return revs
            done = (yield _WRITE_BATCH(
                memories=[r for r in memory_rows if r["props"]["id"] not in was],
                rewrites=[r for r in memory_rows if r["props"]["id"] in was],
                postings=postings, totals=totals, entities=entity_rows, **parts, dirty=sorted(dirty)))[0]
            stored = {n for _, _, name in _EDGE_PARTS for first in done[name] for n in members[first]}
            missing = [r for r in edge_rows if r["n"] not in stored]
            if missing:
                first = missing[0]
                src, dst = _EDGE_ENDS[first["type"]]
                raise StoreError(
                    f"{len(missing)} edge(s) of the batch join nodes that do not exist (first: {first['type']}"
                    f" {src} {first['src']!r} -> {dst} {first['dst']!r}); nothing was written"
                )
            return revs

        revs = yield _Tx(True, body)
        for user, key in revs.items():
            self._near.wrote_memories(user, key, [(m.id, m.embedding, m.status) for m in memories if m.user_id == user])
            self._near.wrote_entities(user, [(e.id, e.embedding) for e in batch.entities
                                             if e.user_id == user and e.embedding is not None], ACTIVE)

    def _plan_touch(self, rows: list[dict[str, Any]]) -> _Plan[None]:
        """Touch rows (:mod:`graphstore.touches`: distinct ids in id order, each with its count and time)."""
        if rows:
            yield _write(_TOUCH, rows=rows)

    def _plan_set_status(self, memory_ids: Sequence[str], status: str) -> _Plan[int]:
        ids = sorted(set(memory_ids))  # (locked in id order, as every writer of memories does)
        if not ids:
            return 0

        def body() -> _Body[tuple[list[Record], dict[str, Revision]]]:
            changed = yield _Stmt(_CHANGED_STATUS, {"ids": ids, "status": status})
            if not changed:
                return [], {}
            revs = yield from _bump(sorted({r["user_id"] for r in changed}))
            changed_ids = [r["id"] for r in changed]
            yield _REMOVE_POSTINGS(ids=changed_ids)
            yield _Stmt(_SET_STATUS, {"ids": changed_ids, "status": status})
            if status == ACTIVE:
                postings, totals = _posting_rows([(r["id"], r["user_id"], r["terms"] or ()) for r in changed])
                yield _Stmt(_ADD_POSTINGS, {"rows": postings})
                yield _Stmt(_ADD_TOTALS, {"rows": totals})
            return changed, revs

        changed, revs = yield _Tx(True, body)
        for user, key in revs.items():
            self._near.changed_status(user, key, [r["id"] for r in changed if r["user_id"] == user], status)
        return len(changed)

    def _plan_delete_memories(self, memory_ids: Sequence[str]) -> _Plan[dict[str, int]]:
        ids = sorted(set(memory_ids))  # (locked in id order, as every writer of memories does)
        if not ids:
            return {"memories": 0, "edges": 0}

        def body() -> _Body[tuple[dict[str, int], list[str]]]:
            users = sorted((yield _Stmt(_OWNERS, {"ids": ids}))[0]["users"])
            yield from _bump(users)
            yield _REMOVE_POSTINGS(ids=ids)
            dirty = (yield _Stmt(_MENTIONED, {"ids": ids}))[0]["dirty"]
            edges = (yield _Stmt(_DELETE_MEMORY_EDGES, {"ids": ids}))[0]["n"]
            memories = (yield _Stmt(_DELETE_MEMORIES, {"ids": ids}))[0]["n"]
            if dirty:
                yield _Stmt(_RECOUNT_DEGREES, {"ids": sorted(dirty)})
            return {"memories": memories, "edges": edges}, users

        counts, users = yield _Tx(True, body)
        for user in users:  # (a vector index does not shrink: the next search loads the user again)
            self._near.drop(user)
        return counts

    def _plan_delete_user(self, user_id: str) -> _Plan[dict[str, int]]:
        for users in self._large_users.values():
            users.discard(user_id)
        counts: Counter[str] = Counter()
        step = 0
        while step < len(_DELETE_USER):

            def body(start: int = step) -> _Body[tuple[Counter[str], int]]:
                done: Counter[str] = Counter()
                # (each transaction changes the revision while the Lexicon node lasts: a near cache loaded
                # between two of them must not stay current)
                yield _Stmt(_BUMP_EXISTING, {"user": user_id})
                for i in range(start, len(_DELETE_USER)):
                    key, stmt = _DELETE_USER[i]
                    n = (yield _Stmt(stmt, {"user": user_id, "batch": _DELETE_BATCH}))[0]["n"]
                    done[key] += n
                    if n >= _DELETE_BATCH:  # maybe more of this step: commit, go on in a new transaction
                        return done, i
                return done, len(_DELETE_USER)

            done, step = yield _Tx(True, body)
            counts.update(done)
            self._near.drop(user_id)
        return {k: counts[k] for k in ("memories", "entities", "edges", "index_entries")}

    # -- reads -----------------------------------------------------------------------------------
    def _plan_get_memories(self, memory_ids: Sequence[str], with_vectors: bool) -> _Plan[list[StoredMemory]]:
        ids = list(memory_ids)
        if not ids:
            return []
        rows = yield _reading((_GET_MEMORIES_VECTORS if with_vectors else _GET_MEMORIES)(ids=list(dict.fromkeys(ids))))
        found = {m["id"]: _memory_record(m, vectors=with_vectors) for m in rows[0]["ms"]}
        return [found[i] for i in ids if i in found]

    def _plan_list_memories(
        self, user_id: str, session_id: str | None, statuses: Sequence[str] | None, limit: int | None, offset: int
    ) -> _Plan[list[StoredMemory]]:
        match = "MATCH (m:Memory {user_id: $user" + (", session_id: $session}" if session_id is not None else "}") + ")"
        where = " WHERE m.status IN $statuses" if statuses is not None else ""
        page = " SKIP $offset" + (" LIMIT $limit" if limit is not None else "")
        cypher = f"{match}{where} RETURN m {_MEMORY_MAP} AS m ORDER BY m.at, m.created_at, m.id{page}"
        rows = yield _read(cypher, user=user_id, session=session_id, statuses=list(statuses or ()),
                           offset=max(0, offset), limit=limit)
        return [_memory_record(r["m"]) for r in rows]

    def _plan_has_memories(self, user_id: str) -> _Plan[bool]:
        return bool((yield _reading(_HAS_MEMORIES(user=user_id))))

    def _plan_last_memory_in_session(self, user_id: str, session_id: str) -> _Plan[str | None]:
        rows = yield _read(_LAST_IN_SESSION, user=user_id, session=session_id)
        return str(rows[0]["id"]) if rows else None

    def _plan_session_tails(self, user_id: str, session_ids: Sequence[str]) -> _Plan[dict[str, str]]:
        if not session_ids:
            return {}
        rows = yield _reading(_SESSION_TAILS(user=user_id, sessions=list(dict.fromkeys(session_ids))))
        return {str(sid): str(mid) for sid, mid in rows[0]["tails"]}

    def _plan_get_entities(self, user_id: str, keys: Sequence[str]) -> _Plan[list[EntityRecord]]:
        keys = list(dict.fromkeys(keys))
        if not keys:
            return []
        rows = yield _reading(_GET_ENTITIES(user=user_id, keys=keys))
        return sorted((_entity_record(r["e"]) for r in rows), key=lambda e: e.id)

    def _plan_entity_values(self, stmt: _Planned, entity_ids: Sequence[str]) -> _Plan[dict[str, Any]]:
        ids = list(dict.fromkeys(entity_ids))
        if not ids:
            return {}
        row = (yield _reading(stmt(ids=ids)))[0]
        return dict(zip(row["ids"], row["values"]))

    def _plan_users(self) -> _Plan[list[str]]:
        return sorted(r["user"] for r in (yield _read(_USERS)))

    # -- the near cache (graphstore.nearcache) ----------------------------------------------------------
    def _plan_revision(self, user_id: str) -> _Plan[Revision | None]:
        row = (yield _reading(_REVISION(user=user_id)))[0]
        return (str(row["epoch"]), int(row["rev"])) if row["found"] else None

    def _plan_near_part(self, label: Part, user_id: str) -> _Plan[tuple[bool, VectorIndex | None]]:
        """``(True, index)``: the user's ``label`` vectors, current (read first: one small round trip), from
        this process's cache, loaded into it if it was not there and is admitted (``None``: the user has no
        such vectors); ``(False, None)``: search on the server (no cache, or the user is not admitted)."""
        near = self._near
        near.used(user_id)
        seen = self._seen_revision(user_id)
        key = seen[1] if seen else (yield from self._plan_revision(user_id))
        if key is None:  # nothing of the user's is written by a ripple that keeps revisions
            near.drop(user_id)
            return False, None
        found, index = near.part(user_id, key, label)
        if found:
            return True, index
        if not near.steady(user_id, key):
            return False, None
        size = yield from self._plan_near_size(label, user_id)
        if not near.admit(user_id, size):
            return False, None
        if size >= estimate_bytes(self._near_beside_rows, self._dims[label] or 1024):
            # a big user's load takes seconds (~100k rows: 5-15 s here): this search, and those until the
            # load is in, go to the server instead of waiting for it
            self._start_near_load(user_id, label, key)
            return False, None
        return True, (yield from self._plan_near_load(user_id, label, key))

    def _plan_near_size(self, label: Part, user_id: str) -> _Plan[int]:
        """What the user's ``label`` vectors would hold in the near cache (counted once: a user who is
        not admitted is not counted on every search)."""
        size = self._near.size(user_id, label)
        if size is None:
            size = estimate_bytes(int((yield _read(_NEAR_COUNT[label], user=user_id))[0]["n"]),
                                  self._dims[label] or 1024)
            self._near.note_size(user_id, label, size)
        return size

    def _plan_warm(self, user_id: str) -> _Plan[None]:
        """:class:`~graphstore.SupportsWarm`: the user's vectors into the near cache now (both kinds),
        whatever their number, unless the cache is off or does not admit them, then the user's walk edges."""
        near = self._near
        if not near.enabled:
            return
        near.used(user_id)
        key = yield from self._plan_revision(user_id)
        if key is None:
            return
        near.steady(user_id, key)
        labels: tuple[Part, ...] = ("Memory", "Entity")  # (memories first: they start the entry)
        for label in labels:
            if near.part(user_id, key, label)[0]:
                continue
            if near.admit(user_id, (yield from self._plan_near_size(label, user_id))):
                yield from self._plan_near_load(user_id, label, key)
        if self._near_graph and near.has_entry(user_id, key) and near.graph(user_id, key) is None:
            yield from self._plan_graph_load(user_id, key)

    def _plan_near_load(self, user_id: str, label: Part, key: Revision) -> _Plan[VectorIndex | None]:
        """Read all of ``user_id``'s ``label`` vectors into the near cache, as of revision ``key`` (read
        before them: a search uses them only while the user is still at ``key``)."""
        chunks = yield _read(_NEAR_LOAD[label], user=user_id, chunk=_NEAR_LOAD_CHUNK)
        index: VectorIndex | None = yield _Local(lambda: _near_index(chunks))
        if self._near.admit(user_id, index_bytes(index)):  # (again: others may have come in while it read)
            self._near.put_part(user_id, key, label, index)
        return index

    def _start_near_load(self, user_id: str, label: Part, key: Revision) -> None:
        """Load a user's vectors beside the searches (:meth:`_load_beside`), one load per user and label at
        a time: the searches that come meanwhile find it under way and go to the server."""
        self._start_load((user_id, label), self._plan_near_load(user_id, label, key))

    def _start_load(self, job: tuple[str, str], plan: _Plan[Any]) -> None:
        """Run a near-cache load ``plan`` beside the caller unless ``job`` (user, what) is already under way."""
        with self._loading_lock:
            if job in self._loading:
                return
            self._loading.add(job)

        def done() -> None:
            with self._loading_lock:
                self._loading.discard(job)

        self._load_beside(plan, done)

    def _load_beside(self, plan: _Plan[Any], done: Callable[[], None]) -> None:
        """Run ``plan`` without the caller waiting for it, then ``done()`` (each driver its own way)."""
        raise NotImplementedError

    def walks_locally(self, user_id: str) -> bool:
        """:class:`~graphstore.SupportsLocalWalks`: whether the user's walks read its near graph now (the
        graph of the user's cached entry; a hint: the next read still checks the revision)."""
        if not self._near_graph:
            return False
        key = self._near.entry_key(user_id)
        return key is not None and self._near.graph(user_id, key) is not None

    def _plan_near_graph(self, user_id: str, asks: Sequence[NeighbourhoodAsk]) -> _Plan[NearGraph | None]:
        """The user's walk edges in this process when they can answer ``asks`` at the user's current revision
        (:mod:`graphstore.neargraph`); ``None``: read on the server.  A user whose vectors are cached at that
        revision and whose graph is not, found at that revision by its previous walk too (no write between
        the two), has it loaded beside the recalls."""
        near = self._near
        if not (self._near_graph and near.enabled and near.entry_key(user_id) is not None):
            return None
        if not all(holds(a.edge_types) for a in asks):
            return None
        seen = self._seen_revision(user_id, "walk")
        key = seen[1] if seen else (yield from self._plan_revision(user_id))
        if key is None:
            return None
        graph = near.graph(user_id, key)
        if graph is None and near.walk_steady(user_id, key) and near.has_entry(user_id, key):
            self._start_load((user_id, "Graph"), self._plan_graph_load(user_id, key))
        return graph

    def _plan_graph_load(self, user_id: str, key: Revision) -> _Plan[NearGraph]:
        """Read the user's walk edges into the near cache, as of revision ``key`` (read before them)."""
        entities = yield _read(_NEAR_GRAPH_ENTITIES, user=user_id, chunk=_NEAR_GRAPH_CHUNK)
        edges = yield _read(_NEAR_GRAPH_EDGES, user=user_id, chunk=_NEAR_GRAPH_CHUNK)
        graph: NearGraph = yield _Local(lambda: NearGraph.from_rows(
            (tuple(e) for c in entities for e in c["part"]), (tuple(e) for c in edges for e in c["part"])))
        if self._near.admit(user_id, graph.nbytes):
            self._near.put_graph(user_id, key, graph)
        return graph

    def _load_failed(self, exc: BaseException) -> None:
        """A load beside failed: the user's searches stay on the server (a closed store's is expected)."""
        (_log.debug if self._closed else _log.warning)(
            "Neo4j at %s: loading a user's vectors or walk edges into the near cache failed (its searches and"
            " walks stay on the server): %s", self.uri, _flat(exc))

    def _seen_revision(self, user_id: str, use: str = "search") -> tuple[bool, Revision | None] | None:
        """``(True, key)`` when this operation's user-state read of ``user_id`` (:class:`_SeenRevision`)
        may stand for the revision read of this ``use`` (a search, the walk); ``None`` otherwise (it reads it)."""
        scope = current_scope()
        seen = None if scope is None else scope.get((_SEEN, self, user_id))
        if seen is None or use in seen.used:
            return None
        seen.used.add(use)
        if seen.key is None or not self._near.has_entry(user_id, seen.key):
            return None
        return True, seen.key

    def _plan_near_search(
        self, label: Part, user_id: str, vectors: Sequence[Any], k: int, statuses: Sequence[str]
    ) -> _Plan[list[list[tuple[str, float]]] | None]:
        """Searches in the near cache (exact, as the embedded store's), or ``None`` when the server must."""
        if not self._near.enabled:
            return None
        cached, index = yield from self._plan_near_part(label, user_id)
        if not cached:
            return None
        return nearest_from(self._near, index, vectors, k, statuses if label == "Memory" else None)

    # -- search ------------------------------------------------------------------------------------
    def _plan_nearest(
        self, label: Part, user_id: str, vector: "np.ndarray", k: int, statuses: Sequence[str] = (),
        near: bool = True,
    ) -> _Plan[list[tuple[str, float]]]:
        if k <= 0:
            return []
        local = (yield from self._plan_near_search(label, user_id, [vector], k, statuses)) if near else None
        if local is not None:
            return local[0]
        import numpy as np

        query = np.asarray(vector, dtype=np.float32).tolist()
        params: dict[str, Any] = {"user": user_id, "vector": query, "k": int(k), "statuses": list(statuses),
                                  "probe": _EXACT_SCAN_BELOW, "index": _VECTOR_INDEX[label]}
        cypher = _NEAREST[label]

        def body() -> _Body[list[Any]]:
            if self._dims[label] is None:  # another client may have created the index since we looked
                self._dims[label] = _vector_dims((yield _Stmt(_SHOW_SCHEMA, {})))[label]
            dim = self._dims[label]
            if dim is not None and dim != len(query):  # another client may have rebuilt the index since
                self._dims[label] = dim = _vector_dims((yield _Stmt(_SHOW_SCHEMA, {})))[label]
            if dim is not None and dim != len(query):
                if (yield cypher["population"](**params))[0]["population"] == 0:
                    return []  # an index left from earlier data, and nothing of this user's to compare
                raise StoreError(f"the query vector has {len(query)} dimensions, the store's"
                                 f" {label.lower()} vectors have {dim}")
            exact = cypher["exact"](**params)
            if dim is None:  # no vector index yet: no vectors either, unless one is being built
                return [(r["id"], r["s"]) for r in (yield exact)]
            candidates = max(4 * k, 64)
            # One statement probes the user's size and runs the exact scan or the index search; a user
            # known to be large (sizes seldom shrink, and a stale answer costs time, never results)
            # skips the probe.
            large = user_id in self._large_users[label]
            probe = 0 if large else _EXACT_SCAN_BELOW
            rows = yield cypher["search"](**{**params, "probe": probe, "candidates": candidates})
            if not rows:  # the chosen search found nothing (its grouped aggregation then yields no row)
                return []
            row = rows[0]
            if not large and row["population"] >= _EXACT_SCAN_BELOW:
                self._large_users[label].add(user_id)
            while True:
                hits = row["hits"]
                if row["found"] < candidates:  # an exact scan (found -1), or the index holds fewer nodes
                    return hits
                if len(hits) >= k and hits[k - 1][1] >= row["floor"]:
                    # the k-th hit is nearer than the farthest candidate, so whatever is nearer
                    # than the k-th hit was a candidate too (as far as the index is exact)
                    return hits
                if candidates >= _MAX_CANDIDATES:
                    return [(r["id"], r["s"]) for r in (yield exact)]
                candidates = min(candidates * 8, _MAX_CANDIDATES)
                row = (yield cypher["indexed"](**{**params, "candidates": candidates}))[0]

        hits = yield _Tx(False, body)
        return _cosine_top(hits, k)

    def _plan_nearest_multilingual(
        self, user_id: str, vector: "np.ndarray", k: int, statuses: Sequence[str]
    ) -> _Plan[list[tuple[str, float]]]:
        if k <= 0:
            return []
        import numpy as np

        query = np.asarray(vector, dtype=np.float32).tolist()
        rows = yield _reading(_NEAREST_MULTILINGUAL(user=user_id, vector=query, k=int(k), statuses=list(statuses)))
        return _cosine_top(rows[0]["hits"] if rows else [], k)

    def _plan_has_multilingual(self, user_id: str) -> _Plan[bool]:
        return bool((yield _reading(_HAS_MULTILINGUAL(user=user_id))))

    def _plan_user_state(self, user_id: str) -> _Plan[UserState]:
        row = (yield _reading(_USER_STATE(user=user_id)))[0]
        scope = current_scope()
        if self._near.enabled and scope is not None:  # (for the near cache's next search of the user: _SeenRevision)
            key = (str(row["epoch"]), int(row["rev"])) if row["found"] else None
            scope[(_SEEN, self, user_id)] = _SeenRevision(key)
        return UserState(bool(row["memories"]), bool(row["multilingual"]))

    def _plan_nearest_batch(
        self, label: Part, user_id: str, vectors: "np.ndarray", k: int, statuses: Sequence[str] = ()
    ) -> _Plan[list[list[tuple[str, float]]]]:
        """:meth:`_plan_nearest` for many vectors in one statement (one round trip for a whole ingest
        batch); a vector whose candidates cannot prove the top ``k`` exact is searched on its own."""
        import numpy as np

        vecs = np.asarray(vectors, dtype=np.float32)
        if k <= 0 or len(vecs) == 0:
            return [[] for _ in range(len(vecs))]
        local = yield from self._plan_near_search(label, user_id, list(vecs), k, statuses)
        if local is not None:
            return local
        cypher = _NEAREST[label]
        candidates = max(4 * k, 64)
        params: dict[str, Any] = {"user": user_id, "vectors": vecs.tolist(), "k": int(k), "statuses": list(statuses),
                                  "probe": _EXACT_SCAN_BELOW, "index": _VECTOR_INDEX[label], "candidates": candidates}

        def body() -> _Body[tuple[bool, list[Any]] | None]:
            if self._dims[label] is None:  # another client may have created the index since we looked
                self._dims[label] = _vector_dims((yield _Stmt(_SHOW_SCHEMA, {})))[label]
            dim = self._dims[label]
            if dim is not None and dim != vecs.shape[1]:
                return None  # the single search tells an empty user from a real dimension error
            exact = dim is None or (yield cypher["population"](**params))[0]["population"] < _EXACT_SCAN_BELOW
            return exact, (yield cypher["exact_batch" if exact else "indexed_batch"](**params))

        done = None if len(vecs) == 1 else (yield _Tx(False, body))
        if done is None:
            each = []
            for v in vecs:
                each.append((yield from self._plan_nearest(label, user_id, v, k, statuses, near=False)))
            return each
        exact, rows = done
        out: list[list[tuple[str, float]]] = []
        for row, vec in zip(sorted(rows, key=lambda r: r["i"]), vecs):
            hits = row["hits"]
            proven = exact or row["found"] < candidates or (len(hits) >= k and hits[k - 1][1] >= row["floor"])
            if not proven:
                out.append((yield from self._plan_nearest(label, user_id, vec, k, statuses, near=False)))
                continue
            out.append(_cosine_top(hits, k))
        return out

    def _plan_lexical_stats(self, user_id: str, terms: Sequence[str]) -> _Plan[tuple[int, float, dict[str, int]]]:
        rows = yield _read(_LEXICAL_STATS, user=user_id, terms=list(dict.fromkeys(terms)))
        n_docs, total = int(rows[0]["n_docs"] or 0), int(rows[0]["total_len"] or 0)
        df = {term: int(n) for term, n in rows[0]["df"] if n > 0}
        return n_docs, (total / n_docs if n_docs else 0.0), df

    def _plan_postings(self, user_id: str, terms: Sequence[str]) -> _Plan[list[tuple[str, str, int, int]]]:
        terms = list(dict.fromkeys(terms))
        if not terms:
            return []
        rows = yield _read(_POSTINGS, user=user_id, terms=terms)
        return _posting_tuples((r["term"], r["ids"], r["tfs"], r["lens"]) for r in rows)

    def _plan_lexical_route(
        self, user_id: str, terms: Sequence[str], max_df_ratio: float, max_df: int | None
    ) -> _Plan[LexicalRows]:
        terms = list(dict.fromkeys(terms))
        if not terms:
            return LexicalRows(*(yield from self._plan_lexical_stats(user_id, terms)), [])
        row = (yield _reading(_LEXICAL_ROUTE(user=user_id, terms=terms, max_df_ratio=float(max_df_ratio),
                                             max_df=max_df)))[0]
        n_docs, total = int(row["n_docs"] or 0), int(row["total_len"] or 0)
        df = {term: int(n) for term, n, *_ in row["terms"] if n > 0}
        postings = _posting_tuples((term, ids, tfs, lens) for term, _n, ids, tfs, lens in row["terms"] if ids)
        return LexicalRows(n_docs, total / n_docs if n_docs else 0.0, df, postings)

    def _plan_token_vectors(self, memory_ids: Sequence[str]) -> _Plan[dict[str, bytes]]:
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return {}
        near = self._near
        user = near.owner(ids) if near.enabled else None
        key = None if user is None else near.entry_key(user)
        if user is None or key is None:
            row = (yield _reading(_TOKEN_VECTORS(ids=ids)))[0]
            return {i: bytes(blob) for i, blob in zip(row["ids"], row["blobs"])}
        # the cached ones are good when the user's revision is still the cache's: read both in one statement
        cached = near.tokens(user, ids)
        row = (yield _reading(_TOKEN_VECTORS_CHECKED(user=user, ids=ids, need=[i for i in ids if i not in cached],
                                                     epoch=key[0], rev=key[1])))[0]
        fetched = {i: bytes(blob) for i, blob in zip(row["ids"], row["blobs"])}
        if not row["current"]:  # everything was read: the cache is behind (or the user is gone)
            near.part(user, (str(row["epoch"]), int(row["rev"])) if row["found"] else None, "Memory")
            return fetched
        near.put_tokens(user, key, fetched)
        return {i: got for i in ids if (got := cached.get(i) or fetched.get(i)) is not None}

    # -- documents ---------------------------------------------------------------------------------
    def _plan_get_document(self, user_id: str, key: str) -> _Plan[tuple[int, str, float] | None]:
        rows = yield _read(_GET_DOCUMENT, user=user_id, key=key)
        if not rows or rows[0]["value"] is None:  # (a node another writer holds while creating it)
            return None
        r = rows[0]
        return int(r["version"]), str(r["value"]), float(r["updated_at"])

    def _plan_put_document(
        self, user_id: str, key: str, value_json: str | None, expected_version: int | None, at: float
    ) -> _Plan[tuple[bool, int]]:
        params = {"user": user_id, "key": key}

        def body() -> _Body[tuple[bool, int]]:
            current = int((yield _Stmt(_LOCK_DOCUMENT, params))[0]["version"])
            if expected_version is not None and expected_version != current:
                yield _Stmt(_DROP_DOCUMENT if current == 0 else _UNLOCK_DOCUMENT, params)
                return False, current
            if value_json is None:
                yield _Stmt(_DROP_DOCUMENT, params)
                return True, 0
            yield _Stmt(_WRITE_DOCUMENT, {**params, "version": current + 1, "value": value_json, "at": at})
            return True, current + 1

        return (yield _Tx(True, body))

    def _plan_documents(self, user_id: str) -> _Plan[list[DocumentRecord]]:
        rows = yield _read(_DOCUMENTS, user=user_id)
        return [DocumentRecord(user_id, str(r["key"]), int(r["version"]), str(r["value"]), float(r["updated_at"]))
                for r in rows]

    def _plan_restore_documents(self, documents: Sequence[DocumentRecord]) -> _Plan[None]:
        if documents:
            yield _write(_RESTORE_DOCUMENTS, rows=[
                {"user": d.user_id, "key": d.key, "version": d.version, "value": d.value_json, "at": d.updated_at}
                for d in documents])

    # -- graph -------------------------------------------------------------------------------------
    def _plan_related_edges(
        self, user_id: str, source_ids: Sequence[str], predicates: Sequence[str]
    ) -> _Plan[list[EdgeRecord]]:
        ids, preds = list(dict.fromkeys(source_ids)), list(dict.fromkeys(predicates))
        if not ids or not preds:
            return []
        rows = yield _read(_RELATED_EDGES, ids=ids, predicates=preds, user=user_id)
        return [EdgeRecord(src=r["src"], type=EDGE_RELATED, dst=r["dst"], user_id=user_id, weight=float(r["weight"]),
                           predicate=r["predicate"], evidence=r["evidence"], at=r["at"]) for r in rows]

    def _plan_expand(
        self, user_id: str, frontier: Sequence[str], edge_types: Sequence[str], max_degree: int | None
    ) -> _Plan[list[Neighbor]]:
        ids = list(dict.fromkeys(frontier))
        types = [t for t in dict.fromkeys(edge_types) if t in _EDGE_ENDS]  # unknown types have no edges
        if not ids or not types:
            return []
        cypher = _EXPAND % {"types": "|".join(types)}
        rows = yield _read(cypher, ids=ids, user=user_id, cap=-1 if max_degree is None else int(max_degree))
        by_source = _neighbours(rows)
        # frontier order, each node's rows in row_order: what a neighbourhood read (or the near graph) gives too
        return [n for i in ids for n in by_source.get(i, ())]

    def _plan_neighbourhood(
        self, user_id: str, sources: Sequence[str], edge_types: Sequence[str], reach: int,
        max_degree: int | None, labels: Sequence[str] | None,
    ) -> _Plan[dict[str, list[Neighbor]]]:
        ask = NeighbourhoodAsk(sources, edge_types, reach, max_degree, labels)
        return (yield from self._plan_neighbourhoods(user_id, [ask]))[0]

    def _plan_neighbourhoods(self, user_id: str, asks: Sequence[NeighbourhoodAsk]) -> _Plan[list[dict[str, list[Neighbor]]]]:
        """Each ask's neighbourhood (:class:`~graphstore.SupportsNeighbourhood`), the reads that need the
        server in one statement: an ask without sources is ``{}``, one over no known edge type gives each
        source no neighbours."""
        graph = yield from self._plan_near_graph(user_id, asks)
        if graph is not None:
            return [graph.neighbourhood(ask) for ask in asks]
        out: list[dict[str, list[Neighbor]]] = []
        shapes: list[tuple[str, int]] = []
        params: dict[str, Any] = {"user": user_id}
        reads: list[tuple[int, list[str]]] = []  # (the answer it fills, its sources)
        for ask in asks:
            ids = list(dict.fromkeys(ask.sources))
            types = [t for t in dict.fromkeys(ask.edge_types) if t in _EDGE_ENDS]
            out.append({} if not ids else {i: [] for i in ids})
            if ids and types:
                n = len(shapes)
                shapes.append(("|".join(types), max(0, int(ask.reach))))
                params.update({f"ids{n}": ids, f"cap{n}": -1 if ask.max_degree is None else int(ask.max_degree),
                               f"labels{n}": None if ask.labels is None else list(ask.labels)})
                reads.append((len(out) - 1, ids))
        if not shapes:
            return out
        rows = yield _reading(_neighbourhoods(tuple(shapes))(**params))
        by_ask = {r["ask"]: r["rows"] for r in rows}
        for n, (slot, ids) in enumerate(reads):
            out[slot] = _with_sources(_neighbour_rows(by_ask.get(n, ())), ids)
        return out

    # -- housekeeping --------------------------------------------------------------------------------
    def _plan_export(self, user_id: str) -> _Plan[list[StoredMemory | EntityRecord | EdgeRecord]]:
        def body() -> _Body[list[StoredMemory | EntityRecord | EdgeRecord]]:
            mems = [_memory_record(r["m"], vectors=True) for r in (yield _Stmt(_EXPORT_MEMORIES, {"user": user_id}))]
            ents = [_entity_record(r["e"], vectors=True) for r in (yield _Stmt(_EXPORT_ENTITIES, {"user": user_id}))]
            edges = [_edge_record(r) for r in (yield _Stmt(_EXPORT_EDGES, {"user": user_id}))]
            # Python orders strings by code point, as SQLite's BINARY collation orders UTF-8 bytes.
            mems.sort(key=lambda m: (m.at, m.created_at, m.id))
            ents.sort(key=lambda e: e.id)
            edges.sort(key=lambda x: (x.type, x.src, x.dst, x.predicate))
            return [*mems, *ents, *edges]

        return (yield _Tx(False, body))

    def _plan_stats(self, user_id: str | None) -> _Plan[dict[str, int]]:
        def body() -> _Body[dict[str, int]]:
            out = {"memories": 0, "entities": 0}
            for kind, stmt in (_STATS_ALL if user_id is None else _STATS_USER):
                for r in (yield _Stmt(stmt, {"user": user_id})):
                    if kind == "status":
                        out["memories"] += r["n"]
                        out[f"memories_{r['key']}"] = r["n"]
                    elif kind == "edges":
                        out[f"edges_{r['key']}"] = r["n"]
                    else:
                        out["entities"] = r["n"]
            if user_id is None:
                out["users"] = len((yield _Stmt(_USERS, {})))
            else:  # the user exists if anything of theirs is stored
                out["users"] = 1 if out.get("memories", 0) or out.get("entities", 0) else 0
            return out

        return (yield _Tx(False, body))

    def _plan_cypher(
        self, query: str, params: dict[str, Any] | None, write: bool, allow_procedures: bool, allow_admin: bool
    ) -> _Plan[tuple[list[str], list[list[Any]]]]:
        def body() -> _Body[tuple[list[str], list[list[Any]]]]:
            # Neo4j's own plan says what the query does (see graphstore.cypher_policy); the EXPLAIN
            # runs nothing, in the same transaction as the query.
            (plan,) = yield _Stmt(query, dict(params or {}), explain=True)
            check_plan(cast(CypherPlan, plan), write=write, allow_procedures=allow_procedures,
                       allow_admin=allow_admin)
            rows = yield _Stmt(query, dict(params or {}))
            keys = list(rows[0].keys()) if rows else []
            return keys, [[_plain(v) for v in r.values()] for r in rows]

        if write:  # a query may change anything without touching revisions: forget what this process keeps
            self._near.clear()
        return (yield _Tx(write, body))


    # -- lifecycle questions -------------------------------------------------------------------------
    def _plan_memories_mentioning(
        self, user_id: str, entity_ids: Sequence[str], statuses: Sequence[str], per_entity: int
    ) -> _Plan[list[tuple[str, str]]]:
        ids, states = list(dict.fromkeys(entity_ids)), list(dict.fromkeys(statuses))
        if not ids or not states or per_entity <= 0:
            return []
        rows = yield _reading(_MEMORIES_MENTIONING(ids=ids, user=user_id, statuses=states, k=int(per_entity)))
        return [(r["entity"], mid) for r in rows for mid in r["ids"]]

    def _plan_list_edges(self, user_id: str, edge_types: Sequence[str]) -> _Plan[list[EdgeRecord]]:
        types = [t for t in dict.fromkeys(edge_types) if t in _EDGE_ENDS]  # unknown types have no edges
        if not types:
            return []
        edges = [_edge_record(r) for r in (yield _read(_list_edges_cypher(types), user=user_id))]
        return sorted(edges, key=lambda x: (x.type, x.src, x.dst, x.predicate))


def _with_edge_defaults(out: dict[str, int]) -> dict[str, int]:
    for typ in EDGE_TYPES:
        out.setdefault(f"edges_{typ.lower()}", 0)
    return out


# -- the synchronous store -----------------------------------------------------------------------------
class Neo4jStore(_Neo4jCore):
    """ripple's graph on a Neo4j 5 server (sync API, the official ``neo4j`` driver).

    Parameters
    ----------
    uri:
        ``bolt://host:7687`` for one server, ``neo4j://host:7687`` for a cluster
        (reads go to followers), or their ``+s``/``+ssc`` TLS variants.
    user, password:
        Credentials (``RIPPLE_NEO4J_USER`` / ``RIPPLE_NEO4J_PASSWORD`` in settings).
    database:
        Database name; the server's default database when ``None``.
    near_cache_mb:
        How many MB of hot users' vectors this process keeps to search them itself
        (:mod:`graphstore.nearcache`; ``RIPPLE_NEO4J_NEAR_CACHE_MB``); 0 searches on the server.
    near_load_beside_rows:
        A user with at least this many vectors is loaded into the near cache beside the searches
        (which go to the server until it is in), a smaller one inline
        (:data:`~graphstore.nearcache.NEAR_LOAD_BESIDE_ROWS`).
    near_graph:
        Whether the near cache also keeps its users' walk edges (:mod:`graphstore.neargraph`), so that a
        recall's spreading read is answered in this process; ``False`` reads it on the server every time.
    **driver_options:
        Passed to ``neo4j.GraphDatabase.driver`` (timeouts, pool size, TLS).

    Raises
    ------
    StoreUnavailable
        The server cannot be reached or rejects the credentials.
    SchemaError
        The database holds a ripple graph of another schema version.

    Examples
    --------
    >>> store = Neo4jStore("bolt://127.0.0.1:7687", password="secret")      # doctest: +SKIP
    >>> store.stats()["memories"]                                             # doctest: +SKIP
    0
    """

    def __init__(
        self, uri: str, *, user: str = "neo4j", password: str | None = None, database: str | None = None,
        retry_seconds: float = 8.0, maintenance: bool = False, warm_up: bool = True,
        near_cache_mb: float = DEFAULT_BUDGET_MB, near_load_beside_rows: int = NEAR_LOAD_BESIDE_ROWS,
        near_graph: bool = True, **driver_options: Any,
    ) -> None:
        super().__init__(uri, user=user, password=password, database=database, retry_seconds=retry_seconds,
                         maintenance=maintenance, near_cache_mb=near_cache_mb,
                         near_load_beside_rows=near_load_beside_rows, near_graph=near_graph)
        import neo4j

        options = self._driver_defaults(driver_options, self._retry.seconds)
        with _map_errors(uri, opening=True):
            self._driver: Driver = neo4j.GraphDatabase.driver(uri, auth=self._auth, **options)
        self._bookmarks = neo4j.GraphDatabase.bookmark_manager()
        # recall touches are written beside the caller (graphstore.touches)
        self._touches = TouchWriter(lambda rows: self._drive(self._plan_touch(rows)))
        try:
            self._drive(self._plan_open(), opening=True)  # (connects, authenticates: retried like any call)
            if warm_up:
                with _map_errors(uri, opening=True):
                    self._warm_up()
        except BaseException:
            self._driver.close()
            raise

    def _warm_up(self) -> None:
        """Plan the recall's statements (:meth:`_warm_statements`) over :data:`_WARM_CONNECTIONS` connections
        held at once, so that the pool already has one for the dense search a recall runs beside its reads."""
        import neo4j

        stmts = self._warm_statements()
        with contextlib.ExitStack() as stack:
            sessions = [stack.enter_context(self._driver.session(database=self._database,
                                                                 default_access_mode=neo4j.READ_ACCESS))
                        for _ in range(_WARM_CONNECTIONS)]
            for start in range(0, len(stmts), len(sessions)):
                results = [session.run(stmt.cypher, stmt.params) for session, stmt in zip(sessions, stmts[start:])]
                for result in results:
                    result.consume()

    def __enter__(self) -> "Neo4jStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _drive(self, plan: _Plan[T], *, opening: bool = False) -> T:
        """Run a plan: each transaction it yields, retried within the budget (see :mod:`graphstore.retries`)."""
        with _map_errors(self.uri, opening=opening):
            value: Any = None
            while True:
                try:
                    step = plan.send(value)
                except StopIteration as done:
                    return done.value
                value = step.work() if isinstance(step, _Local) else self._transaction(step)

    def _transaction(self, step: _Tx) -> Any:
        import neo4j

        mode = neo4j.WRITE_ACCESS if step.write else neo4j.READ_ACCESS
        schedule = self._retry.start()
        while True:
            try:
                with self._driver.session(database=self._database, bookmark_manager=self._bookmarks,
                                          default_access_mode=mode) as session:
                    if step.write:
                        with session.begin_transaction() as tx:
                            value = _run_body(tx, step.body)
                            tx.commit()
                    else:  # auto-commit queries: one round trip each (see the module docstring)
                        value = _run_body(session, step.body)
                self._failing = False
                return value
            except Exception as exc:  # noqa: BLE001 - _after_failure re-raises what it does not retry
                time.sleep(self._after_failure(exc, schedule))

    def close(self) -> None:
        if not self._closed:
            self._touches.close()  # (writes the pending touches first)
            self._closed = True
            self._driver.close()  # (a load beside still running fails quietly)

    def _load_beside(self, plan: _Plan[Any], done: Callable[[], None]) -> None:
        """In a daemon thread of its own (a load is rare: once per user and revision)."""

        def run() -> None:
            try:
                self._drive(plan)
            except Exception as exc:  # noqa: BLE001 - logged: nobody waits for it
                self._load_failed(exc)
            finally:
                done()

        threading.Thread(target=run, name="ripple-near-load", daemon=True).start()

    def warm(self, user_id: str) -> None:
        """Load the user's vectors and walk edges into the near cache now (:class:`~graphstore.SupportsWarm`)."""
        self._drive(self._plan_warm(user_id))

    # -- the protocol: one plan each --------------------------------------------------------------
    def write(self, batch: WriteBatch, *, replace_mentions_of: Sequence[str] = ()) -> None:
        return self._drive(self._plan_write(batch, replace_mentions_of))

    def touch(self, memory_ids: Sequence[str], at: float) -> None:
        """Queued and written beside the caller (:mod:`graphstore.touches`); reads of access counts
        through this store wait for it, :meth:`close` writes what is pending."""
        self._touches.add(memory_ids, at)

    def set_status(self, memory_ids: Sequence[str], status: str) -> int:
        return self._drive(self._plan_set_status(memory_ids, status))

    def delete_memories(self, memory_ids: Sequence[str]) -> dict[str, int]:
        return self._drive(self._plan_delete_memories(memory_ids))

    def delete_user(self, user_id: str) -> dict[str, int]:
        return self._drive(self._plan_delete_user(user_id))

    def get_memories(self, memory_ids: Sequence[str], *, with_vectors: bool = False) -> list[StoredMemory]:
        self._touches.settle()  # (a process reads its own touches: graphstore.touches)
        return self._drive(self._plan_get_memories(memory_ids, with_vectors))

    def list_memories(
        self, user_id: str, *, session_id: str | None = None, statuses: Sequence[str] | None = None,
        limit: int | None = None, offset: int = 0,
    ) -> list[StoredMemory]:
        self._touches.settle()
        return self._drive(self._plan_list_memories(user_id, session_id, statuses, limit, offset))

    def has_memories(self, user_id: str) -> bool:
        return self._drive(self._plan_has_memories(user_id))

    def last_memory_in_session(self, user_id: str, session_id: str) -> str | None:
        return self._drive(self._plan_last_memory_in_session(user_id, session_id))

    def session_tails(self, user_id: str, session_ids: Sequence[str]) -> dict[str, str]:
        return self._drive(self._plan_session_tails(user_id, session_ids))

    def get_entities(self, user_id: str, keys: Sequence[str]) -> list[EntityRecord]:
        return self._drive(self._plan_get_entities(user_id, keys))

    def entity_names(self, entity_ids: Sequence[str]) -> dict[str, str]:
        return self._drive(self._plan_entity_values(_ENTITY_NAMES, entity_ids))

    def users(self) -> list[str]:
        return self._drive(self._plan_users())

    def nearest_memories(
        self, user_id: str, vector: "np.ndarray", k: int, *, statuses: Sequence[str] = (ACTIVE,)
    ) -> list[tuple[str, float]]:
        return self._drive(self._plan_nearest("Memory", user_id, vector, k, statuses))

    def nearest_entities(self, user_id: str, vector: "np.ndarray", k: int) -> list[tuple[str, float]]:
        return self._drive(self._plan_nearest("Entity", user_id, vector, k))

    def nearest_multilingual(
        self, user_id: str, vector: "np.ndarray", k: int, *, statuses: Sequence[str] = (ACTIVE,)
    ) -> list[tuple[str, float]]:
        return self._drive(self._plan_nearest_multilingual(user_id, vector, k, statuses))

    def has_multilingual(self, user_id: str) -> bool:
        return self._drive(self._plan_has_multilingual(user_id))

    def get_user_state(self, user_id: str) -> UserState:
        return self._drive(self._plan_user_state(user_id))

    def nearest_memories_batch(
        self, user_id: str, vectors: "np.ndarray", k: int, *, statuses: Sequence[str] = (ACTIVE,)
    ) -> list[list[tuple[str, float]]]:
        return self._drive(self._plan_nearest_batch("Memory", user_id, vectors, k, statuses))

    def nearest_entities_batch(self, user_id: str, vectors: "np.ndarray", k: int) -> list[list[tuple[str, float]]]:
        return self._drive(self._plan_nearest_batch("Entity", user_id, vectors, k))

    def lexical_stats(self, user_id: str, terms: Sequence[str]) -> tuple[int, float, dict[str, int]]:
        return self._drive(self._plan_lexical_stats(user_id, terms))

    def postings(self, user_id: str, terms: Sequence[str]) -> list[tuple[str, str, int, int]]:
        return self._drive(self._plan_postings(user_id, terms))

    def lexical_route(
        self, user_id: str, terms: Sequence[str], *, max_df_ratio: float, max_df: int | None
    ) -> LexicalRows:
        return self._drive(self._plan_lexical_route(user_id, terms, max_df_ratio, max_df))

    def token_vectors(self, memory_ids: Sequence[str]) -> dict[str, bytes]:
        return self._drive(self._plan_token_vectors(memory_ids))

    def related_edges(self, user_id: str, source_ids: Sequence[str], predicates: Sequence[str]) -> list[EdgeRecord]:
        return self._drive(self._plan_related_edges(user_id, source_ids, predicates))

    def expand(
        self, user_id: str, frontier: Sequence[str], edge_types: Sequence[str], *, max_degree: int | None = None
    ) -> list[Neighbor]:
        return self._drive(self._plan_expand(user_id, frontier, edge_types, max_degree))

    def neighbourhood(
        self, user_id: str, sources: Sequence[str], edge_types: Sequence[str], *, reach: int,
        max_degree: int | None = None, labels: Sequence[str] | None = None,
    ) -> dict[str, list[Neighbor]]:
        return self._drive(self._plan_neighbourhood(user_id, sources, edge_types, reach, max_degree, labels))

    def neighbourhoods(self, user_id: str, asks: Sequence[NeighbourhoodAsk]) -> list[dict[str, list[Neighbor]]]:
        return self._drive(self._plan_neighbourhoods(user_id, asks))

    def export(self, user_id: str) -> Iterator[StoredMemory | EntityRecord | EdgeRecord]:
        self._touches.settle()
        yield from self._drive(self._plan_export(user_id))

    def stats(self, user_id: str | None = None) -> dict[str, int]:
        return _with_edge_defaults(self._drive(self._plan_stats(user_id)))

    def cypher(
        self, query: str, params: dict[str, Any] | None = None, *, write: bool = False,
        allow_procedures: bool = False, allow_admin: bool = False,
    ) -> tuple[list[str], list[list[Any]]]:
        """Run one Cypher query in a read (or ``write``) transaction: column names and plain rows.

        Procedures and administration commands (``SHOW``, ``LOAD CSV``, ``dbms.*``, schema) are refused
        unless allowed (see :mod:`graphstore.cypher_policy`)."""
        self._touches.settle()
        return self._drive(self._plan_cypher(query, params, write, allow_procedures, allow_admin))

    def get_document(self, user_id: str, key: str) -> tuple[int, str, float] | None:
        return self._drive(self._plan_get_document(user_id, key))

    # -- maintenance (graphstore.SupportsMaintenance; the plans are in graphstore.neo4jmaint) -------------
    def check(self) -> list[Finding]:
        """Check the schema and every derived index against the memories (read-only)."""
        from .neo4jmaint import plan_check

        return self._drive(plan_check(self))

    def reindex(self, *, progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
        """Create lost constraints and indexes; rebuild postings, BM25 totals, aliases and degrees."""
        from .neo4jmaint import plan_reindex

        return self._drive(plan_reindex(self, progress))

    def put_document(
        self, user_id: str, key: str, value_json: str | None, *, expected_version: int | None, at: float
    ) -> tuple[bool, int]:
        return self._drive(self._plan_put_document(user_id, key, value_json, expected_version, at))

    def documents(self, user_id: str) -> list[DocumentRecord]:
        return self._drive(self._plan_documents(user_id))

    def restore_documents(self, documents: Sequence[DocumentRecord]) -> None:
        return self._drive(self._plan_restore_documents(documents))

    def memories_mentioning(
        self, user_id: str, entity_ids: Sequence[str], *, statuses: Sequence[str] = (ACTIVE,), per_entity: int = 4
    ) -> list[tuple[str, str]]:
        return self._drive(self._plan_memories_mentioning(user_id, entity_ids, statuses, per_entity))

    def list_edges(self, user_id: str, edge_types: Sequence[str]) -> list[EdgeRecord]:
        return self._drive(self._plan_list_edges(user_id, edge_types))


# -- the asynchronous store: the same plans, awaited -------------------------------------------------------
class AsyncNeo4jStore(_Neo4jCore):
    """The async twin of :class:`Neo4jStore` (``neo4j.AsyncGraphDatabase``).

    The constructor does no I/O: ``await store.open()`` (or ``async with``)
    connects, checks the credentials and the schema; the first call opens the
    store otherwise.  Close with ``await store.aclose()``.

    Examples
    --------
    >>> async with AsyncNeo4jStore("bolt://127.0.0.1:7687", password="secret") as store:  # doctest: +SKIP
    ...     print(await store.users())
    """

    def __init__(
        self, uri: str, *, user: str = "neo4j", password: str | None = None, database: str | None = None,
        retry_seconds: float = 8.0, maintenance: bool = False, warm_up: bool = True,
        near_cache_mb: float = DEFAULT_BUDGET_MB, near_load_beside_rows: int = NEAR_LOAD_BESIDE_ROWS,
        near_graph: bool = True, **driver_options: Any,
    ) -> None:
        super().__init__(uri, user=user, password=password, database=database, retry_seconds=retry_seconds,
                         maintenance=maintenance, near_cache_mb=near_cache_mb,
                         near_load_beside_rows=near_load_beside_rows, near_graph=near_graph)
        import neo4j

        options = self._driver_defaults(driver_options, self._retry.seconds)
        with _map_errors(uri, opening=True):
            self._driver: AsyncDriver = neo4j.AsyncGraphDatabase.driver(uri, auth=self._auth, **options)
        self._bookmarks = neo4j.AsyncGraphDatabase.bookmark_manager()
        self._touches = AsyncTouchWriter(lambda rows: self._drive(self._plan_touch(rows)))
        self._loads: set[asyncio.Task[None]] = set()  # near-cache loads beside the searches
        self._opened = False
        self._warm = warm_up

    async def open(self) -> "AsyncNeo4jStore":
        """Connect, authenticate, check (or create) the schema and warm the plan cache; idempotent."""
        if not self._opened:
            await self._drive(self._plan_open(), opening=True)
            if self._warm:
                with _map_errors(self.uri, opening=True):
                    await self._warm_up()
            self._opened = True
        return self

    async def _warm_up(self) -> None:
        """:meth:`Neo4jStore._warm_up`, awaited."""
        import neo4j

        stmts = self._warm_statements()
        async with contextlib.AsyncExitStack() as stack:
            sessions = [await stack.enter_async_context(self._driver.session(database=self._database,
                                                                             default_access_mode=neo4j.READ_ACCESS))
                        for _ in range(_WARM_CONNECTIONS)]
            for start in range(0, len(stmts), len(sessions)):
                results = [await session.run(stmt.cypher, stmt.params)
                           for session, stmt in zip(sessions, stmts[start:])]
                for result in results:
                    await result.consume()

    async def __aenter__(self) -> "AsyncNeo4jStore":
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _drive(self, plan: _Plan[T], *, opening: bool = False) -> T:
        if not self._opened and not opening:
            await self.open()
        with _map_errors(self.uri, opening=opening):
            value: Any = None
            while True:
                try:
                    step = plan.send(value)
                except StopIteration as done:
                    return done.value
                value = (await asyncio.to_thread(step.work) if isinstance(step, _Local)
                         else await self._transaction(step))

    async def _transaction(self, step: _Tx) -> Any:
        import neo4j

        mode = neo4j.WRITE_ACCESS if step.write else neo4j.READ_ACCESS
        schedule = self._retry.start()
        while True:
            try:
                async with self._driver.session(database=self._database, bookmark_manager=self._bookmarks,
                                                default_access_mode=mode) as session:
                    if step.write:
                        async with await session.begin_transaction() as tx:
                            value = await _arun_body(tx, step.body)
                            await tx.commit()
                    else:
                        value = await _arun_body(session, step.body)
                self._failing = False
                return value
            except Exception as exc:  # noqa: BLE001 - _after_failure re-raises what it does not retry
                await asyncio.sleep(self._after_failure(exc, schedule))

    async def aclose(self) -> None:
        if not self._closed:
            await self._touches.settle()  # (writes the pending touches first)
            self._closed = True
            for task in list(self._loads):
                task.cancel()
            await self._driver.close()

    def _load_beside(self, plan: _Plan[Any], done: Callable[[], None]) -> None:
        """As a task of the running event loop (kept until it ends, cancelled by :meth:`aclose`)."""

        async def run() -> None:
            try:
                await self._drive(plan)
            except Exception as exc:  # noqa: BLE001 - logged: nobody waits for it
                self._load_failed(exc)
            finally:
                done()

        task = asyncio.get_running_loop().create_task(run())
        self._loads.add(task)
        task.add_done_callback(self._loads.discard)

    async def warm(self, user_id: str) -> None:
        """See :meth:`Neo4jStore.warm`."""
        await self._drive(self._plan_warm(user_id))

    close = aclose

    # -- the protocol: one plan each --------------------------------------------------------------
    async def write(self, batch: WriteBatch, *, replace_mentions_of: Sequence[str] = ()) -> None:
        return await self._drive(self._plan_write(batch, replace_mentions_of))

    async def touch(self, memory_ids: Sequence[str], at: float) -> None:
        """See :meth:`Neo4jStore.touch`."""
        await self._touches.add(memory_ids, at)

    async def set_status(self, memory_ids: Sequence[str], status: str) -> int:
        return await self._drive(self._plan_set_status(memory_ids, status))

    async def delete_memories(self, memory_ids: Sequence[str]) -> dict[str, int]:
        return await self._drive(self._plan_delete_memories(memory_ids))

    async def delete_user(self, user_id: str) -> dict[str, int]:
        return await self._drive(self._plan_delete_user(user_id))

    async def get_memories(self, memory_ids: Sequence[str], *, with_vectors: bool = False) -> list[StoredMemory]:
        await self._touches.settle()  # (a task reads its own touches: graphstore.touches)
        return await self._drive(self._plan_get_memories(memory_ids, with_vectors))

    async def list_memories(
        self, user_id: str, *, session_id: str | None = None, statuses: Sequence[str] | None = None,
        limit: int | None = None, offset: int = 0,
    ) -> list[StoredMemory]:
        await self._touches.settle()
        return await self._drive(self._plan_list_memories(user_id, session_id, statuses, limit, offset))

    async def has_memories(self, user_id: str) -> bool:
        return await self._drive(self._plan_has_memories(user_id))

    async def last_memory_in_session(self, user_id: str, session_id: str) -> str | None:
        return await self._drive(self._plan_last_memory_in_session(user_id, session_id))

    async def session_tails(self, user_id: str, session_ids: Sequence[str]) -> dict[str, str]:
        return await self._drive(self._plan_session_tails(user_id, session_ids))

    async def get_entities(self, user_id: str, keys: Sequence[str]) -> list[EntityRecord]:
        return await self._drive(self._plan_get_entities(user_id, keys))

    async def entity_names(self, entity_ids: Sequence[str]) -> dict[str, str]:
        return await self._drive(self._plan_entity_values(_ENTITY_NAMES, entity_ids))

    async def users(self) -> list[str]:
        return await self._drive(self._plan_users())

    async def nearest_memories(
        self, user_id: str, vector: "np.ndarray", k: int, *, statuses: Sequence[str] = (ACTIVE,)
    ) -> list[tuple[str, float]]:
        return await self._drive(self._plan_nearest("Memory", user_id, vector, k, statuses))

    async def nearest_entities(self, user_id: str, vector: "np.ndarray", k: int) -> list[tuple[str, float]]:
        return await self._drive(self._plan_nearest("Entity", user_id, vector, k))

    async def nearest_multilingual(
        self, user_id: str, vector: "np.ndarray", k: int, *, statuses: Sequence[str] = (ACTIVE,)
    ) -> list[tuple[str, float]]:
        return await self._drive(self._plan_nearest_multilingual(user_id, vector, k, statuses))

    async def has_multilingual(self, user_id: str) -> bool:
        return await self._drive(self._plan_has_multilingual(user_id))

    async def get_user_state(self, user_id: str) -> UserState:
        return await self._drive(self._plan_user_state(user_id))

    async def nearest_memories_batch(
        self, user_id: str, vectors: "np.ndarray", k: int, *, statuses: Sequence[str] = (ACTIVE,)
    ) -> list[list[tuple[str, float]]]:
        return await self._drive(self._plan_nearest_batch("Memory", user_id, vectors, k, statuses))

    async def nearest_entities_batch(self, user_id: str, vectors: "np.ndarray", k: int) -> list[list[tuple[str, float]]]:
        return await self._drive(self._plan_nearest_batch("Entity", user_id, vectors, k))

    async def lexical_stats(self, user_id: str, terms: Sequence[str]) -> tuple[int, float, dict[str, int]]:
        return await self._drive(self._plan_lexical_stats(user_id, terms))

    async def postings(self, user_id: str, terms: Sequence[str]) -> list[tuple[str, str, int, int]]:
        return await self._drive(self._plan_postings(user_id, terms))

    async def lexical_route(
        self, user_id: str, terms: Sequence[str], *, max_df_ratio: float, max_df: int | None
    ) -> LexicalRows:
        return await self._drive(self._plan_lexical_route(user_id, terms, max_df_ratio, max_df))

    async def token_vectors(self, memory_ids: Sequence[str]) -> dict[str, bytes]:
        return await self._drive(self._plan_token_vectors(memory_ids))

    async def related_edges(
        self, user_id: str, source_ids: Sequence[str], predicates: Sequence[str]
    ) -> list[EdgeRecord]:
        return await self._drive(self._plan_related_edges(user_id, source_ids, predicates))

    async def expand(
        self, user_id: str, frontier: Sequence[str], edge_types: Sequence[str], *, max_degree: int | None = None
    ) -> list[Neighbor]:
        return await self._drive(self._plan_expand(user_id, frontier, edge_types, max_degree))

    async def neighbourhood(
        self, user_id: str, sources: Sequence[str], edge_types: Sequence[str], *, reach: int,
        max_degree: int | None = None, labels: Sequence[str] | None = None,
    ) -> dict[str, list[Neighbor]]:
        return await self._drive(self._plan_neighbourhood(user_id, sources, edge_types, reach, max_degree, labels))

    async def neighbourhoods(self, user_id: str, asks: Sequence[NeighbourhoodAsk]) -> list[dict[str, list[Neighbor]]]:
        return await self._drive(self._plan_neighbourhoods(user_id, asks))

    async def export(self, user_id: str) -> AsyncIterator[StoredMemory | EntityRecord | EdgeRecord]:
        await self._touches.settle()
        for record in await self._drive(self._plan_export(user_id)):
            yield record

    async def stats(self, user_id: str | None = None) -> dict[str, int]:
        return _with_edge_defaults(await self._drive(self._plan_stats(user_id)))

    async def cypher(
        self, query: str, params: dict[str, Any] | None = None, *, write: bool = False,
        allow_procedures: bool = False, allow_admin: bool = False,
    ) -> tuple[list[str], list[list[Any]]]:
        """Run one Cypher query in a read (or ``write``) transaction: column names and plain rows.

        Procedures and administration commands (``SHOW``, ``LOAD CSV``, ``dbms.*``, schema) are refused
        unless allowed (see :mod:`graphstore.cypher_policy`)."""
        await self._touches.settle()
        return await self._drive(self._plan_cypher(query, params, write, allow_procedures, allow_admin))

    async def get_document(self, user_id: str, key: str) -> tuple[int, str, float] | None:
        return await self._drive(self._plan_get_document(user_id, key))

    async def put_document(
        self, user_id: str, key: str, value_json: str | None, *, expected_version: int | None, at: float
    ) -> tuple[bool, int]:
        return await self._drive(self._plan_put_document(user_id, key, value_json, expected_version, at))

    async def documents(self, user_id: str) -> list[DocumentRecord]:
        return await self._drive(self._plan_documents(user_id))

    async def restore_documents(self, documents: Sequence[DocumentRecord]) -> None:
        return await self._drive(self._plan_restore_documents(documents))

    async def memories_mentioning(
        self, user_id: str, entity_ids: Sequence[str], *, statuses: Sequence[str] = (ACTIVE,), per_entity: int = 4
    ) -> list[tuple[str, str]]:
        return await self._drive(self._plan_memories_mentioning(user_id, entity_ids, statuses, per_entity))

    async def list_edges(self, user_id: str, edge_types: Sequence[str]) -> list[EdgeRecord]:
        return await self._drive(self._plan_list_edges(user_id, edge_types))
