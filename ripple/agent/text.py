"""Small text helpers the agent layer's rules share: proper names in a turn, in English and Chinese."""

from __future__ import annotations

import re

__all__ = ["latin_names", "chinese_names", "HAN_WORD"]

_LATIN_NAME = re.compile(r"\b[A-Z][a-zA-Z0-9]+(?:\s+[A-Z][a-zA-Z0-9]+)*\b")
HAN_WORD = re.compile(r"[\u4e00-\u9fff]{2,}")
#: Capitalised words that are not names (sentence openers, weekdays, pronouns, chat words).
NOT_NAMES = frozenset(
    "I The A An And But So We You He She It They This That What When Where Why How Is Are Do Does Did Can Could "
    "Should Will Would Let Lets Let's Please My Our Your Hi Hey Ok Okay Thanks Sure Yes No Also Remember Remind "
    "Don't Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
)


def latin_names(text: str) -> list[str]:
    """Runs of capitalised words without the words that are not names ("Is Priya here?" -> ["Priya"])."""
    out = []
    for m in _LATIN_NAME.finditer(text):
        words = [w for w in m.group(0).split() if w not in NOT_NAMES]
        if words:
            out.append(" ".join(words))
    return list(dict.fromkeys(out))


def chinese_names(text: str, *, proper_only: bool) -> list[str]:
    """Chinese words of two or more characters: proper nouns only (jieba's nr/ns/nt/nz tags), or every
    content word of the lexical route (what a turn and an old memory can share)."""
    if not HAN_WORD.search(text):
        return []
    if proper_only:
        import jieba.posseg as pseg

        return list(dict.fromkeys(w.word for w in pseg.cut(text) if w.flag in ("nr", "ns", "nt", "nz")
                                  and len(w.word) >= 2))
    from extractors.text import lexical_tokens

    return list(dict.fromkeys(w for run in HAN_WORD.findall(text) for w in lexical_tokens(run) if len(w) >= 2))
