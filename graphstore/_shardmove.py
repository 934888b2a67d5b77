"""Moving users between shards, changing the ring, and the shards report: plans of a sharded store.

A move, step by step (each change of the routing table is a compare-and-set on the directory
shard, so every process agrees, and each is a point where the move may stop and resume)::

    1. mark      moves[user] = copying (source -> target)    the source serves the user; its writes wait
       wait      grace: every process has read the mark       (no write reaches the source any more)
    2. copy      delete any earlier partial copy on the target, then copy the export (memories and
                 entities, then edges, in batches) and the documents, versions included
    3. verify    the target's export and documents equal the source's (a fingerprint of every record),
                 the same counts, and the same answers to a sample of reads on both; the source is
                 exported again and must be unchanged (else copy again)
    4. switch    pins[user] = target, moves[user] = switched  the target serves the user
       wait      grace: every process reads the user from the target
    5. delete    the source copy, after checking it still equals what was copied
    6. end       the move is removed from the table

At every point exactly one shard serves the user with all of its data: the source until step 4
(a partial copy on the target is never read), the target from step 4 on.  A move that stops
(a crash, a shard down, Ctrl-C) is resumed by running it again, or rolled back before its
switch with :func:`abort_plan`.  A resumed move takes the move over (a new ``owner`` in the
table): if the run it resumes was in fact still alive, that run stops at its next step and
can no longer switch.

Changing the ring (adding or removing a shard) is :func:`change_ring_plan` then
:func:`rebalance_plan`; see RELIABILITY.md for the procedure.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ripple.errors import ConfigError, StoreError

from ._routing import COPYING, SWITCHED, Routing, rendezvous
from ._shardplan import Call, ExportAll, Fan, Plan, Record, Sleep, first_error
from .jsonl import to_json
from .records import (
    EDGE_TYPES,
    DocumentRecord,
    EdgeRecord,
    EntityRecord,
    StoredMemory,
    MoveReport,
    ShardMove,
    ShardsReport,
    ShardStatus,
    WriteBatch,
)
from .requests import (
    DeleteUser,
    Documents,
    Expand,
    GetEntities,
    GetMemories,
    LexicalStats,
    ListMemories,
    NearestMemories,
    Postings,
    RestoreDocuments,
    Stats,
    StoreRequest,
    Write,
)

if TYPE_CHECKING:
    from .sharded import _ShardedCore

__all__ = ["move_plan", "abort_plan", "change_ring_plan", "rebalance_plan", "report_plan", "fingerprint", "checkpoint"]

_SAMPLE = 16  # memories whose reads are compared on both shards before a switch
_COPY_ATTEMPTS = 3


def checkpoint(step: str) -> None:
    """Called at each step of a move (``marked``, ``copying``, ``copied``, ``switched``, ``deleted``):
    the points where a move can stop and be resumed.  A no-op; the crash tests raise here."""


# -- the report -------------------------------------------------------------------------------------------------
def report_plan(core: "_ShardedCore") -> Plan[ShardsReport]:
    routing, placed = yield from core._plan_placement()
    counts = yield Fan(tuple(Call(n, Stats(None)) for n in core.names))
    shards = []
    for name, users, stats in zip(core.names, placed, counts):
        error = next((str(a) for a in (users, stats) if isinstance(a, BaseException)), None)
        if error is not None:
            shards.append(ShardStatus(name, core.shard_uris[name], name in routing.ring, 0, 0, 0, error=error))
            continue
        strays = tuple(u for u in users if routing.home(u) != name)
        shards.append(ShardStatus(name, core.shard_uris[name], name in routing.ring, len(users) - len(strays),
                                  int(stats.get("memories", 0)), int(stats.get("entities", 0)), strays))
    moving = tuple(ShardMove(m.user_id, m.source, m.target, m.state, m.started_at) for m in routing.moves.values())
    return ShardsReport(tuple(shards), routing.ring, routing.ring_next, len(routing.pins), len(routing.parked),
                        moving)


# -- fingerprints: what "the same data" means ---------------------------------------------------------------------
def _canonical(rec: Record) -> bytes:
    obj = to_json(rec)
    if isinstance(rec, EntityRecord):
        obj["aliases"] = sorted(obj["aliases"])  # (an alias set; stores may keep another order)
    return json.dumps(obj, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")


def fingerprint(records: Sequence[Record], documents: Sequence[DocumentRecord]) -> str:
    """A digest of a user's whole data, independent of the order a store lists it in."""
    parts = [hashlib.sha256(_canonical(r)).digest() for r in records]
    parts += [hashlib.sha256(json.dumps([d.key, d.version, d.value_json, d.updated_at], ensure_ascii=False)
                             .encode("utf-8", "surrogatepass")).digest() for d in documents]
    h = hashlib.sha256()
    for part in sorted(parts):
        h.update(part)
    return h.hexdigest()


def _snapshot(shard: str, user_id: str) -> Plan[tuple[list[Record], list[DocumentRecord], str]]:
    records = yield Call(shard, ExportAll(user_id))
    documents = yield Call(shard, Documents(user_id))
    return records, documents, fingerprint(records, documents)


# -- moving one user ------------------------------------------------------------------------------------------------
def move_plan(core: "_ShardedCore", user_id: str, target: str, *, batch_size: int = 500) -> Plan[MoveReport]:
    """Move ``user_id`` to shard ``target`` (or resume its unfinished move there); see the module docstring."""
    if batch_size < 1:
        raise ConfigError("batch_size must be at least 1")
    began = time.monotonic()
    owner = os.urandom(8).hex()
    routing = yield from core._plan_routing(force=True)
    move = routing.moves.get(user_id)
    resumed = move is not None
    if move is None:
        if core._served_by(routing, user_id) == target:
            raise ConfigError(f"user {user_id!r} is already on shard {target}")
        routing = yield from core._plan_update_routing(lambda r: _start(r, user_id, target, owner))
        move = routing.moves[user_id]
        checkpoint("marked")
    elif move.target != target:
        raise ConfigError(f"user {user_id!r} has an unfinished move to shard {move.target}: resume it with"
                          f" --to {move.target}, or roll it back with --abort")
    elif move.state == COPYING:
        routing = yield from core._plan_update_routing(lambda r: _take_over(r, user_id, owner))
    source = move.source
    if move.state == COPYING:
        yield Sleep(core.grace)  # every process now holds the user's writes
        digest, checked = yield from _copy_and_verify(core, user_id, source, target, batch_size, owner)
        yield from core._plan_update_routing(lambda r: _switch(r, user_id, digest, owner))
        checkpoint("switched")
        yield Sleep(core.grace)  # every process now reads the user from the target
    else:
        digest, checked = move.digest or "", 0
    records, documents, now = yield from _snapshot(source, user_id)
    if (records or documents) and now != digest:
        raise StoreError(
            f"the copy of user {user_id!r} left on shard {source} changed after the move switched to {target}"
            f" (a process wrote to it with an old routing table); nothing was deleted: compare it with the"
            f" copy on {target} (ripple --store {core.shard_uris[source]} export --user ...) before deleting it")
    yield Call(source, DeleteUser(user_id))
    checkpoint("deleted")
    yield from core._plan_update_routing(lambda r: r.end_move(user_id))
    stats, docs = yield Fan((Call(target, Stats(user_id)), Call(target, Documents(user_id))))
    first_error((stats, docs))
    return MoveReport(user_id, source, target, int(stats.get("memories", 0)), int(stats.get("entities", 0)),
                      sum(n for k, n in stats.items() if k.startswith("edges_")), len(docs), checked,
                      round(time.monotonic() - began, 3), resumed)


def _start(routing: Routing, user_id: str, target: str, owner: str) -> Routing:
    if user_id in routing.moves:
        raise ConfigError(f"user {user_id!r} is already being moved (to {routing.moves[user_id].target})")
    if routing.ring_next is not None:
        raise ConfigError("a ring change is under way: finish it first (ripple shards add/remove)")
    return routing.start_move(user_id, target, time.time(), owner)


def _owned(routing: Routing, user_id: str, owner: str) -> Routing:
    """The table unchanged if this run still owns the user's copying move; else the run must stop."""
    move = routing.moves.get(user_id)
    if move is None or move.state != COPYING or move.owner != owner:
        raise ConfigError(f"the move of user {user_id!r} was taken over or changed by another process;"
                          " this run stops (ripple shards status shows where it stands)")
    return routing


def _take_over(routing: Routing, user_id: str, owner: str) -> Routing:
    move = routing.moves.get(user_id)
    if move is None or move.state != COPYING:
        raise ConfigError(f"the move of user {user_id!r} changed meanwhile; run it again")
    return routing.take_over_move(user_id, owner)


def _switch(routing: Routing, user_id: str, digest: str, owner: str) -> Routing:
    return _owned(routing, user_id, owner).switch_move(user_id, digest)


def _copy_and_verify(core: "_ShardedCore", user_id: str, source: str, target: str, batch_size: int,
                     owner: str) -> Plan[tuple[str, int]]:
    """Copy the user to the target and check the copy; ``(fingerprint, reads compared)``."""
    for _ in range(_COPY_ATTEMPTS):
        _owned((yield from core._plan_routing(force=True)), user_id, owner)  # (never wipe a copy another run owns)
        yield Call(target, DeleteUser(user_id))  # a partial copy left by an earlier attempt
        records, documents, digest = yield from _snapshot(source, user_id)
        nodes = [r for r in records if not isinstance(r, EdgeRecord)]
        edges = [r for r in records if isinstance(r, EdgeRecord)]
        for start in range(0, len(nodes), batch_size):
            chunk = nodes[start : start + batch_size]
            yield Call(target, Write(WriteBatch(memories=[r for r in chunk if isinstance(r, StoredMemory)],
                                                entities=[r for r in chunk if isinstance(r, EntityRecord)])))
            checkpoint("copying")
        for start in range(0, len(edges), batch_size):
            yield Call(target, Write(WriteBatch(edges=edges[start : start + batch_size])))
        if documents:
            yield Call(target, RestoreDocuments(documents))
        checkpoint("copied")
        _owned((yield from core._plan_routing(force=True)), user_id, owner)
        copied = yield from _snapshot(target, user_id)
        if copied[2] != digest:
            raise StoreError(f"the copy of user {user_id!r} on shard {target} differs from the original on {source}"
                             f" ({_count(copied[0], copied[1])} against {_count(records, documents)}); the user stays"
                             " on the source: roll the move back with --abort")
        checked = yield from _compare_reads(user_id, source, target, records)
        again = yield from _snapshot(source, user_id)
        if again[2] == digest:
            return digest, checked
    raise StoreError(f"user {user_id!r} kept changing on shard {source} while it was copied (a process with an old"
                     " routing table is writing to it); the user stays on the source: try the move again later")


def _count(records: Sequence[Record], documents: Sequence[DocumentRecord]) -> str:
    kinds = {"memories": StoredMemory, "entities": EntityRecord, "edges": EdgeRecord}
    parts = [f"{sum(isinstance(r, cls) for r in records)} {name}" for name, cls in kinds.items()]
    return ", ".join([*parts, f"{len(documents)} documents"])


def _compare_reads(user_id: str, source: str, target: str, records: Sequence[Record]) -> Plan[int]:
    """Ask both shards the same reads and require the same answers; the number of reads compared."""
    memories = [r for r in records if isinstance(r, StoredMemory)]
    sample = memories[:: max(1, len(memories) // _SAMPLE)][:_SAMPLE]
    ids = [m.id for m in sample]
    terms = sorted({t for m in sample for t in m.terms})[:32]
    keys = sorted({r.key for r in records if isinstance(r, EntityRecord)})[:_SAMPLE]
    reads: list[StoreRequest[Any]] = [
        Stats(user_id), ListMemories(user_id, limit=50), GetMemories(ids, with_vectors=True),
        Expand(user_id, ids, EDGE_TYPES), LexicalStats(user_id, terms), Postings(user_id, terms),
        GetEntities(user_id, keys),
    ]
    reads += [NearestMemories(user_id, np.frombuffer(m.embedding, dtype=np.float32), 5, statuses=(m.status,))
              for m in sample[:3] if m.embedding is not None]
    for read in reads:
        a, b = yield Fan((Call(source, read), Call(target, read)))
        first_error((a, b))
        if _normal(read, a) != _normal(read, b):
            raise StoreError(f"the copy of user {user_id!r} on shard {target} answers {read.method} differently"
                             f" from the original on {source}; the user stays on the source: roll the move back"
                             " with --abort")
    return len(reads)


def _normal(read: StoreRequest[Any], answer: Any) -> Any:
    """An answer in a form two stores must agree on."""
    if isinstance(read, Stats):
        return {k: v for k, v in answer.items() if k != "bytes_on_disk"}
    if isinstance(read, (Expand, Postings)):
        return sorted(answer)
    if isinstance(read, NearestMemories):  # (an approximate index may order near-ties differently)
        return round(answer[0][1], 4) if answer else None
    if isinstance(read, GetEntities):
        return sorted((e.id, e.key, tuple(sorted(e.aliases))) for e in answer)
    return answer


def abort_plan(core: "_ShardedCore", user_id: str) -> Plan[ShardMove]:
    """Roll back a move that has not switched: delete the (partial) copy on the target, end the move."""
    routing = yield from core._plan_routing(force=True)
    move = routing.moves.get(user_id)
    if move is None:
        raise ConfigError(f"no move of user {user_id!r} is under way")
    if move.state == SWITCHED:
        raise ConfigError(f"the move of user {user_id!r} has already switched to shard {move.target}: finish it"
                          f" with --to {move.target}")
    yield Call(move.target, DeleteUser(user_id))

    def end(r: Routing) -> Routing:
        now = r.moves.get(user_id)
        if now is None or now.state != COPYING:
            raise ConfigError(f"the move of user {user_id!r} was changed by another process; look again")
        return r.end_move(user_id)

    yield from core._plan_update_routing(end)
    return ShardMove(move.user_id, move.source, move.target, move.state, move.started_at)


# -- the ring -----------------------------------------------------------------------------------------------------
def change_ring_plan(core: "_ShardedCore", ring: Sequence[str]) -> Plan[dict[str, str]]:
    """Make ``ring`` the shards the hash spreads users over, moving nobody: the users whose owner
    changes are pinned where they are (returned, user -> shard); :func:`rebalance_plan` moves them."""
    ring = list(dict.fromkeys(ring))
    if not ring:
        raise ConfigError("the ring needs at least one shard")
    routing = yield from core._plan_routing(force=True)
    if routing.moves:
        raise ConfigError(f"moves are under way ({', '.join(sorted(routing.moves))}): finish them first")
    if routing.ring_next is None:
        if tuple(ring) == routing.ring:
            return {}

        def start(r: Routing) -> Routing:
            if r.ring_next is not None or r.moves:
                raise ConfigError("another ring change or a move started meanwhile; look again")
            return r.start_ring_change(ring)

        routing = yield from core._plan_update_routing(start)
        yield Sleep(core.grace)  # every process now holds the writes of the users whose owner changes
    elif list(routing.ring_next) != ring:
        raise ConfigError(f"a change of the ring to {', '.join(routing.ring_next)} is under way: run it again with"
                          " those shards to finish it")
    routing, placed = yield from core._plan_placement()
    first_error(placed)
    assert routing.ring_next is not None
    new_ring = routing.ring_next
    stay = {u: name for name, users in zip(core.names, placed) for u in users
            if routing.home(u) == name and u not in routing.pins and u not in routing.parked
            and rendezvous(u, new_ring) != name}
    yield from core._plan_update_routing(lambda r: r.finish_ring_change(stay))
    return stay


def rebalance_plan(core: "_ShardedCore", *, limit: int | None, batch_size: int) -> Plan[list[MoveReport]]:
    """Move the users a ring change parked to the shard the hash gives them now (``limit`` of them at
    most), one by one.  Users someone moved on purpose (pinned) stay where they are, unless their
    shard has left the ring."""
    routing = yield from core._plan_routing(force=True)
    if routing.ring_next is not None:
        raise ConfigError("a ring change is under way: finish it first (ripple shards add/remove)")
    todo = sorted({*routing.parked, *(u for u, s in routing.pins.items() if s not in routing.ring)})
    reports = []
    for user in todo[:limit]:
        reports.append((yield from move_plan(core, user, rendezvous(user, routing.ring), batch_size=batch_size)))
    return reports
