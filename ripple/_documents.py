"""Versioned JSON documents per user: validation and compare-and-set, as store requests.

Working memory, task state and an agent's bookkeeping (pinned facts, summary
state) must survive a restart and must not be overwritten by a writer that
read an older version (Letta's shared blocks answer such races with HTTP 409;
lost updates are worse).  The store does the check and the write in one
transaction (:meth:`graphstore.GraphStore.put_document`); this module
validates the input, encodes JSON once, and turns a refused write into a
:class:`ripple.VersionConflict`.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from graphstore.requests import GetDocument, PutDocument

from . import _validate as check
from .errors import InvalidInput, StoreError, VersionConflict
from .limits import MAX_METADATA_DEPTH, Limits
from .models import Document
from ._requests import Op

__all__ = ["get_document_plan", "put_document_plan", "delete_document_plan", "MAX_DOCUMENT_BYTES"]

MAX_DOCUMENT_BYTES = 1_000_000
_MAX_KEY = 512


def _check(user_id: Any, key: Any, limits: Limits) -> None:
    check.user(user_id, limits)
    if not isinstance(key, str) or not key.strip() or len(key) > _MAX_KEY:
        raise InvalidInput(f"document key must be a non-empty string of at most {_MAX_KEY} characters")
    check.unicode(key, "document key")


def _document(user_id: str, key: str, version: int, value_json: str, at: float) -> Document:
    try:
        return Document(user_id=user_id, key=key, version=version, value=json.loads(value_json),
                        updated_at=datetime.fromtimestamp(at, tz=timezone.utc))
    except (ValueError, OverflowError, OSError, RecursionError) as exc:
        raise StoreError(f"document {key!r} of user {user_id!r} is damaged in the store: {exc}") from exc


def get_document_plan(user_id: str, key: str, limits: Limits = check.DEFAULT_LIMITS) -> Op[Document | None]:
    _check(user_id, key, limits)
    row = yield GetDocument(user_id, key)
    return None if row is None else _document(user_id, key, *row)


def put_document_plan(user_id: str, key: str, value: Any, expected_version: int | None, now: float,
                      limits: Limits = check.DEFAULT_LIMITS) -> Op[Document]:
    """Write a document if it is at ``expected_version``; raises :class:`~ripple.VersionConflict`
    when the stored version differs."""
    if value is None:
        raise InvalidInput("a document value cannot be None (use delete_document)")
    encoded = check.json_value(value, f"document {key!r}", max_depth=MAX_METADATA_DEPTH, max_bytes=MAX_DOCUMENT_BYTES)
    version = yield from _compare_and_set(user_id, key, encoded, expected_version, now, limits)
    return _document(user_id, key, version, encoded, now)


def delete_document_plan(user_id: str, key: str, expected_version: int | None, now: float,
                         limits: Limits = check.DEFAULT_LIMITS) -> Op[None]:
    """Delete a document (if it is at ``expected_version``, when given)."""
    yield from _compare_and_set(user_id, key, None, expected_version, now, limits)


def _compare_and_set(user_id: str, key: str, encoded: str | None, expected_version: int | None, now: float,
                     limits: Limits) -> Op[int]:
    _check(user_id, key, limits)
    if expected_version is not None and (
        not isinstance(expected_version, int) or isinstance(expected_version, bool) or expected_version < 0
    ):
        raise InvalidInput("expected_version must be None or an integer >= 0 (0: the document must not exist)")
    written, version = yield PutDocument(user_id, key, encoded, expected_version, now)
    if not written:
        state = f"at version {version}" if version else "absent"
        raise VersionConflict(
            f"document {key!r} of user {user_id!r} is {state}, the write expected version {expected_version}"
            " (read it again and retry)", current=version,
        )
    return version
