"""Checking the embedded store and rebuilding what it derives from the memories (``ripple doctor``/``reindex``).

The memories, entities and edges tables are the truth.  Beside them the store
keeps indexes that make recall fast and that a write keeps in step within its
transaction: lexical postings, document frequencies and totals (BM25), alias
rows (entity lookup by name), each entity's degree (hub damping) and, in
memory, per-user vector caches.  Each of them is written here once as SQL over
the truth (``_EXPECTED``), which serves twice: :func:`check` counts the rows
where a derived table and its expectation differ (``EXCEPT`` both ways), and
:func:`rebuild_user` replaces one user's rows by the expectation.  So the
check and the repair cannot disagree about what "consistent" means.

Everything here takes an open connection; the store holds its lock around it.
"""

from __future__ import annotations

import sqlite3
from functools import partial
from typing import Callable, Iterable, Sequence

from .protocol import ACTIVE
from .records import EDGE_MENTIONS, Finding
from .vectors import VectorIndex

__all__ = ["check", "rebuild_user", "drop_orphans", "DERIVED"]

REINDEX = "ripple reindex"

# derived table -> (its rows, the rows the truth implies); {user} is replaced by a filter on one user or nothing
_EXPECTED: dict[str, tuple[str, str]] = {
    "postings": (
        "SELECT user_id, term, memory_id, tf, doc_len FROM postings{where_user}",
        "SELECT m.user_id, j.value, m.id, count(*), m.doc_len FROM memories m, json_each(m.terms) j"
        f" WHERE m.status = '{ACTIVE}'{{and_m_user}} GROUP BY m.id, j.value",
    ),
    "term_df": (
        "SELECT user_id, term, df FROM term_df{where_user}",
        "SELECT m.user_id, j.value, count(DISTINCT m.id) FROM memories m, json_each(m.terms) j"
        f" WHERE m.status = '{ACTIVE}'{{and_m_user}} GROUP BY m.user_id, j.value",
    ),
    "lexical_totals": (
        "SELECT user_id, n_docs, total_len FROM lexical_totals WHERE (n_docs <> 0 OR total_len <> 0){and_user}",
        f"SELECT user_id, count(*), sum(doc_len) FROM memories WHERE status = '{ACTIVE}'{{and_user}} GROUP BY user_id",
    ),
    "aliases": (
        "SELECT user_id, alias, entity_id FROM aliases{where_user}",
        "SELECT user_id, key, id FROM entities{where_user}"
        " UNION SELECT e.user_id, j.value, e.id FROM entities e, json_each(e.aliases) j{where_e_user}",
    ),
}
DERIVED = (*_EXPECTED, "degrees")

_DEGREE_OF = ("(SELECT count(*) FROM edges x WHERE x.user_id = entities.user_id AND x.dst = entities.id"
              f" AND x.type = '{EDGE_MENTIONS}')")
_WHAT = {
    "postings": "lexical postings (BM25)",
    "term_df": "document frequencies (BM25)",
    "lexical_totals": "lexical totals (BM25)",
    "aliases": "entity aliases (lookup by name)",
}


def _sql(template: str, user: str | None) -> str:
    one = user is not None
    return template.format(
        where_user=" WHERE user_id = :user" if one else "",
        and_user=" AND user_id = :user" if one else "",
        and_m_user=" AND m.user_id = :user" if one else "",
        where_e_user=" WHERE e.user_id = :user" if one else "",
    )


def _differences(db: sqlite3.Connection, table: str) -> tuple[int, int]:
    """``(rows missing from the table, rows it has that the memories do not imply)``."""
    actual, expected = (_sql(q, None) for q in _EXPECTED[table])
    # (each side in its own sub-select: compound operators chain left to right, and aliases' is a UNION)
    def count(a: str, b: str) -> int:
        return int(db.execute(f"SELECT count(*) FROM (SELECT * FROM ({a}) EXCEPT SELECT * FROM ({b}))").fetchone()[0])

    return count(expected, actual), count(actual, expected)


def check(
    db: sqlite3.Connection,
    *,
    path: object,
    tables: Sequence[str],
    indexes: Sequence[str],
    schema_version: int,
    caches: dict[str, VectorIndex],
) -> list[Finding]:
    """Findings about a store, read in one snapshot (a read transaction) of ``db``."""
    out: list[Finding] = []
    have_tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    have_indexes = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}

    rows = [r[0] for r in db.execute("PRAGMA integrity_check(10)")]
    if rows == ["ok"]:
        out.append(Finding("ok", "integrity", f"{path}: SQLite integrity_check passed"))
    else:
        out.append(Finding("error", "integrity", "; ".join(rows), "restore from a backup or an export"))

    out.append(_schema(db, have_tables, have_indexes, tables, indexes, schema_version))
    primary_ok = {"memories", "entities", "edges"} <= have_tables
    for table in _EXPECTED:
        if table not in have_tables:
            out.append(Finding("error", table, f"the {_WHAT[table]} table is missing", REINDEX))
        elif primary_ok:
            out.append(_guarded(table, partial(_derived, db, table)))
    if primary_ok:
        out.append(_guarded("degrees", lambda: _degrees(db)))
        out.append(_guarded("vectors", lambda: _vectors(db)))
        out.append(_guarded("vector caches", lambda: _caches(db, caches)))
        out.append(_guarded("edges", lambda: _dangling(db)))
        out.append(_guarded("counts", lambda: _counts(db)))
    return out


def _guarded(area: str, finding: Callable[[], Finding]) -> Finding:
    """A finding, or an error finding if reading the area failed (a damaged row, a corrupt page)."""
    try:
        return finding()
    except sqlite3.Error as exc:
        return Finding("error", area, f"cannot be read: {exc}", "ripple doctor after a restore")


def _schema(db: sqlite3.Connection, have_tables: set[str], have_indexes: set[str], tables: Sequence[str],
            indexes: Sequence[str], schema_version: int) -> Finding:
    lost = [t for t in tables if t not in have_tables and t not in _EXPECTED and t != "documents"]
    if lost:
        return Finding("error", "schema", f"table(s) {', '.join(lost)} lost: their data is gone",
                       "restore from a backup or an export")
    version = None
    if "meta" in have_tables:
        row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = None if row is None else row[0]
    if str(version) != str(schema_version):
        return Finding("error", "schema", f"schema version {version!r}, this ripple reads {schema_version}",
                       "open the store with ripple once to migrate it" if str(version).isdigit() else "")
    no_index = [i for i in indexes if i not in have_indexes]
    if no_index:
        return Finding("warn", "schema", f"index(es) {', '.join(no_index)} missing: queries are slower", REINDEX)
    return Finding("ok", "schema", f"version {schema_version}, {len(tables)} tables, {len(indexes)} indexes")


def _derived(db: sqlite3.Connection, table: str) -> Finding:
    missing, extra = _differences(db, table)
    if missing or extra:
        return Finding("error", table, f"{_WHAT[table]}: {missing:,} rows missing and {extra:,} stale"
                       " against the memories", REINDEX)
    n = db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    return Finding("ok", table, f"{n:,} rows, consistent with the memories")


def _degrees(db: sqlite3.Connection) -> Finding:
    wrong = db.execute(f"SELECT count(*) FROM entities WHERE degree <> {_DEGREE_OF}").fetchone()[0]
    if wrong:
        return Finding("error", "degrees", f"{wrong:,} entities have a degree other than their MENTIONS edges'",
                       REINDEX)
    return Finding("ok", "degrees", "every entity's degree counts its MENTIONS edges")


def _vectors(db: sqlite3.Connection) -> Finding:
    """Every user's vectors must share one dimension (a search over mixed ones fails for good)."""
    dims: dict[str, dict[int, int]] = {}
    for table in ("memories", "entities"):
        for user, nbytes, n in db.execute(
            f"SELECT user_id, length(embedding), count(*) FROM {table} WHERE embedding IS NOT NULL"
            " GROUP BY user_id, length(embedding)"
        ):
            dims.setdefault(f"{table}:{user}", {})[int(nbytes)] = int(n)
    bad = {k: v for k, v in dims.items() if len(v) > 1 or any(b % 4 for b in v)}
    if bad:
        key, by_size = sorted(bad.items())[0]
        table, user = key.split(":", 1)
        sizes = ", ".join(f"{n:,} of {b / 4:g}" for b, n in sorted(by_size.items()))
        rare = min(by_size, key=lambda b: by_size[b])
        ids = [r[0] for r in db.execute(
            f"SELECT id FROM {table} WHERE user_id = ? AND length(embedding) = ? LIMIT 5", (user, rare))]
        return Finding("error", "vectors", f"{len(bad)} user(s) with vectors of several dimensions; user {user!r}"
                       f" has {table} vectors {sizes} dimensions (e.g. {', '.join(ids)})",
                       "delete those memories and add them again")
    every = sorted({b // 4 for v in dims.values() for b in v})
    total = sum(n for v in dims.values() for n in v.values())
    shape = "no vectors" if not every else f"{total:,} vectors of {'/'.join(map(str, every))} dimensions"
    return Finding("warn" if len(every) > 1 else "ok", "vectors",
                   shape + (" (users written with different embedders)" if len(every) > 1 else ""))


def _caches(db: sqlite3.Connection, caches: dict[str, VectorIndex]) -> Finding:
    """This process's loaded vector caches against the rows they mirror."""
    stale = []
    for user, cache in sorted(caches.items()):
        rows = set(db.execute("SELECT id, status FROM memories WHERE user_id = ? AND embedding IS NOT NULL", (user,)))
        if set(cache.rows()) != rows:
            stale.append(user)
    if stale:
        return Finding("error", "vector caches", f"{len(stale)} of {len(caches)} loaded caches differ from the"
                       f" rows (users {', '.join(map(repr, stale[:5]))})", "reopen the store")
    return Finding("ok", "vector caches", f"{len(caches)} loaded in this process, all current")


def _dangling(db: sqlite3.Connection) -> Finding:
    n = db.execute(
        "SELECT count(*) FROM edges e WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = e.src)"
        " AND NOT EXISTS (SELECT 1 FROM entities x WHERE x.id = e.src)"
    ).fetchone()[0] + db.execute(
        "SELECT count(*) FROM edges e WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = e.dst)"
        " AND NOT EXISTS (SELECT 1 FROM entities x WHERE x.id = e.dst)"
    ).fetchone()[0]
    if n:
        return Finding("warn", "edges", f"{n:,} edge ends point at no memory or entity (recall skips them)")
    return Finding("ok", "edges", "every edge joins two stored nodes")


def _counts(db: sqlite3.Connection) -> Finding:
    users = db.execute("SELECT count(*) FROM (SELECT user_id FROM memories UNION SELECT user_id FROM entities)")
    by_status = dict(db.execute("SELECT status, count(*) FROM memories GROUP BY status").fetchall())
    entities = db.execute("SELECT count(*) FROM entities").fetchone()[0]
    edges = db.execute("SELECT count(*) FROM edges").fetchone()[0]
    parts = ", ".join(f"{n:,} {s}" for s, n in sorted(by_status.items()))
    return Finding("ok", "counts", f"{users.fetchone()[0]:,} users, {sum(by_status.values()):,} memories"
                   f" ({parts or 'none'}), {entities:,} entities, {edges:,} edges")


def rebuild_user(db: sqlite3.Connection, user: str) -> dict[str, int]:
    """Replace one user's derived rows by what their memories, entities and edges imply."""
    args = {"user": user}
    counts: dict[str, int] = {}
    for table, (_, expected) in _EXPECTED.items():
        db.execute(f"DELETE FROM {table} WHERE user_id = :user", args)
        verb = "INSERT OR IGNORE" if table == "aliases" else "INSERT"
        counts[table] = db.execute(f"{verb} INTO {table} {_sql(expected, user)}", args).rowcount
    counts["degrees"] = db.execute(
        f"UPDATE entities SET degree = {_DEGREE_OF} WHERE user_id = :user AND degree <> {_DEGREE_OF}", args
    ).rowcount
    return counts


def drop_orphans(db: sqlite3.Connection, users: Iterable[str]) -> int:
    """Delete derived rows of users who have no memory and no entity left; how many."""
    db.execute("CREATE TEMP TABLE IF NOT EXISTS _keep (user_id TEXT PRIMARY KEY)")
    db.execute("DELETE FROM _keep")
    db.executemany("INSERT OR IGNORE INTO _keep VALUES (?)", [(u,) for u in users])
    n = 0
    for table in _EXPECTED:
        n += db.execute(f"DELETE FROM {table} WHERE user_id NOT IN (SELECT user_id FROM _keep)").rowcount
    db.execute("DROP TABLE _keep")
    return n
