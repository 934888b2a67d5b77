"""Candidate mentions shared by the language extractors, and how they are reduced.

Each extractor proposes overlapping candidates (a named entity, a proper-noun
run, a noun phrase and its core...).  Two rules turn them into the output, the
same for every language so that the graph behaves the same whatever was said:
a token belongs to the highest-priority candidate covering it (used to attach
triples to entities), and each key is reported once, by its best mention.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import ExtractedEntity

__all__ = ["Mention", "P_SPEAKER", "P_NAMED", "P_PROPN", "P_NOUN", "P_CORE", "token_keys", "dedupe"]

# Lower is better.
P_SPEAKER, P_NAMED, P_PROPN, P_NOUN, P_CORE = range(5)


@dataclass(slots=True)
class Mention:
    """A candidate entity mention: character offsets in the full text, token offsets in the parse."""

    key: str
    name: str
    label: str
    start: int
    end: int
    tok_start: int  # -1 for mentions outside the parsed message (the speaker)
    tok_end: int
    priority: int


def token_keys(mentions: list[Mention], n_tokens: int) -> list[str | None]:
    """For each token, the key of the highest-priority mention covering it (None if none)."""
    keys: list[str | None] = [None] * n_tokens
    for m in sorted(mentions, key=lambda m: m.priority):
        for k in range(max(m.tok_start, 0), m.tok_end):
            if keys[k] is None:
                keys[k] = m.key
    return keys


def dedupe(mentions: list[Mention]) -> tuple[ExtractedEntity, ...]:
    """One entity per key (its highest-priority, then earliest, mention), ordered by position."""
    best: dict[str, Mention] = {}
    for m in mentions:
        cur = best.get(m.key)
        if cur is None or (m.priority, m.start) < (cur.priority, cur.start):
            best[m.key] = m
    ordered = sorted(best.values(), key=lambda m: (m.start, -m.end))
    return tuple(ExtractedEntity(name=m.name, key=m.key, label=m.label, start=m.start, end=m.end) for m in ordered)
