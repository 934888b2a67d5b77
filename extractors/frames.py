"""Statement frames: what a clause says about what, with its values masked out.

A fact changes in more ways than any list of attributes can name: "We pushed
the Atlas go-live to May 9", "Maya took over as owner of the billing service",
"我已经搬去成都了".  What such an update shares with the statement it replaces
is not an attribute name but a *frame*: the same subject and qualifiers, the
same kind of statement, and a different value in the same slot.  This module
reads frames out of one text; :mod:`ripple._supersede` compares them.

A :class:`Frame` is one clause (a sentence, or a part of one cut at ";", ":",
", " or a subordinator such as "because"/"因为") that carries a value or a
change marker, with

* ``values`` -- typed spans, each normalised so that equal values compare
  equal: amounts (``60k``, ``60,000 euros``, ``六万``), dates (``May 2``,
  ``the 14th``, ``五月二号``), weekdays, times of day (``9:30``, ``3pm``,
  ``下午两点``), future-relative dates (``next week``, ``下周``), years,
  durations (``two weeks``, ``三周``), e-mail addresses, phone numbers,
  identifiers (``Q3``, ``v2.3``) and named entities (people apart, because a
  person can only take the place of a person).  Past-relative time
  ("yesterday", "last week", "上周") is masked but is no value: it says when
  something happened, and events do not replace one another.
* ``keys`` -- who and what the clause is about: the words of its noun and
  name mentions that are not values, plus ``@self`` (or ``@<speaker>``) for a
  first-person statement.  "my sister" is about the sister, not about me: a
  first-person possessive in front of a relation word (sister, 老婆, boss...)
  gives that person instead of ``@self``.
* ``preds`` -- the other content words (mostly the verb: "owns", "starts", "住").
* ``mentions`` -- the clause's noun and name mentions in order (the last one not
  shared with another frame is where an untyped value sits: "is at the
  trampoline park instead").
* ``masked`` -- the clause with every value replaced by a placeholder of its
  class, for a similarity that does not see the values.
* ``addition`` -- an addition marker in the clause ("also", "too", "as well",
  "a second", "也", "还", "又"): a new value that adds to the old ones.
* ``running`` -- the clause states a running amount: what was spent, used or
  booked so far, or what is left ("we've spent 6,000 so far", "已经花了四千",
  "还剩三百").  A running amount is measured against a limit ("the budget is
  15,000", "最多两百人"); it is not the limit, and a statement of the one
  never replaces a statement of the other.
* ``limit`` -- the clause names a limit ("budget", "capped at", "quota",
  "预算", "上限", "最多"): "The conference is capped at 200" and "130 are
  registered" are two statements, whatever their numbers.

A name that is who is spoken to, not what is said ("Go Jon!", "Wow Jon, same
here", "Thanks, Caroline!", "老周，..."), is a vocative: no value.

and the text's change markers ("moved to", "took over", "no longer", "now",
"instead", "改到", "搬到", "换成", "不再"...), which raise the confidence of an
update but are not required.

Everything is regular expressions over the text plus the extractor's own
entity mentions (spaCy's noun chunks and names, jieba's nouns and names), so
it costs tens of microseconds per text and needs no model of its own.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from decimal import Decimal
from dataclasses import dataclass, replace
from typing import Any, Sequence

from .base import Extraction
from .normalize import CHAT_WORDS
from .text import STOPWORDS_EN, STOPWORDS_ZH, _jieba, has_cjk, lexical_tokens
from .values import normalize_value, parse_number

__all__ = ["Value", "Slot", "Frame", "frames_of", "change_markers", "value_groups", "value_group", "content_words", "TEMPORAL", "NUMERIC", "AMOUNT", "MONEY", "COUNT", "COUNT_FAMILY",
           "NAME", "PERSON", "PROPER", "IDENT", "RATE", "PHRASE", "PLACEHOLDERS", "UNRESOLVED"]

# value classes: two values compare only inside one class
AMOUNT, MONEY, COUNT, DATE, WEEKDAY, TIME, FUTURE, YEAR, DURATION, EMAIL, PHONE, IDENT, NAME, PAST, RATE, PHRASE = (
    "amount", "money", "count", "date", "weekday", "time", "future", "year", "duration", "email", "phone", "ident",
    "name", "past", "rate", "phrase",
)
PERSON = "person"  # a name tagged as a person: it takes the place of a person
PROPER = "proper"  # a proper noun of no known type (spaCy's PROPN, jieba's nz/nrt): a person or another name
_NAME_KINDS = frozenset({NAME, PERSON, PROPER, PHRASE})
_PROPER_NAMES = frozenset({NAME, PERSON, PROPER})
#: A plain number ("50k") may be money ("60,000 euros") or a count ("14 people"); those two never compare.
NUMERIC = frozenset({AMOUNT, MONEY, COUNT})
TEMPORAL = frozenset({DATE, WEEKDAY, TIME, FUTURE, YEAR})
PLACEHOLDERS = {AMOUNT: "NUMBER", MONEY: "NUMBER", COUNT: "NUMBER", DATE: "DATE", WEEKDAY: "DAY", TIME: "TIME", FUTURE: "DATE", YEAR: "YEAR",
                DURATION: "DURATION", EMAIL: "EMAIL", PHONE: "PHONE", IDENT: "CODE", NAME: "NAME", PAST: "DATE",
                RATE: "per unit", PHRASE: "SOMETHING", PERSON: "NAME", PROPER: "NAME"}
#: Entity families of typed names: a person, a place or an organisation is a different kind of thing, so a
#: value of one family never replaces a value of another ("friends with Deofrum" is no earlier address than
#: "moved to Praicho Springs", nor "moved to Praicho Springs" an earlier employer than "promoted at
#: Vaigoskoum Media").  Other labels (PRODUCT, PROPN, NORP, ...) and names found only by a fact rule carry
#: no family: the tagger does not say what they are.
_FAMILIES = {"PERSON": "person", "GPE": "place", "LOC": "place", "FAC": "place", "ORG": "organisation"}
_NAMED_LABELS = frozenset({"PERSON", "ORG", "GPE", "LOC", "FAC", "PRODUCT", "PROPN", "NORP", "EVENT", "WORK",
                           "LANGUAGE", "LAW", "MISC"})


@dataclass(frozen=True, slots=True)
class Value:
    """A typed value span of a text: ``norm`` is equal for equal values of one ``kind``."""

    kind: str
    norm: str
    start: int
    end: int
    text: str
    weak: bool = False  # a capitalised word that may only be capitalised because it starts the sentence
    family: str = ""  # of a name the tagger typed: "person", "place" or "organisation" (see _FAMILIES)


@dataclass(frozen=True, slots=True)
class Slot:
    """The values of a clause that fill one place: adjacent values ("12 Baker Street", "$49 a month"),
    and all of its dates and times together ("Mondays at 10:00", "周三上午十点")."""

    kinds: frozenset[str]
    norms: frozenset[tuple[str, str]]  # (kind, normalised value) of each value
    start: int
    end: int
    text: str
    words: frozenset[str]  # the slot read as words (a weak name that turns out to be a plain word)
    weak: bool
    # (start, end, kind) of each of its values: a slot of dates and times may have words between its values
    # ("Mondays at 10:00", "next week the vendor sync moves to 11:00"), which a mask must keep
    parts: tuple[tuple[int, int, str], ...] = ()
    # the entity family of its names when the tagger typed them all alike ("" when it did not, or for no name);
    # for a Chinese number with a measure word that says what it counts, COUNT_FAMILY + that word ("count:桌")
    family: str = ""


@dataclass(frozen=True, slots=True)
class Frame:
    """One clause that carries a value or a change (see the module docstring)."""

    clause: str
    start: int
    slots: tuple[Slot, ...]
    words: tuple[str, ...]  # content words outside the slots and the markers, in clause order
    nominal: frozenset[str]  # the words that belong to a noun or name mention
    subjects: frozenset[str]  # @self / @speaker, relations ("sister", "老婆") and possessors ("Tom's", "X的")
    masked: str
    addition: bool
    negations: tuple[int, ...]  # offsets (in the text) where a negation word ends
    sources: tuple[int, ...] = ()  # offsets where the object of a source preposition starts ("back from", "从"): see _SOURCE_EN
    attributes: frozenset[str] = frozenset()  # attributes of the fact rules whose value is in this clause
    groups: frozenset[str] = frozenset()  # value_group() of each value kind of its slots
    marked: bool = False  # its sentence has a change marker ("now", "moved", "改到")
    strong: bool = False  # its sentence has a marker that names a change ("moved", "took over", "改到")
    strong_here: bool = False  # the clause itself has one
    event: bool = False  # its sentence says when something happened ("yesterday", "last week", "上周")
    context: frozenset[tuple[str, str]] = frozenset()  # (kind, value) of every value of the text
    text_words: frozenset[str] = frozenset()  # the content words of the whole text
    denied: frozenset[str] = frozenset()  # values the text negates ("won't make June 30", "not 8", "不是14号")
    running: bool = False  # the clause states an amount so far or left ("spent 6,000 so far", "已经花了四千", "还剩三百")
    limit: bool = False  # the clause names a limit ("budget", "capped at", "quota", "预算", "上限", "最多")
    delta: bool = False  # the clause states an amount added on ("another 2k", "又多花了两万", "要加三万")
    shift: str = ""  # "+" or "-": the clause states a change up or down *by* an amount ("up by £9", "涨了五百")
    names: frozenset[str] = frozenset()  # words of the names that qualify a noun in the clause ("the Lisbon office")
    told: bool = False  # it tells what happened, in the past tense: see _told
    governed: frozenset[int] = frozenset()  # where its values start that a change verb governs ("moved to Leeds")
    qualifying: frozenset[int] = frozenset()  # where its names start that qualify a noun ("the launch of Atlas")
    lead: int = -1  # where its subject starts when the subject is a name slot ("Tom just got promoted"): see _lead
    handover: bool = False  # its sentence says a holder changed ("took over", "instead", "now", "接手"): see _HANDOVER_EN
    text_names: frozenset[str] = frozenset()  # words of every name of the text, qualifying or a value


# --------------------------------------------------------------------------- English values

_MONTHS = ("january february march april may june july august september october november december".split())
_MONTH_RE = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
             r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
_NUMBER_WORDS = {
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "dozen": 12, "a dozen": 12, "half a dozen": 6,
}
_NUMWORD_RE = "|".join(sorted((re.escape(w) for w in _NUMBER_WORDS), key=len, reverse=True))
_UNITS = {"minute": "minute", "min": "minute", "hour": "hour", "hr": "hour", "day": "day", "week": "week",
          "month": "month", "year": "year", "yr": "year"}
_CURRENCY_EN = r"(?:dollars?|usd|euros?|eur|pounds?|gbp|quid|yuan|rmb|cny|yen|jpy|bucks)"
# British money said the way people say it: "a tenner", "a fiver", "seven quid", "74p a litre" (see _money_en)
_SLANG_MONEY_EN = {"tenner": "10", "fiver": "5"}
_MULT = r"(?:k|m|bn|million|thousand|billion)"
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_F = re.IGNORECASE

# (kind, pattern) in priority order: a span taken by one is not matched again
_EN_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (EMAIL, re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")),
    (PHONE, re.compile(r"(?<![\w.,])\+?\d[\d \-().]{5,}\d(?![\w.,]?\d)")),
    (PAST, re.compile(r"\b(?:yesterday|last\s+(?:night|week|weekend|month|year|summer|winter|spring|fall|autumn|time"
                      r"|(?:mon|tue|tues|wed|wednes|thu|thur|thurs|fri|sat|satur|sun)(?:day)?|the\s+other\s+day)"
                      r"|(?:a\s+few|\w+)\s+(?:days?|weeks?|months?|years?)\s+ago|\w+\s+ago|earlier\s+today|this\s+morning"
                      r"|the\s+other\s+day)\b", _F)),
    (DATE, re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b")),
    (TIME, re.compile(r"\b(?:[01]?\d|2[0-3]):[0-5]\d(?:\s*(?:[ap]m\b|[ap]\.m\.))?|\b(?:1[0-2]|0?[1-9])\s*(?:[ap]m\b|[ap]\.m\.)"
                      # (the British hour.minute: "2.20pm", "the 7.40 ferry", "from 6.30", "fridays 7.30"; not "£7.30", "costs 7.30")
                      r"|\b(?:[01]?\d|2[0-3])\.[0-5]\d\s*(?:[ap]m\b|[ap]\.m\.)"
                      r"|(?:(?<=\bat\s)|(?<=\bfrom\s)|(?<=\buntil\s)|(?<=\btill\s)|(?<=\baround\s)|(?<=\bby\s)|(?<=days\s)"
                      r"|(?<=\bweds\s)|(?<=\btues\s)|(?<=\bthurs\s)|(?<=\bfri\s)|(?<=\bmon\s)|(?<=\bwed\s)|(?<=\bsat\s)|(?<=\bsun\s))"
                      r"(?:[01]?\d|2[0-3])\.[0-5]\d\b(?![.,]?\d)"
                      r"|(?<=\bthe\s)(?:[01]?\d|2[0-3])\.[0-5]\d(?=\s+(?:ferry|train|bus|boat|flight|tram|coach|service|show"
                      r"|session|class|slot|kick-?off|start|sailing|departure)\b)"
                      r"|\b(?:noon|midnight)\b", _F)),
    (RATE, re.compile(r"\b(?:(?:per|each|every)\s+(?:minute|hour|day|night|week|month|year|seat|person|user|head)"
                      r")\b", _F)),
    (DATE, re.compile(rf"\b{_MONTH_RE}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s+\d{{4}})?"
                      rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH_RE}\b(?:,?\s+\d{{4}})?"
                      rf"|\b(?:end|middle|beginning|start)\s+of\s+{_MONTH_RE}\b|\b(?:early|mid|late)[- ]{_MONTH_RE}\b"
                      r"|\b(?:the\s+)?\d{1,2}(?:st|nd|rd|th)\b", _F)),
    # (and the short forms: "weds", "tues", "thurs", "fri"; "mon", "wed", "sat", "sun" are also words, so only
    # before a day of the month or after an ordinal: "sat 7 june", "2nd wed")
    (WEEKDAY, re.compile(r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b|\b(?:tues?|weds|thu|thurs?|fri)\b\.?"
                         rf"|\b(?:mon|wed|sat|sun)\b(?=\.?\s+\d{{1,2}}(?:st|nd|rd|th)\b|\.?\s+\d{{1,2}}\s+{_MONTH_RE}\b)"
                         r"|(?:(?<=\dst\s)|(?<=\dnd\s)|(?<=\drd\s)|(?<=\dth\s))"
                         r"(?:mon|wed|sat|sun)\b", _F)),
    (DURATION, re.compile(rf"\b(?:{_NUM}|{_NUMWORD_RE}|an?|half an?)[\s-]+(?:minute|min|hour|hr|day|week|month|year|yr)s?\b",
                          _F)),
    (FUTURE, re.compile(r"\b(?:today|tonight|tomorrow|(?:this|next|coming)\s+(?:week|weekend|month|year|quarter|term"
                        r"|semester|cycle|sprint|season|summer|winter|spring|fall|autumn))\b", _F)),
    (MONEY, re.compile(rf"(?:us\$|[$€£¥])\s*(?:{_NUM})(?:\s*{_MULT}\b)?"
                        rf"|\b(?:{_NUM}|{_NUMWORD_RE})(?:\s*{_MULT}\b)?\s*{_CURRENCY_EN}\b"
                        r"|\b(?<=\ba\s)(?:tenner|fiver)\b|\b\d{1,3}(?:\.\d)?p\b(?!\.\d)", _F)),
    (IDENT, re.compile(r"\b[A-Za-z]{1,3}-?\d+(?:\.\d+)*[A-Za-z]?\b")),
    (YEAR, re.compile(r"\b(?:19|20)\d{2}\b")),
    (AMOUNT, re.compile(rf"(?<![\w.])(?:{_NUM})(?:\s*{_MULT}\b)?(?![\w.]?\d)|\b(?:{_NUMWORD_RE})\b", _F)),
    (DATE, re.compile(rf"\b(?:in|by|until|till|from|since|before|after|of)\s+(?-i:Jan|January|Feb|February|Mar|March"
                      r"|Apr|April|May|June?|July?|Aug|August|Sept?|September|Oct|October|Nov|November|Dec|December)\b")),
)
_DIGIT = re.compile(r"\d")
_MONTH_NEEDLES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_NUMBER_NEEDLES = ("0", *(w.split()[-1] for w in _NUMBER_WORDS))
# what a text must contain (lower-cased; "0" for any digit) for each of _EN_PATTERNS to be tried
_EN_NEEDLES: tuple[tuple[str, ...], ...] = (
    ("@",), ("0",), ("yesterday", "last", "ago", "earlier", "morning", "other day"), ("0",),
    ("0", "noon", "midnight"), ("per ", "each ", "every "), ("0", *_MONTH_NEEDLES),
    ("day", "tue", "wed", "thu", "fri", "mon", "sat", "sun"),
    ("min", "hour", "hr", "day", "week", "month", "year", "yr"),
    ("today", "tonight", "tomorrow", "this ", "next ", "coming "),
    ("$", "€", "£", "¥", "dollar", "usd", "euro", "eur", "pound", "gbp", "yuan", "rmb", "cny", "yen", "jpy", "buck",
     "quid", "tenner", "fiver", *(f"{d}p" for d in range(10))),
    ("0",), ("0",), _NUMBER_NEEDLES, _MONTH_NEEDLES,
)
# "at 7": an hour when nothing after it says what the number counts ("saturday at 7 not 6", "Mondays at 11.",
# "thursdays at 2 these days"; not "at 14 Baker Street", "at 18 degrees", "at 7.30", which another pattern reads).
# Read before the amounts, which would take the number first.
_TIME_AT = re.compile(r"\bat\s+(1[0-2]|0?[1-9])(?=\s*(?:$|[.,!?;](?!\d)|o'clock|tonight|tomorrow|today|sharp|instead"
                      r"|then|(?:not|now|these|this|on|every|each|and|or|but|in|till|until|to|from|for|so|with|again|start"
                      r"|latest|onwards|ish|-ish)\b))", _F)

# --------------------------------------------------------------------------- Chinese values

_ZH_DIGIT = "零〇一二两三四五六七八九十"
# A number written in Arabic digits goes on in Chinese only by its units ("4.8万", "16万8"; "380一个月" is 380 a
# month, not a numeral "380一"), and a Chinese one has no digit right after a digit but for the neighbours of an
# estimate ("六七十单", "三五个", "两三天"): "十八一斤" is eighteen a jin ("二十一", "一千二": a digit after 十 or a unit).
_ZH_NUMERAL = (rf"(?:\d[\d.]*(?:[百千万亿]+[\d{_ZH_DIGIT}]*)*|[{_ZH_DIGIT}百千万亿]"
               r"(?:[\d.十百千万亿零〇]|(?<![一二两三四五六七八九])[一二两三四五六七八九]"
               r"|(?<=一)[两二]|(?<=[两二])三|(?<=三)[四五]|(?<=四)五|(?<=五)六|(?<=六)七|(?<=七)八|(?<=八)九)*)")
# Colloquial money: yuan and the tenths after them ("2块5", "一块五一个": 2.5 and 1.5 yuan; not the "一" of
# "两块一斤", two yuan a jin) or tenths alone ("九毛", "5毛钱", "一毛五": 0.15)
_ZH_TENTHS = r"(?:\d(?!\d)|[二两三四五六七八九]|一(?![个斤份次杯碗位人张本块瓶盒只条件套袋包桶箱公斗升度单]))"
_ZH_SMALL = rf"[\d{_ZH_DIGIT}]{{1,3}}"
_ZH_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (EMAIL, re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.ASCII)),
    (PHONE, re.compile(r"(?<!\d)(?:1[3-9]\d{9}|\d{3,4}-\d{7,8}|\d{7,8})(?!\d)")),
    (YEAR, re.compile(r"(?:19|20)\d{2}年")),
    (TIME, re.compile(rf"(?:(?:上午|下午|晚上|早上|中午|凌晨|傍晚|夜里|早晨)\s*{_ZH_SMALL}点(?:半|一刻|三刻|{_ZH_SMALL}分?)?"
                      rf"|(?<![一\d第])(?:1\d|2[0-4]|[\d二两三四五六七八九十]|十[一二])点(?:半|一刻|三刻|{_ZH_SMALL}分?)?(?!儿)"
                      r"|\d{1,2}[:：]\d{2})")),
    (DATE, re.compile(rf"{_ZH_SMALL}月(?:{_ZH_SMALL}[号日]|[初中底末]|份)?|(?<![\d{_ZH_DIGIT}月第])"
                      rf"{_ZH_SMALL}[号日](?![子常本记])")),
    (WEEKDAY, re.compile(r"(?:(?:下|上|这|本)个?)?(?:周|星期|礼拜)[一二三四五六日天]")),
    (PAST, re.compile(r"昨天|前天|上周|上个?星期|上个月|去年|前年|刚才|刚刚|以前|之前|那天")),
    (FUTURE, re.compile(r"今天|今晚|明天|明晚|后天|下周|下个?星期|本周|这周|下个月|这个月|本月|今年|明年|月底|年底")),
    (DURATION, re.compile(rf"{_ZH_NUMERAL}个?(?:分钟|小时|天|周|星期|个月|年)(?![一二三四五六日天号])")),
    (RATE, re.compile(r"每(?:个)?(?:分钟|小时|天|晚|周|星期|月|年|人|位|席位|个席位|座)")),
    (MONEY, re.compile(rf"[¥￥]\s*{_ZH_NUMERAL}|{_ZH_NUMERAL}\s*(?:块{_ZH_TENTHS}(?:毛|角)?|元|块钱|块|美元|欧元|英镑|日元|万元)"
                       rf"|{_ZH_SMALL}\s*[毛角](?:{_ZH_TENTHS}分?|钱)?")),
    (IDENT, re.compile(r"[A-Za-z]{1,3}-?\d+(?:\.\d+)*[A-Za-z]?")),
    (AMOUNT, re.compile(rf"(?<![第唯统万])(?:{_ZH_NUMERAL})(?:个|位|名|间|次|兆|张|台|盒|人|座)?"
                        r"(?![起下直些样定般致切共旦边点])")),
)
#: Measure words that say what a Chinese number counts ("30桌": thirty tables, "两辆": two cars).  Such a
#: count never takes the place of a number that counts something else or says nothing of what it counts
#: ("16万8", a price): see ``ripple._supersede._comparable``.  Generic counters (个, 位, 名, 人, 次...) say
#: little about the thing counted and are left to AMOUNT's own pattern.
_ZH_MEASURE = re.compile(r"桌|辆|套|件|只|条|本|所|层|斤|公斤|箱|瓶|杯|碗|双|棵|篇|首|部|场|顿|趟|遍|门|科|节|页|把|桶|袋|平米|平方")
#: the family of a slot that counts with a measure word: COUNT_FAMILY + the measure word
COUNT_FAMILY = "count:"
_ZH_NUM_NEEDLES = ("0", *"零〇一二两三四五六七八九十百千万亿")
_ZH_NEEDLES: tuple[tuple[str, ...], ...] = (
    ("@",), ("0",), ("0",), ("点", ":", "："), ("月", "号", "日"), ("周", "星期", "礼拜"),
    ("昨", "前", "上周", "上个", "上星期", "去年", "刚", "以前", "之前", "那天"),
    ("今", "明", "后天", "下周", "下个", "下星期", "本周", "这周", "这个月", "本月", "底"),
    ("分钟", "小时", "天", "周", "星期", "月", "年"), ("每",),
    ("¥", "￥", "元", "块", "毛", "角", "美元", "欧元", "英镑", "日元"), ("0",), _ZH_NUM_NEEDLES,
)

# --------------------------------------------------------------------------- markers and words

# An amount right after a verb ("涨了五百", "up by £9"): see _DELTA_EN, _SHIFT_EN and the shifts of _STRONG_ZH.
_NUMBER_AHEAD = r"(?=\s*(?:[$€£¥]\s?)?\d|\s*[一二两三四五六七八九十百千万几半][\d一二两三四五六七八九十百千万几点块元个]*(?:块|元|万|千|百|%|个点|成|毛|分))"

# The verbs of a Chinese shift, a value moved up or down by an amount (see _SHIFT_ZH; a change marker too).
_UP_ZH, _DOWN_ZH = r"涨了|贵了", r"降了|减了|少了|便宜了"

# Change markers: the statement announces a new value.  Matched on the whole text.  Strong ones name
# the change ("moved to", "took over", "改到"); weak ones only say that this is the current value
# ("now", "new", "现在"), which chat says all the time: they count for a changed typed value only.
_STRONG_EN = re.compile(
    r"\b(?:from\s+now\s+on|no\s+longer|any\s*more|instead|change\s+of\s+plans?|changed|changing|moved?|moving|moves"
    r"|push(?:ed|ing|es)?(?=\s+(?:\w+\s+){0,4}?(?:to|back|out)\b)|push(?:ed|ing)|reschedule[sd]?|delays?|raises?"
    r"|stepped\s+down|resigned|retired|left\s+(?:the|our|my|his|her|their)\s+(?:company|team|firm|job|group|project)"
    r"|slipp(?:ed|ing)|slid|shift(?:ed|ing|s)|switch(?:ed|ing|es)?(?!\s+(?:off|on)\b)|swapp(?:ed|ing)|swap|replac(?:ed|ing|es)"
    r"|took\s+over|tak(?:e|es|ing)\s+over|taken\s+over|handed\s+over|reschedul(?:ed|ing)|postpon(?:ed|ing)"
    r"|delay(?:ed|ing)|extend(?:ed|ing)|brought\s+forward|moved\s+up|pulled\s+in|rais(?:ed|ing)|increas(?:ed|ing)"
    r"|bump(?:ed|ing)?|went\s+(?:up|down)|gone\s+(?:up|down)|go(?:es|ing)\s+(?:up|down)|com(?:es|ing)\s+down|came\s+down"
    r"|upp(?:ed|ing)|hik(?:ed|ing)|put(?:ting)?(?=(?:\s+[^\s.;!?]+){0,4}?\s+(?:up|down)\s+(?:to|by)\b)|grew|grown|rose|risen|jump(?:ed|ing)|dropp(?:ed|ing)"
    r"|fell|fallen|cut|reduc(?:ed|ing)|lower(?:ed|ing)|decreas(?:ed|ing)|relocat(?:ed|ing)|joined|quit|promoted"
    r"|transferred|upgraded|downgraded|renamed|sold|make\s+(?:it|that)(?=\s+(?:[$€£¥\d]|(?-i:[A-Z])|(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b))|after\s+all|correction|my\s+(?:mistake|bad)|misspoke"
    r"|mistyped|typo|i\s+meant|i\s+was\s+wrong)\b", _F)
_WEAK_EN = re.compile(r"\b(?:now|nowadays|these\s+days|new|newly|latest|update[sd]?|revised|starting|effective|as\s+of|going\s+forward|final"
                      r"|got\s+(?:moved|pushed|changed|bumped|cut|raised)|(?:is|are|'s|'re)\s+(?:at|up\s+to|down\s+to)(?=\s+\d))\b", _F)
# Chinese change verbs by construction, not one by one: a verb of moving or altering with a resultative
# complement that says where the value went ("搬到", "延到", "推迟到", "降至", "改成", "换成", "调为")
_RESULT_ZH = (r"(?:推迟|延长|延后|调整|增加|减少|降低|提高|缩短|扩大|[改换搬挪推延调迁移转涨降减砍压拖缩扩升])(?:到|至)"
              r"|[改换搬挪调迁转]回"  # (back to: "调回广州了", "改回周三")
              r"|(?:调整|[改换变转调升降])(?:成|为)")
_STRONG_ZH = re.compile(
    _RESULT_ZH + r"|换[\u4e00-\u9fff]{1,3}?了|卖了|卖掉|升职|晋升|加入了|辞了|"  # (the counterparts of "sold", "promoted", "joined", "quit")
    r"改到|改成|改为|改在|改约|改签|改由|换成|换到|换了|换号|换人|换邮箱|搬到|搬去|搬了|挪到|推迟|延期|延到|延迟|延误|提前|调到|调成"
    r"|调整|涨到|涨价|加到|扩到|降到|减到|砍到|压到|变成|变为|不再|接手|接任|离职|跳槽|转岗|转学|迁到|升级|定在|调走|辞职|退休"
    r"|不对|错了|口误|更正|纠正|我是说|我的意思是"
    rf"|(?:{_UP_ZH}|{_DOWN_ZH})" + _NUMBER_AHEAD)  # (a shift: "房租涨了五百", "月供少了82块"; see _SHIFT_ZH)
_WEAK_ZH = re.compile(r"现在|已经|以后|起|新|更新|最后|最终|涨了|降了|了$|了[。！!]")
_CHANGE_EN = re.compile(f"{_STRONG_EN.pattern}|{_WEAK_EN.pattern}", _F)
_CHANGE_ZH = re.compile(f"{_STRONG_ZH.pattern}|{_WEAK_ZH.pattern}")
_INTERJECTIONS = CHAT_WORDS | frozenset("hey hi hello dear thanks thank wow yay aw aww ugh omg".split())
# A phrase that a change verb points at is a value even when it is no name or number: "We moved the
# reception to the botanical garden", "Mia's party is at the trampoline park instead", "改在蹦床公园";
# in an older statement, the complement of "is" / "是" / "在" ("is at the bowling alley", "在保龄球馆").
_OBJECT = r"(?!(?:me|us|him|her|them|it|you|myself|ourselves)\b)"
_CHANGED_TO_EN = re.compile(
    rf"\b(?:moved|changed|switched|swapped|shifted|relocated|rescheduled|transferred|upgraded|downgraded|renamed"
    rf"|converted|turned)\b(?:\s+{_OBJECT}[\w'-]+){{0,4}}?\s+(?:over\s+)?(?:to|into)\s+(?P<v>[^,;:!?.]+)", _F)
_INSTEAD_EN = re.compile(r"\b(?:is|are|am|'s|'m)\s+(?:now\s+)?(?:at|in|on|with)?\s*(?P<v>(?:the|a|an)\s+[^,;:!?.]+?)"
                         r"\s+instead\b", _F)
# A role held at a named place ("I'm a senior analyst at Brightline", "我在腾讯当产品经理"): the role is the value
# that changes (a promotion, a new job), the place stays; like a complement, it is weak (a change must be named).
_ROLE_EN = re.compile(r"\b(?:i'm|i\s+am|(?:he|she)'s|(?:he|she)\s+is)\s+(?:now\s+)?(?:an?\s+|the\s+)?"
                      r"(?P<v>(?-i:[a-z])[\w-]*(?:\s+(?-i:[a-z])[\w-]*){0,2}?)\s+(?:at|for|with)\s+(?=(?-i:[A-Z]))", _F)
_ROLE_ZH = re.compile(r"在[^，。！？；,!?;在]{1,8}?(?:当|担任)(?P<v>[^，。！？；,!?;]{2,6}?)(?:了|呢)?$")
_COMPLEMENT_EN = re.compile(r"\b(?:is|are|am|'s|'m)\s+(?:at|in|on|with)?\s*(?P<v>(?:the|a|an)\s+[^,;:!?.]+?)\s*$", _F)
_CHANGED_TO_ZH = re.compile(r"(?:" + _RESULT_ZH + r"|改到|改成|改为|改在|换成|换到|搬到|搬去|迁到|变成|变为|调到|挪到|转到|转学到|转岗到|换了家)"
                            r"(?P<v>[^，。！？；,!?;]+?)(?:了|吧|啦|那家)?$")
_COMPLEMENT_ZH = re.compile(r"(?:在|是)(?P<v>[^，。！？；,!?;在是]+?)(?:了|吧|呢)?$")
# "Nothing changed": a restatement, whatever else it says.
_SAME_EN = re.compile(r"\b(?:still|as\s+usual|unchanged|same\s+as\s+before|as\s+before|as\s+planned"
                      r"|(?:has|have|had|is|are|was|were|did|does|do)(?:n't|\s+not)\s+(?:been\s+)?(?:chang|mov|shift|slipp)\w*)\b", _F)
_SAME_ZH = re.compile(r"没变|不变|没有变|没改|没有改|照旧|照常|仍然|依然|还是原来|跟原来一样|和原来一样|一直")
# A change of holder: the sentence says that someone or something now holds what another held ("Maya took
# over as owner", "Hana is the project manager now", "Globex replaced Initech as our supplier", "改由张伟负责",
# "小李接手了").  A statement whose subject is another name is about that one ("Tom just got promoted" /
# "Lena just got promoted", "Acme is hiring again" / "Globex is hiring again"): it replaces the old one only
# when its sentence says so (see ``Frame.lead``).  "promoted", "moved", "an update" say that the subject
# changed, not that another took its place.
_HANDOVER_EN = re.compile(r"\b(?:took\s+over|tak(?:e|es|ing)\s+over|taken\s+over|handed\s+(?:it\s+)?over|replac(?:ed|es|ing)"
                          r"|succeeded|instead|now|new|in\s+charge)\b", _F)
_HANDOVER_ZH = re.compile(r"接手|接任|接替|接管|接班|换成|换了|换人|改由|取代|代替|顶替|现在|新任|新来的|新的")
# Addition markers: the new value adds to the old ones ("I also speak Portuguese").
_ADDITION_EN = re.compile(r"\b(?:also|too|as\s+well|another|second|additionally|in\s+addition|both|more)\b", _F)
_ADDITION_ZH = re.compile(r"也|还(?!是|在)|又|另外|另一|再")
# Running amounts: consumed, accumulated or left so far, measured against a limit (see ``Frame.running``).
_RUNNING_EN = re.compile(
    r"\b(?:spent|burn(?:ed|t|ing)\s+through|used\s+up|us(?:ed|ing)(?!\s+to\b)|consumed|so\s+far|to\s+date|paid\s+(?:off|back)"
    r"|remaining|(?:have|has|had|'ve)\b[^.;!?]{0,40}\bleft)\b", _F)
_RUNNING_ZH = re.compile(r"花了|花掉|花费了|用了|用掉|用去|休了|消耗了|调用了|还剩|剩下|剩余|到现在|到目前为止|迄今|截至目前|累计")
# Additions by an amount: a change *by* an amount added on ("we spent another 2,000", "又多花了两万", "要加三万"): it
# says what was added, not what the value is, so it neither replaces a stated value nor is replaced by one (see
# ``Frame.delta``).  The amount must follow the verb: "加了个净水器" adds a thing.
_DELTA_EN = re.compile(r"\b(?:another|an\s+(?:extra|additional)|extra|additional)" + _NUMBER_AHEAD, _F)
_DELTA_ZH = re.compile(r"(?:又多花了?|又花了|又多了|多花了|多出了?|多付了?|又加了?|再加|要加|加了|追加了?|增加了)" + _NUMBER_AHEAD)
# Shifts: a standing value moved up or down by an amount ("they've put my unit up by £9 a month", "rent went up by
# 10%", "房租涨了五百", "月供少了82块"): the value said before is no longer the value, though the new one is not
# said, so such a clause replaces it (``Frame.shift``, the direction).  Its verb is a change marker: the Chinese ones
# through _STRONG_ZH, the English ones where _STRONG_EN names them ("raised", "went up", "put ... up by").
_UP_EN = r"up|increased|raised|rose|grew|bumped|hiked|upped"
_SHIFT_EN = re.compile(
    r"\b(?:(?P<up>" + _UP_EN + r"|went\s+up|gone\s+up|go(?:es|ing)?\s+up)|down|decreased|lowered|fell|dropped|cut|reduced"
    r"|went\s+down|gone\s+down|go(?:es|ing)?\s+down)(?:\s+[^\s.;!?]+){0,4}?\s+by" + _NUMBER_AHEAD, _F)
_SHIFT_ZH = re.compile(rf"(?:(?P<up>{_UP_ZH})|{_DOWN_ZH})" + _NUMBER_AHEAD)
# Periods an amount is measured over ("monthly revenue", "第一周流水", "$20 per week"): a qualifier of the
# statement (the first week's revenue is not the monthly revenue), written into the frame's words as "~week",
# "~month"...  Only a period an amount is measured over: "next month" says when, and "weekly" alone may be the
# value that changes ("the review is weekly" / "... monthly from now on").
_PERIODS = {"周": "week", "星期": "week", "礼拜": "week", "月": "month", "年": "year", "天": "day", "日": "day",
            "季度": "quarter", "week": "week", "month": "month", "year": "year", "day": "day", "quarter": "quarter",
            "weekly": "week", "monthly": "month", "yearly": "year", "annual": "year", "daily": "day", "quarterly": "quarter"}
_AMOUNT_NOUNS_ZH = "流水|收入|营收|销量|销售额|工资|薪水|租金|房租|预算|开销|支出|费用|利润|产量|业绩"
# ("每周二", "每月3号", "每年五月" name a day that recurs, not a period: no numeral or weekday may follow)
_PERIOD_ZH = re.compile(r"(?:每|第[一二三四五六七八九十\d]+|头一)(周|星期|礼拜|月|年|天|季度)(?![一二三四五六七八九十日天末\d])"
                        r"|(周|月|年|日|季度)(?=" + _AMOUNT_NOUNS_ZH + r")")
_PERIOD_EN = re.compile(
    r"\b(weekly|monthly|yearly|annual|daily|quarterly)\s+(?:revenue|income|salary|rent|budget|sales|fees?|costs?"
    r"|spend(?:ing)?|pay|profit|bills?|turnover|allowance|quota|earnings)\b|\bper\s+(week|month|year|day|quarter)\b", _F)


def _periods(clause: str, lang: str) -> frozenset[str]:
    """The periods a clause measures over (``~week``, ``~month``...: see ``_PERIODS``)."""
    found = (_PERIOD_ZH if lang == "zh" else _PERIOD_EN).finditer(clause)
    return frozenset("~" + _PERIODS[unit.lower()] for m in found for unit in m.groups() if unit)


# Limits: the most that may be spent, used or booked ("budget", "cap", "quota", "预算", "上限", "最多"); a
# statement of a limit and one of an amount measured against it are two statements (see ``Frame.limit``).
_LIMIT_EN = re.compile(r"\b(?:budget|budgets|cap|caps|capped|limit|limits|limited|quota|allowance|max|maximum|ceiling)\b", _F)
# A target of an amount is a limit too ("the fundraising target is £48,000": "£31,500 raised" is no new target); a
# target date is not ("the new target is July 15" moves a date).
_TARGET_EN = re.compile(r"\b(?:target|targets|goal|goals)\b", _F)
_LIMIT_ZH = re.compile(r"预算|上限|最多|限额|额度|封顶|最高|容纳")
# Words that may stand before a name said to someone: "Go Jon!", "Wow Jon, same here", "Good luck, Mel".
_VOCATIVE_LEADS = CHAT_WORDS | frozenset(
    "hey hi hello dear thanks thank wow yay aw aww ugh omg go good great awesome nice well done luck morning"
    " night evening afternoon happy birthday love you ah oh haha lol 嗨 哈喽 哇 加油 亲爱的 哎 喂".split())
# A source preposition: what follows is where someone or something came from, left or started ("I'm back from
# Qingdao", "从青岛回来了", "switched from Verizon"), not where it is now: a name there is no new value of the
# statement.  Where it is the predicate ("I'm from Ohio", "I come from Ohio", "来自青岛"), it states an origin:
# a value.  (In "从小", "从来", "从事" no name follows 从.)
_SOURCE_EN = re.compile(r"(?<!\bam\s)(?<!'m\s)(?<!\bis\s)(?<!'s\s)(?<!\bare\s)(?<!'re\s)(?<!\bwas\s)(?<!\bwere\s)"
                        r"(?<!\bbe\s)(?<!\bcome\s)(?<!\bcomes\s)(?<!originally\s)\bfrom\s+(the\s+)?", _F)
_SOURCE_ZH = re.compile(r"从")
_NEGATION_EN = re.compile(r"\b(?:not|never|no|isn't|aren't|wasn't|won't|don't|doesn't|didn't|n't)\b", _F)
_NEGATION_ZH = re.compile(r"不是|不在|没有|没|不")
# Words that tell which version of a thing, not which thing: "the new budget" is the budget.
_VERSION_WORDS = frozenset("new current updated revised final latest official old previous original".split())
_GENERIC_EN = frozenset(
    "people person thing time day week month year number one lot bit way now same usual".split()
)
_GENERIC_ZH = frozenset("时间 时候 东西 事情 事 问题 人 个 位 一下 现在 那边 这边 那家 这家 全部 所有 整个 一些 这些 那些 大家 目前 之后 以后 之前 以前"
                        # adverbs of quantity qualify the number, not the thing counted ("一共六十个人")
                        " 一共 总共 总计 大概 大约 左右 差不多".split())
# People a possessive names instead of the speaker: "my sister lives in Porto" is about the sister.
_RELATIONS_EN = frozenset(
    """mother mom mum father dad parents parent sister sisters brother brothers sibling siblings wife husband spouse
    partner fiance fiancee boyfriend girlfriend son sons daughter daughters kid kids child children twins baby
    grandma grandmother grandpa grandfather grandparents uncle aunt cousin niece nephew friend friends roommate
    flatmate boss manager colleague coworker neighbor neighbour landlord landlady""".split()
)
_RELATIONS_ZH = frozenset(
    """妈妈 母亲 爸爸 父亲 爸妈 父母 姐姐 妹妹 哥哥 弟弟 老婆 老公 妻子 丈夫 爱人 对象 男朋友 女朋友 儿子 女儿 孩子 宝宝
    爷爷 奶奶 外公 外婆 姥姥 姥爷 叔叔 阿姨 舅舅 朋友 室友 老板 领导 同事 邻居 房东""".split()
)
_SELF_EN = re.compile(r"\b(?:i|me|my|mine|myself|we|us|our|ours|ourselves|i'm|i've|we're|we've)\b", _F)
_SELF_ZH = re.compile(r"我们|咱们|咱|我|本人")
_POSSESSIVE_EN = re.compile(r"\b(?:my|our)\s+(\w+)", _F)
_POSSESSIVE_ZH = re.compile(r"(?:我们|我)的?(" + "|".join(sorted(_RELATIONS_ZH, key=len, reverse=True)) + ")")
_CLAUSE_EN = re.compile(
    r"[;!?\n()\[\]\"“”]|\.(?=\s|$)|,\s+|\s[-—–]\s|—"
    r"|\s(?=(?:because|since|so(?!\s+far\b)|but|although|though|while|whereas|when|unless|until)\s)"
    r"|\s(?=(?:after|before)\s+(?:the|a|an|we|i|he|she|they|it|our|my|their|his|her|you)\s)", _F)
_CLAUSE_ZH = re.compile(r"[，。！？；、,!?;\n（）()\[\]【】]|(?=因为|所以|但是|不过|可是|然后|而且)|(?<=之后|以后)")


def _norm_amount(text: str) -> str:
    t = text.strip().lower()
    if t in _NUMBER_WORDS:
        return str(_NUMBER_WORDS[t])
    v = normalize_value(re.sub(r"\s+", " ", t))
    m = re.match(r"^([\d.]+)", v)
    return m.group(1) if m else v


def _norm_time(text: str) -> str:
    t = re.sub(r"(?<=\d)\.(?=\d\d)", ":", text.lower()).replace(".", "").replace(" ", "")  # ("2.20pm" is 2:20pm)
    if t in ("noon", "midnight"):
        return "12:00" if t == "noon" else "0:00"
    m = re.match(r"(\d{1,2})(?::(\d{2}))?(am|pm)?", t)
    if not m:
        return t
    h, mi = int(m.group(1)), int(m.group(2) or 0)
    if m.group(3) == "pm" and h < 12:
        h += 12
    if m.group(3) == "am" and h == 12:
        h = 0
    return f"{h}:{mi:02d}"


def _month_of(word: str) -> int | None:
    w = word.lower()[:3]
    for i, m in enumerate(_MONTHS):
        if m.startswith(w):
            return i + 1
    return None


def _norm_date_en(text: str) -> str:
    t = text.lower()
    m = re.search(_MONTH_RE, t)
    month = _month_of(m.group()) if m else None
    day = re.search(r"\d{1,2}(?=(?:st|nd|rd|th)?\b)", re.sub(r"\d{4}", "", t))
    part = re.search(r"\b(end|middle|mid|beginning|start|early|late)\b", t)
    out = []
    if month:
        out.append(f"m{month}")
    if day:
        out.append(f"d{int(day.group())}")
    elif part:
        out.append(part.group(1))
    return "-".join(out) or t


def _num_zh(text: str) -> str:
    n = parse_number(text)
    return str(int(n)) if n is not None and n == int(n) else (str(n) if n is not None else text)


def _norm_time_zh(text: str) -> str:
    m = re.search(rf"({_ZH_SMALL})点(半|一刻|三刻|({_ZH_SMALL})分?)?", text)
    if not m:
        m2 = re.search(r"(\d{1,2})[:：](\d{2})", text)
        return f"{int(m2.group(1))}:{m2.group(2)}" if m2 else text
    h = int(_num_zh(m.group(1)))
    tail = m.group(2) or ""
    mi = 30 if tail == "半" else 15 if tail == "一刻" else 45 if tail == "三刻" else int(_num_zh(m.group(3))) if m.group(3) else 0
    if re.match(r"下午|晚上|傍晚|夜里", text) and h < 12:
        h += 12
    return f"{h}:{mi:02d}"


def _norm_date_zh(text: str) -> str:
    out = []
    m = re.search(rf"({_ZH_SMALL})月", text)
    if m:
        out.append(f"m{_num_zh(m.group(1))}")
    d = re.search(rf"(?:月|^)({_ZH_SMALL})[号日]", text)
    if d:
        out.append(f"d{_num_zh(d.group(1))}")
    part = re.search(r"[初中底末]", text)
    if part and not d:
        out.append({"初": "beginning", "中": "mid", "底": "end", "末": "end"}[part.group()])
    return "-".join(out) or text


def _norm_duration(text: str, lang: str) -> str:
    t = text.lower()
    if lang == "zh":
        m = re.match(rf"({_ZH_NUMERAL})个?(分钟|小时|天|周|星期|个月|年)", t)
        if m:
            unit = {"分钟": "minute", "小时": "hour", "天": "day", "周": "week", "星期": "week", "个月": "month",
                    "年": "year"}[m.group(2)]
            return f"{_num_zh(m.group(1))} {unit}"
        return t
    m = re.match(rf"({_NUM}|{_NUMWORD_RE}|an?|half an?)[\s-]+(minute|min|hour|hr|day|week|month|year|yr)s?", t)
    if not m:
        return t
    q = m.group(1)
    n = "1" if q in ("a", "an") else "0.5" if q.startswith("half") else _norm_amount(q)
    return f"{n} {_UNITS[m.group(2)]}"


_YUAN_TENTHS_ZH = re.compile(rf"({_ZH_NUMERAL})\s*块({_ZH_TENTHS})[毛角]?")
_TENTHS_ZH = re.compile(rf"({_ZH_SMALL})\s*[毛角](?:({_ZH_TENTHS})分?|钱)?")


def _money_zh(text: str) -> str | None:
    """Yuan of colloquial money ("2块5" -> "2.5", "一块五" -> "1.5", "九毛" -> "0.9", "一毛五" -> "0.15"), None
    for other forms."""
    m = _YUAN_TENTHS_ZH.fullmatch(text)
    if m:
        whole, tenth = parse_number(m.group(1)), parse_number(m.group(2))
        return None if whole is None or tenth is None else _num_zh(str((whole + tenth / 10).normalize()))
    m = _TENTHS_ZH.fullmatch(text)
    if m:
        tenths, cents = parse_number(m.group(1)), parse_number(m.group(2) or "0")
        return None if tenths is None or cents is None else _num_zh(str((tenths / 10 + cents / 100).normalize()))
    return None


def _money_en(text: str) -> str | None:
    """Pounds of British money said the way people say it ("a tenner" -> "10", "seven quid" -> "7", "74p" ->
    "0.74"), None for other forms."""
    t = text.strip().lower()
    if t in _SLANG_MONEY_EN:
        return _SLANG_MONEY_EN[t]
    word = t.split()[0]
    if word in _NUMBER_WORDS:
        return str(_NUMBER_WORDS[word])
    if re.fullmatch(r"\d+(?:\.\d)?p", t):
        return str(Decimal(t[:-1]) / 100)
    return None


def _normalise(kind: str, text: str, lang: str) -> str:
    money = None if kind != MONEY else _money_zh(text) if lang == "zh" else _money_en(text)
    if money is not None:
        return money
    if kind in NUMERIC:
        return _num_zh(re.sub(r"[^\d.零〇一二两三四五六七八九十百千万亿]", "", text)) if lang == "zh" else _norm_amount(text)
    if kind == TIME:
        return _norm_time_zh(text) if lang == "zh" else _norm_time(text)
    if kind == DATE:
        return _norm_date_zh(text) if lang == "zh" else _norm_date_en(text)
    if kind == WEEKDAY:
        return text[-1] if lang == "zh" and text[-1] != "天" else "日" if lang == "zh" else text.lower()[:3]
    if kind == DURATION:
        return _norm_duration(text, lang)
    if kind == PHONE:
        return re.sub(r"\D", "", text)
    return re.sub(r"\s+", " ", text.strip().lower())


_NAMED_NUMBER = re.compile(
    r"\b(?i:sprint|phase|release|version|room|episode|chapter|season|stage|level|gate|floor|building|route|bus"
    r"|platform|lot|ward|block|unit|iteration|milestone|wave|round|batch|cohort)\s+\d+\b"
)


@functools.lru_cache(maxsize=4096)  # the write path asks it of each candidate text, for every new item near it
def numbered_names(text: str) -> frozenset[str]:
    """The numbered things a text names ("Sprint 7", "Room 12"), lower-cased: two texts that name
    different ones are about different things, whatever else they share."""
    return frozenset(" ".join(m.group(0).lower().split()) for m in _NAMED_NUMBER.finditer(text))


def _scans(patterns: Sequence[tuple[str, re.Pattern[str]]], needles: Sequence[tuple[str, ...]]
           ) -> tuple[tuple[str, re.Pattern[str], bool, bool, tuple[str, ...]], ...]:
    """``(kind, pattern, always, a digit will do, other needles)``: what a text must contain for a pattern
    to be tried ("0" in a needle list stands for any digit; a pattern without needles is always tried)."""
    return tuple((kind, pattern, not ns, "0" in ns, tuple(n for n in ns if n != "0"))
                 for (kind, pattern), ns in zip(patterns, needles))


def _typed_values(message: str, offset: int, lang: str) -> list[Value]:
    taken = bytearray(len(message))
    out: list[Value] = []

    def add(kind: str, start: int, end: int) -> None:
        if any(taken[start:end]):
            return
        text = message[start:end]
        if kind == AMOUNT:
            kind = _count_or_amount(message, text, end, lang)
        if kind == PHONE and (sum(c.isdigit() for c in text) < 7 or re.fullmatch(r"\d{4}\s*[-–]\s*\d{4}", text)):
            return
        if kind in (AMOUNT, COUNT) and lang == "zh" and not _zh_amount_ok(text):
            return
        if kind in _QUANTITIES and lang == "zh" and _inside_word(message, start, end):
            return
        for k in range(start, end):
            taken[k] = 1
        out.append(Value(kind, _normalise(kind, text, lang), start + offset, end + offset, text))

    low = message.lower()
    digit = _DIGIT.search(message) is not None
    if lang != "zh" and digit:
        for m in _TIME_AT.finditer(message):
            add(TIME, m.start(1), m.end(1))
    for kind, pattern, always, any_digit, needles in _ZH_SCANS if lang == "zh" else _EN_SCANS:
        if not (always or digit and any_digit or any(map(low.__contains__, needles))):
            continue  # (most texts hold no value: a substring test spares the scan)
        for m in pattern.finditer(message):
            add(kind, m.start(), m.end())
    return sorted(out, key=lambda v: v.start)


_EN_SCANS = _scans(_EN_PATTERNS, _EN_NEEDLES)
_ZH_SCANS = _scans(_ZH_PATTERNS, _ZH_NEEDLES)
_UNIT_WORD_EN = re.compile(r"\s+(?:[a-z][\w-]*\s+)?([a-z][\w-]+)", _F)


def _count_or_amount(message: str, text: str, end: int, lang: str) -> str:
    """``COUNT`` for a number of things ("14 people", "十二个人", "二十间"), else a plain ``AMOUNT``."""
    if lang == "zh":
        return COUNT if re.search(r"[个位名间次张台盒人座兆]$", text) else AMOUNT
    m = _UNIT_WORD_EN.match(message, end)
    if m is None:
        return AMOUNT
    word = m.group(1).lower()
    if word in STOPWORDS_EN or re.fullmatch(_MULT, word, _F) or word in _UNITS or word.rstrip("s") in _UNITS:
        return AMOUNT
    return COUNT


_QUANTITIES = frozenset({AMOUNT, COUNT, MONEY, DURATION})
#: jieba's part-of-speech tags of numeral and measure words ("十二个", "一万多", "三十多岁", "两点钟", "八十年代").
_NUMERAL_TAGS = ("m", "q")


def _inside_word(message: str, start: int, end: int) -> bool:
    """Whether a Chinese quantity is part of a word of another class, its numeral and what follows the
    value in one word: "二年级" (second grade) is an attribute, "五年计划" a noun, "一年一度" an idiom;
    "二年" and "三年" in "二年级" / "三年级" are no durations, and their numerals no amounts.  jieba's
    segmentation and tags of the message say so (a quantity followed by a Han character only: elsewhere
    the value ends a word).  Arabic digits are words of their own to jieba: "2年级" is not caught."""
    if end >= len(message) or not has_cjk(message[end]):
        return False
    pos = 0
    for word, tag in _tagged(message):
        nxt = pos + len(word)
        if pos < end < nxt:  # (the word holds the value's last character and the one after it)
            # ... and its numeral: "二十间房" is 二十 + 间房 (a measure word read with its noun), a count
            return pos <= start and not tag.startswith(_NUMERAL_TAGS)
        if nxt >= end:
            return False
        pos = nxt
    return False


@functools.lru_cache(maxsize=1024)  # (several quantities of one message ask for one segmentation)
def _tagged(message: str) -> tuple[tuple[str, str], ...]:
    """jieba's words of ``message`` with their part-of-speech tags."""
    _jieba()  # (initialised, quietly)
    import jieba.posseg

    return tuple((w.word, w.flag) for w in jieba.posseg.lcut(message))


def _zh_amount_ok(text: str) -> bool:
    """A Chinese numeral that is a quantity, not part of a word ("一起", "一点", "万一")."""
    digits = re.sub(r"[个位名间次兆张台盒人座]$", "", text)
    if not digits:
        return False
    if digits == "一" and len(text) == 1:
        return False
    return parse_number(digits) is not None


# --------------------------------------------------------------------------- frames


@functools.lru_cache(maxsize=4096)
def value_groups(text: str, lang: str) -> frozenset[str]:
    """The groups of typed values ("number", "temporal", "duration", "phone"...) a raw text holds: a
    cheap test, without extraction, of whether it can state a value of the same kind as another text."""
    return frozenset(value_group(v.kind) for v in _typed_values(text, 0, lang) if v.kind != PAST)


def value_group(kind: str) -> str:
    """Which values compare with a value of ``kind``: numbers with numbers, dates and times together,
    names of any kind with names and phrases."""
    return "number" if kind in NUMERIC else "temporal" if kind in TEMPORAL else "name" if kind in _NAME_KINDS else kind


def change_markers(message: str, lang: str, *, strong: bool = False) -> tuple[str, ...]:
    """The change markers of a message ("moved", "now", "改到"...; with ``strong``, only those that name
    a change), in order; none when the message says that nothing changed ("hasn't changed", "still",
    "as usual", "没变", "照旧")."""
    if (_SAME_ZH if lang == "zh" else _SAME_EN).search(message):
        return ()
    if strong:
        pattern = _STRONG_ZH if lang == "zh" else _STRONG_EN
    else:
        pattern = _CHANGE_ZH if lang == "zh" else _CHANGE_EN
    return tuple(m.group().strip().lower() for m in pattern.finditer(message))


def content_words(text: str, lang: str) -> list[str]:
    """Content words: stemmed English words, jieba's words for Chinese; no stop, generic, version or
    chat words ("thanks", "哈哈")."""
    return _words(text, lang)


def _words(text: str, lang: str) -> list[str]:
    if lang != "zh" and not has_cjk(text):
        return list(_latin_words(text))
    return _segmented_words(text, lang)


@functools.lru_cache(maxsize=1 << 14)  # a text's names and phrases are read again in each frame that holds them
def _latin_words(text: str) -> tuple[str, ...]:
    """:func:`_words` of a text without Han script (a function of the text alone; Han goes through
    jieba, whose dictionary an application may change, so it is not cached)."""
    return tuple(_segmented_words(text, "en"))


def _segmented_words(text: str, lang: str) -> list[str]:
    if lang == "zh":
        out = []
        for w in _jieba().lcut(text):
            w = w.strip().lower()
            if w and w not in STOPWORDS_ZH and w not in _GENERIC_ZH and w not in _INTERJECTIONS and any(
                    ch.isalnum() for ch in w):
                out.append(w)
        return out
    return [w for w in lexical_tokens(text) if w not in _GENERIC_EN and w not in _VERSION_WORDS
            and w not in _INTERJECTIONS]


def _clauses(message: str, lang: str) -> list[tuple[int, int]]:
    pattern = _CLAUSE_ZH if lang == "zh" else _CLAUSE_EN
    spans, start = [], 0
    for m in pattern.finditer(message):
        if m.start() > start:
            spans.append((start, m.start()))
        start = max(start, m.end())
    if start < len(message):
        spans.append((start, len(message)))
    return [(a, b) for a, b in spans if message[a:b].strip()]


def _phrase_value(full: str, a: int, b: int, values: Sequence[Value], lang: str) -> tuple[Value, ...]:
    """The clause's phrase value (see ``_CHANGED_TO_EN``), if it has one and no other value sits in it.

    A phrase a change verb points at is ``weak=False``; the complement of a copula, which only an
    older statement offers, is ``weak=True``."""
    clause = full[a:b].rstrip()
    patterns = ((_CHANGED_TO_ZH, False), (_ROLE_ZH, True), (_COMPLEMENT_ZH, True)) if lang == "zh" else \
        ((_CHANGED_TO_EN, False), (_INSTEAD_EN, False), (_ROLE_EN, True), (_COMPLEMENT_EN, True))
    for pattern, weak in patterns:
        m = pattern.search(clause)
        if m is None:
            continue
        start, end = a + m.start("v"), a + m.end("v")
        if any(v.start < end and start < v.end for v in values):
            return ()
        words = _words(full[start:end], lang)
        if not words or len(words) > 4:
            return ()
        return (Value(PHRASE, " ".join(words), start, end, full[start:end], weak),)
    return ()


def _in_brackets(message: str, pos: int) -> bool:
    return message.rfind("[", 0, pos) > message.rfind("]", 0, pos) or message.rfind("【", 0, pos) > message.rfind("】", 0, pos)


#: The header of a message passed on ("Email from the gym:", "Letter from the sleep clinic came today:", "text from
#: the team leader -"): who told it, not what it says; like a speaker's name, it is part of no clause.
_HEADER_EN = re.compile(r"\s*(?:an?\s+|the\s+|got\s+an?\s+)?(?:e-?mail|text|letter|message|voicemail|note|dm|memo)"
                        r"\s+from\s+[^:：.!?—–]{1,50}?\s*(?:[:：—–]|\s-)\s*", _F)


def _message_start(full: str, ex: Extraction) -> int:
    speaker = ex.extra.get("speaker") if ex.extra else None
    if not speaker:
        header = _HEADER_EN.match(full) if ex.language != "zh" else None
        return header.end() if header else 0
    m = re.match(r"\s*[^:：]{1,40}[:：]\s*", full)
    return m.end() if m else 0


def _sentence_initial(full: str, pos: int, offset: int) -> bool:
    before = full[offset:pos].rstrip()
    return not before or before[-1] in ".!?:;\n\"“"


def _named_values(ex: Extraction, full: str, offset: int, typed: list[Value], speaker: str | None,
                  lang: str) -> tuple[list[Value], list[Value], list[tuple[int, int]], list[tuple[int, int]]]:
    """Names that are values, the typed values left, and the spans of the noun and name mentions that
    are not values (their words are the frame's nominal words).

    A name inside a longer noun phrase whose head is a plain noun ("the Atlas go-live", "the Helios
    migration", "Tom's phone number") qualifies that noun: it is a word of the frame, not a value.
    A recognised name swallows the number inside it ("Model 3").  The value of a fact rule ("我在X工作",
    "I work at X") is a name even when the tagger missed it ("字节跳动")."""
    names: list[Value] = []
    nominal: list[tuple[int, int]] = []
    qualifying: list[tuple[int, int]] = []  # names that qualify a noun ("the Lisbon office")
    chunks = [(e.start, e.end) for e in ex.entities if e.label not in _NAMED_LABELS and e.label != "DATE"
              and e.start >= offset and e.end > e.start]
    heads_named = {(a, b): any(n.start < b and b <= n.end for n in ex.entities if n.label in _NAMED_LABELS)
                   for a, b in chunks}
    for e in ex.entities:
        if e.start < offset or e.end <= e.start or (speaker and e.key == speaker) or e.label == "DATE":
            continue
        if e.label not in _NAMED_LABELS:
            nominal.append((e.start, e.end))
            continue
        inner = [v for v in typed if v.start < e.end and e.start < v.end]
        if any(v.kind not in (AMOUNT, COUNT, IDENT) or v.start < e.start or v.end > e.end for v in inner) or (
                inner and e.label == "PROPN"):
            continue  # "May 9" is a date, "Q3" an identifier
        inside = [c for c in chunks if c[0] <= e.start and e.end <= c[1] and (c[1] - c[0]) > (e.end - e.start)]
        if any(not heads_named[c] for c in inside):
            nominal.append((e.start, e.end))
            qualifying.append((e.start, e.end))
            continue
        typed = [v for v in typed if v not in inner]
        weak = e.label == "PROPN" and lang != "zh" and _sentence_initial(full, e.start, offset)  # (no capitals in Chinese)
        kind = PERSON if e.label == "PERSON" else PROPER if e.label in ("PROPN", "MISC") else NAME
        names.append(Value(kind, e.key, e.start, e.end, full[e.start:e.end], weak, _FAMILIES.get(e.label, "")))
    low = full.lower()
    for f in ex.facts:
        if f.attribute not in _NAME_FACTS:
            continue
        raw = f.value.strip()
        at = low.find(raw.lower(), offset) if raw else -1
        if at < 0 or any(v.start < at + len(raw) and at < v.end for v in (*typed, *names)):
            continue
        names.append(Value(NAME, raw.lower(), at, at + len(raw), full[at:at + len(raw)]))
    names = [v for v in names if not any(o is not v and o.start <= v.start and v.end <= o.end for o in names)
             and not _vocative(full, v, offset, lang)]
    return names, typed, nominal, qualifying


_SENTENCE_END = ".!?。！？\n"
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself)\b", _F)
# a word after which a name is an object or a conjunct, not someone spoken to
_BEFORE_OBJECT = re.compile(r"\b(?:to|with|and|or|than|for|from|by|of|at|meet|met|tell|told|ask|asked|call|called"
                            r"|like|love|miss|see|saw|is|was|are|were)\s*$", _F)


def _vocative(full: str, v: Value, offset: int, lang: str) -> bool:
    """Whether a person's name is who is spoken to, not a value: set off by punctuation at the start of
    a sentence, or after greeting words only ("Go Jon!", "Wow Jon, same here", "老周，..."), or after a
    comma at the end of a short sentence ("Thanks, Caroline!", "Good to hear, Mel."), or set off by a
    comma or "!" at the end of a clause that speaks to "you" ("Sorry about your job Jon, but ...")."""
    if v.kind not in (PERSON, PROPER):
        return False
    start = max([offset, *(full.rfind(c, offset, v.start) + 1 for c in _SENTENCE_END)])
    before, after = full[start:v.start], full[v.end:].lstrip()
    nxt = after[:1]
    lead = _jieba().lcut(before) if lang == "zh" else re.findall(r"[\w']+", before)
    lead = [w.lower() for w in lead if w.strip() and any(ch.isalnum() for ch in w)]
    if all(w in _VOCATIVE_LEADS for w in lead) and (not nxt or nxt in ",!?，！？"):
        return True  # "Go Jon!", "Wow Jon, same here", "老周，周报改成周四交了"
    if nxt in (",", "!") and _SECOND_PERSON.search(before) and not _BEFORE_OBJECT.search(before):
        return True  # "Sorry about your job Jon, but ...", "See you tomorrow Mel!": said to the one addressed
    if not before.rstrip().endswith((",", "，")):
        return False
    return nxt in ("!", "?", "！", "？") or ((not nxt or nxt in ".。") and len(lead) <= 4)


def _aligned_nfkc(text: str) -> str:
    """NFKC character by character, each character keeping its width.

    Why: the extraction's offsets (spaCy's and jieba's, on the text as written) must point at the
    same characters in the text the frames read.  NFKC of the whole text turned "…" into "...", two
    characters more, and cut every name after one two characters early ("we've switched the
    ceremony to Ashdown Manor" read 'o Ashdown Man').  An ellipsis reads as the full stop it ends a
    sentence with; other characters NFKC would widen ("½", "ﬁ") stay as written."""
    if text.isascii():
        return text
    out = []
    for c in text:
        n = unicodedata.normalize("NFKC", c)
        out.append(n if len(n) == 1 else "." if c == "\u2026" else c)
    return "".join(out)


def frames_of(ex: Extraction, *, text: str | None = None) -> tuple[Frame, ...]:
    """The frames of one extracted text: its clauses that carry a value or whose sentence names a change.

    ``text`` defaults to ``ex.text``; the speaker prefix of a "Speaker: message" turn is not part
    of any clause (its first person is ``@<speaker>``).  Questions, "[...]" descriptions and a name
    alone ("Thanks, Mel!") are no statements.  A clause without words of its own, or whose subject
    is a pronoun ("it now lands at 8:30pm", "现在十四个人了"), also carries the words and subjects
    of the clause before it.
    """
    full = _aligned_nfkc(text if text is not None else ex.text).replace("\u2019", "'")
    speaker = ex.extra.get("speaker") if ex.extra else None
    offset = _message_start(full, ex)
    message = full[offset:]
    lang = "zh" if ex.language == "zh" else "en"
    en = lang == "en"  # (the past tense, change verbs and noun complements are read in English only)
    me = f"@{speaker}" if speaker else "@self"
    typed = _typed_values(message, offset, lang)
    names, typed, nominal, qualifying = _named_values(ex, full, offset, typed, speaker, lang)
    values = sorted(typed + names, key=lambda v: v.start)
    cut = _unabbreviated(message)  # (where sentences and clauses end; same offsets)
    sentences = [(m.start(), m.end()) for m in _SENTENCE.finditer(cut)]
    marks = [m for m in _marker_spans(message, sentences, lang) if not _no_marker(message, m, values, offset)]
    clauses = _clauses(cut, lang)
    out: list[Frame] = []
    shared: dict[str, Any] = {}  # what all frames of the text carry, computed for the first one
    for k, (a, b) in enumerate(clauses):
        a0, b0 = a + offset, b + offset
        vals = tuple(v for v in values if a0 <= v.start < b0)
        vals = tuple(sorted(vals + _phrase_value(full, a0, b0, vals, lang), key=lambda v: v.start))
        if en and (agent := _AGENT_EN.match(full, a0, b0)) and not _THIRD_EN.search(agent.group(0)):
            # who made the change holds no value of it ("landlord's putting the rent up to £1,240": the landlord is
            # no new value beside the rent), unless the thing changed is the agent's own ("Tom changed his number")
            vals = tuple(v for v in vals if not (v.kind in _PROPER_NAMES and v.start < agent.end("agent")))
        x, y = next(((x, y) for x, y in sentences if x <= a < y), (a, b))
        if _QUESTION.search(message[x:y].rstrip()) or _in_brackets(message, a):
            continue  # a question states no value; "[shares a photo of ...]" describes, it does not state
        strong = any(x <= s < y and hard for s, _, hard in marks)
        if not strong and not any(v.kind != PAST for v in vals):
            continue
        frame = replace(_frame(full, a0, b0, vals, nominal, lang, me),
                        marked=any(x <= s < y for s, _, _ in marks), strong=strong,
                        strong_here=any(a <= s < b and hard for s, _, hard in marks),
                        event=any(v.kind == PAST and x + offset <= v.start < y + offset for v in values),
                        told=_told(message[a:b], vals, a0) if en else _told_zh(message[x:y], values, x + offset),
                        governed=_governed(message, vals, offset, marks, a, b) if en else frozenset(),
                        qualifying=frozenset(v.start for v in vals if v.kind in _PROPER_NAMES
                                             and _OF_NOUN_EN.search(full, a0, v.start)) if en else frozenset(),
                        handover=any(not _in_name(values, m.start() + offset)
                                     for m in (_HANDOVER_ZH if lang == "zh" else _HANDOVER_EN).finditer(message, x, y)))
        if not frame.words and not frame.subjects and all(s.kinds <= _PROPER_NAMES for s in frame.slots) \
                and not frame.strong_here:
            continue  # "Thanks, Mel!": a name alone is who is spoken to, not a statement ("调回广州了" is one)
        if UNRESOLVED in frame.subjects:
            # "Brightwater asked for more time, so their invoice is due on the 25th": "their" is the one
            # name said before it in the sentence (two names: whose is not said)
            owners = {v.norm: v for v in values if v.kind in _PROPER_NAMES and x + offset <= v.start < a0}
            if len(owners) == 1:
                (owner,) = owners.values()
                who = _words(owner.text, lang)
                if who:
                    frame = replace(frame, subjects=frame.subjects - {UNRESOLVED} | {who[0]})
        if k and (not frame.words or (_PRONOUN_START_ZH if lang == "zh" else _PRONOUN_START_EN).match(frame.clause)
                  or not frame.nominal and _announces(clauses[k - 1], x, marks, values, offset)):
            # "it now lands at 8:30pm", "现在十四个人了": the clause is about what the one before named;
            # "I switched dentists, I go to Dr. Okafor now": a clause that names nothing its value is of
            # is about the change the one before announced
            pa, pb = clauses[k - 1]
            before = _frame(full, pa + offset, pb + offset, (), nominal, lang, me)
            frame = replace(frame, words=before.words + frame.words, nominal=before.nominal | frame.nominal,
                            subjects=before.subjects | frame.subjects)
        elif k and lang == "zh" and not frame.subjects and clauses[k - 1][0] >= x:
            # "姥姥是退休职工医保，能报90%": a Chinese clause that names no one is about the person the clause before
            # it in the sentence named (the subject is left out, not changed; the speaker needs no carrying)
            pa, pb = clauses[k - 1]
            named = {w for w in _frame(full, pa + offset, pb + offset, (), nominal, lang, me).subjects
                     if not w.startswith("@")}
            if named:
                frame = replace(frame, subjects=frozenset(named))
        if not shared:
            negation = _NEGATION_ZH if lang == "zh" else _NEGATION_EN
            ends = [m.end() + offset for m in negation.finditer(message)]
            shared = {
                "facts": _fact_spans(ex, full, values),
                "context": frozenset((v.kind, v.norm) for v in values if v.kind != PAST),
                "text_words": frozenset(_words(message, lang)) | {w for v in values for w in _words(v.text, lang)},
                "denied": frozenset(v.norm for v in values if any(0 <= v.start - e <= 8 for e in ends)),
                "names": frozenset(w for qa, qb in qualifying for w in _words(full[qa:qb], lang))
                | frozenset(w for v in values if v.kind in _PROPER_NAMES and not v.weak for w in _words(v.text, lang)),
            }
        out.append(replace(frame, attributes=frozenset(att for att, at in shared["facts"] if a0 <= at < b0),
                           context=shared["context"], text_words=shared["text_words"], denied=shared["denied"],
                           names=frozenset(w for qa, qb in qualifying if a0 <= qa < b0 for w in _words(full[qa:qb], lang)),
                           text_names=shared["names"]))
    return tuple(out)


def _no_marker(message: str, mark: tuple[int, int, bool], values: Sequence[Value], offset: int) -> bool:
    """Whether a marker match is no change marker: a word of a name ("New Shelor", "Newport"), or the noun
    "update" in a noun phrase ("shipped a big update", "the update") rather than an announcement ("Update:
    the budget is 60k", "Quick update from the call: ...")."""
    start, end, _ = mark
    if _in_name(values, start + offset):
        return True
    return (message[start:end].lower().startswith("update") and bool(_DETERMINED.search(message, 0, start))
            and not message[end:end + 3].lstrip().startswith(":"))


def _in_name(values: Sequence[Value], pos: int) -> bool:
    """Whether offset ``pos`` (in the full text) falls inside a name: a marker there is a word of the name."""
    return any(v.kind in _PROPER_NAMES and v.start <= pos < v.end for v in values)


_DETERMINED = re.compile(r"\b(?:a|an|the|this|that|its|their|his|her|our|my|your|any|no)\s+(?:[a-z-]+\s+)?$", _F)
# A verb in the past tense: a regular "-ed" form (not a word that only ends so: "need", "hundred", "Fred") or an
# irregular one (see _told).
_PAST_EN = re.compile(
    r"\b(?:(?!(?:need|feed|seed|speed|bleed|breed|hundred|shed|fred|ted)\b)[a-z]{2,}ed|sent|got|went|came|made|took|did|said|told|gave|bought|brought|thought|found"
    r"|met|paid|saw|ran|won|lost|spent|felt|kept|began|wrote|drove|flew|ate|drank|knew|sold|built|caught|taught"
    r"|fought|sang|swam|threw|wore|woke|broke|chose|spoke|stole|forgot|held|heard|led|meant|slept|stood"
    r"|understood|(?:was|were)\s+(?:\w+\s+)?[a-z]{2,}ing)\b", _F)  # (and the past progressive: "were arguing")
# ... unless it is a participle after "be" or "have", perhaps with an adverb between ("is scheduled", "is now
# locked", "are booked", "has moved", "'ve relocated": a state, or a perfect that still holds)
_PARTICIPLE_EN = re.compile(r"\b(?:is|am|are|be|been|being|was|were|has|have|had|get|gets|'s|'re|'m|'ve|'d)"
                            r"(?:\s+(?:now|just|already|also|still|all|finally|officially|been|being))*\s+$", _F)
# A change verb with its object: "moved to Leeds", "pushed the go-live to May 9", "joined Globex", "quit Initech":
# the sentence tells what became of the value, not only that something happened.
_GOVERNS_EN = re.compile(r"^(?:\s+(?!(?:at|in|on|with|near|from|about)\b)[\w'-]+){0,4}?\s+(?:to|into|as|over|for|until|till"
                         r"|back|out|up|down|by)?\s*$", _F)


# A name that completes a noun ("the launch of Atlas", "the deadline for the Contoso bid", "our budget for Q3
# Offsite"): it says which thing the statement is about, so another name there is another thing.
_OF_NOUN_EN = re.compile(r"\b(?:the|a|an|our|my|your|his|her|their|its|this|that)\s+(?:[\w-]+\s+){0,2}?[\w-]+\s+"
                         r"(?:of|for)\s+(?:the\s+)?$", _F)


def _told(clause: str, values: Sequence[Value], start: int) -> bool:
    """Whether an English clause tells what happened: a verb in the past tense ("X just got promoted at
    Acme", "X sent me photos from the trip to Leeds", "The Acme team in Leeds shipped a big update").  A
    thing that happened stays true: another one like it is another event (see ripple._supersede)."""
    plain, pos = [], 0
    for v in values:  # (names such as "Reshourtville" or "Fred" are no verbs)
        if v.start - start >= pos:
            plain += [clause[pos:v.start - start], " , "]
            pos = v.end - start
    plain.append(clause[pos:])
    text = "".join(plain)
    return any(not _PARTICIPLE_EN.search(text, 0, m.start()) for m in _PAST_EN.finditer(text))


# A Chinese verb in the perfective before its value ("考了105", "拿了第一", "跑了快500单"): the clause tells what
# happened.  Not when the verb is one of change ("改了", "涨了", "降了": see _STRONG_ZH, _SHIFT_ZH) or of having
# ("有了", "到了", "成了": a state reached, which a later state replaces).
_TOLD_ZH = re.compile(r"(?<=[\u4e00-\u9fff])(?<![改换涨降加减增升调搬挪推延变多少贵定有到成是为])了(?:快|近|将近|大概|差不多|约|足足|整整)?$")


def _told_zh(sentence: str, values: Sequence[Value], start: int) -> bool:
    """Whether a Chinese sentence tells what happened: a value right after a verb in the perfective
    ("张宇航语文考了105" / "张宇航考了663，语文118": two exams, not a score corrected).  The counterpart of
    :func:`_told`, read over the sentence since its later clauses often leave the verb out ("语文118");
    a sentence that names a change ("改成40桌") tells no event."""
    return not _STRONG_ZH.search(sentence) and any(
        0 < v.start - start <= len(sentence) and _TOLD_ZH.search(sentence, 0, v.start - start) for v in values)


def _governed(message: str, values: Sequence[Value], offset: int, marks: Sequence[tuple[int, int, bool]],
              a: int, b: int) -> frozenset[int]:
    """Where the values of a clause start that a change verb of it governs: "moved to Manchester", "pushed
    the go-live to May 9", "joined Globex", "quit Initech" (not "got promoted at Acme": the promotion
    changed a role, and Acme is where it happened)."""
    out = set()
    for s, e, hard in marks:
        if hard and a <= s < b:
            for v in values:
                if v.start - offset >= e and _GOVERNS_EN.match(message[e:v.start - offset]):
                    out.add(v.start)
    return frozenset(out)


def _announces(clause: tuple[int, int], sentence: int, marks: Sequence[tuple[int, int, bool]],
               values: Sequence[Value], offset: int) -> bool:
    """Whether a clause of the same sentence names a change and no value ("I switched dentists", "Got
    promoted", "我换邮箱了"): it says what the next clause's value is the new value of."""
    a, b = clause
    return a >= sentence and any(a <= s < b and hard for s, _, hard in marks) and not any(
        v.kind != PAST and a + offset <= v.start < b + offset for v in values)


def _marker_spans(message: str, sentences: Sequence[tuple[int, int]], lang: str) -> list[tuple[int, int, bool]]:
    """``(start, end, strong)`` of the change markers of a message, none in a sentence that says
    nothing changed ("still", "as usual", "没变")."""
    found = list((_CHANGE_ZH if lang == "zh" else _CHANGE_EN).finditer(message))
    if not found:
        return []  # (most texts name no change: the other scans, of long alternations, are spared)
    same = _SAME_ZH if lang == "zh" else _SAME_EN
    quiet = [(x, y) for x, y in sentences if same.search(message, x, y)]
    strong = _STRONG_ZH if lang == "zh" else _STRONG_EN
    hard = {m.start() for m in strong.finditer(message)}
    return [(m.start(), m.end(), m.start() in hard) for m in found if not any(x <= m.start() < y for x, y in quiet)]


def _fact_spans(ex: Extraction, full: str, values: Sequence[Value]) -> list[tuple[str, int]]:
    """``(attribute, offset)`` of each fact whose value can be found in the text."""
    out = []
    low = full.lower()
    for f in ex.facts:
        at = low.find(f.value.lower()) if f.value else -1
        if at < 0:
            number = re.match(r"[\d.]+", f.value)
            hit = [v for v in values if v.kind in NUMERIC and number and v.norm == number.group()]
            at = hit[0].start if hit else -1
        if at >= 0:
            out.append((f.attribute, at))
    return out


#: The full stop of a title or an abbreviation ("Dr. Okafor", "St. Mary's", "e.g."), which ends no sentence
#: or clause: cut there, "I go to Dr. Okafor now" loses its value to a clause of its own.
_ABBREVIATION = re.compile(r"\b(?:Dr|Mr|Mrs|Ms|Mx|Prof|St|Mt|Jr|Sr|Rev|Capt|Lt|Sgt|vs|approx)\.(?=\s+\w)|\b(?:e\.g|i\.e)\.")


def _unabbreviated(message: str) -> str:
    """``message`` with the full stops of abbreviations blanked (same length: offsets stay valid)."""
    return _ABBREVIATION.sub(lambda m: m.group()[:-1] + " ", message) if "." in message else message


# (and a Chinese A-not-A question, with no question mark: "能不能改到周五啊", "要不要换个时间")
_QUESTION = re.compile(r"(?:[?？]|吗[。!！]?|呢[?？。]?)$|能不能|可不可以|要不要|是不是|行不行|好不好|有没有|会不会|能否|可否")
_SENTENCE = re.compile(r"(?:[^.!?。！？\n]|(?<=\d)\.(?=\d))+(?:[.!?。！？\n]+|$)")  # (a decimal point ends no sentence: "1.5 cups?")
_PRONOUN_START_EN = re.compile(r"\s*(?:it|they|he|she|this|that)\b", _F)
# ("这周", "那天", "这次" say when, not about what: no pronoun)
_PRONOUN_START_ZH = re.compile(r"\s*(?:它|他|她|这|那)(?!里|边|儿|周|星期|礼拜|个?月|年|天|次|会)")


def _slots(full: str, values: Sequence[Value], lang: str) -> tuple[Slot, ...]:
    """Group a clause's values into slots (see :class:`Slot`); past time is no slot."""
    groups: list[list[Value]] = []
    temporal: list[Value] = []
    for v in values:
        if v.kind == PAST:
            continue
        if v.kind in TEMPORAL:
            temporal.append(v)
            continue
        last = groups[-1][-1] if groups else None
        gap = full[last.end:v.start] if last is not None else None
        if gap is not None and re.fullmatch(r"\s*(?:a|an|per|each|every|of|/|每|一)?\s*", gap, _F):
            groups[-1].append(v)
        else:
            groups.append([v])
    if temporal:
        groups.append(temporal)
    out = []
    for g in groups:
        text = " ".join(v.text for v in g)
        families = {v.family for v in g if v.kind in _NAME_KINDS}
        if lang == "zh" and len(g) == 1 and g[0].kind == AMOUNT and (measure := _ZH_MEASURE.match(full, g[0].end)):
            families = {COUNT_FAMILY + measure.group(0)}
        out.append(Slot(kinds=frozenset(v.kind for v in g), norms=frozenset((v.kind, v.norm) for v in g), start=g[0].start,
                        end=g[-1].end, text=text, words=frozenset(_words(text, lang)),
                        weak=all(v.weak for v in g), parts=tuple((v.start, v.end, v.kind) for v in g),
                        family=families.pop() if len(families) == 1 else ""))
    return tuple(sorted(out, key=lambda s: s.start))


def _frame(full: str, a: int, b: int, values: tuple[Value, ...], nominal_spans: Sequence[tuple[int, int]],
           lang: str, me: str) -> Frame:
    clause = full[a:b]
    masked, residual, pos = [], [], a
    for v in values:
        if v.start < pos:
            continue
        masked += [full[pos:v.start], v.text if v.weak else PLACEHOLDERS[v.kind]]
        residual += [full[pos:v.start], " , "]
        pos = v.end
        if v.kind in _DAY_KINDS and (day_part := (_DAY_PART_ZH if lang == "zh" else _DAY_PART_EN).match(full, pos, b)) \
                and not any(pos <= w.start < day_part.end() for w in values):  # ("周三上午十点": the time holds it)
            pos = day_part.end()  # "周六早上", "Thursday evenings": the part of the day belongs to the day
    masked.append(full[pos:b])
    residual.append(full[pos:b])
    rest = "".join(residual)  # the clause without its values
    words = tuple(_words(_strip_markers(rest, lang), lang))
    agent = (_AGENT_ZH if lang == "zh" else _AGENT_EN).match(clause)
    told_by = _REPORTER_ZH.match(clause) if agent is None and lang == "zh" else None
    if told_by is not None:
        agent = told_by
    if agent is not None:  # who made the change, or who told of it, is not what changed (see _AGENT_EN)
        by = set(_words(agent.group("agent"), lang))
        if told_by is not None:  # (the teller and the verb of saying: "体检中心", "打电话", "说")
            by.update(_words(told_by.group(0), lang))
        words = tuple(w for w in words if w not in by)
    nominal: set[str] = {w for w in words if len(w) > 1 and has_cjk(w)}
    for s, e in nominal_spans:
        if a <= s and e <= b and (agent is None or s >= a + agent.end("agent")):
            span = "".join(" " if any(v.start <= k < v.end for v in values) else full[k] for k in range(s, e))
            nominal.update(_words(span, lang))
    subjects: set[str] = set()
    if lang == "zh":
        selves = len(_SELF_ZH.findall(clause))
        related = [m.group(1) for m in _POSSESSIVE_ZH.finditer(clause)]
        for m in re.finditer(r"([\w]+?)的", rest):  # (a value is no owner: "三点的")
            owner = _words(m.group(1), lang)
            if owner and not _SELF_ZH.fullmatch(m.group(1)[-2:]) and not _SELF_ZH.fullmatch(m.group(1)[-1:]) \
                    and not _tagged(m.group(1))[-1][1].startswith("v"):  # "我爸吃的降压药": 吃 is no owner
                subjects.add(owner[-1])
    else:
        selves = len(_SELF_EN.findall(clause))
        related = [m.group(1).lower() for m in _POSSESSIVE_EN.finditer(clause) if m.group(1).lower() in _RELATIONS_EN]
        for m in re.finditer(r"\b(\w+)'s\b", clause):
            owner = _words(m.group(1), lang)
            if owner and m.group(1).lower() not in _NOT_OWNERS and not _IS_AFTER.match(clause, m.end()):
                subjects.add(owner[0])
    subjects.update(w for w in words if w in (_RELATIONS_ZH if lang == "zh" else _RELATIONS_EN))
    if (_THIRD_ZH if lang == "zh" else _THIRD_EN).search(clause) and not any(
            v.kind == PERSON for v in values) and not subjects - {me}:
        subjects.add(UNRESOLVED)  # "his name is Kyle": whose, this clause does not say
    subjects.update(related)
    if selves > len(related):  # "my sister lives in Porto" is about her; "my sister and I" about both
        subjects.add(me)
    addition = bool((_ADDITION_ZH if lang == "zh" else _ADDITION_EN).search(clause))
    # (read without its values: "Max owns ..." names no maximum)
    running = bool((_RUNNING_ZH if lang == "zh" else _RUNNING_EN).search(rest))
    limit = bool((_LIMIT_ZH if lang == "zh" else _LIMIT_EN).search(rest)) or (
        lang == "en" and any(v.kind in NUMERIC for v in values) and bool(_TARGET_EN.search(rest)))
    delta = bool((_DELTA_ZH if lang == "zh" else _DELTA_EN).search(clause))
    moved = (_SHIFT_ZH if lang == "zh" else _SHIFT_EN).search(clause)
    shift = "" if moved is None else "+" if moved.group("up") else "-"
    periods = _periods(clause, lang)  # (qualifiers: words the values' masking does not touch)
    words = words + tuple(sorted(periods))
    nominal |= periods
    negations = tuple(m.end() + a for m in (_NEGATION_ZH if lang == "zh" else _NEGATION_EN).finditer(clause))
    # (where the object of a source preposition may start: "from Lisbon", "from the Marriott" and "the Marriott")
    sources = tuple(sorted({k + a for m in (_SOURCE_ZH if lang == "zh" else _SOURCE_EN).finditer(clause)
                            for k in (m.end(), m.start(1) if m.lastindex else m.end())}))
    slots = _slots(full, values, lang)
    return Frame(clause=clause, start=a, slots=slots, lead=_lead(full, a, slots, lang), groups=frozenset(value_group(k) for x in slots for k in x.kinds),
                 words=words, nominal=frozenset(nominal),
                 subjects=frozenset(subjects), masked=re.sub(r"\s+", " ", "".join(masked)).strip(),
                 addition=addition, negations=negations, sources=sources, running=running,
                 limit=limit, delta=delta, shift=shift)


def _lead(full: str, a: int, slots: Sequence[Slot], lang: str) -> int:
    """Where the clause's subject starts, when it is a name slot: the first slot, a name, with no
    content word of the clause before it ("Tom just got promoted at Acme", "The Acme team in Leeds
    shipped", "小王升职了"); -1 otherwise ("I had lunch with Tom", "The venue is the Marriott").
    The subject is what a statement is about: with another one, it is another statement."""
    first = slots[0] if slots else None
    if first is None or not first.kinds <= _PROPER_NAMES or first.weak:
        return -1
    before = full[a:first.start]
    words = _jieba().lcut(before) if lang == "zh" or has_cjk(before) else re.findall(r"[\w']+", before)
    if any(w.strip() and w.lower() not in _LEAD_IN for w in words if any(ch.isalnum() for ch in w)):
        return -1  # ("I work at Initech", "我在腾讯工作": the subject is a pronoun)
    return first.start


#: Words that may stand before a clause's subject: articles and conjunctions ("The Acme team", "And Tom").
_LEAD_IN = frozenset("the a an and but so then oh well 那 然后 而且 但是 不过".split())


# Who made a change, in a clause that says so with a change verb and its object: "The airline rescheduled
# my Lisbon flight to 9:15", "法务把续签截止日期延到四月三十号了" (the 把 construction: the agent, 把, what
# it acted on).  The agent is not a qualifier of what changed: the flight is the flight, whoever moved it.
_AGENT_EN = re.compile(
    r"\s*(?P<agent>(?:the\s+|our\s+|my\s+)?[\w-]+(?:'s(?=\s+(?:just\s+)?(?:putting|raising|moving|bumping|upping|cutting)))?"
    r"(?:\s+[\w'-]+)?)\s+(?:has\s+|have\s+|had\s+|just\s+|is\s+|are\s+|'s\s+)?"
    r"(?:rescheduled|moved|pushed|postponed|delayed|extended|brought\s+forward|raised|cut|increased|reduced|lowered"
    r"|bumped|shifted|switched|swapped|changed|renamed|upgraded|downgraded|relocated|upped|hiked|put|putting|raising"
    r"|moving|bumping|upping|cutting)\s+"
    r"(?:my|our|the|his|her|their|its|your|this|that)\b", _F)
# Who told of a change, before a verb of saying: "体检中心打电话说改到周四了", "导师说初稿可以推到12月20号".  The one who
# tells is not a qualifier of what changed ("我是说" is a correction, not a teller).
_REPORTER_ZH = re.compile(r"\s*(?P<agent>[^，。,说]{1,10}?)(?<!我是)(?:打电话|打来电话|来电话|来电|发消息|发微信)?"
                          r"(?:说|通知|告诉我|提醒我)(?=[^，。,]{2,})")
#: Values that name a day, and the part of the day that may follow one ("周六早上", "10月8号晚上").
_DAY_KINDS = frozenset({DATE, WEEKDAY, FUTURE, PAST})
_DAY_PART_ZH = re.compile(r"早上|上午|中午|下午|晚上|傍晚|凌晨|夜里|早晨|晚")
_DAY_PART_EN = re.compile(r"\s+(?:mornings?|afternoons?|evenings?|nights?|lunchtimes?)\b", _F)
_AGENT_ZH = re.compile(r"\s*(?P<agent>[^把，。,]{1,8}?)(?:已经|又|刚|刚刚|突然)?把(?=.*(?:" + _STRONG_ZH.pattern + "))")
#: Fact attributes whose value is a name (a place, an employer), also when the tagger missed it.
_NAME_FACTS = frozenset({"employer", "location", "origin", "name"})
_THIRD_EN = re.compile(r"\b(?:his|her|their|its)\b(?!\s+own\b)", _F)
_THIRD_ZH = re.compile(r"(?:他|她|它)(?:们)?的")
#: The subject of a clause whose possessive pronoun points outside it ("his", "她的").
UNRESOLVED = "@?"
_NOT_OWNERS = frozenset("it that what there here he she who let where how today".split())
#: What follows a "'s" that is "is", not a possessive: a value or an adverb ("rent's 1,450 a month", "the
#: venue's now the Hilton", "Tom's at Globex"), not a noun ("Tom's budget").
_IS_AFTER = re.compile(r"\s+(?:[\d$£€¥]|(?:now|still|just|already|at|in|on|up|down|about|around|over|under|only"
                       r"|going|moving|moved|gone|back|out|off|due|set|booked|scheduled|fixed|done)\b)", _F)


def _strip_markers(text: str, lang: str) -> str:
    pattern = _CHANGE_ZH if lang == "zh" else _CHANGE_EN
    text = pattern.sub(" , ", text)
    return (_ADDITION_ZH if lang == "zh" else _ADDITION_EN).sub(" , ", text)
