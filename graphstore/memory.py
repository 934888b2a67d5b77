"""The in-memory reference store: the whole :class:`~graphstore.GraphStore` protocol in plain Python.

It exists to be read.  Three dicts hold the graph (memories, entities, edges)
and every answer is computed from them when it is asked, so each method *is*
the definition of what the protocol means: an entity's degree is a count of
MENTIONS edges, a document frequency a count of active memories, a nearest
neighbour an exact cosine.  The SQLite and Neo4j stores keep counters and
indexes for speed; what they keep must equal what this module computes.  The
conformance suite (:mod:`graphstore.testing`) runs against all three, and a
differential test (``tests/graphstore/test_memory.py``) compares this store
with SQLite on random sequences of writes and reads.

Use it to read the protocol before writing a backend, in tests, and to run
ripple without a disk: ``open_store("memory://")`` or
``ripple.Memory(store="memory://")``.  Nothing outlives the process, and every
read scans: it is meant for thousands of memories, not millions.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable, Iterator, Sequence, TypeVar

from ripple.errors import StoreError

from .protocol import ACTIVE
from .records import (
    DocumentRecord,
    EDGE_CONFLICTS,
    EDGE_MENTIONS,
    EDGE_NEXT,
    EDGE_RELATED,
    EDGE_RETRACTS,
    EDGE_SUPERSEDES,
    EDGE_TYPES,
    EdgeRecord,
    EntityRecord,
    StoredMemory,
    Neighbor,
    WriteBatch,
    UserState,
)

if TYPE_CHECKING:
    import numpy as np

__all__ = ["InMemoryStore", "GraphTables"]

K = TypeVar("K")
V = TypeVar("V")

EdgeKey = tuple[str, str, str, str]
"""What identifies an edge: ``(src, type, dst, predicate)``; writing the same key again updates it."""

_MEMORY, _ENTITY = "memory", "entity"
_ENDS = {
    EDGE_MENTIONS: (_MEMORY, _ENTITY),
    EDGE_RELATED: (_ENTITY, _ENTITY),
    EDGE_NEXT: (_MEMORY, _MEMORY),
    EDGE_SUPERSEDES: (_MEMORY, _MEMORY),
    EDGE_RETRACTS: (_MEMORY, _MEMORY),
    EDGE_CONFLICTS: (_MEMORY, _MEMORY),
}
"""The kind of node at each end of each edge type (the graph schema in the README)."""


@dataclass
class GraphTables:
    """The data of an in-memory store, shared by every :class:`InMemoryStore` opened on it
    (as connections share one SQLite file), behind one lock."""

    memories: dict[str, StoredMemory] = field(default_factory=dict)
    entities: dict[str, EntityRecord] = field(default_factory=dict)
    entity_keys: dict[str, set[str]] = field(default_factory=dict)
    """Entity id -> every key and alias it was ever written with (what :meth:`InMemoryStore.get_entities` matches)."""
    edges: dict[EdgeKey, EdgeRecord] = field(default_factory=dict)
    documents: dict[tuple[str, str], tuple[int, str, float]] = field(default_factory=dict)
    """(user id, key) -> (version, JSON value, updated at): the versioned documents."""
    lock: threading.RLock = field(default_factory=threading.RLock)

    def degrees(self) -> Counter[str]:
        """Entity id -> the number of MENTIONS edges into it: the degree hub damping divides by."""
        return Counter(x.dst for x in self.edges.values() if x.type == EDGE_MENTIONS)

    def active(self, user_id: str) -> list[StoredMemory]:
        """The user's active memories: the documents of lexical search (superseded and
        invalidated memories are not searched by text)."""
        return [m for m in self.memories.values() if m.user_id == user_id and m.status == ACTIVE]


class InMemoryStore:
    """ripple's graph in Python dicts: the reference implementation of the store protocol.

    Parameters
    ----------
    tables:
        The data to open; a new, empty graph when ``None``.  Two stores opened
        on the same tables see each other's writes (how the conformance suite
        checks that data outlives :meth:`close`).

    Notes
    -----
    One lock serialises every call, so a write is atomic for readers in other
    threads, and a write that fails its checks changes nothing.  Records are
    frozen dataclasses, so what a read returns can never change under the caller.

    Examples
    --------
    >>> from graphstore.memory import InMemoryStore
    >>> from graphstore.records import StoredMemory, WriteBatch
    >>> store = InMemoryStore()
    >>> store.write(WriteBatch(memories=[StoredMemory("m1", "u1", "hi Dana", at=1.0, created_at=1.0,
    ...                                               terms=("hi", "dana"))]))
    >>> store.lexical_stats("u1", ["dana"])
    (1, 2.0, {'dana': 1})
    """

    uri = "memory://"
    in_process = True
    """Reads run in this process and hold the GIL (see :class:`graphstore.GraphStore`)."""

    def __init__(self, tables: GraphTables | None = None) -> None:
        self.tables = tables if tables is not None else GraphTables()
        self._closed = False

    def __repr__(self) -> str:
        return f"InMemoryStore({len(self.tables.memories)} memories)"

    def __enter__(self) -> "InMemoryStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[GraphTables]:
        if self._closed:
            raise StoreError("the in-memory store is closed")
        with self.tables.lock:
            yield self.tables

    def close(self) -> None:
        """Refuse further calls on this handle; the tables stay for other handles on them."""
        self._closed = True

    # -- writes -----------------------------------------------------------------------------
    def write(self, batch: WriteBatch, *, replace_mentions_of: Sequence[str] = ()) -> None:
        """Apply a batch atomically: every check runs before anything changes.

        In order: the MENTIONS edges leaving ``replace_mentions_of`` are dropped
        (a memory whose text changed is re-extracted); memories are stored whole
        (an upsert replaces every field, so the caller sends the complete
        record; of two records with one id the last wins); entities are
        inserted, or, when the id exists, only gain aliases (and an embedding if
        they had none): name, key and label stay the first ones, though the new
        key is remembered for lookups; edges are upserted by ``(src, type, dst,
        predicate)``: a RELATED edge adds the new weight to the stored one (a
        fact stated twice weighs twice), any other edge takes the new weight;
        evidence and time are kept when the new edge has none.

        Raises :class:`~ripple.errors.StoreError`, writing nothing, for an
        unknown edge type or an edge whose end is not a stored (or batched)
        node of the kind its type joins.
        """
        with self._locked() as t:
            self._check_edges(t, batch)
            drop = set(replace_mentions_of)
            for key in [k for k, x in t.edges.items() if x.type == EDGE_MENTIONS and x.src in drop]:
                del t.edges[key]
            for m in batch.memories:
                t.memories[m.id] = m
            for e in batch.entities:
                _upsert_entity(t, e)
            for x in batch.edges:
                _upsert_edge(t, x)

    @staticmethod
    def _check_edges(t: GraphTables, batch: WriteBatch) -> None:
        nodes = {
            _MEMORY: t.memories.keys() | {m.id for m in batch.memories},
            _ENTITY: t.entities.keys() | {e.id for e in batch.entities},
        }
        for x in batch.edges:
            if x.type not in _ENDS:
                raise StoreError(f"unknown edge type {x.type!r}; the store knows {', '.join(EDGE_TYPES)}")
            for node, kind in zip((x.src, x.dst), _ENDS[x.type]):
                if node not in nodes[kind]:
                    raise StoreError(f"{x.type} edge {x.src!r} -> {x.dst!r}: no {kind} {node!r}; nothing was written")

    def touch(self, memory_ids: Sequence[str], at: float) -> None:
        """One access per id listed (an id listed twice counts twice); unknown ids are ignored."""
        with self._locked() as t:
            for mid in memory_ids:
                m = t.memories.get(mid)
                if m is not None:
                    t.memories[mid] = replace(m, access_count=m.access_count + 1, last_access=at)

    def set_status(self, memory_ids: Sequence[str], status: str) -> int:
        """Set the status of the listed memories; returns how many had another status before.
        Only active memories are found by text and (by default) by vector."""
        with self._locked() as t:
            changed = [mid for mid in dict.fromkeys(memory_ids) if mid in t.memories and t.memories[mid].status != status]
            for mid in changed:
                t.memories[mid] = replace(t.memories[mid], status=status)
        return len(changed)

    def delete_memories(self, memory_ids: Sequence[str]) -> dict[str, int]:
        """Delete memories and every edge that starts or ends at one or cites one as evidence
        (a RELATED fact loses its support with it).  Entities stay, with lower degrees."""
        with self._locked() as t:
            gone = {mid for mid in memory_ids if mid in t.memories}
            cut = [k for k, x in t.edges.items() if x.src in gone or x.dst in gone or x.evidence in gone]
            for k in cut:
                del t.edges[k]
            for mid in gone:
                del t.memories[mid]
        return {"memories": len(gone), "edges": len(cut)}

    def delete_user(self, user_id: str) -> dict[str, int]:
        """Delete the user's memories, entities and edges.  ``index_entries`` counts what a lexical
        index held for them: one posting per (active memory, distinct term), one document frequency per term."""
        with self._locked() as t:
            docs = [set(m.terms) for m in t.active(user_id)]
            counts = {
                "memories": _pop_where(t.memories, lambda m: m.user_id == user_id),
                "entities": _pop_where(t.entities, lambda e: e.user_id == user_id),
                "edges": _pop_where(t.edges, lambda x: x.user_id == user_id),
                "index_entries": sum(map(len, docs)) + len(set().union(*docs)),
            }
            for doc_key in [k for k in t.documents if k[0] == user_id]:
                del t.documents[doc_key]
            for eid in t.entity_keys.keys() - t.entities.keys():
                del t.entity_keys[eid]
        return counts

    # -- versioned documents -----------------------------------------------------------------
    def get_document(self, user_id: str, key: str) -> tuple[int, str, float] | None:
        """``(version, value_json, updated_at)`` of a user's document, or None."""
        with self._locked() as t:
            return t.documents.get((user_id, key))

    def put_document(
        self, user_id: str, key: str, value_json: str | None, *, expected_version: int | None, at: float
    ) -> tuple[bool, int]:
        """Compare-and-set under the lock: write (version + 1) or delete (``value_json=None``, version
        then 0) only when ``expected_version`` is None or equals the stored version (0 = absent)."""
        with self._locked() as t:
            stored = t.documents.get((user_id, key))
            current = 0 if stored is None else stored[0]
            if expected_version is not None and expected_version != current:
                return False, current
            if value_json is None:
                t.documents.pop((user_id, key), None)
                return True, 0
            t.documents[(user_id, key)] = (current + 1, value_json, at)
            return True, current + 1

    def documents(self, user_id: str) -> list[DocumentRecord]:
        """The user's documents, by key."""
        with self._locked() as t:
            return [DocumentRecord(u, k, *t.documents[(u, k)]) for (u, k) in sorted(t.documents) if u == user_id]

    def restore_documents(self, documents: Sequence[DocumentRecord]) -> None:
        """Store the documents as given, versions included (the other half of :meth:`documents`)."""
        with self._locked() as t:
            for d in documents:
                t.documents[(d.user_id, d.key)] = (d.version, d.value_json, d.updated_at)

    # -- reads by id / key -------------------------------------------------------------------
    def get_memories(self, memory_ids: Sequence[str], *, with_vectors: bool = False) -> list[StoredMemory]:
        """The stored memories among ``memory_ids``, in the order asked; vectors only on request."""
        with self._locked() as t:
            found = [t.memories[mid] for mid in memory_ids if mid in t.memories]
        return found if with_vectors else [_without_vectors(m) for m in found]

    def list_memories(
        self,
        user_id: str,
        *,
        session_id: str | None = None,
        statuses: Sequence[str] | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[StoredMemory]:
        """A user's memories (optionally of one session, of some statuses) ordered by
        ``(at, created_at, id)``, then paged; without vectors."""
        with self._locked() as t:
            mems = [m for m in t.memories.values() if m.user_id == user_id
                    and (session_id is None or m.session_id == session_id)
                    and (statuses is None or m.status in statuses)]
        mems.sort(key=_time_order)
        page = mems[offset:] if limit is None else mems[offset : offset + limit]
        return [_without_vectors(m) for m in page]

    def has_memories(self, user_id: str) -> bool:
        """Whether the user has any memory, whatever its status."""
        with self._locked() as t:
            return any(m.user_id == user_id for m in t.memories.values())

    def last_memory_in_session(self, user_id: str, session_id: str) -> str | None:
        """The session's latest memory by ``(at, created_at, id)``, whatever its status."""
        with self._locked() as t:
            mems = [m for m in t.memories.values() if m.user_id == user_id and m.session_id == session_id]
        return max(mems, key=_time_order).id if mems else None

    def session_tails(self, user_id: str, session_ids: Sequence[str]) -> dict[str, str]:
        """:meth:`last_memory_in_session` of each session that has memories."""
        wanted = set(session_ids)
        with self._locked() as t:
            mems = [m for m in t.memories.values() if m.user_id == user_id and m.session_id in wanted]
        out: dict[str, StoredMemory] = {}
        for m in mems:
            sid = str(m.session_id)
            if sid not in out or _time_order(m) > _time_order(out[sid]):
                out[sid] = m
        return {sid: m.id for sid, m in out.items()}

    def get_entities(self, user_id: str, keys: Sequence[str]) -> list[EntityRecord]:
        """The user's entities written with one of ``keys`` as key or alias, ordered by id, without vectors."""
        wanted = set(keys)
        with self._locked() as t:
            found = [e for e in t.entities.values() if e.user_id == user_id and t.entity_keys[e.id] & wanted]
        return sorted((replace(e, embedding=None) for e in found), key=lambda e: e.id)

    def entity_names(self, entity_ids: Sequence[str]) -> dict[str, str]:
        """Display name of each stored entity among ``entity_ids``."""
        with self._locked() as t:
            return {eid: t.entities[eid].name for eid in entity_ids if eid in t.entities}

    def users(self) -> list[str]:
        """Every user id that owns a memory or an entity, sorted."""
        with self._locked() as t:
            return sorted({m.user_id for m in t.memories.values()} | {e.user_id for e in t.entities.values()})

    # -- search -------------------------------------------------------------------------------
    def nearest_memories(
        self, user_id: str, vector: "np.ndarray", k: int, *, statuses: Sequence[str] = (ACTIVE,)
    ) -> list[tuple[str, float]]:
        """The ``k`` memories of the user with one of ``statuses`` whose embedding is closest to
        ``vector``, as ``(id, cosine)`` best first.  Embeddings are unit vectors, so the cosine
        is their inner product; memories without an embedding are never found."""
        with self._locked() as t:
            rows = [(m.id, m.embedding) for m in t.memories.values()
                    if m.user_id == user_id and m.status in statuses and m.embedding is not None]
        return _exact_top_k(rows, vector, k)

    def nearest_memories_batch(
        self, user_id: str, vectors: "np.ndarray", k: int, *, statuses: Sequence[str] = (ACTIVE,)
    ) -> list[list[tuple[str, float]]]:
        """:meth:`nearest_memories` for each vector (the optional batch capability)."""
        return [self.nearest_memories(user_id, v, k, statuses=statuses) for v in vectors]

    def nearest_multilingual(
        self, user_id: str, vector: "np.ndarray", k: int, *, statuses: Sequence[str] = (ACTIVE,)
    ) -> list[tuple[str, float]]:
        """:meth:`nearest_memories` over the memories' multilingual vectors (a space of its own)."""
        with self._locked() as t:
            rows = [(m.id, m.multilingual) for m in t.memories.values()
                    if m.user_id == user_id and m.status in statuses and m.multilingual is not None]
        return _exact_top_k(rows, vector, k)

    def has_multilingual(self, user_id: str) -> bool:
        """Whether a memory of the user has a multilingual vector."""
        with self._locked() as t:
            return any(m.user_id == user_id and m.multilingual is not None for m in t.memories.values())

    def get_user_state(self, user_id: str) -> UserState:
        """:meth:`has_memories` and :meth:`has_multilingual` at once."""
        return UserState(self.has_memories(user_id), self.has_multilingual(user_id))

    def nearest_entities(self, user_id: str, vector: "np.ndarray", k: int) -> list[tuple[str, float]]:
        """The ``k`` entities of the user whose name embedding is closest to ``vector``, best first."""
        with self._locked() as t:
            rows = [(e.id, e.embedding) for e in t.entities.values() if e.user_id == user_id and e.embedding is not None]
        return _exact_top_k(rows, vector, k)

    def nearest_entities_batch(self, user_id: str, vectors: "np.ndarray", k: int) -> list[list[tuple[str, float]]]:
        """:meth:`nearest_entities` for each vector (the optional batch capability)."""
        return [self.nearest_entities(user_id, v, k) for v in vectors]

    def lexical_stats(self, user_id: str, terms: Sequence[str]) -> tuple[int, float, dict[str, int]]:
        """BM25's corpus statistics over the user's *active* memories: how many there are (a
        memory without terms counts, with length 0), their mean length in terms (a repeated
        term counts each time), and for each of ``terms`` that occurs, how many contain it."""
        with self._locked() as t:
            docs = t.active(user_id)
        wanted = set(terms)
        df = Counter(term for m in docs for term in set(m.terms) & wanted)
        n_docs = len(docs)
        return n_docs, (sum(len(m.terms) for m in docs) / n_docs if n_docs else 0.0), dict(df)

    def postings(self, user_id: str, terms: Sequence[str]) -> list[tuple[str, str, int, int]]:
        """``(term, memory id, term frequency, memory length)`` for each of ``terms`` in each
        active memory of the user that contains it, in no promised order."""
        with self._locked() as t:
            docs = t.active(user_id)
        return [(term, m.id, m.terms.count(term), len(m.terms))
                for term in dict.fromkeys(terms) for m in docs if term in m.terms]

    def token_vectors(self, memory_ids: Sequence[str]) -> dict[str, bytes]:
        """The packed content-token vectors of the listed memories that have them."""
        with self._locked() as t:
            return {mid: blob for mid in memory_ids
                    if mid in t.memories and (blob := t.memories[mid].token_vectors) is not None}

    # -- graph --------------------------------------------------------------------------------
    def related_edges(self, user_id: str, source_ids: Sequence[str], predicates: Sequence[str]) -> list[EdgeRecord]:
        """The user's RELATED edges leaving ``source_ids`` with one of ``predicates``, ordered by
        ``(src, predicate, dst)``: the stored values of facts, with the memory that stated each."""
        sources, preds = set(source_ids), set(predicates)
        with self._locked() as t:
            found = [x for x in t.edges.values() if x.type == EDGE_RELATED and x.user_id == user_id
                     and x.src in sources and x.predicate in preds]
        return sorted(found, key=lambda x: (x.src, x.predicate, x.dst))

    def expand(
        self,
        user_id: str,
        frontier: Sequence[str],
        edge_types: Sequence[str],
        *,
        max_degree: int | None = None,
    ) -> list[Neighbor]:
        """Every step from a frontier node along one of the user's edges of ``edge_types``,
        forwards and backwards (a NEXT edge leads to the next turn and to the previous one).

        Each step carries the target's degree (MENTIONS edges into it when it is an entity,
        else 1) and label (an entity's, else "").  With ``max_degree``, hubs are cut both
        ways: a frontier entity whose degree is above it is not left, and a step is not taken
        into a target whose degree is above it (so at ``max_degree=0`` no memory is entered
        either).  An edge between two frontier nodes is a step from each.  In no promised order.
        """
        nodes, types = set(frontier), set(edge_types)
        with self._locked() as t:
            degrees = t.degrees()

            def degree(node: str) -> int:
                return degrees[node] if node in t.entities else 1

            def within_cap(node: str) -> bool:
                return max_degree is None or degree(node) <= max_degree

            def step(source: str, target: str, x: EdgeRecord) -> Neighbor:
                entity = t.entities.get(target)
                return Neighbor(source, target, x.type, x.weight, degree(target), x.predicate,
                                entity.label if entity else "")

            left = {n for n in nodes if n not in t.entities or within_cap(n)}
            out: list[Neighbor] = []
            for x in t.edges.values():
                if x.user_id != user_id or x.type not in types:
                    continue
                if x.src in left and within_cap(x.dst):
                    out.append(step(x.src, x.dst, x))
                if x.dst in left and within_cap(x.src):
                    out.append(step(x.dst, x.src, x))
        return out

    # -- lifecycle questions ----------------------------------------------------------------------
    def memories_mentioning(
        self, user_id: str, entity_ids: Sequence[str], *, statuses: Sequence[str] = (ACTIVE,), per_entity: int = 4
    ) -> list[tuple[str, str]]:
        """``(entity id, memory id)`` of the latest ``per_entity`` memories of ``statuses`` that
        mention each entity, by entity id, newest first (``(at, created_at, id)`` descending)."""
        wanted, states = set(entity_ids), set(statuses)
        if per_entity <= 0 or not wanted or not states:
            return []
        by_entity: dict[str, list[StoredMemory]] = {}
        with self._locked() as t:
            for x in t.edges.values():
                m = t.memories.get(x.src)
                if (x.type == EDGE_MENTIONS and x.user_id == user_id and x.dst in wanted and m is not None
                        and m.status in states):
                    by_entity.setdefault(x.dst, []).append(m)
        return [(eid, m.id) for eid in sorted(by_entity)
                for m in sorted(by_entity[eid], key=_time_order, reverse=True)[:per_entity]]

    def list_edges(self, user_id: str, edge_types: Sequence[str]) -> list[EdgeRecord]:
        """The user's edges of ``edge_types``, ordered by ``(type, src, dst, predicate)``."""
        types = set(edge_types)
        with self._locked() as t:
            found = [x for x in t.edges.values() if x.user_id == user_id and x.type in types]
        return sorted(found, key=lambda x: (x.type, x.src, x.dst, x.predicate))

    # -- housekeeping ---------------------------------------------------------------------------
    def export(self, user_id: str) -> Iterator[StoredMemory | EntityRecord | EdgeRecord]:
        """The user's whole graph, vectors included, in an order every store shares: memories by
        ``(at, created_at, id)``, then entities by id, then edges by ``(type, src, dst, predicate)``
        (nodes before the edges that need them, so the records can be written back in order)."""
        with self._locked() as t:
            mems = sorted((m for m in t.memories.values() if m.user_id == user_id), key=_time_order)
            ents = sorted((e for e in t.entities.values() if e.user_id == user_id), key=lambda e: e.id)
            edges = sorted((x for x in t.edges.values() if x.user_id == user_id),
                           key=lambda x: (x.type, x.src, x.dst, x.predicate))
        yield from mems
        yield from ents
        yield from edges

    def stats(self, user_id: str | None = None) -> dict[str, int]:
        """Counts for one user or the whole store: ``memories``, ``entities``, ``users``,
        ``edges_<type>`` for every edge type (0 included) and ``memories_<status>`` for
        each status present."""
        with self._locked() as t:
            mems = [m for m in t.memories.values() if user_id is None or m.user_id == user_id]
            n_entities = sum(1 for e in t.entities.values() if user_id is None or e.user_id == user_id)
            edge_types = Counter(x.type for x in t.edges.values() if user_id is None or x.user_id == user_id)
        n_users = len(self.users()) if user_id is None else int(bool(mems or n_entities))
        out = {"memories": len(mems), "entities": n_entities, "users": n_users}
        out.update({f"edges_{typ.lower()}": edge_types[typ] for typ in EDGE_TYPES})
        out.update({f"memories_{status}": n for status, n in Counter(m.status for m in mems).items()})
        return out


# -- helpers ------------------------------------------------------------------------------------------
def _upsert_entity(t: GraphTables, e: EntityRecord) -> None:
    """Insert a new entity; a known one only gains aliases, lookup keys and a missing embedding."""
    old = t.entities.get(e.id)
    if old is None:
        t.entities[e.id] = replace(e, aliases=tuple(dict.fromkeys(e.aliases)))
        t.entity_keys[e.id] = {e.key, *e.aliases}
        return
    t.entities[e.id] = replace(old, aliases=tuple(dict.fromkeys(old.aliases + e.aliases)),
                               embedding=old.embedding if e.embedding is None else e.embedding)
    t.entity_keys[e.id] |= {e.key, *e.aliases}


def _upsert_edge(t: GraphTables, x: EdgeRecord) -> None:
    """Insert an edge, or update the stored one with the same ``(src, type, dst, predicate)``:
    RELATED weights add up, other weights are replaced; the owner stays the first writer."""
    key = (x.src, x.type, x.dst, x.predicate)
    old = t.edges.get(key)
    if old is None:
        t.edges[key] = x
        return
    t.edges[key] = replace(
        old,
        weight=old.weight + x.weight if x.type == EDGE_RELATED else x.weight,
        evidence=old.evidence if x.evidence is None else x.evidence,
        at=old.at if x.at is None else x.at,
    )


def _pop_where(table: dict[K, V], doomed: Callable[[V], bool]) -> int:
    """Remove the rows of a table for which ``doomed(row)`` is true; returns how many."""
    keys = [k for k, row in table.items() if doomed(row)]
    for k in keys:
        del table[k]
    return len(keys)


def _time_order(m: StoredMemory) -> tuple[float, float, str]:
    return (m.at, m.created_at, m.id)


def _without_vectors(m: StoredMemory) -> StoredMemory:
    return replace(m, embedding=None, token_vectors=None, multilingual=None)


def _exact_top_k(rows: list[tuple[str, bytes]], vector: "np.ndarray", k: int) -> list[tuple[str, float]]:
    """The ``k`` rows of highest inner product with ``vector``, best first (ties in insertion order)."""
    import numpy as np

    query = np.asarray(vector, dtype=np.float32).reshape(-1)
    if k <= 0 or not rows:
        return []
    matrix = [np.frombuffer(blob, dtype=np.float32) for _, blob in rows]
    if any(v.shape != query.shape for v in matrix):
        dims = sorted({v.shape[0] for v in matrix})
        raise StoreError(f"query vector has {query.shape[0]} dimensions, the stored vectors have {dims}"
                         " (was the store written with another embedder?)")
    scores = np.vstack(matrix) @ query
    best = np.argsort(-scores, kind="stable")[:k]
    return [(rows[i][0], float(scores[i])) for i in best]
