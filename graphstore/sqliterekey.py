"""Rewriting the embedded store's edges under keys that start with the user (schema version 5 -> 6).

Why: up to version 5 the edges were keyed ``(src, type, dst, predicate)`` and
walked backwards through an index led by ``dst``.  Memory ids are time-ordered
and entity ids are hashes, so one user's edges were spread over the whole
file, and each of a recall's ~20 point lookups descended a B-tree that holds
every user's edges: at ten times the users it is one level deeper, and one
user's recall read more pages (issue 18, "Many users").  Keyed
``(user_id, src, type, dst, predicate)`` a user's edges are one range of the
tree, so a lookup touches the user's own pages.

How: SQLite cannot change a table's primary key in place, so the rows are
copied into a new table in key order, the old table is dropped and the new
one renamed, all inside the open's schema transaction (``BEGIN IMMEDIATE``):
a crash at any point leaves the version 5 store as it was, and the next open
starts over.  The copy goes a batch of users at a time so that a big store
reports its progress on the ``graphstore.sqlite`` logger (a warning, so that
a CLI user sees it on stderr without configuring logging).
"""

from __future__ import annotations

import logging
import sqlite3
import time
from typing import Callable, Sequence

__all__ = ["rekey_edges"]

_log = logging.getLogger("graphstore.sqlite")
_USERS_PER_STEP = 200
_LOUD_FROM = 100_000  # edges: a store this large says what it is doing (smaller ones take under a second)
_COLUMNS = "src, type, dst, predicate, user_id, weight, evidence, at"


def rekey_edges(db: sqlite3.Connection, edges_table: str, indexes: Sequence[str] = (), *,
                progress: Callable[[int, int], None] | None = None) -> int:
    """Copy ``edges`` into a table defined by ``edges_table`` (its body: columns and key), swap them, and
    create ``indexes`` (statements) on the new one.

    Runs inside the caller's transaction; returns the number of edges copied.
    ``progress(done, total)`` is called after each batch of users.
    """
    total = int(db.execute("SELECT count(*) FROM edges").fetchone()[0])
    loud = total >= _LOUD_FROM
    started = time.monotonic()
    if loud:
        _log.warning("migrating the store to schema version 6: rewriting %s edges under per-user keys"
                     " (once; the store is locked meanwhile)", f"{total:,}")
    db.execute("DROP TABLE IF EXISTS edges_by_user")  # (left by nothing: a crash rolls the transaction back)
    db.execute(f"CREATE TABLE edges_by_user {edges_table}")
    users = [r[0] for r in db.execute("SELECT DISTINCT user_id FROM edges ORDER BY 1")]
    done, next_report = 0, 0.1
    for i in range(0, len(users), _USERS_PER_STEP):
        step = users[i : i + _USERS_PER_STEP]
        done += db.execute(
            f"INSERT INTO edges_by_user ({_COLUMNS}) SELECT {_COLUMNS} FROM edges"
            f" WHERE user_id BETWEEN ? AND ? ORDER BY user_id, src, type, dst, predicate",
            (step[0], step[-1]),
        ).rowcount
        if progress is not None:
            progress(done, total)
        if loud and total and done / total >= next_report and done < total:
            _log.warning("schema version 6: %d %% of the edges rewritten (%.0f s)", 100 * done // total,
                         time.monotonic() - started)
            next_report = done / total + 0.1
    if done != total:  # (the transaction holds the write lock: nothing else can have changed the table)
        raise sqlite3.DatabaseError(f"rewrote {done} of {total} edges; the store is left at version 5")
    if loud:
        _log.warning("schema version 6: edges copied (%.0f s); dropping the old table", time.monotonic() - started)
    db.execute("DROP TABLE edges")
    db.execute("ALTER TABLE edges_by_user RENAME TO edges")
    for stmt in indexes:
        if loud:
            _log.warning("schema version 6: %s (%.0f s)", " ".join(stmt.split()[:6]), time.monotonic() - started)
        db.execute(stmt)
    if loud:
        _log.warning("schema version 6: %s edges rewritten in %.0f s", f"{total:,}", time.monotonic() - started)
    return done
