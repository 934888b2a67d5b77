"""The part of an :class:`~extractors.base.Extraction` every extractor builds the same way.

Whatever finds the entities (a spaCy parse, jieba, a list of known names), a
turn's speaker is a PERSON mention, and facts, lifecycle signals, the kind and
the language come from the same rules over the message.  Keeping that here
means a new extractor cannot drift from the others on any of it.
"""

from __future__ import annotations

from typing import Sequence

from .base import ExtractedTriple, Extraction
from .mentions import P_SPEAKER, Mention, dedupe
from .signals import detect_signals
from .speaker import SpeakerTurn
from .text import detect_language
from .triggers import classify_kind, extract_facts

__all__ = ["speaker_mentions", "assemble"]


def speaker_mentions(turn: SpeakerTurn) -> list[Mention]:
    """The speaker of a ``"Name: message"`` turn as a PERSON mention (none for a plain text)."""
    if turn.speaker is None:
        return []
    return [Mention(turn.subject, turn.speaker, "PERSON", turn.start, turn.end, -1, -1, P_SPEAKER)]


def assemble(
    text: str,
    turn: SpeakerTurn,
    message: str,
    mentions: list[Mention],
    triples: Sequence[ExtractedTriple] = (),
    *,
    contentless: bool = False,
) -> Extraction:
    """One text's :class:`Extraction` from its mentions and triples (speaker mention included)."""
    facts = tuple(extract_facts(message, subject=turn.subject))
    signals = detect_signals(message)  # hedges, "forget that", "no, I meant ..."
    return Extraction(
        text=text,
        language=detect_language(message) if message.strip() else detect_language(text),
        entities=dedupe(mentions),
        triples=tuple(triples),
        facts=facts,
        contentless=contentless,
        kind="message" if contentless else classify_kind(message, facts),
        extra={"speaker": turn.subject} if turn.speaker is not None else {},
        confidence=signals.confidence,
        retracts=signals.retracts,
        retract_hint=signals.retract_hint,
        corrects=signals.corrects,
    )
