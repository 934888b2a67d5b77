"""The relevance floor for recalled memory cards: one decision, in one place.

Recall always returns its best ``k`` hits, related or not; a context that
injects them all puts noise in every prompt ("what is the capital of Peru?"
for a user who only ever talked about work would still get work memories).
A card enters a context only when :func:`is_relevant` says so: when the hit's
calibrated ``relevance`` (:mod:`ripple.recall.relevance`, comparable across
queries and languages) reaches the calibrated floor,
:attr:`ripple.RelevanceConfig.floor`.
"""

from __future__ import annotations

from typing import Any

from ripple.recall.config import RelevanceConfig

__all__ = ["is_relevant", "FLOOR"]

#: The calibrated floor (see :class:`ripple.RelevanceConfig`).
FLOOR: float = RelevanceConfig().floor


def is_relevant(hit: Any, query: str = "") -> bool:
    """Whether a :class:`ripple.RecallHit` for ``query`` may be injected into a context as a card."""
    return float(hit.relevance) >= FLOOR
