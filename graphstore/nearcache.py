"""A server store's near cache: the vectors of a client's hot users, in its own process.

Why: on Neo4j a recall's first stage was the server's HNSW vector index query
(~50 ms at 10k memories on this machine, against ~5 ms for the embedded store's
exact scan of the same vectors in memory), and the MaxSim stage received ~690 KiB
of token vectors per recall.  Keeping a user's sentence vectors (and, filled as
recalls ask for them, its memories' token vectors) in the client turns both into
local work, exact as the embedded store's (:class:`~graphstore.vectors.VectorIndex`),
so a Neo4j recall ranks what the embedded store ranks.

Coherence: the server keeps a revision per user, ``(epoch, rev)``, that every
write touching the user's memories or entities changes in the same transaction
(:mod:`graphstore.neo4j`).  An entry is labelled with the revision read *before*
its rows, and a search reads the user's revision first and uses the entry only
when the two are equal: whatever another process committed before that read is
seen.  This process's own writes update a loaded entry in place when the revision
they return is exactly the entry's plus one (no other write came between);
otherwise the entry is dropped.  The epoch is random per revision node, so a user
deleted and written again never matches an entry of before.

Loads: a user is loaded on a search that finds it at the revision its previous search found (or that
this process's own writes moved it to): a user that another process writes to between every two
searches stays on the server's searches, where reloading it each time would cost far more.

Bounds: entries and token vectors share one budget of bytes (``budget_bytes``; 0
disables the cache).  Token vectors go first (least recently used first); a user's
sentence vectors are admitted only when they fit and only if every user they would
evict has been searched less often than it lately (the admission rule of TinyLFU,
Einziger et al. 2017): with many users that are each asked once (issue 18), no
user is loaded only to be evicted by the next, and a big hot user is not evicted
by a stream of cold ones.  A user that is not admitted is searched on the server,
as without a cache.

This module does no I/O; :mod:`graphstore.neo4j` reads what it needs and hands
it the rows.  Methods take a lock: a sync store is called from two threads at
once (a recall's dense search runs beside its other reads).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Literal, Sequence, TypeVar

from .vectors import HALF_PRECISION_MIN_ROWS, VectorIndex

if TYPE_CHECKING:
    import numpy as np

    from .neargraph import NearGraph

__all__ = ["NearCache", "Revision", "Part", "DEFAULT_BUDGET_MB", "NEAR_LOAD_BESIDE_ROWS"]

DEFAULT_BUDGET_MB = 512
"""Default budget: a 100k-memory user of 384-d vectors (~230 MB with the float16 copy a scan of that size
keeps) with room for its recalls' token vectors, or ~30 users of 10k memories with theirs."""

NEAR_LOAD_BESIDE_ROWS = 5_000
"""Users with at least this many vectors of a kind are loaded beside the searches, not in one of them.

Why: a load reads every vector of the user (~100-150 us a row as Bolt floats here: 5k rows ~0.5-0.75 s,
97k rows 5-15 s), and the search that triggered it used to wait for all of it, so the first recall of a
big user after a process started was seconds slower than the rest (issue 19's warm-up).  Beside, that
search and those until the load is in go to the server's vector index (tens of ms), and the load does
not block anyone.  A small user's load costs less than the pause it would save, and is done inline."""

Revision = tuple[str, int]
"""A user's ``(epoch, rev)`` on the server."""

Part = Literal["Memory", "Entity"]

_ROW_OVERHEAD = 160  # bytes of Python objects per cached row beside its vector (id string, dict and list slots)
_AGE_EVERY = 4096
_SIZES_KEPT = 65_536  # users whose size is remembered (so that a user who is not admitted is counted once)  # searches between two halvings of the use counts (so that old popularity fades)


_K = TypeVar("_K")
_V = TypeVar("_V")


def _remember(table: "OrderedDict[_K, _V]", key: _K, value: _V) -> _V | None:
    """Set ``table[key]`` as its newest entry, keeping the newest :data:`_SIZES_KEPT`; the value it had."""
    before = table.get(key)
    table[key] = value
    table.move_to_end(key)
    while len(table) > _SIZES_KEPT:
        table.popitem(last=False)
    return before


@dataclass(slots=True)
class _Entry:
    key: Revision
    parts: dict[str, VectorIndex | None] = field(default_factory=dict)  # label -> index (None: no vectors)
    tokens: set[str] = field(default_factory=set)  # ids of this user's cached token vectors
    graph: "NearGraph | None" = None  # the user's walk edges (graphstore.neargraph), at the same revision

    def nbytes(self) -> int:
        """What the entry's vectors and graph hold (its token vectors are counted apart)."""
        return sum(index_bytes(p) for p in self.parts.values()) + (0 if self.graph is None else self.graph.nbytes)


def index_bytes(index: VectorIndex | None) -> int:
    """What an index holds in memory (its arrays, with spare capacity, and its rows' Python objects)."""
    return 0 if index is None else index.nbytes + _ROW_OVERHEAD * len(index)


def estimate_bytes(rows: int, dim: int) -> int:
    """What an index of ``rows`` vectors of ``dim`` floats will hold once searched."""
    per_row = dim * 4 + (dim * 2 if rows >= HALF_PRECISION_MIN_ROWS else 0) + 2 + _ROW_OVERHEAD
    return rows * per_row


class NearCache:
    """Per user: the revision, the memory and entity vector indexes, and token vectors by memory id."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget = max(0, int(budget_bytes))
        self._lock = threading.RLock()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()  # least recently used first
        self._tokens: OrderedDict[str, tuple[str, bytes]] = OrderedDict()  # memory id -> (user, blob), LRU first
        self._index_bytes = 0
        self._token_bytes = 0
        self._uses: dict[str, int] = {}
        self._sizes: OrderedDict[tuple[str, str], int] = OrderedDict()  # (user, label) -> estimated bytes
        self._seen: OrderedDict[str, Revision] = OrderedDict()  # user -> revision at its last search
        self._walked: OrderedDict[str, Revision] = OrderedDict()  # user -> revision at its last walk
        self._since_aging = 0
        self.loads = 0  # vector sets loaded (for tests and profiles)
        self.graph_loads = 0  # graphs loaded

    @property
    def enabled(self) -> bool:
        return self.budget > 0

    @property
    def nbytes(self) -> int:
        with self._lock:
            return self._index_bytes + self._token_bytes

    def users(self) -> list[str]:
        """Users with an entry, least recently used first."""
        with self._lock:
            return list(self._entries)

    # -- use counts and admission --------------------------------------------------------------
    def used(self, user: str) -> None:
        """Count a search of ``user`` (the popularity admission compares)."""
        with self._lock:
            self._uses[user] = self._uses.get(user, 0) + 1
            self._since_aging += 1
            if self._since_aging >= max(_AGE_EVERY, 4 * len(self._entries)):
                self._since_aging = 0
                self._uses = {u: n // 2 for u, n in self._uses.items() if n > 1}

    def size(self, user: str, label: Part) -> int | None:
        """The bytes ``user``'s ``label`` vectors were estimated or found to take, if known."""
        with self._lock:
            return self._sizes.get((user, label))

    def note_size(self, user: str, label: Part, nbytes: int) -> None:
        with self._lock:
            _remember(self._sizes, (user, label), nbytes)

    def steady(self, user: str, key: Revision) -> bool:
        """Whether ``user`` is at the revision its last search saw (or its entry is); remembers ``key``.

        A user is loaded only then: one whose revision changes between every two searches (another
        process writing to it all the time) would otherwise be loaded again on every search, each
        load costing as much as many searches on the server."""
        with self._lock:
            entry = self._entries.get(user)
            return _remember(self._seen, user, key) == key or (entry is not None and entry.key == key)

    def walk_steady(self, user: str, key: Revision) -> bool:
        """Whether ``user``'s last walk found it at revision ``key`` too; remembers ``key``.

        A graph is loaded only then: a write of this process drops it (it is not updated in place), so
        an agent that writes between every two recalls would otherwise start a reload (seconds for a big
        user) at every recall, each one useless by the next write."""
        with self._lock:
            return _remember(self._walked, user, key) == key

    def admit(self, user: str, nbytes: int) -> bool:
        """Make room for ``nbytes`` of ``user``'s vectors, or say no (see the module docstring).

        Token vectors are dropped first; users are evicted least recently used first, and only when each
        of them has been searched less often than ``user``."""
        with self._lock:
            if nbytes > self.budget:
                return False
            free = self.budget - self._index_bytes
            if nbytes <= free:
                self._trim_tokens(self.budget - nbytes - self._index_bytes)
                return True
            mine = self._uses.get(user, 0)
            victims: list[str] = []
            for other, entry in self._entries.items():
                if free >= nbytes:
                    break
                if other == user:
                    continue
                if self._uses.get(other, 0) >= mine:
                    return False
                victims.append(other)
                free += entry.nbytes()
            if free < nbytes:
                return False
            for other in victims:
                self._drop(other)
            self._trim_tokens(self.budget - nbytes - self._index_bytes)
            return True

    # -- entries -----------------------------------------------------------------------------------
    def part(self, user: str, key: Revision | None, label: Part) -> tuple[bool, VectorIndex | None]:
        """``(True, index)`` when ``user``'s entry is at revision ``key`` and holds ``label``'s index
        (``None``: the user has no such vectors); ``(False, None)`` otherwise.  An entry at another
        revision is dropped."""
        with self._lock:
            entry = self._entries.get(user)
            if entry is None:
                return False, None
            if key is None or entry.key != key:
                self._drop(user)
                return False, None
            self._entries.move_to_end(user)
            if label not in entry.parts:
                return False, None
            return True, entry.parts[label]

    def has_entry(self, user: str, key: Revision) -> bool:
        with self._lock:
            entry = self._entries.get(user)
            return entry is not None and entry.key == key

    def put_part(self, user: str, key: Revision, label: Part, index: VectorIndex | None) -> None:
        """Keep ``label``'s index of ``user``, read after revision ``key`` was (see the module docstring).

        A new entry replaces one at another revision; a part for an entry that moved on is not kept."""
        with self._lock:
            entry = self._entries.get(user)
            if entry is not None and entry.key != key:
                if label != "Memory":
                    return
                self._drop(user)
                entry = None
            if entry is None:
                entry = self._entries[user] = _Entry(key)
            self.loads += 1
            self._index_bytes -= index_bytes(entry.parts.get(label))
            entry.parts[label] = index
            self._index_bytes += index_bytes(index)
            self._sizes[(user, label)] = index_bytes(index)
            self._entries.move_to_end(user)
            self._trim_tokens(self.budget - self._index_bytes)

    def graph(self, user: str, key: Revision) -> "NearGraph | None":
        """``user``'s graph when its entry is at revision ``key`` and holds one."""
        with self._lock:
            entry = self._entries.get(user)
            if entry is None or entry.key != key:
                return None
            self._entries.move_to_end(user)
            return entry.graph

    def put_graph(self, user: str, key: Revision, graph: "NearGraph") -> bool:
        """Keep ``user``'s graph, read after revision ``key`` was, beside the vectors of an entry still at
        ``key`` (a graph is loaded only for a user whose vectors are: see :mod:`graphstore.neargraph`)."""
        with self._lock:
            entry = self._entries.get(user)
            if entry is None or entry.key != key:
                return False
            self._drop_graph(entry)
            entry.graph = graph
            self._index_bytes += graph.nbytes
            self.graph_loads += 1
            self._trim_tokens(self.budget - self._index_bytes)
            return True

    def _drop_graph(self, entry: _Entry) -> None:
        if entry.graph is not None:
            self._index_bytes -= entry.graph.nbytes
            entry.graph = None

    def search(
        self, index: VectorIndex, vectors: Sequence[object], k: int, statuses: set[str] | None
    ) -> list[list[tuple[str, float]]]:
        """:meth:`VectorIndex.search` under the lock (a write of this process may update the index meanwhile);
        ties between equal scores are broken as the embedded store breaks them (by row order)."""
        with self._lock:
            return index.search(list(vectors), k, statuses=statuses)

    def drop(self, user: str) -> None:
        with self._lock:
            self._drop(user)

    def clear(self) -> None:
        with self._lock:
            for user in list(self._entries):
                self._drop(user)

    def _drop(self, user: str) -> None:
        entry = self._entries.pop(user, None)
        if entry is None:
            return
        self._index_bytes -= entry.nbytes()
        for mid in entry.tokens:
            _, blob = self._tokens.pop(mid)
            self._token_bytes -= len(blob) + _ROW_OVERHEAD

    # -- this process's own writes --------------------------------------------------------------------
    def advance(self, user: str, key: Revision) -> _Entry | None:
        """The entry of ``user`` moved to ``key`` when it was exactly one revision behind (the caller then
        applies the write's changes to it, under :attr:`lock`); otherwise the entry is dropped."""
        before = (key[0], key[1] - 1)
        if self._seen.get(user) == before:  # (this process's write: the user is as steady as it was)
            self._seen[user] = key
        entry = self._entries.get(user)
        if entry is None:
            return None
        if entry.key != before:
            self._drop(user)
            return None
        entry.key = key
        self._drop_graph(entry)  # (not updated in place: read again once the user is steady)
        return entry

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    def wrote_memories(self, user: str, key: Revision, rows: Sequence[tuple[str, bytes | None, str]]) -> None:
        """This process wrote ``(id, vector, status)`` memories of ``user`` in the write that made ``key``."""
        with self._lock:
            entry = self.advance(user, key)
            if entry is None:
                return
            self._forget_tokens(entry, [mid for mid, _, _ in rows])
            index = entry.parts.get("Memory")
            if "Memory" not in entry.parts:
                return
            if index is not None and any(vec is None and mid in index.index for mid, vec, _ in rows):
                self._drop(user)  # a memory rewritten without its vector: load again on the next search
                return
            with_vectors = [(mid, vec, status) for mid, vec, status in rows if vec is not None]
            if not with_vectors:
                return
            self._index_bytes -= index_bytes(index)
            if index is None:
                index = VectorIndex.from_rows([(m, v, s) for m, v, s in with_vectors if v is not None])
                entry.parts["Memory"] = index
            else:
                index.upsert((m, v, s) for m, v, s in with_vectors if v is not None)
            self._index_bytes += index_bytes(index)
            self._trim_tokens(self.budget - self._index_bytes)

    def wrote_entities(self, user: str, rows: Sequence[tuple[str, bytes]], status: str) -> None:
        """Entity vectors of ``user`` written with the memories of the same write (after :meth:`wrote_memories`
        moved the entry to its revision)."""
        with self._lock:
            entry = self._entries.get(user)
            if entry is None or "Entity" not in entry.parts or not rows:
                return
            index = entry.parts["Entity"]
            self._index_bytes -= index_bytes(index)
            if index is None:
                index = VectorIndex.from_rows([(e, v, status) for e, v in rows])
                entry.parts["Entity"] = index
            else:
                index.upsert((e, v, status) for e, v in rows)
            self._index_bytes += index_bytes(index)

    def changed_status(self, user: str, key: Revision, ids: Iterable[str], status: str) -> None:
        """This process set the status of ``ids`` of ``user`` in the write that made ``key``."""
        with self._lock:
            entry = self.advance(user, key)
            index = None if entry is None else entry.parts.get("Memory")
            if index is not None:
                for mid in ids:
                    index.set_status(mid, status)

    # -- token vectors -------------------------------------------------------------------------------
    def owner(self, ids: Sequence[str]) -> str | None:
        """The user whose cached memory vectors hold the most of ``ids`` (a recall asks about one user)."""
        with self._lock:
            best, most = None, 0
            for user, entry in self._entries.items():
                index = entry.parts.get("Memory")
                if index is None:
                    continue
                n = sum(1 for i in ids if i in index.index)
                if n > most:
                    best, most = user, n
            return best

    def entry_key(self, user: str) -> Revision | None:
        with self._lock:
            entry = self._entries.get(user)
            return None if entry is None else entry.key

    def tokens(self, user: str, ids: Sequence[str]) -> dict[str, bytes]:
        """The cached token vectors of ``ids`` (of ``user``'s entry)."""
        with self._lock:
            out: dict[str, bytes] = {}
            for mid in ids:
                got = self._tokens.get(mid)
                if got is not None and got[0] == user:
                    self._tokens.move_to_end(mid)
                    out[mid] = got[1]
            return out

    def put_tokens(self, user: str, key: Revision, blobs: dict[str, bytes]) -> None:
        """Keep token vectors of ``user``'s memories read after revision ``key`` was (only while the entry
        is at ``key``, and only of memories the entry holds)."""
        with self._lock:
            entry = self._entries.get(user)
            index = None if entry is None else entry.parts.get("Memory")
            if entry is None or entry.key != key or index is None:
                return
            for mid, blob in blobs.items():
                if mid in index.index and mid not in self._tokens:
                    self._tokens[mid] = (user, blob)
                    entry.tokens.add(mid)
                    self._token_bytes += len(blob) + _ROW_OVERHEAD
            self._trim_tokens(self.budget - self._index_bytes)

    def _forget_tokens(self, entry: _Entry, ids: Iterable[str]) -> None:
        for mid in ids:
            if mid in entry.tokens:
                entry.tokens.discard(mid)
                _, blob = self._tokens.pop(mid)
                self._token_bytes -= len(blob) + _ROW_OVERHEAD

    def _trim_tokens(self, room: int) -> None:
        """Drop the least recently used token vectors until they take at most ``room`` bytes."""
        while self._tokens and self._token_bytes > max(0, room):
            mid, (user, blob) = self._tokens.popitem(last=False)
            self._token_bytes -= len(blob) + _ROW_OVERHEAD
            entry = self._entries.get(user)
            if entry is not None:
                entry.tokens.discard(mid)


def nearest_from(
    cache: NearCache, index: VectorIndex | None, vectors: "np.ndarray | Sequence[object]", k: int,
    statuses: Sequence[str] | None,
) -> list[list[tuple[str, float]]]:
    """A cached part's answer to a batch of searches (no vectors: nothing found)."""
    if index is None or k <= 0:
        return [[] for _ in range(len(vectors))]
    return cache.search(index, list(vectors), k, None if statuses is None else set(statuses))
