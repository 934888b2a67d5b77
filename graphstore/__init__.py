"""Storage backends for ripple's memory graph, behind one protocol.

``open_store(uri)`` picks the backend from a URI and imports it lazily, so the
Neo4j driver loads only when a Neo4j URI is used:

* a folder path, ``sqlite:///path/to/folder`` or ``:memory:`` — the embedded
  SQLite store (default);
* ``bolt://``, ``neo4j://`` (routing, for clusters) and their ``+s``/``+ssc``
  variants — a Neo4j server.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .protocol import ACTIVE, INVALIDATED, STATUSES, SUPERSEDED, AsyncGraphStore, GraphStore
from .records import (
    EDGE_CONFLICTS,
    EDGE_MENTIONS,
    EDGE_NEXT,
    EDGE_RELATED,
    EDGE_RETRACTS,
    EDGE_SUPERSEDES,
    EDGE_TYPES,
    EdgeRecord,
    EntityRecord,
    MemoryRecord,
    Neighbor,
    WriteBatch,
)

if TYPE_CHECKING:
    from .sqlite import SQLiteStore

__all__ = [
    "ACTIVE",
    "INVALIDATED",
    "STATUSES",
    "SUPERSEDED",
    "AsyncGraphStore",
    "GraphStore",
    "EDGE_CONFLICTS",
    "EDGE_MENTIONS",
    "EDGE_NEXT",
    "EDGE_RELATED",
    "EDGE_RETRACTS",
    "EDGE_SUPERSEDES",
    "EDGE_TYPES",
    "EdgeRecord",
    "EntityRecord",
    "MemoryRecord",
    "Neighbor",
    "WriteBatch",
    "open_store",
    "is_neo4j_uri",
]

_NEO4J_SCHEMES = ("bolt://", "bolt+s://", "bolt+ssc://", "neo4j://", "neo4j+s://", "neo4j+ssc://")


def is_neo4j_uri(uri: str) -> bool:
    """True for URIs that name a Neo4j server."""
    return uri.startswith(_NEO4J_SCHEMES)


def open_store(uri: str | os.PathLike[str], **options: Any) -> GraphStore:
    """Open the store a URI names (see the module docstring)."""
    text = os.fspath(uri)
    if is_neo4j_uri(text):
        from .neo4j import Neo4jStore

        return Neo4jStore(text, **options)  # type: ignore[no-any-return]
    if text.startswith("sqlite://"):
        text = text[len("sqlite://") :] or ":memory:"
    elif "://" in text:
        from ripple.errors import ConfigError

        raise ConfigError(f"unknown store URI scheme in {text!r}: use a folder path, sqlite://, bolt:// or neo4j://")
    from .sqlite import SQLiteStore

    store: SQLiteStore = SQLiteStore(text, **options)
    return store
