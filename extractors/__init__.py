"""Write-path extraction for ripple: entities, triples, facts and lifecycle signals, EN + ZH.

Besides entities and triples, every :class:`Extraction` carries the facts
stated in the text (first-person, state updates such as "the budget is now
60k" / "预算加到六万了", roles) with canonical attributes and normalised
values, and the signals the memory lifecycle needs: ``confidence`` (hedges),
``retracts``/``retract_hint`` ("forget about the plan") and ``corrects``
("no, I meant Tuesday").  All of it is rule-based and costs microseconds.

Importing this package is cheap: spaCy and jieba are imported the first time
a text of their language is extracted, so the CLI, the API models and tests
that never extract do not pay for them.

    >>> from extractors import default_extractor
    >>> [r.language for r in default_extractor().extract_many(["Dana runs procurement.", "张伟在北京工作。"])]
    ['en', 'zh']
    >>> r = default_extractor().extract("Never mind, drop the plan.")
    >>> (r.retracts, r.retract_hint)
    (True, 'the plan')
"""

from __future__ import annotations

import functools
from typing import Sequence

from .base import ExtractedEntity, ExtractedFact, ExtractedTriple, Extraction, Extractor
from .errors import ExtractionError, ModelNotInstalled
from .attributes import normalise_attribute
from .filters import is_contentless
from .gazetteer import GazetteerExtractor
from .jieba_zh import JiebaExtractor
from .normalize import entity_key, is_valid_entity
from .signals import Signals, detect_signals, hedge_confidence
from .spacy_en import SpacyExtractor
from .speaker import SpeakerTurn, split_speaker
from .text import detect_language, estimate_tokens, lexical_tokens
from .triggers import KINDS, classify_kind, extract_facts
from .values import normalize_value

__all__ = [
    "ExtractedEntity",
    "ExtractedTriple",
    "ExtractedFact",
    "Extraction",
    "Extractor",
    "ExtractionError",
    "ModelNotInstalled",
    "SpacyExtractor",
    "JiebaExtractor",
    "GazetteerExtractor",
    "MultilingualExtractor",
    "default_extractor",
    "entity_key",
    "is_valid_entity",
    "is_contentless",
    "extract_facts",
    "classify_kind",
    "KINDS",
    "normalise_attribute",
    "normalize_value",
    "detect_signals",
    "hedge_confidence",
    "Signals",
    "split_speaker",
    "SpeakerTurn",
    "detect_language",
    "lexical_tokens",
    "estimate_tokens",
]


class MultilingualExtractor:
    """Dispatches each text to the extractor of its language, one batch per language.

    The language is detected on the message without its speaker prefix
    ("Dana Whitfield: 我在北京" is Chinese).  Chinese goes to ``chinese``
    (default :class:`JiebaExtractor`); English and every other language to
    ``english`` (default :class:`SpacyExtractor`), which copes with Latin
    scripts and never fails on others.  Results keep the input order.  The
    sub-extractors are created on first use, so a Chinese-only workload
    never loads spaCy.  Facts and lifecycle signals (confidence, retracts,
    retract_hint, corrects) come from the sub-extractors unchanged.
    """

    def __init__(self, english: Extractor | None = None, chinese: Extractor | None = None) -> None:
        self._english = english
        self._chinese = chinese

    @property
    def english(self) -> Extractor:
        if self._english is None:
            self._english = SpacyExtractor()
        return self._english

    @property
    def chinese(self) -> Extractor:
        if self._chinese is None:
            self._chinese = JiebaExtractor()
        return self._chinese

    def extract(self, text: str) -> Extraction:
        """:meth:`extract_many` for one text."""
        return self.extract_many([text])[0]

    def extract_many(self, texts: Sequence[str]) -> list[Extraction]:
        """One :class:`Extraction` per text, in input order."""
        texts = list(texts)
        zh: list[int] = []
        other: list[int] = []
        for i, t in enumerate(texts):
            message = t[split_speaker(t).message_start :]
            (zh if detect_language(message) == "zh" else other).append(i)
        results: list[Extraction | None] = [None] * len(texts)
        if zh:
            for i, r in zip(zh, self.chinese.extract_many([texts[i] for i in zh]), strict=True):
                results[i] = r
        if other:
            for i, r in zip(other, self.english.extract_many([texts[i] for i in other]), strict=True):
                results[i] = r
        return [r for r in results if r is not None]


@functools.cache
def default_extractor() -> MultilingualExtractor:
    """The process-wide :class:`MultilingualExtractor` (models load on first use)."""
    return MultilingualExtractor()
