"""Every error ripple raises, in one hierarchy.

::

    RippleError
    ├── ConfigError            bad settings, unknown store URI scheme, bad recall config
    ├── InvalidInput           bad arguments to a public call (empty/huge text, wrong types)
    ├── NotFound
    │   ├── MemoryNotFound     no memory with that id
    │   └── UnknownUser        no memory for that user id
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
    """The store holds nothing for this user id."""


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
