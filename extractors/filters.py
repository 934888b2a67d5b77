"""Detection of content-free chat turns ("ok", "thanks", "好的", "👍").

Storing acknowledgements as memories costs space, pollutes lexical and vector
recall with near-duplicates and, worst for ripple, gives nothing to link:
they mention no entity.  The rule is conservative on purpose — a turn is
content-free only when, after removing punctuation, emoji and a fixed list of
filler phrases, *nothing* with a letter or digit is left.  "ok, the budget is
50k" keeps "the budget is 50k" and is stored.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["is_contentless", "is_question_only", "FILLERS_EN", "FILLERS_ZH"]

FILLERS_EN: tuple[str, ...] = (
    "ok", "okay", "okey", "okie", "okie dokie", "okey dokey", "k", "kk", "alright", "all right", "aight",
    "thanks", "thank you", "thank u", "thanks a lot", "thanks a bunch", "thank you so much",
    "thank you very much", "thanks so much", "thank you so very much", "many thanks", "thx", "thnx",
    "ty", "tysm", "tyvm", "much appreciated", "appreciate it", "i appreciate it", "cheers",
    "lol", "lmao", "lmfao", "rofl", "haha", "hehe", "xd", "omg",
    "yes", "yeah", "yea", "yep", "yup", "ya", "yah", "yess", "no", "nope", "nah",
    "sure", "sure thing", "of course", "certainly", "absolutely", "definitely", "indeed", "exactly",
    "right", "true", "agreed", "fair enough", "makes sense", "that makes sense",
    "got it", "gotcha", "i got it", "i see", "understood", "noted", "roger", "roger that",
    "will do", "i will", "sounds good", "sounds great", "that sounds good", "that sounds great",
    "cool", "nice", "great", "awesome", "perfect", "wonderful", "amazing", "good", "very good",
    "fine", "good to know", "good to hear", "glad to hear it", "wow", "oh", "ah", "ahh", "aha",
    "hmm", "hm", "mhm", "uh", "um", "uh huh", "huh", "oops", "yay", "welp", "well",
    "np", "no problem", "no worries", "you're welcome", "you are welcome", "welcome", "anytime",
    "hi", "hello", "hey", "hey there", "hi there", "yo", "bye", "goodbye", "good bye", "bye bye",
    "see you", "see ya", "see you later", "later", "cya", "ttyl", "good night", "good morning",
    "gn", "gm", "please", "pls", "plz", "too", "again", "so", "very", "much", "a lot", "really",
    "then", "and", "ok then", "oh well",
)

FILLERS_ZH: tuple[str, ...] = (
    "好的", "好", "好吧", "好滴", "好嘞", "好哒", "好呀", "好啊", "好了", "行", "行吧", "行的", "可以", "没问题",
    "嗯", "恩", "嗯呢", "哦", "噢", "喔", "哇", "啊", "呀", "呢", "吧", "啦", "嘛", "哈", "呵", "嘿", "嘻",
    "谢谢", "谢谢你", "谢谢您", "谢了", "多谢", "感谢", "非常感谢", "太感谢了", "辛苦了", "辛苦",
    "收到", "明白", "明白了", "知道了", "知道", "了解", "了解了", "懂了", "懂", "清楚了",
    "对", "对的", "对对", "是的", "是啊", "没错", "不客气", "不用谢", "客气了",
    "赞", "棒", "厉害", "太棒了", "不错", "拜拜", "再见", "晚安", "早安", "你好", "您好", "哈喽",
)

_LAUGH_EN = (
    r"a?h+a+(?:h+a+)+h*|h+e+h+e+(?:h+e+)*|l+o+l+(?:o+l+)*|lm+f?a+o+|x+d+|h+m+|m+h+m+|u+m+|u+h+"
    r"|o+h+|a+h+|o+k+|k+|y+e+s+|y+e+a+h*|y+a+y+|w+o+w+|n+o+|o+o+p+s+|t+y+s*m*"
)


def _phrase_pattern(phrases: tuple[str, ...]) -> str:
    ordered = sorted(set(phrases), key=len, reverse=True)
    return "|".join(re.escape(p).replace(r"\ ", r"\s+") for p in ordered)


# Latin-only word boundaries: a Han character next to "ok" ("ok好的") must not block the match.
_EN_RE = re.compile(rf"(?<![0-9a-z\u00c0-\u024f])(?:{_phrase_pattern(FILLERS_EN)}|{_LAUGH_EN})(?![0-9a-z\u00c0-\u024f])")
_ZH_RE = re.compile(rf"(?:{_phrase_pattern(FILLERS_ZH)}|[哈呵嘿嘻嗯哦噢]+)")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'"})


def _strip_symbols(text: str) -> str:
    """Turn every character that is neither a letter, a digit nor an apostrophe into a space."""
    return "".join(ch if ch.isalnum() or ch == "'" else " " for ch in text)


def is_contentless(text: str) -> bool:
    """True when a turn carries nothing worth remembering.

    >>> is_contentless("Thank you so much!! 🙏")
    True
    >>> is_contentless("ok, the budget is 50k")
    False
    """
    if not text or not text.strip():
        return True
    s = unicodedata.normalize("NFKC", text).translate(_APOSTROPHES).lower()
    s = _strip_symbols(s)
    # Fillers are removed repeatedly so "ok ok thanks" and "好的好的" collapse too.
    for _ in range(4):
        new = _ZH_RE.sub(" ", _EN_RE.sub(" ", s))
        if new == s:
            break
        s = new
    return not any(ch.isalnum() for ch in s)


# A sentence ends at these; a question at the first two, or at a final particle (吗, 呢) before optional "。".
_SENTENCE_ENDS = re.compile(r"[。！!?？…]+|(?<![.\d])\.(?!\d)")
_ASKS = re.compile(r"(?:[?？]|[吗呢][。]?)$")
_TRAILING = re.compile(r"[\s\U0001F000-\U0001FAFF\u2600-\u27BF~～]+$")


def is_question_only(message: str) -> bool:
    """True when a turn's message is one sentence, and that sentence a question.

    Such a turn asks but holds no answer: in the six development conversations
    (LoCoMo's four, the two Chinese ones) none of the 652 evidence turns is one,
    while 28 of the 2,458 turns are (0.2-6 % per conversation; and the turn after
    a question is evidence about twice as often as any turn).  Counting a
    content-free exclamation as no sentence ("Wow! Did you see that band?")
    would catch 48 turns, three of them evidence: it is a sentence.  A question with a statement around it
    ("I went hiking! Have you been?") is not question-only.

    >>> is_question_only("店名想好了吗")
    True
    >>> is_question_only("Did you ever go back to Rome?")
    True
    >>> is_question_only("Wow! Did you see that band?")  # (evidence in LoCoMo: "Wow!" is a sentence of its own)
    False
    >>> is_question_only("八万！一台咖啡机？？")
    False
    >>> is_question_only("I painted a sunset last week, want to see?")
    False
    """
    text = _TRAILING.sub("", unicodedata.normalize("NFKC", message))
    if not _ASKS.search(text):
        return False
    sentences = [x for x in _SENTENCE_ENDS.split(text) if any(ch.isalnum() for ch in x)]
    return len(sentences) == 1 and not _has_statement(text)


_HAN = re.compile(r"[\u4e00-\u9fff]")


def _has_statement(text: str) -> bool:
    """A clause before the question that states something ("I painted a sunset, want to see?",
    "我刚到家，你吃了吗"): three words or four Han characters, not itself asking ("你呢，...")."""
    for clause in text.rstrip("?？").split(",")[:-1]:
        clause = clause.strip()
        if _ASKS.search(clause):
            continue
        if len(clause.split()) >= 3 or len(_HAN.findall(clause)) >= 4:
            return True
    return False
