"""Storage backends for ripple's memory graph, behind one protocol.

``open_store(uri)`` picks the backend from a URI and imports it lazily, so the
Neo4j driver loads only when a Neo4j URI is used:

* a folder path, ``sqlite:///path/to/folder`` or ``:memory:`` — the embedded
  SQLite store (default);
* ``bolt://``, ``neo4j://`` (routing, for clusters) and their ``+s``/``+ssc``
  variants — a Neo4j server;
* ``memory://`` — a new, empty in-process graph (the reference store, nothing persists);
* ``neo4j+shards://host1:7687,host2:7687`` (or ``bolt+shards://``, ``neo4j+s+shards://``, ...)
  — users spread over several Neo4j servers, one user on one server
  (:mod:`graphstore.sharded`); ``shards:URI1;URI2`` does the same over any stores.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Literal, cast, overload

from .protocol import (
    ACTIVE,
    INVALIDATED,
    STATUSES,
    SUPERSEDED,
    AsyncGraphStore,
    GraphStore,
    InProcessStore,
    SupportsBatchEntitySearch,
    SupportsBatchMemorySearch,
    SupportsCypher,
    SupportsMaintenance,
    SupportsLocalWalks,
    SupportsWarm,
    SupportsShards,
)
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
    Finding,
    StoredMemory,
    Neighbor,
    WriteBatch,
)

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
    "StoredMemory",
    "Neighbor",
    "WriteBatch",
    "open_store",
    "as_async",
    "store_exists",
    "is_neo4j_uri",
    "Credentials",
    "InProcessStore",
    "SupportsCypher",
    "SupportsMaintenance",
    "SupportsLocalWalks",
    "SupportsWarm",
    "Finding",
    "SupportsShards",
    "SupportsBatchEntitySearch",
    "SupportsBatchMemorySearch",
]

_NEO4J_SCHEMES = ("bolt://", "bolt+s://", "bolt+ssc://", "neo4j://", "neo4j+s://", "neo4j+ssc://")


def is_neo4j_uri(uri: str) -> bool:
    """True for URIs that name a Neo4j server."""
    return uri.startswith(_NEO4J_SCHEMES)


@dataclass(frozen=True, slots=True)
class Credentials:
    """Who a server store connects as (ignored by the embedded store)."""

    user: str = "neo4j"
    password: str | None = None
    database: str | None = None


@overload
def open_store(uri: str | os.PathLike[str], *, asynchronous: Literal[False] = False,
               credentials: Credentials | None = None, create: bool = True, retry_seconds: float | None = None,
               maintenance: bool = False, near_cache_mb: float | None = None, **options: Any) -> GraphStore: ...
@overload
def open_store(uri: str | os.PathLike[str], *, asynchronous: Literal[True],
               credentials: Credentials | None = None, create: bool = True, retry_seconds: float | None = None,
               maintenance: bool = False, near_cache_mb: float | None = None, **options: Any) -> AsyncGraphStore: ...
def open_store(
    uri: str | os.PathLike[str],
    *,
    asynchronous: bool = False,
    credentials: Credentials | None = None,
    create: bool = True,
    retry_seconds: float | None = None,
    maintenance: bool = False,
    near_cache_mb: float | None = None,
    **options: Any,
) -> GraphStore | AsyncGraphStore:
    """Open the store a URI names (see the module docstring): the one place that knows the backends.

    ``asynchronous=True`` returns an :class:`AsyncGraphStore`: Neo4j through the
    driver's native async API, the embedded store through worker threads
    (:class:`~graphstore.threaded.ThreadedAsyncStore`).  ``credentials`` and
    ``retry_seconds`` (how long a call retries an unreachable server before
    :class:`~ripple.errors.StoreUnavailable`) are for server stores;
    ``create=False`` makes a missing embedded store an error (a server's
    database always exists).  ``maintenance=True`` opens an existing store as
    it is, even damaged, for :class:`SupportsMaintenance` (``ripple doctor``/
    ``reindex``): nothing is created or migrated.  ``near_cache_mb``: how many
    MB of a server store's vectors this process may keep to search them itself
    (:mod:`graphstore.nearcache`; 0 turns it off, ``None`` keeps the backend's
    default; the embedded store always searches in process).  ``options`` go to the
    backend's constructor.
    """
    text = os.fspath(uri)
    if near_cache_mb is not None and (text.startswith(_SHARDED_SCHEMES) or is_neo4j_uri(text)):
        options["near_cache_mb"] = near_cache_mb
    if text.startswith(_SHARDED_SCHEMES):
        return _open_sharded(text, asynchronous, credentials, create, retry_seconds, options)
    if is_neo4j_uri(text):
        creds = credentials or Credentials()
        kwargs = {"user": creds.user, "password": creds.password, "database": creds.database,
                  "maintenance": maintenance, **options}
        if retry_seconds is not None:
            kwargs["retry_seconds"] = retry_seconds
        if asynchronous:
            from .neo4j import AsyncNeo4jStore

            return cast(AsyncGraphStore, AsyncNeo4jStore(text, **kwargs))
        from .neo4j import Neo4jStore

        return cast(GraphStore, Neo4jStore(text, **kwargs))
    if text == "memory://":  # a new, empty graph in this process (graphstore.memory, the reference store)
        from .memory import InMemoryStore

        memory = cast(GraphStore, InMemoryStore(**options))
        return as_async(memory) if asynchronous else memory
    if text.startswith("sqlite://"):
        text = text[len("sqlite://") :] or ":memory:"
    elif "://" in text:
        from ripple.errors import ConfigError

        raise ConfigError(f"unknown store URI scheme in {text!r}: use a folder path, sqlite://, memory://, bolt://,"
                          " neo4j://, neo4j+shards:// or shards:")
    from .sqlite import SQLiteStore

    store = cast(GraphStore, SQLiteStore(text, create=create, maintenance=maintenance, **options))
    return as_async(store) if asynchronous else store


_SHARDED_SCHEMES = ("shards:", *(s.replace("://", "+shards://") for s in _NEO4J_SCHEMES))
_SHARDED_OPTIONS = ("refresh", "move_wait", "grace")


def _open_sharded(text: str, asynchronous: bool, credentials: Credentials | None, create: bool,
                  retry_seconds: float | None, options: dict[str, Any]) -> GraphStore | AsyncGraphStore:
    """A sharded store (:mod:`graphstore.sharded`) over the stores the URI names, each opened on first use,
    so a shard that is down fails only its own users (``create`` and ``retry_seconds`` apply to each shard)."""
    from .sharded import AsyncShardedStore, ShardedStore, parse_sharded_uri

    names, uris = parse_sharded_uri(text)
    own = {k: options.pop(k) for k in _SHARDED_OPTIONS if k in options}

    def opener(shard_uri: str) -> Any:
        if asynchronous:
            return lambda: open_store(shard_uri, asynchronous=True, credentials=credentials, create=create,
                                      retry_seconds=retry_seconds, **options)
        return lambda: open_store(shard_uri, credentials=credentials, create=create, retry_seconds=retry_seconds,
                                  **options)

    if asynchronous:
        return cast(AsyncGraphStore, AsyncShardedStore([opener(u) for u in uris], names=names, uris=uris, uri=text,
                                                       **own))
    return cast(GraphStore, ShardedStore([opener(u) for u in uris], names=names, uris=uris, uri=text, **own))


def store_exists(uri: str | os.PathLike[str]) -> bool:
    """False only for an embedded store that has not been created yet (servers always exist; a sharded
    store exists when every shard does)."""
    text = os.fspath(uri)
    if text.startswith(_SHARDED_SCHEMES):
        from .sharded import parse_sharded_uri

        return all(store_exists(u) for u in parse_sharded_uri(text)[1])
    if is_neo4j_uri(text) or text == "memory://":
        return True
    if text.startswith("sqlite://"):
        text = text[len("sqlite://") :] or ":memory:"
    if text == ":memory:":
        return True
    from .sqlite import store_file

    return store_file(text).exists()


def as_async(store: GraphStore | AsyncGraphStore) -> AsyncGraphStore:
    """An async view of an open store: itself if it is async, else its calls in worker threads."""
    if isinstance(store, AsyncGraphStore):
        return store
    from .threaded import ThreadedAsyncStore

    return cast(AsyncGraphStore, ThreadedAsyncStore(store))
