"""Every error ripple raises, in one hierarchy.

::

    RippleError
    ├── ConfigError            bad settings, unknown store URI scheme, bad recall config
    ├── InvalidInput           bad arguments to a public call (empty text, wrong types, lone surrogates)
    │   └── LimitExceeded      past a size limit (ripple.Limits) or a cap (pinned facts)
    ├── NotFound
    │   ├── MemoryNotFound     no memory with that id
    │   └── UnknownUser        no memory for that user id
    ├── Conflict               the stored state is not what the caller expected; nothing was written
    │   ├── VersionConflict    compare-and-set refused: the document changed since it was read
    │   └── StepMismatch       a task state check failed ("expected step 3, got step 5")
    ├── PermissionDenied       the agent's role in a scope does not allow the write
    ├── StoreError             the backend failed; the original error is chained
    │   ├── StoreUnavailable   cannot open, connect or write for now (locked file, full disk, Neo4j down)
    │   ├── StoreDamaged       the store's files are damaged (empty, truncated, not a database, an index lost)
    │   └── SchemaError        the store's schema is newer/older than this ripple
    └── ExtractionError        the write path could not analyse a text
        └── ModelNotInstalled  a model package is missing (message says what to install)

Third-party exceptions (``sqlite3.Error``, neo4j driver errors, a damaged row's
``ValueError``, an extractor's own error) never leak out of a public call:
they are mapped with ``from exc`` so the cause stays visible.  Messages are
one line (see :class:`RippleError`).
"""

from __future__ import annotations

__all__ = [
    "RippleError",
    "ConfigError",
    "InvalidInput",
    "NotFound",
    "MemoryNotFound",
    "UnknownUser",
    "StoreError",
    "StoreUnavailable",
    "SchemaError",
    "StoreDamaged",
    "ExtractionError",
    "ModelNotInstalled",
    "LimitExceeded",
    "Conflict",
    "VersionConflict",
    "StepMismatch",
    "PermissionDenied",
]


class RippleError(Exception):
    """Root of every error ripple raises.

    Its message is always one line: a cause's multi-line text (a driver's
    error, say) is joined with spaces, so a log line or ``ripple: error: ...``
    never spills over.
    """

    def __str__(self) -> str:
        return " ".join(super().__str__().split())


class ConfigError(RippleError):
    """Settings or a recall configuration that cannot work."""


class InvalidInput(RippleError, ValueError):
    """A public call got arguments it cannot accept; nothing was written."""


class NotFound(RippleError, LookupError):
    """The thing asked for does not exist."""


class MemoryNotFound(NotFound):
    """No memory has this id."""


class UnknownUser(NotFound):
    """The store holds nothing for this user id.

    Reads no longer raise it: a user with no memories yet gets empty results
    (``RecallResult.user_known`` is False), so an agent's first turn for a new
    user needs no special case.  The class stays for code that catches it.
    """


class StoreError(RippleError):
    """A store backend failed."""


class StoreUnavailable(StoreError):
    """The store cannot be opened, reached or written for now (locked, full disk, server down): retry later."""


class StoreDamaged(StoreError):
    """The store's files are damaged: an empty or truncated file, a header that is not a database's,
    a lost table or index.  Nothing is repaired silently: ``ripple doctor`` says what is wrong and
    ``ripple reindex`` rebuilds the indexes derived from the memories."""


class SchemaError(StoreError):
    """The store was written by an incompatible version of ripple."""


class ExtractionError(RippleError):
    """The write path could not analyse a text."""


class ModelNotInstalled(ExtractionError):
    """A model that ripple needs is not installed; the message says how to install it."""


class LimitExceeded(InvalidInput):
    """A call would pass a cap (a size limit of :class:`ripple.Limits`, pinned facts by count or token
    share); nothing was written.

    ``limit`` names the :class:`~ripple.Limits` field when a size limit was hit (else None), with
    the ``value`` refused and the ``maximum`` allowed."""

    def __init__(self, message: str, *, limit: str | None = None, value: int | None = None,
                 maximum: int | None = None) -> None:
        super().__init__(message)
        self.limit = limit
        self.value = value
        self.maximum = maximum


class Conflict(RippleError):
    """The stored state is not what the caller expected; nothing was written."""


class VersionConflict(Conflict):
    """A compare-and-set write was refused: the document is at another version than expected.

    ``current`` is the stored version (0: no document)."""

    def __init__(self, message: str, *, current: int = 0) -> None:
        super().__init__(message)
        self.current = current


class StepMismatch(Conflict):
    """A task state check failed: the task is at another step than the caller expected."""


class PermissionDenied(RippleError, PermissionError):
    """The agent's role in a scope does not allow this write (only a curator writes pins and core facts)."""
