"""ripple: graph-based associative memory for AI agents.

A query drops a stone in the water: the strongest memories light up first,
activation spreads outward through the entities and turns they share, weaker
with each hop, and a reranker keeps the few that matter.

Names are imported on first use (PEP 562), so ``import ripple.errors`` (which
the storage and extraction layers do) loads nothing of the engine, and
``ripple --help`` loads no model.

>>> import ripple
>>> [c.name for c in ripple.RecallConfig().spread.channels]
['session', 'entity']
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    "Memory": "ripple._memory",
    "AsyncMemory": "ripple._memory",
    "RippleError": "ripple.errors",
    "ConfigError": "ripple.errors",
    "InvalidInput": "ripple.errors",
    "NotFound": "ripple.errors",
    "MemoryNotFound": "ripple.errors",
    "UnknownUser": "ripple.errors",
    "StoreError": "ripple.errors",
    "StoreUnavailable": "ripple.errors",
    "SchemaError": "ripple.errors",
    "StoreDamaged": "ripple.errors",
    "ExtractionError": "ripple.errors",
    "ModelNotInstalled": "ripple.errors",
    "LimitExceeded": "ripple.errors",
    "Conflict": "ripple.errors",
    "VersionConflict": "ripple.errors",
    "StepMismatch": "ripple.errors",
    "PermissionDenied": "ripple.errors",
    "MemoryRecord": "ripple.models",
    "Entity": "ripple.models",
    "PathStep": "ripple.models",
    "RecallHit": "ripple.models",
    "RecallResult": "ripple.models",
    "RecallTrace": "ripple.models",
    "ScoreParts": "ripple.models",
    "Fact": "ripple.models",
    "Document": "ripple.models",
    "MemoryConflict": "ripple.models",
    "RecallConfig": "ripple.recall.config",
    "SeedConfig": "ripple.recall.config",
    "SeedMethod": "ripple.recall.config",
    "SpreadConfig": "ripple.recall.config",
    "ChannelConfig": "ripple.recall.config",
    "SessionChannelConfig": "ripple.recall.config",
    "EntityChannelConfig": "ripple.recall.config",
    "PPRChannelConfig": "ripple.recall.config",
    "MergeConfig": "ripple.recall.config",
    "TierConfig": "ripple.recall.config",
    "RerankConfig": "ripple.recall.config",
    "RelevanceConfig": "ripple.recall.config",
    "RerankMethod": "ripple.recall.config",
    "LifecycleConfig": "ripple._lifecycle",
    "RippleSettings": "ripple.settings",
    "Limits": "ripple.limits",
    "ImportReport": "ripple.models",
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ripple' has no attribute {name!r}")
    obj = getattr(importlib.import_module(module), name)
    try:
        obj.__module__ = "ripple"  # reprs and tracebacks show ripple.Memory, not the private path
    except (AttributeError, TypeError):
        pass
    globals()[name] = obj
    return obj


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # the names for type checkers and IDEs
    from ._lifecycle import LifecycleConfig
    from ._memory import AsyncMemory, Memory
    from .errors import (
        ConfigError,
        Conflict,
        LimitExceeded,
        PermissionDenied,
        StepMismatch,
        VersionConflict,
        ExtractionError,
        InvalidInput,
        MemoryNotFound,
        ModelNotInstalled,
        NotFound,
        RippleError,
        SchemaError,
        StoreDamaged,
        StoreError,
        StoreUnavailable,
        UnknownUser,
    )
    from .models import Document, Entity, Fact, MemoryConflict, MemoryRecord, PathStep, RecallHit, RecallResult, RecallTrace, ScoreParts
    from .recall.config import (
        ChannelConfig,
        EntityChannelConfig,
        MergeConfig,
        PPRChannelConfig,
        RecallConfig,
        RelevanceConfig,
        RerankConfig,
        RerankMethod,
        SeedConfig,
        SeedMethod,
        SessionChannelConfig,
        SpreadConfig,
        TierConfig,
    )
    from .limits import Limits
    from .models import ImportReport
    from .settings import RippleSettings
