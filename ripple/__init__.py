"""ripple: graph-based associative memory for AI agents.

A query drops a stone in the water: the strongest memories light up first,
activation spreads outward through the entities and turns they share, weaker
with each hop, and a reranker keeps the few that matter.

>>> import ripple
>>> ripple.RecallConfig().spread.hops
2
"""

from __future__ import annotations

from ._memory import AsyncMemory, Memory
from .errors import (
    ConfigError,
    ExtractionError,
    InvalidInput,
    MemoryNotFound,
    ModelNotInstalled,
    NotFound,
    RippleError,
    SchemaError,
    StoreError,
    StoreUnavailable,
    UnknownUser,
)
from .models import Conflict, Entity, Memory as MemoryRecord, PathStep, RecallHit, RecallResult, RecallTrace, ScoreParts
from .recall.config import (
    MergeConfig,
    RecallConfig,
    RerankConfig,
    RerankMethod,
    SeedConfig,
    SpreadConfig,
    SpreadMethod,
    TierConfig,
)
from ._lifecycle import LifecycleConfig
from .settings import RippleSettings

__version__ = "0.1.0"

__all__ = [
    "AsyncMemory",
    "ConfigError",
    "Conflict",
    "Entity",
    "ExtractionError",
    "InvalidInput",
    "LifecycleConfig",
    "Memory",
    "MemoryNotFound",
    "MemoryRecord",
    "MergeConfig",
    "ModelNotInstalled",
    "NotFound",
    "PathStep",
    "RecallConfig",
    "RecallHit",
    "RecallResult",
    "RecallTrace",
    "RerankConfig",
    "RerankMethod",
    "RippleError",
    "RippleSettings",
    "SchemaError",
    "ScoreParts",
    "SeedConfig",
    "SpreadConfig",
    "SpreadMethod",
    "StoreError",
    "StoreUnavailable",
    "TierConfig",
    "UnknownUser",
    "__version__",
]

for _name in __all__:
    _obj = globals()[_name]
    if hasattr(_obj, "__module__") and _name != "__version__":
        try:
            _obj.__module__ = "ripple"
        except (AttributeError, TypeError):
            pass
del _name, _obj
