"""The ``metadata["ripple"]`` notes of a stored memory: what the write path decided about it, and why.

Read and rewritten in one place, so that the lifecycle (which records a conflict on both of its
memories) and :func:`ripple._operations.resolve_conflict` (which marks it settled) agree on the shape:
``{"conflicts": [{"memory": <other id>, "confidence", "value": [old, new], "frame", "why",
"resolved"?: "supersedes" | "both"}], "supersedes": [...], ...}``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Callable, Mapping

from graphstore.records import StoredMemory

__all__ = ["ripple_notes", "with_ripple_notes", "open_conflict_ids"]


def ripple_notes(metadata_json: str) -> dict[str, Any]:
    """The ``ripple`` notes of a memory's metadata (empty when there are none)."""
    got = json.loads(metadata_json or "{}").get("ripple")
    return got if isinstance(got, dict) else {}


def with_ripple_notes(rec: StoredMemory, change: Callable[[dict[str, Any]], Any]) -> StoredMemory:
    """``rec`` with its ``ripple`` notes changed in place by ``change``."""
    meta = json.loads(rec.metadata_json or "{}")
    notes = meta.get("ripple") if isinstance(meta.get("ripple"), dict) else {}
    change(notes)
    meta["ripple"] = notes
    return replace(rec, metadata_json=json.dumps(meta, ensure_ascii=False, sort_keys=False))


def open_conflict_ids(metadata: Mapping[str, Any]) -> list[str]:
    """Ids of the memories an unsettled conflict note of ``metadata`` (a memory's public metadata)
    names: the memories this one may replace or be replaced by."""
    notes = metadata.get("ripple")
    if not isinstance(notes, dict):
        return []
    return [str(n["memory"]) for n in notes.get("conflicts", ()) if isinstance(n, dict) and n.get("memory")
            and not n.get("resolved")]
