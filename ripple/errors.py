"""Every error ripple raises, in one hierarchy.

::

    RippleError
    ├── ConfigError            bad settings, unknown store URI scheme, bad recall config
    ├── InvalidInput           bad arguments to a public call (empty/huge text, wrong types)
    │   └── LimitExceeded      a write past a cap (pinned facts: count or token share)
    ├── NotFound
    │   ├── MemoryNotFound     no memory with that id
    │   └── UnknownUser        no memory for that user id
    ├── Conflict               the stored state is not what the caller expected; nothing was written
    │   ├── VersionConflict    compare-and-set refused: the document changed since it was read
    │   └── StepMismatch       a task state check failed ("expected step 3, got step 5")
    ├── PermissionDenied       the agent's role in a scope does not allow the write
    ├── StoreError             the backend failed; the original error is chained
    │   ├── StoreUnavailable   cannot open/connect (locked file, Neo4j down)
    │   └── SchemaError        the store's schema is newer/older than this ripple
    └── ExtractionError        the write path could not analyse a text
        └── ModelNotInstalled  a model package is missing (message says what to install)

Third-party exceptions (``sqlite3.Error``, neo4j driver errors) never leak out
of a public call: backends map them with ``from exc`` so the cause stays visible.
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
    "ExtractionError",
    "ModelNotInstalled",
    "LimitExceeded",
    "Conflict",
    "VersionConflict",
    "StepMismatch",
    "PermissionDenied",
]


class RippleError(Exception):
    """Root of every error ripple raises."""


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
    """The store cannot be opened or reached."""


class SchemaError(StoreError):
    """The store was written by an incompatible version of ripple."""


class ExtractionError(RippleError):
    """The write path could not analyse a text."""


class ModelNotInstalled(ExtractionError):
    """A model that ripple needs is not installed; the message says how to install it."""


class LimitExceeded(InvalidInput):
    """A write would pass a cap (e.g. pinned facts by count or token share); nothing was written."""


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
