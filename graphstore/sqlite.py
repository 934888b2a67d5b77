"""The embedded default store: SQLite as the durable truth, numpy for vectors.

Why SQLite (measured on a graph of 150k nodes / 500k edges on 2 busy cores,
see issue #2 and ``benchmarks/RESULTS.md``):

* one-hop expansion of 50 memories takes ~1 ms and of 50 entities ~24 ms as one
  ``IN (...)`` query each way over an edges table keyed ``(src, type, dst)``
  with a covering index on ``(dst, type, src, weight, predicate, user_id)``; a full 3-hop recall
  ~72 ms; opening the file ~1 ms (since schema version 6 both keys start with ``user_id``, so that
  one user's edges sit together and a recall does not read more pages as other users are added);
* loading the same graph into networkx expands slightly faster but costs
  7-13 s and 300-600 MB on every open, which a CLI that opens the store per
  command cannot afford;
* embedded Cypher engines (Kùzu/LadybugDB, FalkorDB-lite) were 20-50x slower
  on expansion and writes, and lacked offline vector and full-text indexes.

Durability: WAL journal; each :meth:`SQLiteStore.write` is one ``BEGIN
IMMEDIATE`` transaction, so a crash (even SIGKILL) mid-batch leaves either
the whole batch or none of it, and everything acknowledged stays.  With the
default ``synchronous=NORMAL`` a power cut may lose the last transactions;
pass ``synchronous="FULL"`` to rule that out at ~1 ms per write.

Threads: one connection guarded by a re-entrant lock; SQLite serialises
writers anyway, and the per-user vector caches must change atomically with
the rows they mirror.  Other processes may write to the same file: the caches
are dropped whenever ``PRAGMA data_version`` says another connection committed,
checked before every read and inside every write transaction (see :meth:`SQLiteStore._tx`;
``tests/faults/test_coherence.py`` drives three processes through random schedules).

Vectors: sentence embeddings are kept per user in a :class:`~graphstore.vectors.VectorIndex`
(normalised float32 rows in memory), loaded on the first vector search for
that user and updated in place on writes.  Brute force keeps this store
index-free: ~4 ms over 50k rows; from 50k rows a float16 scan with exact
float32 rescoring halves the bytes read (~34 ms at 1M rows).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import threading
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from ripple.errors import RippleError, SchemaError, StoreDamaged, StoreError, StoreUnavailable

from . import sqlitefile, sqlitemaint, sqliterekey
from .protocol import ACTIVE
from .records import (
    DocumentRecord,
    EDGE_MENTIONS,
    EDGE_RELATED,
    EDGE_TYPES,
    EdgeRecord,
    EntityRecord,
    Finding,
    StoredMemory,
    Neighbor,
    WriteBatch,
    UserState,
)
from .vectors import VectorIndex

if TYPE_CHECKING:
    import numpy as np

__all__ = ["SQLiteStore", "SCHEMA_VERSION"]

SCHEMA_VERSION = 6
_CHUNK = 900  # stay far below SQLite's host-parameter limit

# Every key of the edges (and the covering index of the entities) starts with the user: one user's rows
# sit together in the file, so a recall's point lookups descend into the user's own pages instead of pages
# shared with every other user (issue 18, "Many users"; the figures are in RELIABILITY.md).
_EDGES_TABLE = """(
    src TEXT NOT NULL,
    type TEXT NOT NULL,
    dst TEXT NOT NULL,
    predicate TEXT NOT NULL DEFAULT '',
    user_id TEXT NOT NULL,
    weight REAL NOT NULL,
    evidence TEXT,
    at REAL,
    PRIMARY KEY (user_id, src, type, dst, predicate)
) WITHOUT ROWID"""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS memories (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    agent_id TEXT,
    session_id TEXT,
    text TEXT NOT NULL,
    at REAL NOT NULL,
    created_at REAL NOT NULL,
    kind TEXT NOT NULL,
    importance REAL NOT NULL,
    status TEXT NOT NULL,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_access REAL,
    metadata TEXT NOT NULL,
    language TEXT NOT NULL,
    confidence REAL NOT NULL DEFAULT 1.0,
    mentions INTEGER NOT NULL DEFAULT 1,
    last_seen REAL,
    valid_to REAL,
    pinned INTEGER NOT NULL DEFAULT 0,
    terms TEXT NOT NULL,
    doc_len INTEGER NOT NULL,
    embedding BLOB,
    token_vectors BLOB,
    multilingual BLOB
);
CREATE INDEX IF NOT EXISTS memories_user_at ON memories (user_id, at, created_at);
CREATE INDEX IF NOT EXISTS memories_session ON memories (user_id, session_id, at, created_at);
CREATE INDEX IF NOT EXISTS memories_multilingual ON memories (user_id) WHERE multilingual IS NOT NULL;
CREATE TABLE IF NOT EXISTS entities (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    name TEXT NOT NULL,
    key TEXT NOT NULL,
    label TEXT NOT NULL,
    aliases TEXT NOT NULL DEFAULT '[]',
    degree INTEGER NOT NULL DEFAULT 0,
    embedding BLOB
);
CREATE INDEX IF NOT EXISTS entities_user_key ON entities (user_id, key);
CREATE INDEX IF NOT EXISTS entities_user_id ON entities (user_id, id, degree, label, name);
CREATE TABLE IF NOT EXISTS aliases (
    user_id TEXT NOT NULL, alias TEXT NOT NULL, entity_id TEXT NOT NULL,
    PRIMARY KEY (user_id, alias, entity_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS edges {edges_table};
CREATE INDEX IF NOT EXISTS edges_dst ON edges (user_id, dst, type, src, weight, predicate);
CREATE INDEX IF NOT EXISTS edges_user_type ON edges (user_id, type);
DROP INDEX IF EXISTS edges_user;
CREATE INDEX IF NOT EXISTS edges_predicate ON edges (user_id, src, predicate) WHERE type = 'RELATED';
CREATE TABLE IF NOT EXISTS postings (
    user_id TEXT NOT NULL, term TEXT NOT NULL, memory_id TEXT NOT NULL, tf INTEGER NOT NULL,
    doc_len INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, term, memory_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS postings_memory ON postings (memory_id);
CREATE TABLE IF NOT EXISTS term_df (
    user_id TEXT NOT NULL, term TEXT NOT NULL, df INTEGER NOT NULL,
    PRIMARY KEY (user_id, term)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS lexical_totals (
    user_id TEXT PRIMARY KEY, n_docs INTEGER NOT NULL, total_len INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS documents (
    user_id TEXT NOT NULL, key TEXT NOT NULL, version INTEGER NOT NULL, value TEXT NOT NULL, updated_at REAL NOT NULL,
    PRIMARY KEY (user_id, key)
) WITHOUT ROWID;
""".replace("{edges_table}", _EDGES_TABLE)

_MEMORY_COLUMNS = (
    "id, user_id, agent_id, session_id, text, at, created_at, kind, importance, status, "
    "access_count, last_access, metadata, language, terms, confidence, mentions, last_seen, valid_to, pinned"
)
_N_MEMORY_COLUMNS = 20  # (vector columns, when read, follow)
_VECTOR_COLUMNS = "embedding, token_vectors, multilingual"  # (in StoredMemory's order)

# (the indexes that migration 5 -> 6 builds on the rekeyed edges, and the entities' covering one, reporting each)
_REKEYED_INDEXES: tuple[str, ...] = tuple(stmt.strip() for stmt in _SCHEMA.split(";")
                         if re.search(r"INDEX IF NOT EXISTS (edges_|entities_user_id)", stmt))

# Version 1 -> 2 added the lifecycle columns (issue #5); their defaults describe an old memory exactly.
# Version 2 -> 3 copies each memory's length into its postings: BM25 needs it for every posting, and
# joining memories for it cost 67 ms against 10 ms for 10k postings at 100k memories.
# Version 3 -> 4 makes the index that walks edges backwards (entity -> the memories that mention it)
# cover every column expand() reads: without predicate and user_id each row cost a lookup in the
# edges table (2.3k rows: 8-11 ms against 2.3 ms at 100k memories).
# Indexes need no version: every open creates the missing ones (and drops the replaced ones) in its
# schema transaction.  edges_user_type replaced edges_user (user_id alone): listing one edge type of a
# user (its open conflicts) read every edge of that user, 49 ms for 576 CONFLICTS among 51k edges.
_Migration = str | Callable[[sqlite3.Connection], object]  # a statement, or a function run in the transaction
_MIGRATIONS: dict[int, list[_Migration]] = {
    1: [
        "ALTER TABLE memories ADD COLUMN confidence REAL NOT NULL DEFAULT 1.0",
        "ALTER TABLE memories ADD COLUMN mentions INTEGER NOT NULL DEFAULT 1",
        "ALTER TABLE memories ADD COLUMN last_seen REAL",
        "ALTER TABLE memories ADD COLUMN valid_to REAL",
        "ALTER TABLE memories ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0",
    ],
    2: [
        "ALTER TABLE postings ADD COLUMN doc_len INTEGER NOT NULL DEFAULT 0",
        "UPDATE postings SET doc_len = (SELECT m.doc_len FROM memories m WHERE m.id = postings.memory_id)",
    ],
    3: [
        "DROP INDEX IF EXISTS edges_dst",
        "CREATE INDEX edges_dst ON edges (dst, type, src, weight, predicate, user_id)",
    ],
    # Version 4 -> 5 adds each memory's multilingual vector (CJK memories only; NULL for the rest, which
    # is what every memory written before it is): the partial index keeps the probe for it cheap.
    4: [
        "ALTER TABLE memories ADD COLUMN multilingual BLOB",
    ],
    # Version 5 -> 6 keys the edges by user first (see _EDGES_TABLE and graphstore.sqliterekey); the
    # migration builds the indexes led by the user itself, so that a big store reports each build (the
    # schema statements that follow every migration then find them).
    5: [
        lambda db: sqliterekey.rekey_edges(db, _EDGES_TABLE, _REKEYED_INDEXES),
    ],
}


_PRIMARY_TABLES = ("meta", "memories", "entities", "edges")  # what the user wrote: lost if lost
_DERIVED_TABLES = ("postings", "term_df", "lexical_totals", "aliases")  # rebuilt from them by reindex()
# (``documents`` is neither: stores written before it existed gain it on open)
_META_INSERT = f"INSERT INTO meta VALUES ('schema_version', '{SCHEMA_VERSION}')"
_LOCK_WAIT = 30.0  # seconds a write waits for another connection's lock before StoreUnavailable
_TOUCH_WAIT = 1.0  # ... and a touch (a recall's access count is not worth a long wait)


_SCHEMA_TABLES = tuple(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", _SCHEMA))
_SCHEMA_INDEXES = tuple(re.findall(r"CREATE INDEX IF NOT EXISTS (\w+)", _SCHEMA))


def _schema_statements() -> list[str]:
    return [stmt for stmt in _SCHEMA.split(";") if stmt.strip()]


def _chunks(seq: Sequence[str], size: int = _CHUNK) -> Iterator[Sequence[str]]:
    for i in range(0, len(seq), size):
        yield seq[i : i + size]


def _qmarks(n: int) -> str:
    return ",".join("?" * n)


def store_file(path: str | os.PathLike[str]) -> Path:
    """The database file of a store path: the path itself if it names a ``.db``/``.sqlite`` file, else
    ``ripple.db`` in that folder."""
    p = Path(path).expanduser()
    return p if p.suffix in {".db", ".sqlite", ".sqlite3"} else p / "ripple.db"


class SQLiteStore:
    """Embedded graph store in one SQLite file.

    Parameters
    ----------
    path:
        Folder (``ripple.db`` is created in it) or a ``.db``/``.sqlite`` file
        path, or ``":memory:"`` for a throw-away store.
    create:
        With ``False`` a store that does not exist yet is an error naming the
        path, instead of a new empty store (a typo must not look like lost memories).
    synchronous:
        SQLite ``synchronous`` pragma: ``"NORMAL"`` (default, crash-safe) or
        ``"FULL"`` (also power-loss safe).
    maintenance:
        Open an existing store as it is, even damaged (nothing is created or
        migrated), for :meth:`check` and :meth:`reindex`.
    """

    in_process = True
    """Reads run in this process and hold the GIL (see :class:`graphstore.GraphStore`)."""

    def __init__(self, path: str | os.PathLike[str] = ":memory:", *, synchronous: str = "NORMAL",
                 create: bool = True, maintenance: bool = False) -> None:
        if synchronous.upper() not in {"OFF", "NORMAL", "FULL", "EXTRA"}:
            raise StoreError(f"unknown synchronous mode {synchronous!r}")
        if str(path) == ":memory:":
            self.path: Path | None = None
            target = ":memory:"
        else:
            p = store_file(path)
            self.path = p
            target = str(p)
            if p.exists():
                sqlitefile.check_file(p)
            elif not create or maintenance:
                raise StoreUnavailable(f"no ripple store at {p} (a command that writes creates one)")
            else:
                try:
                    p.parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise StoreUnavailable(f"cannot create store folder {p.parent}: {exc}") from exc
                sqlitefile.create(p, [*_schema_statements(), _META_INSERT])
        self.uri = f"sqlite://{target}"
        self.maintenance = maintenance
        self._lock = threading.RLock()
        self._vectors: dict[str, VectorIndex] = {}
        self._entity_vectors: dict[str, VectorIndex] = {}
        self._multilingual: dict[str, VectorIndex | None] = {}  # user -> its multilingual vectors (None: none)
        self._data_version = -1  # PRAGMA data_version when the caches were last known current
        try:
            self._db = sqlite3.connect(target, check_same_thread=False, isolation_level=None, timeout=_LOCK_WAIT)
        except sqlite3.Error as exc:
            raise sqlitefile.ripple_error(exc, target) from exc
        self._closed = False
        try:
            with self._errors():
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute(f"PRAGMA synchronous={synchronous.upper()}")
                self._db.execute("PRAGMA foreign_keys=OFF")
                self._db.execute("PRAGMA temp_store=MEMORY")
                self._db.execute("PRAGMA cache_size=-65536")
            if not maintenance:  # (a maintenance open takes the store as it is: check() says what is wrong)
                with self._tx() as db:
                    self._open_schema(db, target)
        except BaseException:
            self.close()
            raise

    def _open_schema(self, db: sqlite3.Connection, target: str) -> None:
        """Check the tables, migrate an older store, create what a newer ripple added (in one transaction)."""
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables and not tables & {"meta", "memories"}:
            raise SchemaError(f"{target} is an SQLite database of something else, not a ripple store")
        if tables:  # an existing store: a lost table is damage, never silently recreated empty
            lost = [t for t in _PRIMARY_TABLES if t not in tables]
            if lost:
                raise StoreDamaged(f"{target} has lost its {', '.join(lost)} table(s): the data in them is gone;"
                                   " restore the store from a backup or an export")
            lost = [t for t in _DERIVED_TABLES if t not in tables]
            if lost:
                raise StoreDamaged(f"{target} has lost its {', '.join(lost)} table(s), indexes derived from the"
                                   " memories: `ripple reindex` rebuilds them (`ripple doctor` checks the store)")
        row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() if tables else None
        if tables and row is None:
            raise StoreDamaged(f"{target} has no schema version in its meta table; `ripple doctor` checks the store")
        raw = row[0] if row else SCHEMA_VERSION
        try:
            version = int(raw)
        except (TypeError, ValueError):
            raise SchemaError(f"{target} has schema version {raw!r}, not a number") from None
        while version in _MIGRATIONS:  # an older store: bring it up to date in this transaction
            for step in _MIGRATIONS[version]:
                if isinstance(step, str):
                    db.execute(step)
                else:
                    step(db)
            version += 1
            db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(version),))
        if version != SCHEMA_VERSION:
            raise SchemaError(f"{target} has schema version {version}, this ripple reads version {SCHEMA_VERSION}")
        for stmt in _schema_statements():  # indexes SQLite rebuilds from the rows, and tables added since
            db.execute(stmt)
        if row is None:
            db.execute(_META_INSERT)

    # -- plumbing -------------------------------------------------------------
    def __repr__(self) -> str:
        return f"SQLiteStore({self.uri!r})"

    def __enter__(self) -> "SQLiteStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _tx(self, *, wait: float = _LOCK_WAIT) -> Iterator[sqlite3.Connection]:
        """One IMMEDIATE transaction under the store lock; rolled back on any error.

        ``wait``: seconds to wait for another connection's write lock before
        :class:`~ripple.errors.StoreUnavailable`.

        The caches are checked against other connections' commits *inside* the
        transaction, where this connection holds the write lock: no other commit
        can land between that check and this commit, and a connection's own
        commits leave ``PRAGMA data_version`` unchanged, so the value read here
        stays this connection's view of the store after it commits.  (Reading it
        after the commit instead counted a commit another process made in
        between as seen, and this process's caches then missed it: issue 18.)
        """
        with self._lock, self._errors():
            if wait != _LOCK_WAIT:
                self._db.execute(f"PRAGMA busy_timeout={int(wait * 1000)}")
            try:
                self._db.execute("BEGIN IMMEDIATE")
            finally:
                if wait != _LOCK_WAIT:
                    self._db.execute(f"PRAGMA busy_timeout={int(_LOCK_WAIT * 1000)}")
            try:
                self._check_external_writes()
                yield self._db
                self._db.execute("COMMIT")
            except BaseException:
                # (a COMMIT that failed, say on a full disk, can leave the transaction open)
                if self._db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        self._db.execute("ROLLBACK")
                self._drop_caches()  # the body may have updated them for rows that are not stored
                raise

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._errors():
            self._check_external_writes()
            yield self._db

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise sqlitefile.ripple_error(exc, self.path or ":memory:") from exc
        except RippleError:
            raise
        except (ValueError, OverflowError, UnicodeError) as exc:  # a stored value this code cannot read back
            raise StoreError(f"damaged data in {self.uri}: {type(exc).__name__}: {exc}") from exc

    def _current_data_version(self) -> int:
        return int(self._db.execute("PRAGMA data_version").fetchone()[0])

    def _check_external_writes(self) -> None:
        version = self._current_data_version()
        if version != self._data_version:  # another connection committed: caches are stale
            self._drop_caches()
            self._data_version = version

    def _drop_caches(self) -> None:
        self._vectors.clear()
        self._entity_vectors.clear()
        self._multilingual.clear()

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                with contextlib.suppress(sqlite3.Error):
                    self._db.close()

    # -- writes -----------------------------------------------------------------
    def write(self, batch: WriteBatch, *, replace_mentions_of: Sequence[str] = ()) -> None:
        if not batch and not replace_mentions_of:
            return
        if len({m.id for m in batch.memories}) < len(batch.memories):  # the last record of an id wins
            batch = WriteBatch(list({m.id: m for m in batch.memories}.values()), batch.entities, batch.edges)
        touched_users = {m.user_id for m in batch.memories} | {e.user_id for e in batch.entities}
        with self._tx() as db:
            degree_delta: Counter[str] = Counter()
            for user, ids in self._owners(db, replace_mentions_of).items():
                for chunk in _chunks(ids):
                    where = f"user_id=? AND src IN ({_qmarks(len(chunk))}) AND type=?"
                    rows = db.execute(f"SELECT dst FROM edges WHERE {where}", (user, *chunk, EDGE_MENTIONS)).fetchall()
                    degree_delta.subtract(r[0] for r in rows)
                    db.execute(f"DELETE FROM edges WHERE {where}", (user, *chunk, EDGE_MENTIONS))
            if batch.memories:
                self._remove_postings(db, [m.id for m in batch.memories])
                db.executemany(
                    f"INSERT OR REPLACE INTO memories ({_MEMORY_COLUMNS}, doc_len, {_VECTOR_COLUMNS})"
                    f" VALUES ({_qmarks(_N_MEMORY_COLUMNS + 4)})",
                    [
                        (
                            m.id, m.user_id, m.agent_id, m.session_id, m.text, m.at, m.created_at, m.kind,
                            m.importance, m.status, m.access_count, m.last_access, m.metadata_json, m.language,
                            json.dumps(list(m.terms), ensure_ascii=False), m.confidence, m.mentions, m.last_seen,
                            m.valid_to, int(m.pinned), len(m.terms), m.embedding, m.token_vectors, m.multilingual,
                        )
                        for m in batch.memories
                    ],
                )
                self._add_postings(db, [m for m in batch.memories if m.status == ACTIVE])
            for e in batch.entities:
                row = db.execute("SELECT aliases FROM entities WHERE id=?", (e.id,)).fetchone()
                aliases = list(dict.fromkeys([*(json.loads(row[0]) if row else []), *e.aliases]))
                if row is None:
                    db.execute(
                        "INSERT INTO entities (id, user_id, name, key, label, aliases, degree, embedding)"
                        " VALUES (?,?,?,?,?,?,0,?)",
                        (e.id, e.user_id, e.name, e.key, e.label, json.dumps(aliases, ensure_ascii=False),
                         e.embedding),
                    )
                else:
                    db.execute(
                        "UPDATE entities SET aliases=?, embedding=COALESCE(?, embedding) WHERE id=?",
                        (json.dumps(aliases, ensure_ascii=False), e.embedding, e.id),
                    )
                db.executemany(
                    "INSERT OR IGNORE INTO aliases VALUES (?,?,?)",
                    [(e.user_id, a, e.id) for a in {e.key, *aliases}],
                )
            if batch.edges:
                degree_delta.update(self._new_mentions(db, batch.edges))
                db.executemany(
                    "INSERT INTO edges (src, type, dst, predicate, user_id, weight, evidence, at)"
                    " VALUES (?,?,?,?,?,?,?,?)"
                    " ON CONFLICT (user_id, src, type, dst, predicate) DO UPDATE SET"
                    "  weight = CASE WHEN excluded.type = 'RELATED' THEN edges.weight + excluded.weight"
                    "           ELSE excluded.weight END,"
                    "  evidence = COALESCE(excluded.evidence, edges.evidence),"
                    "  at = COALESCE(excluded.at, edges.at)",
                    [(x.src, x.type, x.dst, x.predicate, x.user_id, x.weight, x.evidence, x.at)
                     for x in batch.edges],
                )
            self._adjust_degrees(db, degree_delta)
            self._update_vector_caches(batch, touched_users)  # (dropped again if the commit fails)

    @staticmethod
    def _owners(db: sqlite3.Connection, memory_ids: Sequence[str]) -> dict[str, list[str]]:
        """The stored ones of ``memory_ids`` by their user (every key of the edges starts with the user).

        Ids of no stored memory are left out: a memory's edges are written with it (an edge must end
        at a stored node) and deleted with it, so such an id has no edges to find.
        """
        owners: dict[str, list[str]] = {}
        for chunk in _chunks(list(dict.fromkeys(memory_ids))):
            for mid, user in db.execute(f"SELECT id, user_id FROM memories WHERE id IN ({_qmarks(len(chunk))})", chunk):
                owners.setdefault(user, []).append(mid)
        return owners

    @staticmethod
    def _new_mentions(db: sqlite3.Connection, edges: Sequence[EdgeRecord]) -> Counter[str]:
        """Per entity, how many of ``edges`` are MENTIONS edges not stored yet (what its degree gains)."""
        wanted = {(x.user_id, x.src, x.dst, x.predicate) for x in edges if x.type == EDGE_MENTIONS}
        if not wanted:
            return Counter()
        for user in sorted({u for u, *_ in wanted}):
            for chunk in _chunks(sorted({src for u, src, _, _ in wanted if u == user})):
                wanted.difference_update((user, *r) for r in db.execute(
                    f"SELECT src, dst, predicate FROM edges WHERE user_id=? AND src IN ({_qmarks(len(chunk))})"
                    " AND type=?",
                    (user, *chunk, EDGE_MENTIONS),
                ))
        return Counter(dst for _, _, dst, _ in wanted)

    @staticmethod
    def _adjust_degrees(db: sqlite3.Connection, delta: Counter[str]) -> None:
        """Add each entity's change in MENTIONS edges to its stored degree.

        Counting instead (``SELECT count(*)`` per touched entity) read every
        edge of a hub on every write: a speaker with 500k turns cost tens of
        milliseconds per batch and made ingest slow down as a store grew.
        """
        db.executemany("UPDATE entities SET degree = degree + ? WHERE id = ?",
                       [(d, e) for e, d in sorted(delta.items()) if d])

    def _add_postings(self, db: sqlite3.Connection, memories: Sequence[StoredMemory]) -> None:
        rows: list[tuple[str, str, str, int, int]] = []
        df: Counter[tuple[str, str]] = Counter()
        totals: Counter[str] = Counter()
        counts: Counter[str] = Counter()
        for m in memories:
            tf = Counter(m.terms)
            rows.extend((m.user_id, t, m.id, c, len(m.terms)) for t, c in tf.items())
            df.update((m.user_id, t) for t in tf)
            totals[m.user_id] += len(m.terms)
            counts[m.user_id] += 1
        db.executemany("INSERT OR REPLACE INTO postings VALUES (?,?,?,?,?)", rows)
        db.executemany(
            "INSERT INTO term_df VALUES (?,?,?) ON CONFLICT (user_id, term) DO UPDATE SET df = df + excluded.df",
            [(u, t, c) for (u, t), c in df.items()],
        )
        db.executemany(
            "INSERT INTO lexical_totals VALUES (?,?,?) ON CONFLICT (user_id) DO UPDATE SET"
            " n_docs = n_docs + excluded.n_docs, total_len = total_len + excluded.total_len",
            [(u, counts[u], totals[u]) for u in counts],
        )

    def _remove_postings(self, db: sqlite3.Connection, memory_ids: Sequence[str]) -> None:
        """Undo :meth:`_add_postings` for those of the memories that are stored and active."""
        df: Counter[tuple[str, str]] = Counter()
        totals: Counter[str] = Counter()
        counts: Counter[str] = Counter()
        for chunk in _chunks(list(dict.fromkeys(memory_ids))):
            q = _qmarks(len(chunk))
            for user, n in db.execute(
                f"SELECT user_id, doc_len FROM memories WHERE id IN ({q}) AND status = ?", (*chunk, ACTIVE)
            ):
                totals[user] += n
                counts[user] += 1
            for user, term in db.execute(f"SELECT user_id, term FROM postings WHERE memory_id IN ({q})", tuple(chunk)):
                df[(user, term)] += 1
            db.execute(f"DELETE FROM postings WHERE memory_id IN ({q})", tuple(chunk))
        if df:
            db.executemany(
                "UPDATE term_df SET df = df - ? WHERE user_id = ? AND term = ?",
                [(c, u, t) for (u, t), c in df.items()],
            )
            db.execute("DELETE FROM term_df WHERE df <= 0")
        if counts:
            db.executemany(
                "UPDATE lexical_totals SET n_docs = n_docs - ?, total_len = total_len - ? WHERE user_id = ?",
                [(counts[u], totals[u], u) for u in counts],
            )

    def touch(self, memory_ids: Sequence[str], at: float) -> None:
        if not memory_ids:
            return
        with self._tx(wait=_TOUCH_WAIT) as db:
            db.executemany(
                "UPDATE memories SET access_count = access_count + 1, last_access = ? WHERE id = ?",
                [(at, mid) for mid in memory_ids],
            )

    def set_status(self, memory_ids: Sequence[str], status: str) -> int:
        changed: list[StoredMemory] = []
        with self._tx() as db:
            for chunk in _chunks(list(memory_ids)):
                rows = db.execute(
                    f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id IN ({_qmarks(len(chunk))}) AND status != ?",
                    (*chunk, status),
                ).fetchall()
                changed.extend(self._memory_from_row(r) for r in rows)
            if not changed:
                return 0
            self._remove_postings(db, [m.id for m in changed])
            db.executemany("UPDATE memories SET status = ? WHERE id = ?", [(status, m.id) for m in changed])
            if status == ACTIVE:
                self._add_postings(db, changed)
            for m in changed:
                for cache in (self._vectors.get(m.user_id), self._multilingual.get(m.user_id)):
                    if cache is not None:
                        cache.set_status(m.id, status)
        return len(changed)

    def delete_memories(self, memory_ids: Sequence[str]) -> dict[str, int]:
        ids = list(dict.fromkeys(memory_ids))
        counts = {"memories": 0, "edges": 0}
        users: set[str] = set()
        with self._tx() as db:
            degree_delta: Counter[str] = Counter()
            self._remove_postings(db, ids)
            owners = self._owners(db, ids)  # (the edges of an id that is no memory are not looked for: see _owners)
            users.update(owners)
            for user, owned in owners.items():
                for chunk in _chunks(owned):
                    q = _qmarks(len(chunk))
                    degree_delta.subtract(r[0] for r in db.execute(
                        f"SELECT dst FROM edges WHERE user_id=? AND src IN ({q}) AND type=?", (user, *chunk, EDGE_MENTIONS)))
                    for end in ("src", "dst", "evidence"):  # (evidence: the user's edges, a range of the key)
                        counts["edges"] += db.execute(f"DELETE FROM edges WHERE user_id=? AND {end} IN ({q})",
                                                      (user, *chunk)).rowcount
                    counts["memories"] += db.execute(f"DELETE FROM memories WHERE id IN ({q})", chunk).rowcount
            self._adjust_degrees(db, degree_delta)
            for u in users:
                self._vectors.pop(u, None)
                self._multilingual.pop(u, None)
        return counts

    def delete_user(self, user_id: str) -> dict[str, int]:
        with self._tx() as db:
            counts = {
                "memories": db.execute("DELETE FROM memories WHERE user_id=?", (user_id,)).rowcount,
                "entities": db.execute("DELETE FROM entities WHERE user_id=?", (user_id,)).rowcount,
                "edges": db.execute("DELETE FROM edges WHERE user_id=?", (user_id,)).rowcount,
                "index_entries": db.execute("DELETE FROM postings WHERE user_id=?", (user_id,)).rowcount,
            }
            counts["index_entries"] += db.execute("DELETE FROM term_df WHERE user_id=?", (user_id,)).rowcount
            db.execute("DELETE FROM aliases WHERE user_id=?", (user_id,))
            db.execute("DELETE FROM lexical_totals WHERE user_id=?", (user_id,))
            db.execute("DELETE FROM documents WHERE user_id=?", (user_id,))
            self._vectors.pop(user_id, None)
            self._entity_vectors.pop(user_id, None)
            self._multilingual.pop(user_id, None)
        return counts

    # -- reads -------------------------------------------------------------------
    @staticmethod
    def _memory_from_row(r: Sequence[Any], embedding: bytes | None = None, token_vectors: bytes | None = None,
                         multilingual: bytes | None = None) -> StoredMemory:
        if not isinstance(r[4], str):
            raise ValueError(f"memory {r[0]!r} has a text of type {type(r[4]).__name__}")
        return StoredMemory(
            id=r[0], user_id=r[1], agent_id=r[2], session_id=r[3], text=r[4], at=r[5], created_at=r[6],
            kind=r[7], importance=r[8], status=r[9], access_count=r[10], last_access=r[11],
            metadata_json=r[12], language=r[13], terms=tuple(json.loads(r[14])), confidence=r[15], mentions=r[16],
            last_seen=r[17], valid_to=r[18], pinned=bool(r[19]), embedding=embedding, token_vectors=token_vectors,
            multilingual=multilingual,
        )

    def get_memories(self, memory_ids: Sequence[str], *, with_vectors: bool = False) -> list[StoredMemory]:
        ids = list(memory_ids)
        found: dict[str, StoredMemory] = {}
        cols = _MEMORY_COLUMNS + (f", {_VECTOR_COLUMNS}" if with_vectors else "")
        with self._read() as db:
            for chunk in _chunks(ids):
                for r in db.execute(f"SELECT {cols} FROM memories WHERE id IN ({_qmarks(len(chunk))})", tuple(chunk)):
                    found[r[0]] = self._memory_from_row(r, *(r[_N_MEMORY_COLUMNS:] if with_vectors else ()))
        return [found[i] for i in ids if i in found]

    def list_memories(
        self,
        user_id: str,
        *,
        session_id: str | None = None,
        statuses: Sequence[str] | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[StoredMemory]:
        sql = f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE user_id = ?"
        params: list[Any] = [user_id]
        if session_id is not None:
            sql += " AND session_id = ?"
            params.append(session_id)
        if statuses is not None:
            sql += f" AND status IN ({_qmarks(len(statuses))})"
            params.extend(statuses)
        sql += " ORDER BY at, created_at, id LIMIT ? OFFSET ?"
        params.extend([-1 if limit is None else limit, offset])
        with self._read() as db:
            return [self._memory_from_row(r) for r in db.execute(sql, params)]

    def has_memories(self, user_id: str) -> bool:
        with self._read() as db:
            return db.execute("SELECT 1 FROM memories WHERE user_id=? LIMIT 1", (user_id,)).fetchone() is not None

    def last_memory_in_session(self, user_id: str, session_id: str) -> str | None:
        with self._read() as db:
            row = db.execute(
                "SELECT id FROM memories WHERE user_id=? AND session_id=? ORDER BY at DESC, created_at DESC, id DESC"
                " LIMIT 1",
                (user_id, session_id),
            ).fetchone()
        return None if row is None else str(row[0])

    def session_tails(self, user_id: str, session_ids: Sequence[str]) -> dict[str, str]:
        return {sid: tail for sid in dict.fromkeys(session_ids)
                if (tail := self.last_memory_in_session(user_id, sid)) is not None}

    @staticmethod
    def _entity_from_row(r: Sequence[Any]) -> EntityRecord:
        return EntityRecord(id=r[0], user_id=r[1], name=r[2], key=r[3], label=r[4], aliases=tuple(json.loads(r[5])))

    def get_entities(self, user_id: str, keys: Sequence[str]) -> list[EntityRecord]:
        out: dict[str, EntityRecord] = {}
        with self._read() as db:
            for chunk in _chunks(list(dict.fromkeys(keys))):
                rows = db.execute(
                    "SELECT e.id, e.user_id, e.name, e.key, e.label, e.aliases FROM aliases a"
                    f" JOIN entities e ON e.id = a.entity_id WHERE a.user_id = ? AND a.alias IN ({_qmarks(len(chunk))})",
                    (user_id, *chunk),
                ).fetchall()
                for r in rows:
                    out[r[0]] = self._entity_from_row(r)
        return sorted(out.values(), key=lambda e: e.id)

    def entity_names(self, entity_ids: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        with self._read() as db:
            for chunk in _chunks(list(entity_ids)):
                out.update(db.execute(f"SELECT id, name FROM entities WHERE id IN ({_qmarks(len(chunk))})", tuple(chunk)))
        return out

    def users(self) -> list[str]:
        with self._read() as db:
            rows = db.execute("SELECT user_id FROM memories UNION SELECT user_id FROM entities ORDER BY 1").fetchall()
        return [r[0] for r in rows]

    # -- search --------------------------------------------------------------------
    def _memory_vectors(self, user_id: str) -> VectorIndex | None:
        cache = self._vectors.get(user_id)
        if cache is None:
            rows = self._db.execute(
                "SELECT id, embedding, status FROM memories WHERE user_id=? AND embedding IS NOT NULL ORDER BY rowid",
                (user_id,),
            ).fetchall()
            cache = VectorIndex.from_rows(rows)
            if cache is not None:
                self._vectors[user_id] = cache
        return cache

    def _update_vector_caches(self, batch: WriteBatch, users: set[str]) -> None:
        """Keep loaded vector caches in step with a committed batch (append or replace rows)."""
        for user in users:
            cache = self._vectors.get(user)
            mems = [m for m in batch.memories if m.user_id == user]
            if cache is not None and any(m.embedding is None and m.id in cache.index for m in mems):
                del self._vectors[user]  # a memory was rewritten without its vector: reload on the next search
            elif cache is not None:
                cache.upsert((m.id, m.embedding, m.status) for m in mems if m.embedding is not None)
            if user in self._multilingual:
                ml = self._multilingual[user]
                if ml is None or any(m.multilingual is None and m.id in ml.index for m in mems):
                    if ml is not None or any(m.multilingual is not None for m in mems):
                        del self._multilingual[user]  # (reloaded on the next search)
                else:
                    ml.upsert((m.id, m.multilingual, m.status) for m in mems if m.multilingual is not None)
            ecache = self._entity_vectors.get(user)
            if ecache is not None:
                ecache.upsert((e.id, e.embedding, ACTIVE) for e in batch.entities
                              if e.user_id == user and e.embedding is not None)

    def warm(self, user_id: str) -> None:
        """Build the user's vector indexes now (:class:`~graphstore.SupportsWarm`): its first search
        would (~1 s at 100k memories)."""
        with self._read() as db:
            self._memory_vectors(user_id)
            self._entity_cache(db, user_id)

    def nearest_memories(
        self, user_id: str, vector: "np.ndarray", k: int, *, statuses: Sequence[str] = (ACTIVE,)
    ) -> list[tuple[str, float]]:
        return self.nearest_memories_batch(user_id, vector[None, :], k, statuses=statuses)[0]

    def nearest_memories_batch(
        self, user_id: str, vectors: "np.ndarray", k: int, *, statuses: Sequence[str] = (ACTIVE,)
    ) -> list[list[tuple[str, float]]]:
        """:meth:`nearest_memories` for many query vectors at once."""
        with self._read():
            cache = self._memory_vectors(user_id)
            if cache is None:
                return [[] for _ in range(len(vectors))]
            return cache.search(list(vectors), k, statuses=set(statuses))

    def nearest_multilingual(
        self, user_id: str, vector: "np.ndarray", k: int, *, statuses: Sequence[str] = (ACTIVE,)
    ) -> list[tuple[str, float]]:
        with self._read() as db:
            if user_id not in self._multilingual:
                rows = db.execute(
                    "SELECT id, multilingual, status FROM memories WHERE user_id=? AND multilingual IS NOT NULL"
                    " ORDER BY rowid", (user_id,),
                ).fetchall()
                self._multilingual[user_id] = VectorIndex.from_rows(rows)
            cache = self._multilingual[user_id]
            return [] if cache is None else cache.search([vector], k, statuses=set(statuses))[0]

    def has_multilingual(self, user_id: str) -> bool:
        with self._read() as db:  # (the partial index memories_multilingual answers it)
            return db.execute("SELECT 1 FROM memories WHERE user_id=? AND multilingual IS NOT NULL LIMIT 1",
                              (user_id,)).fetchone() is not None

    def get_user_state(self, user_id: str) -> UserState:
        with self._read() as db:
            row = db.execute("SELECT EXISTS (SELECT 1 FROM memories WHERE user_id=?),"
                             " EXISTS (SELECT 1 FROM memories WHERE user_id=? AND multilingual IS NOT NULL)",
                             (user_id, user_id)).fetchone()
        return UserState(bool(row[0]), bool(row[1]))

    def _entity_cache(self, db: sqlite3.Connection, user_id: str) -> VectorIndex | None:
        cache = self._entity_vectors.get(user_id)
        if cache is None:
            rows = db.execute(
                "SELECT id, embedding, ? FROM entities WHERE user_id=? AND embedding IS NOT NULL ORDER BY id",
                (ACTIVE, user_id),
            ).fetchall()
            cache = VectorIndex.from_rows(rows)
            if cache is not None:
                self._entity_vectors[user_id] = cache
        return cache

    def nearest_entities(self, user_id: str, vector: "np.ndarray", k: int) -> list[tuple[str, float]]:
        return self.nearest_entities_batch(user_id, vector[None, :], k)[0]

    def nearest_entities_batch(self, user_id: str, vectors: "np.ndarray", k: int) -> list[list[tuple[str, float]]]:
        with self._read() as db:
            cache = self._entity_cache(db, user_id)
            if cache is None:
                return [[] for _ in range(len(vectors))]
            return cache.search(list(vectors), k)

    def lexical_stats(self, user_id: str, terms: Sequence[str]) -> tuple[int, float, dict[str, int]]:
        with self._read() as db:
            row = db.execute("SELECT n_docs, total_len FROM lexical_totals WHERE user_id=?", (user_id,)).fetchone()
            n_docs, total = (row if row else (0, 0))
            df: dict[str, int] = {}
            uniq = list(dict.fromkeys(terms))
            for chunk in _chunks(uniq):
                df.update(
                    db.execute(
                        f"SELECT term, df FROM term_df WHERE user_id=? AND term IN ({_qmarks(len(chunk))})",
                        (user_id, *chunk),
                    ).fetchall()
                )
        return int(n_docs), (total / n_docs if n_docs else 0.0), df

    def postings(self, user_id: str, terms: Sequence[str]) -> list[tuple[str, str, int, int]]:
        out: list[tuple[str, str, int, int]] = []
        with self._read() as db:
            for chunk in _chunks(list(dict.fromkeys(terms))):
                out.extend(
                    db.execute(
                        "SELECT term, memory_id, tf, doc_len FROM postings"
                        f" WHERE user_id = ? AND term IN ({_qmarks(len(chunk))})",
                        (user_id, *chunk),
                    ).fetchall()
                )
        return out

    def token_vectors(self, memory_ids: Sequence[str]) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        with self._read() as db:
            for chunk in _chunks(list(memory_ids)):
                out.update(
                    (r[0], r[1])
                    for r in db.execute(
                        f"SELECT id, token_vectors FROM memories WHERE id IN ({_qmarks(len(chunk))})"
                        " AND token_vectors IS NOT NULL",
                        tuple(chunk),
                    )
                )
        return out

    # -- graph ------------------------------------------------------------------------
    def related_edges(self, user_id: str, source_ids: Sequence[str], predicates: Sequence[str]) -> list[EdgeRecord]:
        preds = list(dict.fromkeys(predicates))
        out: list[EdgeRecord] = []
        if not preds:
            return out
        with self._read() as db:
            for chunk in _chunks(list(dict.fromkeys(source_ids)), 400):
                out.extend(
                    EdgeRecord(src=r[0], type=r[1], dst=r[2], user_id=r[3], weight=r[4], predicate=r[5],
                               evidence=r[6], at=r[7])
                    for r in db.execute(
                        "SELECT src, type, dst, user_id, weight, predicate, evidence, at FROM edges"
                        f" WHERE user_id = ? AND src IN ({_qmarks(len(chunk))}) AND type = 'RELATED'"
                        f" AND predicate IN ({_qmarks(len(preds))}) ORDER BY src, predicate, dst",
                        (user_id, *chunk, *preds),
                    )
                )
        return out

    def expand(
        self,
        user_id: str,
        frontier: Sequence[str],
        edge_types: Sequence[str],
        *,
        max_degree: int | None = None,
    ) -> list[Neighbor]:
        ids = list(dict.fromkeys(frontier))
        types = tuple(edge_types)
        if not ids or not types:
            return []
        cap = -1 if max_degree is None else max_degree
        out: list[Neighbor] = []
        tq = _qmarks(len(types))
        # a step into an entity above the cap is dropped in SQL, and the columns come in
        # Neighbor's order, so that rows become neighbours without a Python loop
        capped, cap_args = (" AND COALESCE(x.degree, 1) <= ?", (cap,)) if cap >= 0 else ("", ())

        # (every lookup names the user: the edges' keys and the entities' covering index start with it)
        def joined(near: str, far: str, q: str) -> str:  # steps from `near` to `far`, with far's degree and label
            return (
                f"SELECT e.{near}, e.{far}, e.type, e.weight, COALESCE(x.degree, 1), e.predicate,"
                f" COALESCE(x.label, '') FROM edges e LEFT JOIN entities x ON x.user_id = e.user_id AND x.id = e.{far}"
                f" WHERE e.user_id = ? AND e.{near} IN ({q}) AND e.type IN ({tq}){capped}"
            )

        with self._read() as db:
            for chunk in _chunks(ids, 400):
                q = _qmarks(len(chunk))
                if cap >= 0:  # hubs are neither entered nor left: drop them from the frontier first
                    hubs = {r[0] for r in db.execute(f"SELECT id FROM entities WHERE user_id = ? AND id IN ({q})"
                                                     " AND degree > ?", (user_id, *chunk, cap))}
                    chunk = [i for i in chunk if i not in hubs]
                    if not chunk:
                        continue
                    q = _qmarks(len(chunk))
                args = (user_id, *chunk, *types)
                # outgoing (frontier is the source), then incoming: only RELATED edges start at an
                # entity, so only they need the source's degree and label (the others start at memories)
                queries = [(joined("src", "dst", q), args + cap_args)]
                if EDGE_RELATED in types:
                    queries.append((joined("dst", "src", q), args + cap_args))
                elif cap != 0:  # the other edges start at memories, of degree 1: a cap of 0 enters none
                    queries.append((
                        "SELECT e.dst, e.src, e.type, e.weight, 1, e.predicate, ''"
                        f" FROM edges e WHERE e.user_id = ? AND e.dst IN ({q}) AND e.type IN ({tq})",
                        args,
                    ))
                for sql, params in queries:
                    out.extend(map(Neighbor._make, db.execute(sql, params)))
        return out

    # -- housekeeping -------------------------------------------------------------------
    def export(self, user_id: str) -> Iterator[StoredMemory | EntityRecord | EdgeRecord]:
        with self._read() as db:
            mems = db.execute(
                f"SELECT {_MEMORY_COLUMNS}, {_VECTOR_COLUMNS} FROM memories WHERE user_id=?"
                " ORDER BY at, created_at, id",
                (user_id,),
            ).fetchall()
            ents = db.execute(
                "SELECT id, user_id, name, key, label, aliases, embedding FROM entities WHERE user_id=? ORDER BY id",
                (user_id,),
            ).fetchall()
            edges = db.execute(
                "SELECT src, type, dst, user_id, weight, predicate, evidence, at FROM edges WHERE user_id=?"
                " ORDER BY type, src, dst, predicate",
                (user_id,),
            ).fetchall()
        with self._errors():  # (rows are decoded after the read: a damaged one is a StoreError here too)
            for r in mems:
                yield self._memory_from_row(r, *r[_N_MEMORY_COLUMNS:])
            for r in ents:
                yield EntityRecord(id=r[0], user_id=r[1], name=r[2], key=r[3], label=r[4],
                                   aliases=tuple(json.loads(r[5])), embedding=r[6])
            for r in edges:
                yield EdgeRecord(src=r[0], type=r[1], dst=r[2], user_id=r[3], weight=r[4], predicate=r[5],
                                 evidence=r[6], at=r[7])

    def stats(self, user_id: str | None = None) -> dict[str, int]:
        where, params = ("WHERE user_id=?", (user_id,)) if user_id is not None else ("", ())
        with self._read() as db:
            out = {
                "memories": db.execute(f"SELECT count(*) FROM memories {where}", params).fetchone()[0],
                "entities": db.execute(f"SELECT count(*) FROM entities {where}", params).fetchone()[0],
            }
            out["users"] = len(self.users()) if user_id is None else int(bool(out["memories"] or out["entities"]))
            for typ, n in db.execute(f"SELECT type, count(*) FROM edges {where} GROUP BY type", params):
                out[f"edges_{typ.lower()}"] = n
            for status, n in db.execute(f"SELECT status, count(*) FROM memories {where} GROUP BY status", params):
                out[f"memories_{status}"] = n
        for typ in EDGE_TYPES:
            out.setdefault(f"edges_{typ.lower()}", 0)
        if self.path is not None:
            out["bytes_on_disk"] = sum(
                p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file()
            )
        return out

    # -- maintenance (graphstore.SupportsMaintenance; the SQL is in graphstore.sqlitemaint) ---------
    def check(self) -> list[Finding]:
        """Check the file, the schema and every derived index against the memories (read-only)."""
        with self._lock, self._errors():
            self._check_external_writes()
            self._db.execute("BEGIN")  # one snapshot for every finding
            try:
                return sqlitemaint.check(self._db, path=self.path or ":memory:", tables=_SCHEMA_TABLES,
                                         indexes=_SCHEMA_INDEXES, schema_version=SCHEMA_VERSION,
                                         caches=self._vectors)
            finally:
                self._db.execute("ROLLBACK")

    def reindex(self, *, progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
        """Rebuild postings, document frequencies, lexical totals, aliases and degrees from the memories.

        Lost derived tables and indexes are created first; then one transaction
        per user (an interrupted reindex leaves each user either rebuilt or as
        it was, and running it again finishes the job); vector caches reload.
        """
        with self._tx() as db:
            have = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            lost = [t for t in _PRIMARY_TABLES if t not in have]
            if lost:
                raise StoreDamaged(f"{self.path} has lost its {', '.join(lost)} table(s): there is nothing to rebuild"
                                   " the indexes from; restore the store from a backup or an export")
            row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None or row[0] != str(SCHEMA_VERSION):
                raise SchemaError(f"{self.path} has schema version {None if row is None else row[0]!r}; reindex"
                                  f" rebuilds version {SCHEMA_VERSION} (open the store with ripple once to migrate it)")
            for stmt in _schema_statements():
                db.execute(stmt)
            users = db.execute(
                "SELECT u.user_id, (SELECT count(*) FROM memories m WHERE m.user_id = u.user_id)"
                " FROM (SELECT user_id FROM memories UNION SELECT user_id FROM entities) u ORDER BY 1"
            ).fetchall()
        counts: Counter[str] = Counter()
        total, done = sum(n for _, n in users), 0
        for user, n in users:
            with self._tx() as db:
                counts.update(sqlitemaint.rebuild_user(db, user))
            done += n
            if progress is not None:
                progress(done, total)
        with self._tx() as db:
            counts["orphans"] = sqlitemaint.drop_orphans(db, [u for u, _ in users])
            self._drop_caches()
        counts["users"] = len(users)
        return dict(counts)

    # -- documents --------------------------------------------------------------------------
    # (The table is created by _SCHEMA on every open, so stores written before it existed gain it
    # without a migration.)  put_document is one IMMEDIATE transaction: the version check and the
    # write cannot interleave with another connection's, in this process or another.
    def get_document(self, user_id: str, key: str) -> tuple[int, str, float] | None:
        with self._read() as db:
            row = db.execute("SELECT version, value, updated_at FROM documents WHERE user_id=? AND key=?",
                             (user_id, key)).fetchone()
        return None if row is None else (int(row[0]), str(row[1]), float(row[2]))

    def put_document(
        self, user_id: str, key: str, value_json: str | None, *, expected_version: int | None, at: float
    ) -> tuple[bool, int]:
        with self._tx() as db:
            row = db.execute("SELECT version FROM documents WHERE user_id=? AND key=?", (user_id, key)).fetchone()
            current = 0 if row is None else int(row[0])
            if expected_version is not None and expected_version != current:
                return False, current
            if value_json is None:
                db.execute("DELETE FROM documents WHERE user_id=? AND key=?", (user_id, key))
                return True, 0
            db.execute("INSERT OR REPLACE INTO documents VALUES (?,?,?,?,?)", (user_id, key, current + 1, value_json, at))
            return True, current + 1

    def documents(self, user_id: str) -> list[DocumentRecord]:
        with self._read() as db:
            rows = db.execute("SELECT key, version, value, updated_at FROM documents WHERE user_id=? ORDER BY key",
                              (user_id,)).fetchall()
        return [DocumentRecord(user_id, str(k), int(v), str(value), float(at)) for k, v, value, at in rows]

    def restore_documents(self, documents: Sequence[DocumentRecord]) -> None:
        with self._tx() as db:
            db.executemany("INSERT OR REPLACE INTO documents VALUES (?,?,?,?,?)",
                           [(d.user_id, d.key, d.version, d.value_json, d.updated_at) for d in documents])

    # -- lifecycle questions ----------------------------------------------------------
    def memories_mentioning(
        self, user_id: str, entity_ids: Sequence[str], *, statuses: Sequence[str] = (ACTIVE,), per_entity: int = 4
    ) -> list[tuple[str, str]]:
        ids, states = list(dict.fromkeys(entity_ids)), list(dict.fromkeys(statuses))
        if not ids or not states or per_entity <= 0:
            return []
        out: list[tuple[str, str]] = []
        with self._read() as db:
            for chunk in _chunks(ids, _CHUNK - len(states) - 2):
                out.extend(db.execute(
                    "SELECT dst, src FROM (SELECT e.dst, e.src, ROW_NUMBER() OVER (PARTITION BY e.dst"
                    " ORDER BY m.at DESC, m.created_at DESC, m.id DESC) AS n FROM edges e JOIN memories m ON m.id = e.src"
                    f" WHERE e.user_id = ? AND e.dst IN ({_qmarks(len(chunk))}) AND e.type = ?"
                    f" AND m.status IN ({_qmarks(len(states))})) WHERE n <= ? ORDER BY dst, n",
                    (user_id, *chunk, EDGE_MENTIONS, *states, per_entity),
                ))
        return out

    def list_edges(self, user_id: str, edge_types: Sequence[str]) -> list[EdgeRecord]:
        types = list(dict.fromkeys(edge_types))
        if not types:
            return []
        with self._read() as db:
            rows = db.execute(
                "SELECT src, type, dst, user_id, weight, predicate, evidence, at FROM edges"
                f" WHERE user_id = ? AND type IN ({_qmarks(len(types))}) ORDER BY type, src, dst, predicate",
                (user_id, *types),
            ).fetchall()
        return [EdgeRecord(src=r[0], type=r[1], dst=r[2], user_id=r[3], weight=r[4], predicate=r[5], evidence=r[6],
                           at=r[7]) for r in rows]
