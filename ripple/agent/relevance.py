"""The relevance floor for recalled memory cards: one decision, in one place.

Recall always returns its best ``k`` hits, related or not; a context that
injects them all puts noise in every prompt ("what is the capital of Peru?"
for a user who only ever talked about work would still get work memories).
A card enters a context only when :func:`is_relevant` says so.

Interim rule (until recall reports a calibrated ``RecallHit.relevance`` in
[0, 1]; then this becomes ``hit.relevance >= floor``): a hit is relevant when

* its sentence cosine to the query (``parts.dense``, MiniLM) is at least
  ``DENSE_STRONG``, or
* its cosine is at least ``DENSE_WEAK`` *and* it shares a content word with
  the query (``parts.lexical > 0``: a BM25 match on a non-stop-word), or
* it was reached from a relevant seed through the graph and is itself not
  unrelated (``parts.dense >= DENSE_WEAK``).

The thresholds were read off MiniLM cosines on the agent tests' memories
(English and Chinese): unrelated question/memory pairs fall below 0.25,
paraphrases of what a memory says sit above 0.35.
"""

from __future__ import annotations

from typing import Any

__all__ = ["is_relevant", "DENSE_STRONG", "DENSE_WEAK"]

DENSE_STRONG = 0.42
DENSE_WEAK = 0.25


def is_relevant(hit: Any) -> bool:
    """Whether a :class:`ripple.RecallHit` may be injected into a context as a card."""
    relevance = getattr(hit, "relevance", None)
    if relevance is not None:  # a calibrated score, when recall provides one (issue 17)
        return float(relevance) >= 0.5
    parts = hit.parts
    if parts.dense >= DENSE_STRONG:
        return True
    return parts.dense >= DENSE_WEAK and parts.lexical > 0
