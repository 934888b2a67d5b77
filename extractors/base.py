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
    """A first-person fact from a trigger rule ("my name is X", "我叫X")."""

    attribute: str  # name, employer, preference, identity, location, ...
    value: str
    subject: str = "user"  # the speaker unless a rule says otherwise


@dataclass(frozen=True, slots=True)
class Extraction:
    """Everything the write path needs from one text."""

    text: str
    language: str  # "en" | "zh" | other ISO code
    entities: tuple[ExtractedEntity, ...] = ()
    triples: tuple[ExtractedTriple, ...] = ()
    facts: tuple[ExtractedFact, ...] = ()
    contentless: bool = False  # "ok", "thanks", "好的": not stored as a memory
    kind: str = "message"  # message | fact | preference | personal_info | event | ...
    extra: dict[str, str] = field(default_factory=dict)


@runtime_checkable
class Extractor(Protocol):
    """Turns texts into :class:`Extraction` records, in batches."""

    def extract_many(self, texts: Sequence[str]) -> list[Extraction]:
        """One :class:`Extraction` per input text, in order."""
        ...
