"""An extractor over a list of known names: no model, deterministic, thousands of texts a second.

Why: an agent often knows the names that matter in its domain already (its
clients, projects, places), and a parser can only guess at them.  Matching a
gazetteer finds exactly those, in any casing or with a determiner in front
("the Acme Corp", "ACME corp"), at a cost of microseconds per text.  The
benchmark uses it to build million-memory synthetic stores in minutes: the
generator knows every name it wrote, and spaCy's ~400 texts/s would take an
hour.

Everything but the entities comes from the same rules as the spaCy and jieba
extractors (:mod:`extractors.assemble`): the speaker, facts, lifecycle signals,
kind and language.  There are no triples: RELATED edges need a parse.

    >>> g = GazetteerExtractor({"Acme Corp": "ORG", "Dana Whitfield": "PERSON", "北京": "GPE"})
    >>> [(e.name, e.key, e.label) for e in g.extract("Bo: dana whitfield joined the Acme Corp in 北京.").entities]
    [('Bo', 'bo', 'PERSON'), ('dana whitfield', 'dana whitfield', 'PERSON'), ('Acme Corp', 'acme corp', 'ORG'), ('北京', '北京', 'GPE')]
"""

from __future__ import annotations

import re
from typing import Mapping, Sequence

from .assemble import assemble, speaker_mentions
from .base import Extraction
from .filters import is_contentless
from .mentions import P_NAMED, Mention
from .normalize import entity_key
from .speaker import split_speaker
from .text import has_cjk

__all__ = ["GazetteerExtractor"]

_WORD = re.compile(r"[^\W_]+(?:['\u2019\-][^\W_]+)*")


class GazetteerExtractor:
    """Entities are the known ``names`` (name -> label, e.g. ``{"Acme Corp": "ORG"}``) found in a text.

    Latin-script names match whole words, longest first, compared by
    :func:`~extractors.normalize.entity_key`; names in Chinese (or any CJK
    script) match as substrings, since those scripts do not separate words.
    """

    def __init__(self, names: Mapping[str, str]) -> None:
        if isinstance(names, (str, bytes)) or not isinstance(names, Mapping):
            raise TypeError("names must be a mapping of name -> label, e.g. {'Acme Corp': 'ORG'}")
        self._labels: dict[str, str] = {}
        self._cjk: dict[str, str] = {}
        self._firsts: set[str] = set()
        self._max_words = 1
        for name, label in names.items():
            key = entity_key(name)
            if not key:
                continue
            if has_cjk(key):
                self._cjk[key] = label
                continue
            words = key.split(" ")
            self._labels[key] = label
            self._firsts.add(words[0])
            self._max_words = max(self._max_words, len(words))
        self._cjk_lengths = sorted({len(k) for k in self._cjk}, reverse=True)

    def __len__(self) -> int:
        return len(self._labels) + len(self._cjk)

    def extract(self, text: str) -> Extraction:
        return self.extract_many([text])[0]

    def extract_many(self, texts: Sequence[str]) -> list[Extraction]:
        """One :class:`Extraction` per text, in order."""
        out = []
        for text in texts:
            turn = split_speaker(text)
            message = text[turn.message_start :]
            contentless = is_contentless(message)
            mentions = speaker_mentions(turn)
            if not contentless:
                mentions.extend(self._mentions(text, turn.message_start))
            out.append(assemble(text, turn, message, mentions, contentless=contentless))
        return out

    def _mentions(self, text: str, offset: int) -> list[Mention]:
        words = list(_WORD.finditer(text, offset))
        found: list[Mention] = []
        i = 0
        while i < len(words):
            w = words[i]
            if self._cjk and has_cjk(w.group()):
                found.extend(self._cjk_mentions(text, w.start(), w.end()))
                i += 1
                continue
            n = self._match(text, words, i) if w.group().lower() in self._firsts else 0
            if not n:
                i += 1
                continue
            start, end = w.start(), words[i + n - 1].end()
            name = text[start:end]
            key = entity_key(name)
            found.append(Mention(key, name, self._labels[key], start, end, -1, -1, P_NAMED))
            i += n
        return found

    def _match(self, text: str, words: list[re.Match[str]], i: int) -> int:
        """How many words from ``i`` form the longest known name (0: none)."""
        for n in range(min(self._max_words, len(words) - i), 0, -1):
            if entity_key(text[words[i].start() : words[i + n - 1].end()]) in self._labels:
                return n
        return 0

    def _cjk_mentions(self, text: str, start: int, end: int) -> list[Mention]:
        found = []
        p = start
        while p < end:
            for length in self._cjk_lengths:
                piece = text[p : p + length]
                if p + length <= end and piece in self._cjk:
                    found.append(Mention(piece, piece, self._cjk[piece], p, p + length, -1, -1, P_NAMED))
                    p += length
                    break
            else:
                p += 1
        return found
