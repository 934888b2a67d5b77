"""The relevance floor for recalled memory cards: one decision, in one place.

Recall always returns its best ``k`` hits, related or not; a context that
injects them all puts noise in every prompt ("what is the capital of Peru?"
for a user who only ever talked about work would still get work memories).
A card enters a context only when :func:`is_relevant` says so.

Interim rule, until recall reports a calibrated ``RecallHit.relevance`` in
[0, 1] (issue 17; then the first line below decides alone):

* English (a query without CJK characters): the sentence cosine
  (``parts.dense``, MiniLM) is at least ``DENSE_STRONG``, or at least
  ``DENSE_WEAK`` with a shared content word (``parts.lexical > 0``: a BM25
  match on a non-stop-word).
* Chinese: MiniLM is an English model, and its cosines between unrelated
  Chinese texts are high (0.5-0.7 on the agent tests' memories, against
  0.56-0.87 for related ones), so the cosine cannot decide; a hit needs a
  lexical match (jieba words and characters past the stop list) with a BM25
  of at least ``LEXICAL_CJK``, or with a token-level late-interaction score
  (``parts.late``) of at least ``LATE_CJK``.

The thresholds were read off the scores of unrelated and related questions
on small English and Chinese work histories (``tests/agent/test_relevance.py``
keeps both sides): unrelated English pairs fall below a cosine of 0.15,
paraphrases sit above 0.45.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["is_relevant", "DENSE_STRONG", "DENSE_WEAK", "LEXICAL_CJK", "LATE_CJK"]

DENSE_STRONG = 0.45
DENSE_WEAK = 0.25
LEXICAL_CJK = 3.0
LATE_CJK = 0.4
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")


def is_relevant(hit: Any, query: str = "") -> bool:
    """Whether a :class:`ripple.RecallHit` for ``query`` may be injected into a context as a card."""
    relevance = getattr(hit, "relevance", None)
    if relevance is not None:  # a calibrated score, when recall provides one
        return float(relevance) >= 0.5
    parts = hit.parts
    if _CJK.search(query) or (not query and _CJK.search(hit.memory.text)):
        return parts.lexical > 0 and (parts.lexical >= LEXICAL_CJK or parts.late >= LATE_CJK)
    if parts.dense >= DENSE_STRONG:
        return True
    return parts.dense >= DENSE_WEAK and parts.lexical > 0
