"""Entity keys: the one normalised form under which mentions of an entity meet.

Recall in ripple spreads activation through *shared* entity nodes, so two
memories only connect when their mentions resolve to the same key.  The key
must therefore forgive the differences that do not change what is meant
("The Northwind's" / "northwind", "Dana  Whitfield" / "dana whitfield",
full-width letters) while keeping everything that does.  It is deliberately
rule-based and cheap: it runs on every mention on the write path.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from .text import STOPWORDS_EN, STOPWORDS_ZH, has_cjk

__all__ = ["entity_key", "is_valid_entity", "PRONOUNS", "DETERMINERS", "CHAT_WORDS"]

#: Words dropped from the start of a key: "the Northwind" and "Northwind" are one entity.
DETERMINERS: frozenset[str] = frozenset(
    "the a an my our your his her their its this that these those some any".split()
)

PRONOUNS: frozenset[str] = frozenset(
    """i me my mine myself you your yours yourself yourselves he him his himself she her hers herself
    it its itself we us our ours ourselves they them their theirs themselves one oneself someone somebody
    something anyone anybody anything everyone everybody everything nobody nothing none who whom whose
    what which this that these those u ur ya y'all
    我 你 您 他 她 它 我们 你们 他们 她们 它们 咱 咱们 自己 大家 别人 人家 这 那 这个 那个 这些 那些 谁 什么""".split()
)

#: Nouns too generic to be a useful graph node: linking every memory that says
#: "thing" or "time" would create hubs that drown the real associations.
_GENERIC_NOUNS: frozenset[str] = frozenset(
    """thing things stuff lot lots bit way ways kind sort type time times day days today tomorrow name names
    yesterday moment while people person guy guys one ones part place everything something anything
    nothing idea ideas question questions answer problem problems fun sense point reason matter
    others rest lots folks bunch couple everyone anyone someone difference words pic pics
    东西 事情 事 时候 时间 问题 人 今天 明天 昨天 一下""".split()
)

#: Words of relative dates: "yesterday" or "last week" names a different day in every
#: memory, so as a node it would only join unrelated memories.  Absolute dates
#: ("May 7, 2023") stay.
_RELATIVE_DATE_WORDS: frozenset[str] = frozenset(
    """yesterday today tomorrow tonight now recently lately soon earlier later last next this that past coming
    previous following the a an few couple of several some one two three four five six seven eight nine ten
    day days week weeks weekend weekends month months year years morning mornings afternoon evening night nights
    ago before after spring summer autumn fall winter monday tuesday wednesday thursday friday saturday sunday
    其 今天 明天 昨天 前天 后天 今晚 昨晚 刚才 最近 上周 下周 本周 这周 上个月 下个月 这个月 去年 今年 明年 周末""".split()
)

#: Courtesies and reactions that taggers take for nouns or names ("Thanks, Gina!" ->
#: NOUN "Thanks", "Yep" -> PROPN); on real chat logs "thanks" was the most
#: mentioned "entity" after the speakers.
CHAT_WORDS: frozenset[str] = frozenset(
    """thanks thank thx congrats congratulations kudos cheers glad sorry please hey hi hello bye yep yup yeah
    yes ok okay wow lol haha omg oh ah hmm sure welcome wanna gonna gotta kinda sorta ya
    谢谢 多谢 感谢 哈哈 嗯嗯 好的 拜拜 再见 你好 您好""".split()
)

# Characters kept inside a key even though Unicode calls them punctuation or
# symbols: they carry meaning in names such as "AT&T", "C++", "C#", "Wi-Fi".
_KEEP_INSIDE = frozenset("&+#-.'_@")
_POSSESSIVE = re.compile(r"(?<=\w)'s\b")
_SPACES = re.compile(r"\s+")
_HAN_SPACE = re.compile(r"(?<=[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff])\s+(?=[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff])")


def _strip_punctuation(s: str) -> str:
    """Replace punctuation and symbols by spaces, keeping the few meaningful inside words.

    A kept character survives only between two alphanumerics ("wi-fi", "u.s")
    or at the end of a word for "+"/"#" ("c++", "c#").
    """
    out: list[str] = []
    n = len(s)
    for i, ch in enumerate(s):
        if ch.isalnum() or ch.isspace():
            out.append(ch)
            continue
        cat = unicodedata.category(ch)
        if cat[0] not in "PSC" and cat not in ("Mn", "Me"):
            out.append(ch)
            continue
        if ch in _KEEP_INSIDE:
            prev_ok = i > 0 and (s[i - 1].isalnum() or s[i - 1] in "+#")
            next_ok = i + 1 < n and s[i + 1].isalnum()
            if prev_ok and next_ok:
                out.append(ch)
                continue
            if ch in "+#" and prev_ok:
                out.append(ch)
                continue
        out.append(" ")
    return "".join(out)


#: Titles before a name: "Ms Whitfield" is the entity "whitfield" (which resolves to the one known
#: "Dana Whitfield"), and a title alone is no entity.
HONORIFICS: frozenset[str] = frozenset(
    "mr mrs ms miss mx dr prof professor sir madam dame lord lady mister".split()
)


@functools.lru_cache(maxsize=1 << 16)  # names repeat a lot across a batch (speakers, places)
def entity_key(name: str) -> str:
    """The normalised key of an entity mention.

    NFKC, lower case, possessive "'s" and punctuation removed, leading
    determiners dropped, whitespace collapsed; spaces between Han characters
    are removed because Chinese does not use them ("张 伟" is "张伟").

    >>> entity_key("The Northwind's")
    'northwind'
    >>> entity_key("Dana  Whitfield")
    'dana whitfield'
    >>> entity_key("Ms. Whitfield")
    'whitfield'
    """
    s = unicodedata.normalize("NFKC", name).replace("\u2019", "'").replace("\u2018", "'").lower()
    s = _POSSESSIVE.sub("", s)
    s = _strip_punctuation(s)
    s = _SPACES.sub(" ", s).strip()
    s = _HAN_SPACE.sub("", s)
    words = s.split(" ")
    while len(words) > 1 and (words[0] in DETERMINERS or words[0] in HONORIFICS):
        words = words[1:]
    return " ".join(words).strip("'.-_@ ")


@functools.lru_cache(maxsize=1 << 16)
def is_valid_entity(key: str, label: str = "") -> bool:
    """Whether a key is worth an entity node.

    Rejects empty keys, pronouns, stop words, chat courtesies ("thanks"), keys
    without a letter (pure numbers or punctuation), one-letter Latin keys, phrases longer than six
    words (or twelve CJK characters), for plain nouns (label ``NOUN``) a short
    list of generic words, and for dates (label ``DATE``) relative ones such as
    "yesterday" or "last week": all of them would only create useless hubs.
    """
    if not key:
        return False
    if not any(ch.isalpha() for ch in key):
        return False
    if key in PRONOUNS or key in STOPWORDS_EN or key in STOPWORDS_ZH or key in CHAT_WORDS or key in HONORIFICS:
        return False
    words = key.split()
    if all(w in STOPWORDS_EN or w in PRONOUNS for w in words):
        return False
    if has_cjk(key):
        if len(key.replace(" ", "")) > 12:
            return False
    else:
        if len(key) == 1:
            return False
        if len(words) > 6:
            return False
    if label == "NOUN" and key in _GENERIC_NOUNS:
        return False
    if label == "DATE" and all(w in _RELATIVE_DATE_WORDS for w in words):
        return False
    return True
