"""First-person fact rules ("my name is X", "我叫X") and the memory-kind classifier.

Agents are mostly told things about the user in the first person.  A handful
of regular expressions catches the common forms in English and Chinese
reliably, costs microseconds and needs no model, so the write path can store
``name``, ``employer``, ``location``, ``preference``... as structured facts
next to the raw memory.  The rules favour precision: a value is cut at the
first clause boundary and dropped when it is a pronoun ("I love that") or the
sentence is a question ("Do I like it?").
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Iterable, Sequence

from .base import ExtractedFact
from .text import STOPWORDS_EN

__all__ = ["extract_facts", "classify_kind", "KINDS", "PERSONAL_ATTRIBUTES"]

KINDS: tuple[str, ...] = ("preference", "personal_info", "event", "decision", "todo", "fact", "message")

#: Attributes that describe who the speaker is; their facts make a memory ``personal_info``.
PERSONAL_ATTRIBUTES: frozenset[str] = frozenset({"name", "employer", "location", "identity", "origin", "age"})
_PREFERENCE_ATTRIBUTES = frozenset({"preference", "dislike"})


@dataclass(frozen=True, slots=True)
class _Rule:
    """A prefix pattern; the value is the text after it, cut at a clause boundary.

    ``attribute`` None means the pattern has an ``a`` group naming it ("my X is").
    A pattern with a ``v`` group delimits the value itself ("我在X工作").
    """

    attribute: str | None
    pattern: re.Pattern[str]
    lang: str  # "en" | "zh": selects the value cutter
    extra_stop: str = ""  # more words ending the value for this rule (EN)


_ADV_EN = r"(?:(?:really|also|just|totally|absolutely|still|currently|now|actually|kind of|kinda|do|truly)\s+)*"
_I = r"(?<![\w'])i"
_IM = rf"{_I}(?:'m|\s+am)"
_F = re.IGNORECASE


def _en(attr: str | None, pattern: str, extra_stop: str = "") -> _Rule:
    return _Rule(attr, re.compile(pattern, _F), "en", extra_stop)


def _zh(attr: str | None, pattern: str) -> _Rule:
    return _Rule(attr, re.compile(pattern), "zh")


_PLACE_STOPS = r"with|since|for|as|now|near|at|on|from"
_RULES: tuple[_Rule, ...] = (
    # --- English -------------------------------------------------------------------------------
    _en("name", r"\bmy\s+(?:full\s+|first\s+|real\s+)?name(?:'s|\s+is)\s+"),
    _en("name", rf"{_IM}\s+called\s+"),
    _en("name", r"\b(?:you\s+can\s+|please\s+|just\s+)?call\s+me\s+(?=(?-i:[A-Z]))"),
    _en("name", rf"{_I}\s+go\s+by\s+"),
    _en("employer", rf"{_I}\s+{_ADV_EN}(?:work|'m\s+working|am\s+working)\s+(?:at|for)\s+", r"as|since|for|with|in|on|now"),
    _en("employer", rf"{_I}(?:'ve|\s+have)\s+{_ADV_EN}been\s+working\s+(?:at|for)\s+", r"as|since|for|with|in|on|now"),
    _en("employer", rf"{_IM}\s+{_ADV_EN}employed\s+(?:at|by)\s+", r"as|since|for|with|in|on|now"),
    _en("location", rf"{_I}\s+{_ADV_EN}(?:live|'m\s+living|am\s+living|reside)\s+in\s+", _PLACE_STOPS),
    _en("location", rf"{_I}(?:'ve|\s+have)\s+{_ADV_EN}been\s+living\s+in\s+", _PLACE_STOPS),
    _en("location", rf"{_IM}\s+{_ADV_EN}based\s+in\s+", _PLACE_STOPS),
    _en("location", rf"{_I}\s+{_ADV_EN}(?:just\s+|recently\s+)?moved\s+to\s+", _PLACE_STOPS),
    _en("origin", rf"{_IM}\s+{_ADV_EN}(?:originally\s+)?from\s+", _PLACE_STOPS),
    _en("dislike", rf"{_I}\s+{_ADV_EN}(?:don't|do\s+not|dont)\s+(?:really\s+)?(?:like|enjoy|love)\s+", r"over|than"),
    _en("dislike", rf"{_I}\s+{_ADV_EN}(?:hate|dislike|can't\s+stand|cannot\s+stand)\s+", r"over|than"),
    _en("preference", rf"{_I}\s+{_ADV_EN}(?:prefer|like|love|enjoy|adore)\s+", r"over|than|rather"),
    _en("preference", rf"{_IM}\s+{_ADV_EN}(?:an?\s+)?(?:big\s+|huge\s+|massive\s+|real\s+|great\s+)?fan\s+of\s+", r"over|than"),
    _en("identity", rf"{_IM}\s+{_ADV_EN}an?\s+", r"at|in|for|from|who|with|that"),
    # The attribute is lower case (a capital is a name: "my manager Lisa is great"); no
    # "'s" (mostly possessive: "my daughter's birthday") and no "was" (mostly opinions).
    _en(None, r"\bmy\s+(?P<a>(?-i:[A-Za-z][a-z]*(?:\s+[a-z]+){0,2}?))\s+(?:is|are)\s+(?!not\b|a\s+bit\b)"),
    # --- Chinese -------------------------------------------------------------------------------
    _zh("name", r"我的?名字(?:是|叫)"),
    _zh("name", r"我叫(?!做)"),
    _zh("employer", r"我(?:现在|目前|也|还|一直)?在\s*(?P<v>[^，。！？；,.!?;\n]{1,30}?)\s*(?:工作|上班|任职|实习)"),
    _zh("location", r"我(?:现在|目前|也|还|一直)?(?:住在|居住在|定居在|家在)"),
    _zh("origin", r"我(?:是)?来自"),
    _zh("dislike", r"我(?:很|非常|特别|真的|最|也|一直)*(?:不喜欢|讨厌|不爱)"),
    _zh("preference", r"我(?:很|非常|特别|最|也|还|真的|超|挺|更|一直|比较)*(?:喜欢|爱|偏好|热爱|钟爱)(?!的)"),
    _zh("identity", r"我是(?!说|不是|在|从|想|觉得|要|会|能|的|来自|因为|为了|和|跟|被|把)"),
    _zh(None, r"我的(?P<a>[^，。！？；,.!?;\s的是叫]{1,8}?)(?:是|叫)"),
)

_EN_STOP = re.compile(
    r"\s*(?:[,!?;:\n()\[\]\"“”]|\.(?=\s|$)|\s-\s|\s(?:and|but|because|cause|since|so|which|who|where|when|while"
    r"|though|although|if|unless|or|lol|haha)\b)",
    re.IGNORECASE,
)
_ZH_STOP = re.compile(r"[，。！？；、：,.!?;:\n（）()「」“”]|但是|但|而且|并且|不过|可是|因为|所以|然后|还有")
_ZH_NAME_STOP = re.compile(r"[，。！？；、：,.!?;:\n（）()「」“”\s]|今年|来自|住在|在|是|的|和|但")
_EN_TRAILING = re.compile(
    r"(?:\s+(?:too|a\s+lot|so\s+much|very\s+much|as\s+well|anymore|though|now|right\s+now|currently|these\s+days"
    r"|actually|really|either|honestly|haha|lol))+$",
    re.IGNORECASE,
)
_EN_LEADING = re.compile(r"^(?:to\s+|the\s+|a\s+|an\s+|all\s+|both\s+)+", re.IGNORECASE)
_ZH_LEADING = re.compile(r"^(?:一名|一个|一位|一家|一只|一条|个|名|位)")
_QUOTES = "'\"“”‘’`*_ "
# A value starting with one of these is a clause or a pronoun, not a thing: "I love that you came".
_BAD_FIRST_EN = frozenset(
    "it that this those these you him her them us me myself what how when where why if whether to not no "
    "being doing going getting having the a an my your our their his its "
    "is are was were has have had will would can could should do does did so very such".split()
)
# "my X is Y" is a fact for attributes like these whatever Y looks like ("my goal is to ...");
# for any other X, Y must look like a value (a number, a name, "a teacher"), because on
# real chat logs "my X is <adjective>" is nearly always an opinion ("my art is important to me").
_FACT_ATTRIBUTES = frozenset(
    """name nickname age birthday budget email phone number address hometown job occupation profession role title
    major school company team boss manager wife husband partner boyfriend girlfriend son daughter kid child mom
    dad mother father sister brother dog cat pet goal dream plan salary rent deadline flight hotel diet allergy
    language religion timezone size height weight""".split()
)
_OPINION_FIRST = frozenset(
    "so very really pretty super such quite too always still about all something kind sort just been getting".split()
)
_BAD_IDENTITY_FIRST = frozenset("bit little lot tad kind sort couple few mix fan part".split())
_BAD_VALUES_ZH = frozenset("你 您 他 她 它 你们 他们 她们 它们 这 那 这个 那个 这样 那样 自己 大家".split())
_BAD_ATTRIBUTES = frozenset(STOPWORDS_EN - {"own"}) | {"self", "bad", "god", "gosh", "goodness", "guess"}
_MAX_WORDS = 6
_SENTENCE_END = re.compile(r"[.!?。！？\n]")


def _cut_en(rest: str, extra_stop: str) -> str:
    m = _EN_STOP.search(rest)
    if m:
        rest = rest[: m.start()]
    if extra_stop:
        m = re.search(rf"\s(?:{extra_stop})\b", rest, re.IGNORECASE)
        if m:
            rest = rest[: m.start()]
    rest = rest.strip().strip(_QUOTES).strip()
    rest = _EN_TRAILING.sub("", rest).strip()
    return rest


def _clean_en(value: str, attribute: str) -> str | None:
    if attribute != "name":
        value = _EN_LEADING.sub("", value)
    value = value.strip().rstrip(".,!?;:'\"").strip()
    words = value.split()
    if not words or not any(ch.isalnum() for ch in value):
        return None
    first = words[0].lower()
    if first in _BAD_FIRST_EN:
        return None
    if attribute == "identity" and first in _BAD_IDENTITY_FIRST:
        return None
    if all(w.lower() in STOPWORDS_EN for w in words):
        return None
    if attribute == "name":
        # "call me Dana please" -> "Dana": keep the leading capitalised run when there is one.
        if words[0][:1].isupper():
            run = [w for w in _takewhile_capitalised(words)]
            words = run or words
        words = words[:4]
    return " ".join(words[:_MAX_WORDS])


def _takewhile_capitalised(words: Sequence[str]) -> Iterable[str]:
    for w in words:
        if not w[:1].isupper():
            return
        yield w


def _cut_zh(rest: str, attribute: str) -> str:
    stop = _ZH_NAME_STOP if attribute == "name" else _ZH_STOP
    m = stop.search(rest)
    if m:
        rest = rest[: m.start()]
    rest = rest.strip().strip(_QUOTES)
    if attribute == "name":
        return rest[:10]
    rest = _ZH_LEADING.sub("", rest)
    if attribute == "identity" and rest.endswith("的"):
        rest = rest[:-1]  # "我是做销售的" -> "做销售"
    return rest[:20]


def _looks_like_fact(attribute: str, raw: str, value: str) -> bool:
    """For "my X is Y": whether Y states a fact rather than an opinion (see _FACT_ATTRIBUTES)."""
    first = raw.split(maxsplit=1)[0].lower() if raw.split() else ""
    if first in _OPINION_FIRST or raw.lower().startswith(("the best", "the worst", "the most", "one of")):
        return False
    last = attribute.rsplit("_", 1)[-1]
    if attribute.startswith(("favorite", "favourite")) or last in _FACT_ATTRIBUTES or last.rstrip("s") in _FACT_ATTRIBUTES:
        return True
    return raw[:1].isdigit() or raw[:1].isupper() or first in ("a", "an")


def _is_question(text: str, pos: int) -> bool:
    """Whether the sentence containing ``pos`` ends with a question mark."""
    m = _SENTENCE_END.search(text, pos)
    return bool(m and m.group() in "?？")


def _normalise_attribute(attr: str) -> str:
    attr = " ".join(attr.lower().split())
    if attr in ("name", "名字", "full name", "first name"):
        return "name"
    if attr in ("job", "occupation", "profession", "职业", "工作"):
        return "occupation"
    return attr.replace(" ", "_")


def extract_facts(text: str, subject: str = "user") -> list[ExtractedFact]:
    """First-person facts stated in ``text``, in order of appearance, without duplicates.

    ``subject`` is whom the facts are about: ``"user"`` for a plain message,
    the speaker's entity key for a "Speaker: message" turn.

    >>> extract_facts("my budget is 50k, and I work at Northwind.")
    [ExtractedFact(attribute='budget', value='50k', subject='user'), \
ExtractedFact(attribute='employer', value='Northwind', subject='user')]
    """
    if not text:
        return []
    s = unicodedata.normalize("NFKC", text).replace("\u2019", "'").replace("\u2018", "'")
    found: list[tuple[int, ExtractedFact]] = []
    taken: list[tuple[int, int]] = []  # prefix spans already used: "I don't like" is not also "I like"
    for rule in _RULES:
        for m in rule.pattern.finditer(s):
            if any(a <= m.start() < b for a, b in taken):
                continue
            if _is_question(s, m.start()):
                continue
            attribute = rule.attribute or _normalise_attribute(m.group("a"))
            generic_en = rule.attribute is None and rule.lang == "en"
            if generic_en:
                attr_words = m.group("a").lower().split()
                if any(w in _BAD_ATTRIBUTES for w in attr_words):
                    continue
            if "v" in rule.pattern.groupindex:
                raw = m.group("v")
            else:
                raw = s[m.end() :]
            value: str | None
            if rule.lang == "en":
                value = _clean_en(_cut_en(raw, rule.extra_stop), attribute)
            else:
                cut = _cut_zh(raw, attribute)
                value = cut if cut and cut not in _BAD_VALUES_ZH and any(ch.isalnum() for ch in cut) else None
            if not value:
                continue
            if generic_en and not _looks_like_fact(attribute, raw.lstrip(), value):
                continue
            taken.append((m.start(), m.end()))
            found.append((m.start(), ExtractedFact(attribute=attribute, value=value, subject=subject)))
    found.sort(key=lambda p: p[0])
    out: list[ExtractedFact] = []
    seen: set[tuple[str, str]] = set()
    for _, fact in found:
        k = (fact.attribute, fact.value.lower())
        if k not in seen:
            seen.add(k)
            out.append(fact)
    return out


_TODO = re.compile(
    # Written for user -> assistant turns.  First person only for "need to"/"have to": in a
    # dialogue "you need to be" is advice; "remind me of" is a memory, not a task.
    r"\b(?:remind\s+me\s+(?:to|about|at|on|in|tomorrow|tonight|next|this|when|that)|set\s+a\s+reminder"
    r"|don't\s+let\s+me\s+forget|(?:don't|do\s+not)\s+forget\s+(?:to|about|my|the|our|that)"
    r"|i\s+(?:need|have|must)\s+to|i've\s+got\s+to|to-?do\s+list|todo|deadline|due\s+(?:on|by|tomorrow|today|next))\b"
    r"|提醒我|别忘了|不要忘记|不要忘了|记得要|待办|截止|我得|我要记得",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(?:we(?:'ve|\s+have)?\s+decided|i(?:'ve|\s+have)?\s+decided|decided\s+to|we\s+agreed|final\s+decision"
    r"|let's\s+go\s+with|we(?:'ll|\s+will)\s+go\s+with|we\s+chose|we\s+picked|settled\s+on)\b|决定|定了|就这么定|选定|敲定",
    re.IGNORECASE,
)
_EVENT = re.compile(
    r"\b(?:yesterday|last\s+(?:night|week|weekend|month|year|friday|monday|tuesday|wednesday|thursday|saturday|sunday)"
    r"|ago|this\s+morning|earlier\s+today|just\s+got\s+back|went\s+to|attended|visited|happened|met\s+with)\b"
    r"|昨天|前天|上周|上个月|去年|刚才|刚刚|上星期|那天|去了|参加了",
    re.IGNORECASE,
)


def classify_kind(text: str, facts: Sequence[ExtractedFact] = ()) -> str:
    """A coarse kind for a memory, from cue words and the facts found in it.

    Priority: todo > decision > preference > personal_info > fact > event > message.
    The engine uses it to boost or decay memories by kind; it does not have to be
    perfect, only cheap and predictable.
    """
    if _TODO.search(text):
        return "todo"
    if _DECISION.search(text):
        return "decision"
    attributes = {f.attribute for f in facts}
    if attributes & _PREFERENCE_ATTRIBUTES:
        return "preference"
    if attributes & PERSONAL_ATTRIBUTES:
        return "personal_info"
    if attributes:
        return "fact"
    if _EVENT.search(text):
        return "event"
    return "message"
