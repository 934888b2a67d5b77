"""Checking a Neo4j store and rebuilding what it derives from the memories (``ripple doctor``/``reindex``).

The Neo4j graph keeps, beside the Memory and Entity nodes and their
relationships, nodes and properties that a write keeps in step: ``Term`` nodes
with ``POSTING`` relationships (BM25 postings; a term's document frequency is
its degree), one ``Lexicon`` node per user (BM25 totals), ``Alias`` nodes
(entity lookup by name) and each entity's ``degree``.  Here the check counts,
with index seeks from each memory or entity, how many of the derived facts the
truth implies are present, and how many the graph holds in all; the rebuild
deletes a user's derived nodes and writes them again with the write path's own
statements (``_ADD_POSTINGS``, ``_ADD_TOTALS``), so the two cannot disagree.

The rebuild runs in transactions of at most a few thousand memories (a user of
100k memories has ~1.5M postings, more than one transaction of a 1 GB heap
holds), so a user's lexical search is incomplete while it runs; an interrupted
reindex is finished by running it again.  Plans only (no I/O), run by
:class:`~graphstore.neo4j.Neo4jStore` like every other operation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from .neo4j import (
    _ADD_POSTINGS,
    _ADD_TOTALS,
    _DELETE_BATCH,
    _META_READ,
    _SCHEMA,
    _SCHEMA_NAMES,
    _SHOW_SCHEMA,
    _USERS,
    _VECTOR_INDEX,
    SCHEMA_VERSION,
    _Body,
    _bump,
    _Plan,
    _posting_rows,
    _read,
    _Stmt,
    _Tx,
    _write,
)
from .protocol import ACTIVE
from .records import Finding

if TYPE_CHECKING:
    from .neo4j import _Neo4jCore

__all__ = ["plan_check", "plan_reindex"]

REINDEX = "ripple reindex"
_PAGE = 2_000  # memories per transaction of a rebuild

_POSTINGS_FOUND = f"""
MATCH (m:Memory) WHERE m.status = '{ACTIVE}'
UNWIND m.terms AS term
WITH m, term, count(*) AS tf
RETURN count(*) AS want,
       sum(CASE WHEN COUNT {{ (m)<-[p:POSTING]-(t:Term) WHERE t.term = term AND t.user_id = m.user_id
                                                      AND p.tf = tf }} = 1 THEN 1 ELSE 0 END) AS found
"""
_POSTINGS_ALL = "MATCH (:Term)-[p:POSTING]->() RETURN count(p) AS n"
_LEXICON_WRONG = f"""
CALL () {{
    MATCH (m:Memory) WHERE m.status = '{ACTIVE}'
    WITH m.user_id AS user, count(m) AS n, sum(size(m.terms)) AS len
    OPTIONAL MATCH (x:Lexicon {{user_id: user}})
    WITH x, n, len WHERE x IS NULL OR x.n_docs <> n OR x.total_len <> len
    RETURN count(*) AS wrong
    UNION ALL
    MATCH (x:Lexicon) WHERE (x.n_docs <> 0 OR x.total_len <> 0)
      AND NOT EXISTS {{ MATCH (m:Memory {{user_id: x.user_id}}) WHERE m.status = '{ACTIVE}' }}
    RETURN count(x) AS wrong
}}
RETURN sum(wrong) AS wrong
"""
_ALIASES_FOUND = """
MATCH (e:Entity)
UNWIND [e.key] + coalesce(e.aliases, []) AS alias
WITH DISTINCT e.user_id AS user, alias, e.id AS id
OPTIONAL MATCH (a:Alias {user_id: user, alias: alias, entity_id: id})
RETURN count(*) AS want, count(a) AS found
"""
_ALIASES_ALL = "MATCH (a:Alias) RETURN count(a) AS n"
_DEGREES_WRONG = "MATCH (e:Entity) WHERE coalesce(e.degree, -1) <> COUNT { (e)<-[:MENTIONS]-() } RETURN count(e) AS n"
_VECTOR_SIZES = """
CALL () {
    MATCH (m:Memory) WHERE m.embedding IS NOT NULL RETURN 'memories' AS kind, m.user_id AS user, size(m.embedding) AS dim
    UNION ALL
    MATCH (e:Entity) WHERE e.embedding IS NOT NULL RETURN 'entities' AS kind, e.user_id AS user, size(e.embedding) AS dim
}
RETURN kind, user, dim, count(*) AS n
"""
_COUNTS = """
CALL () { MATCH (m:Memory) RETURN count(m) AS memories }
CALL () { MATCH (e:Entity) RETURN count(e) AS entities }
CALL () { MATCH ()-[r:MENTIONS|RELATED|NEXT|SUPERSEDES|RETRACTS]->() RETURN count(r) AS edges }
RETURN memories, entities, edges
"""

# a user's rebuild, step by step
_USER_MEMORIES = "MATCH (m:Memory {user_id: $user}) RETURN count(m) AS n"
_DROP_DERIVED = [  # each deletes at most $batch and returns how many: repeated until 0
    "MATCH (t:Term) WHERE t.user_id = $user AND t.term IS NOT NULL MATCH (t)-[p:POSTING]->()"
    " WITH p LIMIT $batch DELETE p RETURN count(p) AS n",
    "MATCH (t:Term) WHERE t.user_id = $user AND t.term IS NOT NULL WITH t LIMIT $batch DETACH DELETE t RETURN count(t) AS n",
    "MATCH (x:Lexicon {user_id: $user}) DELETE x RETURN count(x) AS n",
    "MATCH (a:Alias {user_id: $user}) WITH a LIMIT $batch DELETE a RETURN count(a) AS n",
]
_PAGE_OF_ACTIVE = f"""
MATCH (m:Memory {{user_id: $user}}) WHERE m.status = '{ACTIVE}' AND m.id > $after
WITH m ORDER BY m.id LIMIT $page
SET m.doc_len = size(m.terms)
RETURN m.id AS id, m.terms AS terms
"""
_ALIASES_OF_USER = """
MATCH (e:Entity {user_id: $user})
UNWIND [e.key] + coalesce(e.aliases, []) AS alias
MERGE (:Alias {user_id: $user, alias: alias, entity_id: e.id})
RETURN count(*) AS n
"""
_DEGREES_OF_USER = """
MATCH (e:Entity {user_id: $user})
WITH e, COUNT { (e)<-[:MENTIONS]-() } AS degree WHERE coalesce(e.degree, -1) <> degree
SET e.degree = degree
RETURN count(e) AS n
"""
_ORPHANS = [
    "MATCH (x:Lexicon) WHERE NOT EXISTS { MATCH (m:Memory {user_id: x.user_id}) } WITH x LIMIT $batch"
    " DELETE x RETURN count(x) AS n",
    "MATCH (a:Alias) WHERE NOT EXISTS { MATCH (e:Entity {id: a.entity_id}) } WITH a LIMIT $batch"
    " DELETE a RETURN count(a) AS n",
    "MATCH (t:Term) WHERE NOT EXISTS { (t)-[:POSTING]->() } WITH t LIMIT $batch DELETE t RETURN count(t) AS n",
]


def _one(rows: list[Any], key: str) -> int:
    return int(rows[0][key] or 0) if rows else 0


def plan_check(core: "_Neo4jCore") -> _Plan[list[Finding]]:
    """Findings about the database: schema, each derived index against the memories, vectors, counts."""
    out: list[Finding] = [(yield from _schema(core))]
    rows = yield _read(_POSTINGS_FOUND)
    want, found = _one(rows, "want"), _one(rows, "found")
    total = _one((yield _read(_POSTINGS_ALL)), "n")
    out.append(_compare("postings", "lexical postings (BM25)", want - found, total - found, total))
    wrong = _one((yield _read(_LEXICON_WRONG)), "wrong")
    out.append(Finding("error", "lexicon", f"{wrong:,} users' BM25 totals differ from their memories", REINDEX)
               if wrong else Finding("ok", "lexicon", "every user's BM25 totals match their active memories"))
    rows = yield _read(_ALIASES_FOUND)
    want, found = _one(rows, "want"), _one(rows, "found")
    total = _one((yield _read(_ALIASES_ALL)), "n")
    out.append(_compare("aliases", "entity aliases (lookup by name)", want - found, total - found, total))
    wrong = _one((yield _read(_DEGREES_WRONG)), "n")
    out.append(Finding("error", "degrees", f"{wrong:,} entities have a degree other than their MENTIONS edges'",
                       REINDEX) if wrong else Finding("ok", "degrees", "every entity's degree counts its MENTIONS edges"))
    out.append(_vectors((yield _read(_VECTOR_SIZES))))
    c = (yield _read(_COUNTS))[0]
    users = len((yield _read(_USERS)))
    out.append(Finding("ok", "counts", f"{users:,} users, {c['memories']:,} memories, {c['entities']:,} entities,"
                       f" {c['edges']:,} edges"))
    return out


def _compare(area: str, what: str, missing: int, extra: int, total: int) -> Finding:
    if missing or extra:
        return Finding("error", area, f"{what}: {missing:,} missing and {extra:,} stale against the memories", REINDEX)
    return Finding("ok", area, f"{total:,} {area}, consistent with the memories")


def _schema(core: "_Neo4jCore") -> _Plan[Finding]:
    def inspect() -> _Body[tuple[list[Any], Any]]:
        indexes = yield _Stmt(_SHOW_SCHEMA, {})
        meta = yield _Stmt(_META_READ, {})
        return indexes, meta[0]["version"]

    indexes, version = yield _Tx(False, inspect)
    state = {r["name"]: r["state"] for r in indexes}
    if version is not None and version != SCHEMA_VERSION:
        return Finding("error", "schema", f"schema version {version}, this ripple reads {SCHEMA_VERSION}")
    missing = sorted(n for n in _SCHEMA_NAMES if n not in state)
    if missing:
        return Finding("error", "schema", f"{len(missing)} constraint(s)/index(es) missing: {', '.join(missing[:4])}",
                       REINDEX)
    offline = sorted(n for n, s in state.items() if n.startswith("ripple_") and s != "ONLINE")
    if offline:
        return Finding("error", "schema", f"index(es) not online: {', '.join(offline)}", "wait, or " + REINDEX)
    vector = [name for name in _VECTOR_INDEX.values() if name in state]
    return Finding("ok", "schema", f"version {SCHEMA_VERSION}, {len(_SCHEMA_NAMES)} constraints and indexes online"
                   + (f", vector indexes {', '.join(vector)}" if vector else ""))


def _vectors(rows: list[Any]) -> Finding:
    dims: dict[tuple[str, str], dict[int, int]] = {}
    for r in rows:
        dims.setdefault((r["kind"], r["user"]), {})[int(r["dim"])] = int(r["n"])
    bad = {k: v for k, v in dims.items() if len(v) > 1}
    if bad:
        (kind, user), by_dim = sorted(bad.items())[0]
        sizes = ", ".join(f"{n:,} of {d}" for d, n in sorted(by_dim.items()))
        return Finding("error", "vectors", f"{len(bad)} user(s) with vectors of several dimensions; user {user!r} has"
                       f" {kind} vectors {sizes} dimensions", "delete those memories and add them again")
    every = sorted({d for v in dims.values() for d in v})
    total = sum(n for v in dims.values() for n in v.values())
    shape = "no vectors" if not every else f"{total:,} vectors of {'/'.join(map(str, every))} dimensions"
    return Finding("warn" if len(every) > 1 else "ok", "vectors", shape)


def plan_reindex(core: "_Neo4jCore", progress: Callable[[int, int], None] | None) -> _Plan[dict[str, int]]:
    """Create lost constraints and indexes, then rebuild every user's derived nodes from the memories."""

    def create() -> _Body[None]:
        for stmt in _SCHEMA:
            yield _Stmt(stmt, {})

    yield _Tx(True, create)
    yield _read("CALL db.awaitIndexes(300)")  # (in a transaction after the one that created them)
    dims: dict[str, int] = {}
    for r in (yield _read(_VECTOR_SIZES)):
        dims.setdefault({"memories": "Memory", "entities": "Entity"}[r["kind"]], int(r["dim"]))
    for label, dim in dims.items():  # a lost vector index comes back with the stored vectors' dimension
        yield from core._plan_vector_index(label, dim)
    users = sorted(r["user"] for r in (yield _read(_USERS)))
    sizes: dict[str, int] = {}
    for u in users:
        sizes[u] = _one((yield _read(_USER_MEMORIES, user=u)), "n")
    counts = {"postings": 0, "aliases": 0, "degrees": 0, "orphans": 0, "users": len(users)}
    total, done = sum(sizes.values()), 0
    for user in users:
        for stmt in _DROP_DERIVED:
            while _one((yield _write(stmt, user=user, batch=_DELETE_BATCH)), "n") >= _DELETE_BATCH:
                pass
        after = ""
        while True:
            page = yield _write(_PAGE_OF_ACTIVE, user=user, after=after, page=_PAGE)
            if not page:
                break
            after = page[-1]["id"]
            rows, totals = _posting_rows([(r["id"], user, r["terms"] or ()) for r in page])
            yield _add_postings(rows, totals)
            counts["postings"] += sum(len(r["ids"]) for r in rows)
        counts["aliases"] += _one((yield _write(_ALIASES_OF_USER, user=user)), "n")
        counts["degrees"] += _one((yield _write(_DEGREES_OF_USER, user=user)), "n")
        done += sizes[user]
        if progress is not None:
            progress(done, total)
    for stmt in _ORPHANS:
        while True:
            n = _one((yield _write(stmt, batch=_DELETE_BATCH)), "n")
            counts["orphans"] += n
            if n < _DELETE_BATCH:
                break
    return counts


def _add_postings(rows: list[dict[str, Any]], totals: list[dict[str, Any]]) -> _Tx:
    def body() -> _Body[None]:
        yield from _bump(sorted({t["user"] for t in totals}))  # (the totals change the Lexicon node it locks)
        yield _Stmt(_ADD_POSTINGS, {"rows": rows})
        yield _Stmt(_ADD_TOTALS, {"rows": totals})

    return _Tx(True, body)
