"""A store that spreads users over several stores (shards): scale-out past one Neo4j server.

Users are independent graphs (every protocol method is scoped by a user id or by ids of one
user's nodes), so a deployment that outgrows one server can give each user to one of N
servers.  :class:`ShardedStore` (and its async twin :class:`AsyncShardedStore`) implements the
store protocol over N stores of any backend; ``open_store`` opens it from a URI::

    neo4j+shards://db1:7687,db2:7687        each shard neo4j://dbN:7687 (likewise bolt+shards://,
                                            bolt+s+shards://, neo4j+s+shards://, ...)
    shards:/data/a;/data/b                  any store URIs, separated by ';' (tests use SQLite)

A shard's *name* is its ``host:port`` (or its whole URI in the ``shards:`` form): the hash is
computed over names, so keep a shard's name when its server is replaced.

Routing (:mod:`graphstore._routing`): a user's shard is the rendezvous hash of its id over the
ring, unless the routing table says otherwise (a moved user).  The table is a document of the
reserved user :data:`~graphstore._routing.DIRECTORY_USER` on the first shard (the *directory*),
written with compare-and-set and copied to every other shard after each change; each process
reads it again when its copy is older than ``refresh`` seconds (1 s by default: one small read
a second per process).  When the directory shard is down, processes keep the newest table they
can find (their own, or another shard's copy): users of the other shards go on working.

Calls by id (``get_memories``, ``token_vectors``, ``entity_names``, ``touch``, ``set_status``,
``delete_memories``) carry no user id.  An id never changes user, so the store remembers the
user of every id it has seen (in a write, or in the answer of a user-scoped call: recall finds
ids by vector, term or expansion before it fetches them), and sends those calls straight to
the user's shard: a recall never asks more than one shard.  An id it has not seen (``get(id)``
in a fresh process) is asked of every shard at once, and its user remembered.  Measured on two
local Neo4j servers, see RELIABILITY.md.

A write that spans users of several shards (``add_many`` of several users) is atomic per shard,
not across shards.  A down shard fails the calls of its users (and the calls that need every
shard: ``users()``, ``stats()`` of the whole store) with :class:`~ripple.errors.StoreUnavailable`;
the other users are served.

Moving a user (:meth:`ShardedStore.move_user`, ``ripple shards move``) and changing the ring
(``ripple shards add/remove/rebalance``) are plans of :mod:`graphstore._shardmove`.

Sync and async: every operation is an I/O-free plan (a generator yielding calls to shards,
fan-outs and pauses); :class:`ShardedStore` and :class:`AsyncShardedStore` only run plans, and
the calls are :mod:`graphstore.requests` objects, answered with ``call`` or ``acall``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar

from ripple.errors import ConfigError, StoreUnavailable

from . import _shardmove as moves
from ._routing import DIRECTORY_KEY, DIRECTORY_USER, Routing
from ._shardplan import Call, Fan, Plan, Sleep, done, first_error
from .protocol import ACTIVE, AsyncGraphStore, GraphStore
from .records import (
    DocumentRecord,
    EdgeRecord,
    EntityRecord,
    StoredMemory,
    MoveReport,
    Neighbor,
    ShardMove,
    ShardsReport,
    WriteBatch,
    UserState,
)
from .requests import (
    DeleteMemories,
    DeleteUser,
    Documents,
    EntityNames,
    Expand,
    GetDocument,
    GetEntities,
    GetMemories,
    HasMemories,
    LastMemoryInSession,
    SessionTails,
    LexicalStats,
    ListEdges,
    ListMemories,
    MemoriesMentioning,
    NearestEntities,
    NearestEntitiesBatch,
    HasMultilingual,
    GetUserState,
    NearestMemories,
    NearestMemoriesBatch,
    NearestMultilingual,
    Postings,
    PutDocument,
    RelatedEdges,
    RestoreDocuments,
    SetStatus,
    Stats,
    StoreRequest,
    TokenVectors,
    Touch,
    Users,
    Write,
)

if TYPE_CHECKING:
    import numpy as np

__all__ = ["ShardedStore", "AsyncShardedStore", "parse_sharded_uri"]

T = TypeVar("T")
_ID_MEMORY = 200_000  # ids whose user the store remembers (~100 bytes each); the oldest quarter goes when full


class _ShardedCore:
    """What both drivers share: the shard names, the routing table cache, the id memory and every plan."""

    def __init__(self, names: Sequence[str], *, uri: str | None, uris: Sequence[str] | None, refresh: float,
                 move_wait: float, grace: float | None) -> None:
        names = tuple(names)
        if not names:
            raise ConfigError("a sharded store needs at least one shard")
        if len(set(names)) != len(names):
            raise ConfigError(f"shard names must be distinct: {', '.join(names)}")
        self.names = names
        self.shard_uris = dict(zip(names, uris if uris is not None else names))
        self.uri = uri or "shards:" + ";".join(self.shard_uris[n] for n in names)
        self.refresh = refresh
        self.move_wait = move_wait
        #: how long a move waits for every process to have read a change of the table
        self.grace = grace if grace is not None else 2 * refresh + 0.5
        self._routing: Routing | None = None
        self._routing_until = float("-inf")
        self._user_of: dict[str, str] = {}  # memory or entity id -> its user (an id never changes user)
        self._evict_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.uri!r})"

    # -- the routing table ------------------------------------------------------------------------------
    def _plan_routing(self, *, force: bool = False) -> Plan[Routing]:
        """The table, from this process's copy while it is fresh, else from the directory shard."""
        if not force and self._routing is not None and time.monotonic() < self._routing_until:
            return self._routing
        try:
            doc = yield Call(self.names[0], GetDocument(DIRECTORY_USER, DIRECTORY_KEY))
        except StoreUnavailable as exc:
            routing = yield from self._plan_routing_elsewhere(exc)
        else:
            if doc is None:  # a new deployment (or a wiped directory): record the ring it starts with
                routing = yield from self._plan_update_routing(lambda r: r)
            else:
                routing = Routing.from_json(doc[1])
        self._keep(routing)
        return routing

    def _keep(self, routing: Routing) -> None:
        self._routing, self._routing_until = routing, time.monotonic() + self.refresh

    def _plan_routing_elsewhere(self, cause: StoreUnavailable) -> Plan[Routing]:
        """The directory shard is down: the newest table among this process's and the other shards' copies."""
        answers = yield Fan(tuple(Call(n, GetDocument(DIRECTORY_USER, DIRECTORY_KEY)) for n in self.names[1:]))
        tables = [Routing.from_json(a[1]) for a in answers if a is not None and not isinstance(a, BaseException)]
        if self._routing is not None:
            tables.append(self._routing)
        if tables:
            return max(tables, key=lambda r: r.serial)
        raise StoreUnavailable(f"cannot read the shard routing table: the directory shard {self.names[0]} is down"
                               f" and no other shard has a copy ({cause})") from cause

    def _plan_update_routing(self, change: Callable[[Routing], Routing]) -> Plan[Routing]:
        """Change the table with compare-and-set on the directory shard, then copy it to the others."""
        primary = self.names[0]
        while True:
            doc = yield Call(primary, GetDocument(DIRECTORY_USER, DIRECTORY_KEY))
            if doc is not None:
                current, version = Routing.from_json(doc[1]), doc[0]
            else:  # none yet: start from another shard's copy if one survives (a replaced directory shard)
                answers = yield Fan(tuple(Call(n, GetDocument(DIRECTORY_USER, DIRECTORY_KEY)) for n in self.names[1:]))
                copies = [Routing.from_json(a[1]) for a in answers if a is not None and not isinstance(a, BaseException)]
                current = max(copies, key=lambda r: r.serial) if copies else Routing(ring=self.names)
                version = 0
            new = change(current)
            if doc is not None and new == current:
                return current  # nothing to change (another process created the table meanwhile)
            text = new.to_json(serial=max(version, current.serial) + 1)  # (only ever grows, across copies too)
            ok, _now = yield Call(primary, PutDocument(DIRECTORY_USER, DIRECTORY_KEY, text, expected_version=version,
                                                       at=time.time()))
            if ok:
                break
        routing = Routing.from_json(text)
        self._keep(routing)
        replicas = tuple(Call(n, PutDocument(DIRECTORY_USER, DIRECTORY_KEY, text, expected_version=None,
                                             at=time.time())) for n in self.names[1:])
        if replicas:
            yield Fan(replicas)  # best effort: a shard that is down gets the next change
        return routing

    def _served_by(self, routing: Routing, user_id: str) -> str:
        name = routing.home(user_id)
        if name not in self.shard_uris:
            raise ConfigError(f"user {user_id!r} lives on shard {name}, which is not in this store's list of shards"
                              f" ({', '.join(self.names)}); add its address to the store URI")
        return name

    def _plan_shard(self, user_id: str, *, write: bool = False) -> Plan[str]:
        """The shard serving the user; a write waits (up to ``move_wait`` seconds) while the user is being moved."""
        deadline: float | None = None
        while True:
            routing = yield from self._plan_routing(force=deadline is not None)
            hold = routing.write_hold(user_id) if write else None
            if hold is None:
                return self._served_by(routing, user_id)
            now = time.monotonic()
            deadline = now + self.move_wait if deadline is None else deadline
            if now >= deadline:
                raise StoreUnavailable(f"{hold}: its writes waited {self.move_wait:g}s for it to finish; retry later")
            yield Sleep(max(0.01, min(self.refresh, deadline - now)))

    # -- remembering which user an id belongs to -----------------------------------------------------------
    def _learn(self, user_id: str, ids: Iterable[str]) -> None:
        memo = self._user_of
        memo.update(dict.fromkeys(ids, user_id))
        if len(memo) > _ID_MEMORY:
            with self._evict_lock:
                for key in list(memo)[: len(memo) // 4]:
                    memo.pop(key, None)

    def _plan_users_of(self, ids: Sequence[str]) -> Plan[dict[str, str]]:
        """The user of each memory id that exists (ids not seen before are looked up on every shard)."""
        known = {i: u for i in ids if (u := self._user_of.get(i)) is not None}
        unknown = [i for i in dict.fromkeys(ids) if i not in known]
        if unknown:
            known.update((r.id, r.user_id) for r in (yield from self._plan_find_memories(unknown, False)))
        return known

    def _plan_find_memories(self, ids: Sequence[str], with_vectors: bool) -> Plan[list[StoredMemory]]:
        """Memories of unknown users, asked of every shard at once.  A copy on a shard that does not
        serve its user (a move in progress) is ignored; a down shard is an error only if some id was
        found nowhere else (it might be there)."""
        answers = yield Fan(tuple(Call(n, GetMemories(ids, with_vectors)) for n in self.names))
        routing = yield from self._plan_routing()
        found: list[StoredMemory] = []
        for name, answer in zip(self.names, answers):
            if isinstance(answer, BaseException):
                continue
            for rec in answer:
                self._learn(rec.user_id, (rec.id,))
                if routing.home(rec.user_id) == name:
                    found.append(rec)
        if len({r.id for r in found}) < len(set(ids)):
            first_error(answers)
        return found

    def _plan_group(self, users: Mapping[str, str], ids: Sequence[str], *, write: bool,
                    skip_held: bool = False) -> Plan[dict[str, list[str]]]:
        """``ids`` (duplicates kept) by the shard serving their user; ids of no known user are left out,
        and with ``skip_held`` those of a user whose writes are held now (instead of waiting)."""
        shard_of: dict[str, str] = {}
        for user in dict.fromkeys(users.values()):
            if skip_held:
                routing = yield from self._plan_routing()
                if routing.write_hold(user) is None:
                    shard_of[user] = self._served_by(routing, user)
            else:
                shard_of[user] = yield from self._plan_shard(user, write=write)
        out: dict[str, list[str]] = defaultdict(list)
        for i in ids:
            if i in users and users[i] in shard_of:
                out[shard_of[users[i]]].append(i)
        return out

    def _plan_each(self, calls: Sequence[Call]) -> Plan[list[Any]]:
        """Answers of calls to different shards (at once when there are several); the first error is raised."""
        if len(calls) == 1:
            return [(yield calls[0])]
        answers = yield Fan(tuple(calls))
        first_error(answers)
        return list(answers)

    def _plan_on_user(self, user_id: str, request: StoreRequest[T], *, write: bool = False,
                      ids: Callable[[T], Iterable[str]] | None = None) -> Plan[T]:
        shard = yield from self._plan_shard(user_id, write=write)
        answer: T = yield Call(shard, request)
        if ids is not None:
            self._learn(user_id, ids(answer))
        return answer

    # -- writes --------------------------------------------------------------------------------------------
    def _plan_write(self, batch: WriteBatch, replace_mentions_of: Sequence[str]) -> Plan[None]:
        by_user: dict[str, WriteBatch] = defaultdict(WriteBatch)
        for m in batch.memories:
            by_user[m.user_id].memories.append(m)
        for e in batch.entities:
            by_user[e.user_id].entities.append(e)
        for x in batch.edges:
            by_user[x.user_id].edges.append(x)
        for user, part in by_user.items():
            self._learn(user, [m.id for m in part.memories] + [e.id for e in part.entities])
        users = yield from self._plan_users_of(replace_mentions_of) if replace_mentions_of else done({})
        shard_batches: dict[str, WriteBatch] = defaultdict(WriteBatch)
        for user in dict.fromkeys([*by_user, *users.values()]):
            shard = yield from self._plan_shard(user, write=True)
            if user in by_user:
                shard_batches[shard].extend(by_user[user])
        replaced = yield from self._plan_group(users, replace_mentions_of, write=True)
        shards = dict.fromkeys([*shard_batches, *replaced])
        if shards:
            yield from self._plan_each([Call(s, Write(shard_batches.get(s, WriteBatch()), replaced.get(s, [])))
                                        for s in shards])

    def _plan_by_ids(self, ids: Sequence[str], make: Callable[[list[str]], StoreRequest[T]], *,
                     write: bool, skip_held: bool = False) -> Plan[list[T]]:
        """A call per shard holding some of the (memory) ids, each with its ids."""
        users = yield from self._plan_users_of(ids)
        groups = yield from self._plan_group(users, ids, write=write, skip_held=skip_held)
        if not groups:
            return []
        return (yield from self._plan_each([Call(s, make(part)) for s, part in groups.items()]))

    def _plan_touch(self, memory_ids: Sequence[str], at: float) -> Plan[None]:
        """Access counts, except for a user being moved: recall does not wait for a move to count a use."""
        yield from self._plan_by_ids(memory_ids, lambda part: Touch(part, at), write=True, skip_held=True)

    def _plan_set_status(self, memory_ids: Sequence[str], status: str) -> Plan[int]:
        return sum((yield from self._plan_by_ids(memory_ids, lambda part: SetStatus(part, status), write=True)))

    def _plan_delete_memories(self, memory_ids: Sequence[str]) -> Plan[dict[str, int]]:
        out = {"memories": 0, "edges": 0}
        for counts in (yield from self._plan_by_ids(memory_ids, DeleteMemories, write=True)):
            for key, n in counts.items():
                out[key] = out.get(key, 0) + n
        return out

    def _plan_restore_documents(self, documents: Sequence[DocumentRecord]) -> Plan[None]:
        by_shard: dict[str, list[DocumentRecord]] = defaultdict(list)
        for user in dict.fromkeys(d.user_id for d in documents):
            shard = yield from self._plan_shard(user, write=True)
            by_shard[shard].extend(d for d in documents if d.user_id == user)
        if by_shard:
            yield from self._plan_each([Call(s, RestoreDocuments(docs)) for s, docs in by_shard.items()])

    # -- reads by id ------------------------------------------------------------------------------------------
    def _plan_get_memories(self, memory_ids: Sequence[str], with_vectors: bool) -> Plan[list[StoredMemory]]:
        known = {i: u for i in memory_ids if (u := self._user_of.get(i)) is not None}
        unknown = [i for i in dict.fromkeys(memory_ids) if i not in known]
        by_id = {r.id: r for r in ((yield from self._plan_find_memories(unknown, with_vectors)) if unknown else ())}
        groups = yield from self._plan_group(known, list(dict.fromkeys(known)), write=False)
        if groups:
            for answer in (yield from self._plan_each([Call(s, GetMemories(part, with_vectors))
                                                       for s, part in groups.items()])):
                by_id.update((r.id, r) for r in answer)
        return [by_id[i] for i in memory_ids if i in by_id]

    def _plan_token_vectors(self, memory_ids: Sequence[str]) -> Plan[dict[str, bytes]]:
        out: dict[str, bytes] = {}
        for answer in (yield from self._plan_by_ids(memory_ids, TokenVectors, write=False)):
            out.update(answer)
        return {i: out[i] for i in memory_ids if i in out}

    def _plan_entity_names(self, entity_ids: Sequence[str]) -> Plan[dict[str, str]]:
        """Names of entities: by their user's shard when the id was seen before, else asked of every shard."""
        known = {i: u for i in entity_ids if (u := self._user_of.get(i)) is not None}
        unknown = [i for i in dict.fromkeys(entity_ids) if i not in known]
        out: dict[str, str] = {}
        groups = yield from self._plan_group(known, list(dict.fromkeys(known)), write=False)
        if groups:
            for answer in (yield from self._plan_each([Call(s, EntityNames(part)) for s, part in groups.items()])):
                out.update(answer)
        if unknown:
            answers = yield Fan(tuple(Call(n, EntityNames(unknown)) for n in self.names))
            for answer in answers:
                if not isinstance(answer, BaseException):
                    out.update(answer)
            if any(i not in out for i in unknown):
                first_error(answers)
        return out

    # -- every shard ---------------------------------------------------------------------------------------------
    def _plan_placement(self) -> Plan[tuple[Routing, list[Any]]]:
        """The table and each shard's ``users()`` (an error in place of a down shard's)."""
        answers = yield Fan(tuple(Call(n, Users()) for n in self.names))
        routing = yield from self._plan_routing()
        missing = sorted(routing.names() - set(self.names))
        if missing:
            raise ConfigError(f"the shard routing table names shards this store does not list: {', '.join(missing)};"
                              f" add their addresses to the store URI (it lists {', '.join(self.names)})")
        return routing, list(answers)

    def _plan_users(self) -> Plan[list[str]]:
        routing, answers = yield from self._plan_placement()
        first_error(answers)
        return sorted(u for name, users in zip(self.names, answers) for u in users if routing.home(u) == name)

    def _plan_stats(self, user_id: str | None) -> Plan[dict[str, int]]:
        if user_id is not None:
            return (yield from self._plan_on_user(user_id, Stats(user_id)))
        routing, placed = yield from self._plan_placement()
        first_error(placed)
        totals = yield from self._plan_each([Call(n, Stats(None)) for n in self.names])
        strays = [(n, u) for n, users in zip(self.names, placed) for u in users if routing.home(u) != n]
        stray_stats = yield from self._plan_each([Call(n, Stats(u)) for n, u in strays]) if strays else done([])
        out: dict[str, int] = {}
        for counts in totals:
            for key, n in counts.items():
                out[key] = out.get(key, 0) + n
        for counts in stray_stats:  # a copy left by an unfinished move counts once, where its user is served
            for key, n in counts.items():
                if key not in ("users", "bytes_on_disk"):
                    out[key] = out.get(key, 0) - n
        out["users"] = sum(1 for n, users in zip(self.names, placed) for u in users if routing.home(u) == n)
        return out

    # -- shards --------------------------------------------------------------------------------------------------
    def _plan_shard_of(self, user_id: str) -> Plan[str]:
        return (yield from self._plan_shard(user_id))

    def _plan_report(self) -> Plan[ShardsReport]:
        return (yield from moves.report_plan(self))

    def _plan_move(self, user_id: str, to: str, batch_size: int) -> Plan[MoveReport]:
        return (yield from moves.move_plan(self, user_id, self.shard_name(to), batch_size=batch_size))

    def _plan_abort(self, user_id: str) -> Plan[ShardMove]:
        return (yield from moves.abort_plan(self, user_id))

    def _plan_change_ring(self, ring: Sequence[str]) -> Plan[dict[str, str]]:
        return (yield from moves.change_ring_plan(self, [self.shard_name(n) for n in ring]))

    def _plan_rebalance(self, limit: int | None, batch_size: int) -> Plan[list[MoveReport]]:
        return (yield from moves.rebalance_plan(self, limit=limit, batch_size=batch_size))

    def shard_name(self, name_or_index: str | int) -> str:
        """A shard's name from its name, its address, or its position (0-based) in the store URI."""
        text = str(name_or_index)
        if text in self.shard_uris:
            return text
        for name, uri in self.shard_uris.items():
            if uri == text:
                return name
        if text.isdigit() and int(text) < len(self.names):
            return self.names[int(text)]
        raise ConfigError(f"no shard {text!r}: the shards are {', '.join(self.names)} (or their positions 0-"
                          f"{len(self.names) - 1})")


def _names(stores: Sequence[object], names: Sequence[str] | None) -> list[str]:
    if names is not None:
        return list(names)
    uris = [getattr(s, "uri", None) for s in stores]
    if any(u is None for u in uris):
        raise ConfigError("name the shards (names=...) when they are given as callables")
    return [str(u) for u in uris]


def _ids_of_pairs(rows: list[tuple[str, float]]) -> Iterator[str]:
    return (r[0] for r in rows)


def _ids_of_batches(rows: list[list[tuple[str, float]]]) -> Iterator[str]:
    return (r[0] for row in rows for r in row)


def _ids_of_records(rows: Sequence[StoredMemory | EntityRecord]) -> Iterator[str]:
    return (r.id for r in rows)


def _ids_of_neighbors(rows: list[Neighbor]) -> Iterator[str]:
    for n in rows:
        yield n.source
        yield n.target


def _ids_of_mentions(rows: list[tuple[str, str]]) -> Iterator[str]:
    for entity_id, memory_id in rows:
        yield entity_id
        yield memory_id


def _ids_of_edges(rows: list[EdgeRecord]) -> Iterator[str]:
    for e in rows:
        yield e.src
        yield e.dst
        if e.evidence:
            yield e.evidence


# -- the synchronous store ----------------------------------------------------------------------------------
class ShardedStore(_ShardedCore):
    """The store protocol over several synchronous stores, one user on exactly one of them.

    Parameters
    ----------
    stores:
        The shards, in order (the first holds the routing table): open stores, or callables that
        open one (called on first use, and again after a failure, so a shard that is down when
        the store opens fails only its own users).
    names:
        The shards' names (what the hash is computed over); default: each store's ``uri``.
    uris:
        The shards' addresses, for reports; default: the names.
    refresh:
        Seconds a process uses its copy of the routing table before reading it again.
    move_wait:
        Seconds a write to a user who is being moved waits before it fails with ``StoreUnavailable``.
    grace:
        Seconds a move waits after changing the table before it relies on every process having
        read it (default ``2 * refresh + 0.5``).

    Examples
    --------
    >>> from graphstore import open_store
    >>> store = open_store("neo4j+shards://db1:7687,db2:7687", credentials=creds)   # doctest: +SKIP
    >>> store.shard_of("alice")                                                       # doctest: +SKIP
    'db2:7687'
    """

    def __init__(self, stores: Sequence[GraphStore | Callable[[], GraphStore]], *, names: Sequence[str] | None = None,
                 uris: Sequence[str] | None = None, uri: str | None = None, refresh: float = 1.0,
                 move_wait: float = 30.0, grace: float | None = None) -> None:
        super().__init__(_names(stores, names), uri=uri, uris=uris, refresh=refresh, move_wait=move_wait,
                         grace=grace)
        self._open: dict[str, GraphStore] = {n: s for n, s in zip(self.names, stores) if not callable(s)}
        self._openers = {n: s for n, s in zip(self.names, stores) if callable(s)}
        self._open_lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._closed = False

    def __enter__(self) -> "ShardedStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _shard(self, name: str) -> GraphStore:
        store = self._open.get(name)
        if store is None:
            with self._open_lock:  # (a shard that fails to open is tried again on its next call)
                store = self._open.get(name) or self._open.setdefault(name, self._openers[name]())
        return store

    def _answer(self, call: Call) -> Any:
        return call.request.call(self._shard(call.shard))

    def _fan(self, fan: Fan) -> list[Any]:
        if self._pool is None:
            with self._open_lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(max_workers=max(2, len(self.names)), thread_name_prefix="shard")
        futures = [self._pool.submit(self._answer, c) for c in fan.calls]
        return [f.exception() or f.result() for f in futures]

    def _drive(self, plan: Plan[T]) -> T:
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                step = plan.throw(error) if error is not None else plan.send(value)
            except StopIteration as done:
                return done.value
            value, error = None, None
            try:
                if isinstance(step, Call):
                    value = self._answer(step)
                elif isinstance(step, Fan):
                    value = self._fan(step)
                else:
                    time.sleep(step.seconds)
            except Exception as exc:  # noqa: BLE001 - thrown into the plan, which decides
                error = exc

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        for store in self._open.values():
            store.close()

    # -- the protocol ----------------------------------------------------------------------------------------
    def write(self, batch: WriteBatch, *, replace_mentions_of: Sequence[str] = ()) -> None:
        return self._drive(self._plan_write(batch, replace_mentions_of))

    def touch(self, memory_ids: Sequence[str], at: float) -> None:
        return self._drive(self._plan_touch(memory_ids, at))

    def set_status(self, memory_ids: Sequence[str], status: str) -> int:
        return self._drive(self._plan_set_status(memory_ids, status))

    def delete_memories(self, memory_ids: Sequence[str]) -> dict[str, int]:
        return self._drive(self._plan_delete_memories(memory_ids))

    def delete_user(self, user_id: str) -> dict[str, int]:
        return self._drive(self._plan_on_user(user_id, DeleteUser(user_id), write=True))

    def get_memories(self, memory_ids: Sequence[str], *, with_vectors: bool = False) -> list[StoredMemory]:
        return self._drive(self._plan_get_memories(memory_ids, with_vectors))

    def list_memories(self, user_id: str, *, session_id: str | None = None, statuses: Sequence[str] | None = None,
                      limit: int | None = None, offset: int = 0) -> list[StoredMemory]:
        return self._drive(self._plan_on_user(user_id, ListMemories(user_id, session_id, statuses, limit, offset),
                                              ids=_ids_of_records))

    def has_memories(self, user_id: str) -> bool:
        return self._drive(self._plan_on_user(user_id, HasMemories(user_id)))

    def last_memory_in_session(self, user_id: str, session_id: str) -> str | None:
        return self._drive(self._plan_on_user(user_id, LastMemoryInSession(user_id, session_id),
                                              ids=lambda i: () if i is None else (i,)))

    def session_tails(self, user_id: str, session_ids: Sequence[str]) -> dict[str, str]:
        return self._drive(self._plan_on_user(user_id, SessionTails(user_id, session_ids), ids=dict.values))

    def get_entities(self, user_id: str, keys: Sequence[str]) -> list[EntityRecord]:
        return self._drive(self._plan_on_user(user_id, GetEntities(user_id, keys), ids=_ids_of_records))

    def entity_names(self, entity_ids: Sequence[str]) -> dict[str, str]:
        return self._drive(self._plan_entity_names(entity_ids))

    def users(self) -> list[str]:
        return self._drive(self._plan_users())

    def nearest_memories(self, user_id: str, vector: "np.ndarray", k: int, *,
                         statuses: Sequence[str] = (ACTIVE,)) -> list[tuple[str, float]]:
        return self._drive(self._plan_on_user(user_id, NearestMemories(user_id, vector, k, statuses),
                                              ids=_ids_of_pairs))

    def nearest_entities(self, user_id: str, vector: "np.ndarray", k: int) -> list[tuple[str, float]]:
        return self._drive(self._plan_on_user(user_id, NearestEntities(user_id, vector, k), ids=_ids_of_pairs))

    def nearest_multilingual(self, user_id: str, vector: "np.ndarray", k: int, *,
                             statuses: Sequence[str] = (ACTIVE,)) -> list[tuple[str, float]]:
        return self._drive(self._plan_on_user(user_id, NearestMultilingual(user_id, vector, k, statuses),
                                              ids=_ids_of_pairs))

    def has_multilingual(self, user_id: str) -> bool:
        return self._drive(self._plan_on_user(user_id, HasMultilingual(user_id)))

    def get_user_state(self, user_id: str) -> UserState:
        return self._drive(self._plan_on_user(user_id, GetUserState(user_id)))

    def nearest_memories_batch(self, user_id: str, vectors: "np.ndarray", k: int, *,
                               statuses: Sequence[str] = (ACTIVE,)) -> list[list[tuple[str, float]]]:
        return self._drive(self._plan_on_user(user_id, NearestMemoriesBatch(user_id, vectors, k, statuses),
                                              ids=_ids_of_batches))

    def nearest_entities_batch(self, user_id: str, vectors: "np.ndarray", k: int) -> list[list[tuple[str, float]]]:
        return self._drive(self._plan_on_user(user_id, NearestEntitiesBatch(user_id, vectors, k), ids=_ids_of_batches))

    def lexical_stats(self, user_id: str, terms: Sequence[str]) -> tuple[int, float, dict[str, int]]:
        return self._drive(self._plan_on_user(user_id, LexicalStats(user_id, terms)))

    def postings(self, user_id: str, terms: Sequence[str]) -> list[tuple[str, str, int, int]]:
        return self._drive(self._plan_on_user(user_id, Postings(user_id, terms), ids=lambda rows: (r[1] for r in rows)))

    def token_vectors(self, memory_ids: Sequence[str]) -> dict[str, bytes]:
        return self._drive(self._plan_token_vectors(memory_ids))

    def related_edges(self, user_id: str, source_ids: Sequence[str], predicates: Sequence[str]) -> list[EdgeRecord]:
        return self._drive(self._plan_on_user(user_id, RelatedEdges(user_id, source_ids, predicates),
                                              ids=_ids_of_edges))

    def expand(self, user_id: str, frontier: Sequence[str], edge_types: Sequence[str], *,
               max_degree: int | None = None) -> list[Neighbor]:
        return self._drive(self._plan_on_user(user_id, Expand(user_id, frontier, edge_types, max_degree),
                                              ids=_ids_of_neighbors))

    def export(self, user_id: str) -> Iterator[StoredMemory | EntityRecord | EdgeRecord]:
        yield from self._shard(self._drive(self._plan_shard(user_id))).export(user_id)

    def stats(self, user_id: str | None = None) -> dict[str, int]:
        return self._drive(self._plan_stats(user_id))

    def get_document(self, user_id: str, key: str) -> tuple[int, str, float] | None:
        return self._drive(self._plan_on_user(user_id, GetDocument(user_id, key)))

    def put_document(self, user_id: str, key: str, value_json: str | None, *, expected_version: int | None,
                     at: float) -> tuple[bool, int]:
        return self._drive(self._plan_on_user(user_id, PutDocument(user_id, key, value_json, expected_version, at),
                                              write=True))

    def documents(self, user_id: str) -> list[DocumentRecord]:
        return self._drive(self._plan_on_user(user_id, Documents(user_id)))

    def restore_documents(self, documents: Sequence[DocumentRecord]) -> None:
        return self._drive(self._plan_restore_documents(documents))

    def memories_mentioning(self, user_id: str, entity_ids: Sequence[str], *, statuses: Sequence[str] = (ACTIVE,),
                            per_entity: int = 4) -> list[tuple[str, str]]:
        return self._drive(self._plan_on_user(user_id, MemoriesMentioning(user_id, entity_ids, statuses, per_entity),
                                              ids=_ids_of_mentions))

    def list_edges(self, user_id: str, edge_types: Sequence[str]) -> list[EdgeRecord]:
        return self._drive(self._plan_on_user(user_id, ListEdges(user_id, edge_types), ids=_ids_of_edges))

    # -- shards (graphstore.SupportsShards) -----------------------------------------------------------------------
    def shard_of(self, user_id: str) -> str:
        return self._drive(self._plan_shard_of(user_id))

    def shards_report(self) -> ShardsReport:
        return self._drive(self._plan_report())

    def move_user(self, user_id: str, to: str, *, batch_size: int = 500) -> MoveReport:
        return self._drive(self._plan_move(user_id, to, batch_size))

    def abort_move(self, user_id: str) -> ShardMove:
        return self._drive(self._plan_abort(user_id))

    def change_ring(self, ring: Sequence[str]) -> dict[str, str]:
        return self._drive(self._plan_change_ring(ring))

    def rebalance(self, *, limit: int | None = None, batch_size: int = 500) -> list[MoveReport]:
        return self._drive(self._plan_rebalance(limit, batch_size))


# -- the asynchronous store: the same plans, awaited ----------------------------------------------------------
class AsyncShardedStore(_ShardedCore):
    """The async twin of :class:`ShardedStore`, over :class:`~graphstore.AsyncGraphStore` shards."""

    def __init__(self, stores: Sequence[AsyncGraphStore | Callable[[], AsyncGraphStore]], *,
                 names: Sequence[str] | None = None, uris: Sequence[str] | None = None, uri: str | None = None,
                 refresh: float = 1.0, move_wait: float = 30.0, grace: float | None = None) -> None:
        super().__init__(_names(stores, names), uri=uri, uris=uris, refresh=refresh, move_wait=move_wait,
                         grace=grace)
        self._open: dict[str, AsyncGraphStore] = {n: s for n, s in zip(self.names, stores) if not callable(s)}
        self._openers = {n: s for n, s in zip(self.names, stores) if callable(s)}
        self._closed = False

    async def __aenter__(self) -> "AsyncShardedStore":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _shard(self, name: str) -> AsyncGraphStore:
        store = self._open.get(name)
        if store is None:  # (an async store's constructor does no I/O: it connects on its first call)
            store = self._open.setdefault(name, self._openers[name]())
        return store

    async def _answer(self, call: Call) -> Any:
        return await call.request.acall(self._shard(call.shard))

    async def _drive(self, plan: Plan[T]) -> T:
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                step = plan.throw(error) if error is not None else plan.send(value)
            except StopIteration as done:
                return done.value
            value, error = None, None
            try:
                if isinstance(step, Call):
                    value = await self._answer(step)
                elif isinstance(step, Fan):
                    value = await asyncio.gather(*(self._answer(c) for c in step.calls), return_exceptions=True)
                else:
                    await asyncio.sleep(step.seconds)
            except Exception as exc:  # noqa: BLE001 - thrown into the plan, which decides
                error = exc

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        for store in self._open.values():
            await store.aclose()

    close = aclose

    # -- the protocol ----------------------------------------------------------------------------------------
    async def write(self, batch: WriteBatch, *, replace_mentions_of: Sequence[str] = ()) -> None:
        return await self._drive(self._plan_write(batch, replace_mentions_of))

    async def touch(self, memory_ids: Sequence[str], at: float) -> None:
        return await self._drive(self._plan_touch(memory_ids, at))

    async def set_status(self, memory_ids: Sequence[str], status: str) -> int:
        return await self._drive(self._plan_set_status(memory_ids, status))

    async def delete_memories(self, memory_ids: Sequence[str]) -> dict[str, int]:
        return await self._drive(self._plan_delete_memories(memory_ids))

    async def delete_user(self, user_id: str) -> dict[str, int]:
        return await self._drive(self._plan_on_user(user_id, DeleteUser(user_id), write=True))

    async def get_memories(self, memory_ids: Sequence[str], *, with_vectors: bool = False) -> list[StoredMemory]:
        return await self._drive(self._plan_get_memories(memory_ids, with_vectors))

    async def list_memories(self, user_id: str, *, session_id: str | None = None,
                            statuses: Sequence[str] | None = None, limit: int | None = None,
                            offset: int = 0) -> list[StoredMemory]:
        return await self._drive(self._plan_on_user(user_id, ListMemories(user_id, session_id, statuses, limit, offset),
                                                    ids=_ids_of_records))

    async def has_memories(self, user_id: str) -> bool:
        return await self._drive(self._plan_on_user(user_id, HasMemories(user_id)))

    async def last_memory_in_session(self, user_id: str, session_id: str) -> str | None:
        return await self._drive(self._plan_on_user(user_id, LastMemoryInSession(user_id, session_id),
                                                    ids=lambda i: () if i is None else (i,)))

    async def session_tails(self, user_id: str, session_ids: Sequence[str]) -> dict[str, str]:
        return await self._drive(self._plan_on_user(user_id, SessionTails(user_id, session_ids), ids=dict.values))

    async def get_entities(self, user_id: str, keys: Sequence[str]) -> list[EntityRecord]:
        return await self._drive(self._plan_on_user(user_id, GetEntities(user_id, keys), ids=_ids_of_records))

    async def entity_names(self, entity_ids: Sequence[str]) -> dict[str, str]:
        return await self._drive(self._plan_entity_names(entity_ids))

    async def users(self) -> list[str]:
        return await self._drive(self._plan_users())

    async def nearest_memories(self, user_id: str, vector: "np.ndarray", k: int, *,
                               statuses: Sequence[str] = (ACTIVE,)) -> list[tuple[str, float]]:
        return await self._drive(self._plan_on_user(user_id, NearestMemories(user_id, vector, k, statuses),
                                                    ids=_ids_of_pairs))

    async def nearest_entities(self, user_id: str, vector: "np.ndarray", k: int) -> list[tuple[str, float]]:
        return await self._drive(self._plan_on_user(user_id, NearestEntities(user_id, vector, k),
                                                    ids=_ids_of_pairs))

    async def nearest_multilingual(self, user_id: str, vector: "np.ndarray", k: int, *,
                                   statuses: Sequence[str] = (ACTIVE,)) -> list[tuple[str, float]]:
        return await self._drive(self._plan_on_user(user_id, NearestMultilingual(user_id, vector, k, statuses),
                                                    ids=_ids_of_pairs))

    async def has_multilingual(self, user_id: str) -> bool:
        return await self._drive(self._plan_on_user(user_id, HasMultilingual(user_id)))

    async def get_user_state(self, user_id: str) -> UserState:
        return await self._drive(self._plan_on_user(user_id, GetUserState(user_id)))

    async def nearest_memories_batch(self, user_id: str, vectors: "np.ndarray", k: int, *,
                                     statuses: Sequence[str] = (ACTIVE,)) -> list[list[tuple[str, float]]]:
        return await self._drive(self._plan_on_user(user_id, NearestMemoriesBatch(user_id, vectors, k, statuses),
                                                    ids=_ids_of_batches))

    async def nearest_entities_batch(self, user_id: str, vectors: "np.ndarray",
                                     k: int) -> list[list[tuple[str, float]]]:
        return await self._drive(self._plan_on_user(user_id, NearestEntitiesBatch(user_id, vectors, k),
                                                    ids=_ids_of_batches))

    async def lexical_stats(self, user_id: str, terms: Sequence[str]) -> tuple[int, float, dict[str, int]]:
        return await self._drive(self._plan_on_user(user_id, LexicalStats(user_id, terms)))

    async def postings(self, user_id: str, terms: Sequence[str]) -> list[tuple[str, str, int, int]]:
        return await self._drive(self._plan_on_user(user_id, Postings(user_id, terms),
                                                    ids=lambda rows: (r[1] for r in rows)))

    async def token_vectors(self, memory_ids: Sequence[str]) -> dict[str, bytes]:
        return await self._drive(self._plan_token_vectors(memory_ids))

    async def related_edges(self, user_id: str, source_ids: Sequence[str],
                            predicates: Sequence[str]) -> list[EdgeRecord]:
        return await self._drive(self._plan_on_user(user_id, RelatedEdges(user_id, source_ids, predicates),
                                                    ids=_ids_of_edges))

    async def expand(self, user_id: str, frontier: Sequence[str], edge_types: Sequence[str], *,
                     max_degree: int | None = None) -> list[Neighbor]:
        return await self._drive(self._plan_on_user(user_id, Expand(user_id, frontier, edge_types, max_degree),
                                                    ids=_ids_of_neighbors))

    async def export(self, user_id: str) -> AsyncIterator[StoredMemory | EntityRecord | EdgeRecord]:
        async for record in self._shard(await self._drive(self._plan_shard(user_id))).export(user_id):
            yield record

    async def stats(self, user_id: str | None = None) -> dict[str, int]:
        return await self._drive(self._plan_stats(user_id))

    async def get_document(self, user_id: str, key: str) -> tuple[int, str, float] | None:
        return await self._drive(self._plan_on_user(user_id, GetDocument(user_id, key)))

    async def put_document(self, user_id: str, key: str, value_json: str | None, *, expected_version: int | None,
                           at: float) -> tuple[bool, int]:
        return await self._drive(self._plan_on_user(
            user_id, PutDocument(user_id, key, value_json, expected_version, at), write=True))

    async def documents(self, user_id: str) -> list[DocumentRecord]:
        return await self._drive(self._plan_on_user(user_id, Documents(user_id)))

    async def restore_documents(self, documents: Sequence[DocumentRecord]) -> None:
        return await self._drive(self._plan_restore_documents(documents))

    async def memories_mentioning(self, user_id: str, entity_ids: Sequence[str], *,
                                  statuses: Sequence[str] = (ACTIVE,), per_entity: int = 4) -> list[tuple[str, str]]:
        return await self._drive(self._plan_on_user(
            user_id, MemoriesMentioning(user_id, entity_ids, statuses, per_entity), ids=_ids_of_mentions))

    async def list_edges(self, user_id: str, edge_types: Sequence[str]) -> list[EdgeRecord]:
        return await self._drive(self._plan_on_user(user_id, ListEdges(user_id, edge_types), ids=_ids_of_edges))

    # -- shards ------------------------------------------------------------------------------------------------
    async def shard_of(self, user_id: str) -> str:
        return await self._drive(self._plan_shard_of(user_id))

    async def shards_report(self) -> ShardsReport:
        return await self._drive(self._plan_report())

    async def move_user(self, user_id: str, to: str, *, batch_size: int = 500) -> MoveReport:
        return await self._drive(self._plan_move(user_id, to, batch_size))

    async def abort_move(self, user_id: str) -> ShardMove:
        return await self._drive(self._plan_abort(user_id))

    async def change_ring(self, ring: Sequence[str]) -> dict[str, str]:
        return await self._drive(self._plan_change_ring(ring))

    async def rebalance(self, *, limit: int | None = None, batch_size: int = 500) -> list[MoveReport]:
        return await self._drive(self._plan_rebalance(limit, batch_size))


# -- URIs -------------------------------------------------------------------------------------------------------
_NEO4J_BASES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")
def parse_sharded_uri(uri: str) -> tuple[list[str], list[str]]:
    """``(names, shard URIs)`` of a sharded store URI.

    >>> parse_sharded_uri("neo4j+shards://db1:7687,db2")
    (['db1:7687', 'db2:7687'], ['neo4j://db1:7687', 'neo4j://db2:7687'])
    >>> parse_sharded_uri("shards:/data/a;sqlite:///data/b")
    (['/data/a', 'sqlite:///data/b'], ['/data/a', 'sqlite:///data/b'])
    """
    if uri.startswith("shards:"):
        uris = [u.strip() for u in uri[len("shards:"):].split(";") if u.strip()]
        if not uris:
            raise ConfigError(f"no shard in {uri!r}: write shards:URI1;URI2")
        return uris, uris
    scheme, _, rest = uri.partition("://")
    base = scheme.removesuffix("+shards")
    if base not in _NEO4J_BASES:
        raise ConfigError(f"unknown sharded store scheme in {uri!r}: use one of "
                          f"{', '.join(b + '+shards://' for b in _NEO4J_BASES)} or shards:")
    hosts = [h.strip().rstrip("/") for h in rest.split(",") if h.strip().rstrip("/")]
    if not hosts or any("/" in h or "?" in h or "@" in h for h in hosts):
        raise ConfigError(f"write the shards of {uri!r} as {scheme}://host1:port,host2:port (credentials come from"
                          " the settings, not the URI)")
    names = [h if ":" in h.rsplit("]", 1)[-1] else f"{h}:7687" for h in hosts]
    return names, [f"{base}://{n}" for n in names]
