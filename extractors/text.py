"""Language detection, CJK-aware lexical tokens and token estimates.

ripple treats Chinese as a first-class language: a text is tokenised by script
run, Han runs go through jieba (imported lazily, it costs ~1 s the first time),
Latin runs through a small regular expression.  No external language
identifier is needed for the two languages ripple extracts from: the share of
Han characters decides, which is robust on the short, mixed-script turns that
agents store ("我在 Northwind 工作").
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Any

__all__ = [
    "detect_language",
    "lexical_tokens",
    "estimate_tokens",
    "is_cjk_char",
    "has_cjk",
    "STOPWORDS_EN",
    "STOPWORDS_ZH",
]

_HAN = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_KANA = r"\u3040-\u30ff"
_HANGUL = r"\uac00-\ud7af"
_CJK_RUN = re.compile(f"[{_HAN}{_KANA}{_HANGUL}]+")  # every character is_cjk_char counts
# The word group excludes CJK characters (they are \w too): without that, "Northwind工作"
# in "我在Northwind工作" would be swallowed as one Latin word.
_WORD = f"[^\\W_{_HAN}{_KANA}{_HANGUL}]"
_SCRIPT_RUNS = re.compile(
    f"([{_HAN}]+)|([{_KANA}]+)|([{_HANGUL}]+)|({_WORD}+(?:['’]{_WORD}+)?)", re.UNICODE
)

STOPWORDS_EN: frozenset[str] = frozenset(
    """a about above after again against all am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
    during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here
    here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself
    let's me more most mustn't my myself no nor not of off on once only or other ought our ours ourselves
    out over own same shan't she she'd she'll she's should shouldn't so some such than that that's the their
    theirs them themselves then there there's these they they'd they'll they're they've this those through
    to too under until up very was wasn't we we'd we'll we're we've were weren't what what's when when's
    where where's which while who who's whom why why's with won't would wouldn't you you'd you'll you're
    you've your yours yourself yourselves s t d ll m re ve y just also yeah yes oh ok okay really so
    will would shall may might must""".split()
)

STOPWORDS_ZH: frozenset[str] = frozenset(
    """的 了 是 在 我 你 他 她 它 们 我们 你们 他们 这 那 这个 那个 就 也 都 和 与 及 或 吗 呢 吧 啊 呀 哦 嗯 么 什么
    怎么 哪 哪里 谁 有 没有 不 很 还 又 把 被 给 让 对 从 到 向 会 能 要 想 去 来 上 下 里 中 个 一 一个 些 一些 着 过
    得 地 之 其 而 但 但是 因为 所以 如果 就是 还是 已经 可以 自己""".split()
)


def is_cjk_char(ch: str) -> bool:
    """True for a Han, kana or hangul character."""
    o = ord(ch)
    return (
        0x3400 <= o <= 0x4DBF
        or 0x4E00 <= o <= 0x9FFF
        or 0xF900 <= o <= 0xFAFF
        or 0x3040 <= o <= 0x30FF
        or 0xAC00 <= o <= 0xD7AF
    )


def has_cjk(text: str) -> bool:
    """True when ``text`` has at least one Han, kana or hangul character."""
    return _CJK_RUN.search(text) is not None


def detect_language(text: str) -> str:
    """``"zh"`` when Han characters make up at least 30 % of the letters, else ``"en"``.

    Japanese kana or Korean hangul give ``"ja"``/``"ko"`` so that callers can
    fall back to script-based handling; everything else in Latin script is
    treated as English by the extractors.
    """
    han = kana = hangul = letters = 0
    for ch in text:
        if ch.isalpha():
            letters += 1
            o = ord(ch)
            if 0x3040 <= o <= 0x30FF:
                kana += 1
            elif 0xAC00 <= o <= 0xD7AF:
                hangul += 1
            elif is_cjk_char(ch):
                han += 1
    if not letters:
        return "en"
    if kana and (kana + han) / letters >= 0.3:
        return "ja"
    if hangul / letters >= 0.3:
        return "ko"
    if han / letters >= 0.3:
        return "zh"
    return "en"


@functools.cache
def _jieba() -> Any:
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba


def _han_tokens(run: str) -> list[str]:
    """Words of a Han run in jieba search mode, plus the characters of multi-character words.

    Search mode already splits long compounds ("北京大学" -> "北京", "大学", ...);
    the single characters are the usual unigram back-off of Chinese retrieval:
    "展会" and "设计展" share no word but share "展", and BM25's IDF keeps such
    matches weak unless the character is rare.
    """
    words = [w for w in _jieba().cut_for_search(run) if w.strip()]
    chars = [ch for w in words if len(w) > 1 for ch in w if ch not in STOPWORDS_ZH]
    return words + chars


_LIGHT_SUFFIXES = ("'s", "’s")


def _normalise_word(word: str) -> str:
    w = unicodedata.normalize("NFKC", word).lower()
    for suf in _LIGHT_SUFFIXES:
        if w.endswith(suf):
            w = w[: -len(suf)]
    return w


def _stem(word: str) -> str:
    """A very light English stemmer: plural and common verb endings.

    Enough to match "painting"/"paints"/"painted" with "paint" in BM25 without
    pulling in a stemming library.  Words of three letters or fewer are left
    alone, four-letter words only lose a plural "s" ("runs" -> "run"), and a
    stem never has fewer than three letters.
    """
    if len(word) <= 3 or not word.isascii():
        return word
    if len(word) == 4:
        if word.endswith("s") and not word.endswith(("ss", "us", "is")):
            return word[:-1]
        return word
    for suf, rep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suf) and len(word) - len(suf) >= 3:
            if suf == "es" and not word[:-2].endswith(("ch", "sh", "x", "z")):
                continue  # "makes" -> "make" (via "s"), but "matches" -> "match"
            if suf == "s" and word.endswith(("ss", "us", "is")):
                return word
            stem = word[: -len(suf)] + rep
            if suf in ("ing", "ed") and len(stem) >= 4 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
                stem = stem[:-1]  # running -> run, stopped -> stop
            return stem
    return word


def lexical_tokens(text: str, *, stem: bool = True, keep_stopwords: bool = False) -> list[str]:
    """Tokens for the lexical (BM25) route, CJK-aware.

    Latin words are lower-cased, NFKC-normalised, stop words dropped and lightly
    stemmed; Han runs are segmented by jieba in search mode (which also emits
    the shorter words inside long compounds, so "北京大学" matches "北京").

    >>> lexical_tokens("Dana runs procurement at Northwind")
    ['dana', 'run', 'procurement', 'northwind']
    """
    out: list[str] = []
    for m in _SCRIPT_RUNS.finditer(text):
        han, kana, hangul, word = m.groups()
        if han:
            for w in _han_tokens(han):
                if keep_stopwords or w not in STOPWORDS_ZH:
                    out.append(w)
        elif kana or hangul:
            run = kana or hangul
            # No segmenter for these scripts: overlapping character bigrams.
            out.extend(run[i : i + 2] for i in range(max(1, len(run) - 1)))
        elif word:
            w = _normalise_word(word)
            if not keep_stopwords and w in STOPWORDS_EN:
                continue
            out.append(_stem(w) if stem else w)
    return out


# Capitalised words that are dates, not names: a question's "in June" is answered from a memory's
# own date, whose text rarely says "June".
_CALENDAR_WORDS: frozenset[str] = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec "
    "monday tuesday wednesday thursday friday saturday sunday".split()
)
_SENTENCE_START = re.compile(r"(?:^|[.!?。！？]\s*|\n)\s*[\"'“‘(]*$")


def name_tokens(text: str) -> list[str]:
    """The lexical tokens of the capitalised words inside a sentence: the names a query asks about.

    A question about "Joanna" asked of a user who never mentioned anyone of
    that name is about something else, however well its other words match;
    recall's calibrated relevance uses this.  Sentence-initial words are left
    out (a capital there says nothing), and so are stop words, month and day
    names.  Han script has no capitals: there, the words jieba tags as person
    names (``nr``) are the names.

    >>> name_tokens("What did Nate cook for Joanna's party in New York?")
    ['nate', 'joanna', 'new', 'york']
    """
    out: list[str] = []
    for m in _SCRIPT_RUNS.finditer(text):
        han, word = m.group(1), m.group(4)
        if han:
            from extractors.jieba_zh import person_words

            out.extend(person_words(han))
            continue
        if (not word or not word[0].isupper() or word.lower() in _CALENDAR_WORDS
                or _SENTENCE_START.search(text[: m.start()])):
            continue
        out.extend(lexical_tokens(word))
    return out


def estimate_tokens(text: str) -> int:
    """Estimate of LLM tokens in ``text`` without a tokenizer.

    CJK characters cost about one token each in current BPE vocabularies,
    English words about 1.3; punctuation and digits are counted per group.
    """
    cjk = sum(1 for ch in text if is_cjk_char(ch))
    rest = _CJK_RUN.sub(" ", text)
    words = re.findall(r"[^\W_]+", rest, re.UNICODE)
    punct = len(re.findall(r"[^\w\s]", rest, re.UNICODE))
    return int(round(cjk + 1.3 * len(words) + 0.5 * punct)) if text else 0
