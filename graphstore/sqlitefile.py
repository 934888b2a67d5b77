"""The embedded store's file: checked before it is opened, created whole, its errors typed.

Why the checks: SQLite opens a 0-byte file as a new, empty database, so a store
truncated to nothing (a full disk during a copy, a bad restore) came back as an
empty store without a word, and the next write made the loss permanent.  A
ripple store file is never legitimately empty, because :func:`create` builds a
new one under a temporary name and links it into place only when its schema is
committed: another process either sees no file or a whole one.  So an empty
file, a header that is not SQLite's, or a file shorter than its header says
(with no write-ahead log that could hold the rest) is damage, reported as
:class:`~ripple.errors.StoreDamaged` naming the path.

SQLite's result codes map to ripple's errors here, once, for every call of the
store: a full disk or a lock held too long is :class:`~ripple.errors.StoreUnavailable`
(retry later; nothing of the call was written), a corrupt page
:class:`~ripple.errors.StoreDamaged`.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import uuid
from pathlib import Path
from typing import Iterable

from ripple.errors import StoreDamaged, StoreError, StoreUnavailable

__all__ = ["check_file", "create", "ripple_error", "HEADER"]

HEADER = b"SQLite format 3\x00"

# primary result codes (https://sqlite.org/rescode.html)
_BUSY, _LOCKED, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 5, 6, 8, 10, 11, 13, 14, 26


def check_file(path: Path) -> None:
    """Raise :class:`StoreDamaged` if the store file at ``path`` cannot be a whole SQLite database."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            header = fh.read(100)
    except OSError as exc:
        raise StoreUnavailable(f"cannot read the store file {path}: {exc}") from exc
    if size == 0:
        raise StoreDamaged(
            f"{path} is empty (0 bytes): the store was truncated or never written; restore it from a backup"
            " or an export, or move the file away to start a new store"
        )
    if len(header) < 100 or not header.startswith(HEADER):
        raise StoreDamaged(f"{path} is not an SQLite database (its header is damaged or it is another kind of file)")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    size_is_valid = header[24:28] == header[92:96]  # the header's page count is current (sqlite.org/fileformat.html)
    wal = path.with_name(path.name + "-wal")
    wal_size = wal.stat().st_size if wal.exists() else 0
    if size_is_valid and wal_size == 0 and size < pages * page_size:
        raise StoreDamaged(
            f"{path} is truncated: {size:,} bytes where its header counts {pages:,} pages of {page_size:,}"
            " bytes; restore it from a backup or an export"
        )


def create(path: Path, statements: Iterable[str]) -> None:
    """Create a new store at ``path`` atomically: built under a temporary name, linked into place.

    If another process creates the store first, its file is kept and this one dropped.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.new")
    try:
        db = sqlite3.connect(tmp, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("BEGIN IMMEDIATE")
            for stmt in statements:
                db.execute(stmt)
            db.execute("COMMIT")
        finally:
            db.close()  # (the last connection to close checkpoints the log into the file and removes it)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process created the store first
        except OSError:  # a file system without hard links: a rename that does not replace
            if not path.exists():
                os.rename(tmp, path)
    except sqlite3.Error as exc:
        raise ripple_error(exc, path) from exc
    except OSError as exc:
        raise StoreUnavailable(f"cannot create the store {path}: {exc}") from exc
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + "-wal"), tmp.with_name(tmp.name + "-shm")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()


def ripple_error(exc: sqlite3.Error, where: object) -> StoreError:
    """The ripple error for an SQLite error on the store ``where`` (to raise ``from exc``)."""
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    text = str(exc)
    if code in (_CORRUPT, _NOTADB):
        return StoreDamaged(f"the store {where} is damaged ({text}); `ripple doctor` checks it")
    if code == _FULL:
        return StoreUnavailable(f"no space left for the store {where} ({text}); nothing of this call was written")
    if code in (_BUSY, _LOCKED) or "locked" in text or "busy" in text:
        return StoreUnavailable(f"the store {where} is locked by another connection ({text})")
    if code == _READONLY:
        return StoreUnavailable(f"the store {where} is read-only ({text})")
    if code == _CANTOPEN:
        return StoreUnavailable(f"cannot open the store {where} ({text})")
    if code == _IOERR:
        return StoreError(f"I/O error on the store {where} ({text})")
    return StoreError(f"SQLite error on the store {where}: {text}")
