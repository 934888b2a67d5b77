"""Chinese extraction with jieba part-of-speech tags: entities, simple triples, facts.

Why jieba rather than a neural Chinese pipeline: it is a small pure-Python
package with its dictionary inside (no model download), segments about a
thousand chat turns per second with HMM discovery of unknown names, and its
tags (nr person, ns place, nt organisation, nz other proper noun, n noun) are
what an entity graph needs.  There is no dependency parse, so triples come
from a word-order pattern inside one clause: entity, verb, entity
("张伟喜欢北京烤鸭"), plus the frequent "X在Y<verb>" form ("张伟在阿里巴巴工作"
-> 工作_在).  Precision matters more than recall here: the engine adds
co-mention edges for everything else.

jieba is imported inside :func:`_posseg` (``functools.cache``), never at import time.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Sequence

from .assemble import assemble, speaker_mentions
from .base import ExtractedTriple, Extraction
from .filters import FILLERS_ZH, is_contentless
from .mentions import P_CORE, P_NAMED, P_NOUN, P_PROPN, Mention, token_keys
from .normalize import entity_key, is_valid_entity
from .speaker import SpeakerTurn, split_speaker
from .text import _jieba

__all__ = ["JiebaExtractor", "FLAG_LABELS", "person_words"]

#: jieba flag -> entity label.  ``nrt`` (transliterated names) also tags foreign
#: places, companies (阿里巴巴) and some plain words in jieba's dictionary, so it
#: gets the neutral MISC rather than PERSON.
FLAG_LABELS: dict[str, str] = {
    "nr": "PERSON",
    "nrfg": "PERSON",
    "nrt": "MISC",
    "ns": "GPE",
    "nsf": "GPE",
    "nt": "ORG",
    "nz": "MISC",
}
_NOUN_FLAGS = frozenset({"n", "ng"})
_VERB_FLAGS = frozenset({"v", "vd", "vi"})
_PREP_VERB_FLAGS = _VERB_FLAGS | {"vn"}
_PREPOSITIONS = frozenset({"在", "于", "到", "从", "给", "跟", "向", "对"})
_CONJ = frozenset({"和", "与", "跟", "及", "以及"})
_FIRST_PERSON = frozenset({"我", "本人"})
_CLAUSE_END = re.compile(r"^[，。！？；,.!?;\n]+$")
# Words jieba tags as names but that are courtesy or filler ("谢谢" is nr in its dictionary).
_NOT_ENTITIES = frozenset(FILLERS_ZH) | frozenset("令人 二人 多谢 崇拜 崇高 登基 胡说 哈哈 呵呵 嘿嘿".split())


@functools.cache
def _posseg() -> Any:
    """``jieba.posseg``, imported and initialised once (about one second, quietly)."""
    _jieba()
    import jieba.posseg as pseg

    return pseg


def person_words(han: str) -> list[str]:
    """The words of a Han run that jieba tags as person names (``nr``, ``nrfg``), courtesy words left out."""
    return [w for w, flag in _posseg().cut(han) if flag in ("nr", "nrfg") and w not in _NOT_ENTITIES]


@dataclass(frozen=True, slots=True)
class _Tok:
    word: str
    flag: str
    start: int  # character offsets in the full text
    end: int


class JiebaExtractor:
    """Chinese :class:`~extractors.base.Extractor` on ``jieba.posseg``.

    ``hmm`` keeps jieba's HMM discovery of words missing from its dictionary
    (most personal names); turning it off is ~9x faster but splits unknown
    names into characters.
    """

    language = "zh"

    def __init__(self, *, hmm: bool = True, noun_compounds: bool = True) -> None:
        self.hmm = hmm
        self.noun_compounds = noun_compounds

    def extract(self, text: str) -> Extraction:
        """:meth:`extract_many` for one text."""
        return self.extract_many([text])[0]

    def extract_many(self, texts: Sequence[str]) -> list[Extraction]:
        """One :class:`Extraction` per text, in order."""
        texts = list(texts)
        if not texts:
            return []
        pseg = _posseg()
        out: list[Extraction] = []
        for text in texts:
            turn = split_speaker(text)
            message = text[turn.message_start :]
            if is_contentless(message):
                out.append(self._build(text, turn, message, None))
            else:
                out.append(self._build(text, turn, message, self._tokens(pseg, message, turn.message_start)))
        return out

    def _tokens(self, pseg: Any, message: str, offset: int) -> list[_Tok]:
        toks: list[_Tok] = []
        pos = 0
        for pair in pseg.cut(message, HMM=self.hmm):
            word, flag = pair.word, pair.flag
            if not message.startswith(word, pos):  # jieba keeps every character; be safe anyway
                found = message.find(word, pos)
                if found < 0:
                    continue
                pos = found
            toks.append(_Tok(word, flag, offset + pos, offset + pos + len(word)))
            pos += len(word)
        return toks

    def _build(self, text: str, turn: SpeakerTurn, message: str, toks: list[_Tok] | None) -> Extraction:
        mentions = speaker_mentions(turn)
        triples: list[ExtractedTriple] = []
        if toks:
            mentions.extend(self._mentions(text, toks))
            keys = token_keys(mentions, len(toks))
            speaker_key = turn.subject if turn.speaker is not None else None
            triples = _triples(toks, keys, speaker_key)
        return assemble(text, turn, message, mentions, triples, contentless=toks is None)

    def _mentions(self, text: str, toks: list[_Tok]) -> list[Mention]:
        out: list[Mention] = []
        n = len(toks)
        i = 0
        while i < n:
            t = toks[i]
            label = FLAG_LABELS.get(t.flag)
            if label is not None:
                j = i + 1
                if label == "PERSON":  # "张" + "伟" -> "张伟"
                    while j < n and FLAG_LABELS.get(toks[j].flag) == "PERSON":
                        j += 1
                _add(out, text, toks, i, j, label, P_NAMED)
                i = j
            elif t.flag == "eng" and t.word[:1].isupper():
                # Latin proper nouns inside Chinese text ("我在 Northwind 工作"), spaces allowed.
                j = i + 1
                while j + 1 < n and toks[j].word == " " and toks[j + 1].flag == "eng" and toks[j + 1].word[:1].isupper():
                    j += 2
                _add(out, text, toks, i, j, "PROPN", P_PROPN)
                i = j
            elif t.flag in _NOUN_FLAGS:
                j = i + 1
                while j < n and toks[j].flag in _NOUN_FLAGS:
                    j += 1
                if j - i > 1 and self.noun_compounds:  # "陶艺" + "课" -> "陶艺课", parts kept too
                    _add(out, text, toks, i, j, "NOUN", P_NOUN)
                for k in range(i, j):
                    if len(toks[k].word) >= 2:
                        _add(out, text, toks, k, k + 1, "NOUN", P_CORE if j - i > 1 else P_NOUN)
                i = j
            else:
                i += 1
        return out


def _add(out: list[Mention], text: str, toks: list[_Tok], i: int, j: int, label: str, priority: int) -> None:
    start, end = toks[i].start, toks[j - 1].end
    name = text[start:end]
    if name in _NOT_ENTITIES or len(name.strip()) < 2:
        return
    key = entity_key(name)
    if is_valid_entity(key, label):
        out.append(Mention(key, name, label, start, end, i, j, priority))


def _triples(toks: list[_Tok], keys: list[str | None], speaker_key: str | None) -> list[ExtractedTriple]:
    """Entity + verb + entity inside one clause, without a parse.

    The subject is the entity before the clause's first verb or preposition
    (so serial verbs share it: "王芳去杭州参加了陶艺课"), the object the first
    entity after the verb; a prepositional phrase before the verb gives a
    second predicate ("周杰伦在台北开演唱会" -> 开 演唱会, 开_在 台北), and a
    preposition right after the verb joins it ("住在上海" -> 住_在).
    """

    def key_at(k: int) -> str | None:
        if toks[k].word in _FIRST_PERSON:
            return speaker_key
        return keys[k]

    out: list[ExtractedTriple] = []
    seen: set[tuple[str, str, str]] = set()

    def emit(subjects: list[str], p: str, o: str) -> None:
        for s in subjects:
            if s != o and (s, p, o) not in seen:
                seen.add((s, p, o))
                out.append(ExtractedTriple(subject=s, predicate=p, object=o))

    clauses: list[tuple[int, int]] = []
    c0 = 0
    for k, t in enumerate(toks):
        if _CLAUSE_END.match(t.word):
            clauses.append((c0, k))
            c0 = k + 1
    clauses.append((c0, len(toks)))

    for a, b in clauses:
        first_pred = next((m for m in range(a, b) if toks[m].flag in _VERB_FLAGS or toks[m].flag == "p"), b)
        subjects = _subjects_before(first_pred, a, toks, key_at)
        if not subjects:
            continue
        for k in range(max(first_pred, a), b):
            flag = toks[k].flag
            if flag not in _PREP_VERB_FLAGS or (flag == "vn" and k != first_pred and toks[k - 1].flag != "p" and not _pp_before(k, a, toks, key_at)):
                continue
            verb = toks[k].word
            # Prepositional phrase before the verb: "在 <entity> <verb>".
            pp = _pp_before(k, a, toks, key_at)
            if pp is not None:
                prep_word, pp_obj = pp
                emit(subjects, f"{verb}_{prep_word}", pp_obj)
            if flag not in _VERB_FLAGS:
                continue
            pred = verb
            m = k + 1
            if m < b and toks[m].flag == "p" and toks[m].word in _PREPOSITIONS:
                pred = f"{verb}_{toks[m].word}"
                m += 1
            while m < b and toks[m].flag not in _VERB_FLAGS:
                obj = key_at(m)
                if obj:
                    emit(subjects, pred, obj)
                    break
                m += 1
    return out


def _pp_before(k: int, a: int, toks: list[_Tok], key_at: Any) -> tuple[str, str] | None:
    """("在", key) when a preposition and an entity sit between the previous verb and token ``k``."""
    m = k - 1
    obj: str | None = None
    while m >= a and toks[m].flag not in _VERB_FLAGS:
        if toks[m].flag == "p":
            if toks[m].word in _PREPOSITIONS and obj:
                return toks[m].word, obj
            return None
        if obj is None:
            obj = key_at(m)  # the entity closest to the verb: "在北京的阿里巴巴工作" -> 阿里巴巴
        m -= 1
    return None


def _subjects_before(k: int, a: int, toks: list[_Tok], key_at: Any) -> list[str]:
    """The nearest entity before token ``k`` in its clause, plus entities joined to it by 和/与."""
    m = k - 1
    while m >= a and not key_at(m):
        m -= 1
    if m < a:
        return []
    first = key_at(m)
    assert first is not None
    subjects = [first]
    # Skip back over the rest of the same mention, then look for "X 和 Y".
    while m - 1 >= a and key_at(m - 1) == first:
        m -= 1
    while m - 2 >= a and toks[m - 1].word in _CONJ and key_at(m - 2):
        other = key_at(m - 2)
        assert other is not None
        if other not in subjects:
            subjects.append(other)
        m -= 2
        while m - 1 >= a and key_at(m - 1) == other:
            m -= 1
    return subjects
