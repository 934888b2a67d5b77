"""Plain records that every extractor returns, and the protocol it implements.

Extraction runs on the write path, once per stored text, with no LLM call by
default.  Records are frozen dataclasses (not pydantic): they are produced in
bulk inside the engine and never cross the public API as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

__all__ = [
    "ExtractedEntity",
    "ExtractedTriple",
    "ExtractedFact",
    "Extraction",
    "Extractor",
]


@dataclass(frozen=True, slots=True)
class ExtractedEntity:
    """A mention of an entity in one text.

    ``name`` is the surface form as written; ``key`` is the normalised form used
    to resolve mentions to one entity node (see :func:`extractors.normalize.entity_key`).
    ``start``/``end`` are character offsets into the text (``text[start:end] == name``
    for mentions found in the text; synthetic mentions such as the speaker use -1).
    ``label`` is a coarse type: PERSON, ORG, GPE, LOC, PRODUCT, EVENT, DATE, WORK, NOUN, MISC, ...
    """

    name: str
    key: str
    label: str
    start: int = -1
    end: int = -1


@dataclass(frozen=True, slots=True)
class ExtractedTriple:
    """A subject-predicate-object statement between two entity keys of one text."""

    subject: str  # entity key
    predicate: str  # normalised verb lemma, e.g. "run", "work_at", "喜欢"
    object: str  # entity key
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class ExtractedFact:
    """A fact from a trigger rule: "my name is X", "the budget is now 60k", "我叫X".

    ``attribute`` is a canonical lower snake_case name (``budget``, ``deadline``,
    ``favorite_color``, ``role``; see :func:`extractors.attributes.normalise_attribute`)
    so that a newer fact on the same subject and attribute can supersede an older
    one; ``value`` is normalised (``"60k"`` and ``"六万"`` are ``"60000"``; see
    :func:`extractors.values.normalize_value`).  ``subject`` is ``"user"`` (or the
    speaker's key in a "Speaker: message" turn) for first-person and state facts,
    and the entity key of a named subject otherwise ("Dana Whitfield is the
    procurement lead" -> ``"dana whitfield"``).  ``confidence`` is 1.0 for a plain
    statement and lower for a hedged one (scale in :mod:`extractors.signals`).
    """

    attribute: str  # name, employer, budget, deadline, role, favorite_color, ...
    value: str
    subject: str = "user"  # the speaker unless a rule names someone else
    confidence: float = 1.0


@dataclass(frozen=True, slots=True)
class Extraction:
    """Everything the write path needs from one text.

    The last four fields are lifecycle signals (see :mod:`extractors.signals`):
    ``confidence`` is the lowest hedge confidence of the text (1.0 plain, 0.4-0.8
    hedged: "I think", "maybe", "可能"); ``retracts`` marks an explicit retraction
    of something said before ("forget that", "never mind, drop the plan", "算了")
    and ``retract_hint`` holds the words naming what is retracted ("the plan"; ""
    when the text does not say); ``corrects`` marks a correction of the previous
    statement ("no, I meant Tuesday", "不对，是周二"), whose value, when the
    attribute is recoverable, is also in ``facts``.
    """

    text: str
    language: str  # "en" | "zh" | other ISO code
    entities: tuple[ExtractedEntity, ...] = ()
    triples: tuple[ExtractedTriple, ...] = ()
    facts: tuple[ExtractedFact, ...] = ()
    contentless: bool = False  # "ok", "thanks", "好的": not stored as a memory
    kind: str = "message"  # message | fact | preference | personal_info | event | ...
    extra: dict[str, str] = field(default_factory=dict)
    confidence: float = 1.0
    retracts: bool = False
    retract_hint: str = ""
    corrects: bool = False


@runtime_checkable
class Extractor(Protocol):
    """Turns texts into :class:`Extraction` records, in batches."""

    def extract_many(self, texts: Sequence[str]) -> list[Extraction]:
        """One :class:`Extraction` per input text, in order."""
        ...
