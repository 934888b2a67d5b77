"""Fact rules ("my name is X", "the budget is now 60k", "我叫X") and the memory-kind classifier.

Agents are mostly told things about the user in the first person.  A handful
of regular expressions catches the common forms in English and Chinese
reliably, costs microseconds and needs no model, so the write path can store
``name``, ``employer``, ``location``, ``preference``... as structured facts
next to the raw memory.

Facts also change: "the budget is now 60k", "We raised the budget to 60k",
"The deadline moved to Friday", "预算加到六万了".  Such *state* statements
need no "my": for the attributes of :data:`extractors.attributes.STATE_ATTRIBUTES`
(budget, deadline, price, hotel, ...) they are facts about the speaker, like
first-person ones, and a newer fact on the same attribute supersedes the older
one in the engine.  "Dana Whitfield is the procurement lead" gives a ``role``
fact whose subject is Dana's entity key.  Attribute names are canonical
(:func:`~extractors.attributes.normalise_attribute`: "favourite colour" ->
``favorite_color``, "预算" -> ``budget``) and values normalised
(:func:`~extractors.values.normalize_value`: "60k" and "六万" -> ``60000``).

The rules favour precision: a value is cut at the first clause boundary and
dropped when it is a pronoun ("I love that"), the sentence is a question ("Do
I like it?", "is the budget 60k?") or a hypothesis ("if the budget were 60k",
"如果预算是五万的话"), and a state value must look like its attribute's kind of
value ("the budget is tight" is an opinion, not an amount).  Each fact carries
the hedge confidence of its sentence (:func:`~extractors.signals.hedge_confidence`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Iterable, Sequence

from .attributes import (
    DATE,
    STATE_ATTRIBUTES,
    STATE_HEADS_EN,
    ZH_ATTRIBUTES,
    fits_value,
    is_role,
    normalise_attribute,
    value_type,
)
from .base import ExtractedFact
from .normalize import PRONOUNS, entity_key, is_valid_entity
from .signals import at_clause_start, hedge_confidence, sentence_span
from .text import STOPWORDS_EN
from .values import normalize_value

__all__ = ["extract_facts", "classify_kind", "KINDS", "PERSONAL_ATTRIBUTES"]

KINDS: tuple[str, ...] = ("preference", "personal_info", "event", "decision", "todo", "fact", "message")

#: Attributes that describe who the speaker is; their facts make a memory ``personal_info``.
PERSONAL_ATTRIBUTES: frozenset[str] = frozenset({"name", "employer", "location", "identity", "origin", "age"})
_PREFERENCE_ATTRIBUTES = frozenset({"preference", "dislike"})


@dataclass(frozen=True, slots=True)
class _Rule:
    """A prefix pattern; the value is the text after it, cut at a clause boundary.

    ``attribute`` None means the pattern has an ``a`` group naming it ("my X is").
    A pattern with a ``v`` group delimits the value itself ("我在X工作"); one with
    an ``s`` group names the subject ("Dana is the lead").  ``mode`` says how the
    match is checked: "self" (first-person rules), "state" (the attribute must be
    a state attribute and the value fit its kind) or "role" (the value must name
    a role).  ``clause_start`` rules only match at the start of a clause
    ("Deadline is March 3", imperatives such as "set the budget to 60k").  A rule
    with ``needles`` is only tried on a text containing one of them (lower-case
    words for English, substrings for Chinese):
    it keeps the state rules, which scan for many words, off the messages that
    name no state attribute at all.
    """

    attribute: str | None
    pattern: re.Pattern[str]
    lang: str  # "en" | "zh": selects the value cutter
    extra_stop: str = ""  # more words ending the value for this rule (EN)
    mode: str = "self"
    clause_start: bool = False
    needles: tuple[str, ...] = ()


_ADV_EN = r"(?:(?:really|also|just|totally|absolutely|still|currently|now|actually|kind of|kinda|do|truly)\s+)*"
_I = r"(?<![\w'])i"
_IM = rf"{_I}(?:'m|\s+am)"
_F = re.IGNORECASE


def _en(attr: str | None, pattern: str, extra_stop: str = "", mode: str = "self", clause_start: bool = False) -> _Rule:
    needles = _STATE_NEEDLES_EN if mode == "state" else ()
    return _Rule(attr, re.compile(pattern, _F), "en", extra_stop, mode, clause_start, needles)


def _zh(attr: str | None, pattern: str, mode: str = "self") -> _Rule:
    return _Rule(attr, re.compile(pattern), "zh", mode=mode, needles=_STATE_NEEDLES_ZH if mode == "state" else ())


_PLACE_STOPS = r"with|since|for|as|now|near|at|on|from"
# "is now 60k", "is currently green": the adverb belongs to neither attribute nor value.
_NOW = r"(?:(?:now|currently|still|officially|finally|actually|already)\s+)*"
_STATE_ATTR = rf"(?P<a>(?:[\w'-]+\s+){{0,2}}?(?:{STATE_HEADS_EN}))"
_STATE_BARE = rf"(?P<a>{STATE_HEADS_EN})"
# "our budget for the office move is 50k" is the budget: the purpose is not part of the attribute.
_FOR = r"(?:\s+for\s+(?:the\s+|our\s+|my\s+|this\s+|that\s+|a\s+)?[\w'-]+(?:\s+[\w'-]+){0,2}?)?"
_VERBS_PAST = (
    r"(?:moved|changed|pushed|bumped|raised|increased|lowered|reduced|cut|set|updated|extended|shifted|brought"
    r"|dropped|upped|adjusted|switched|slashed|doubled|halved|rescheduled|postponed|delayed|revised|capped)"
)
_VERBS_BASE = r"(?:move|change|push|bump|raise|increase|lower|reduce|cut|set|update|extend|shift|adjust|switch|make)"
_VERBS_INTRANSITIVE = rf"(?:{_VERBS_PAST}|went|rose|grew|fell|jumped|climbed)"
_PARTICLE = r"(?:\s+(?:up|back|down|out|forward|again))?"
_FROM_TO = r"(?:\s+from\s+[^,.;!?\n]{1,25}?)?\s+to\s+"
_BE_UPDATED = (
    r"(?:(?:has|have|had)\s+been\s+|was\s+|were\s+|got\s+|gets\s+|is\s+|are\s+|just\s+|now\s+|being\s+"
    r"|officially\s+|finally\s+)*"
)
_NOT_BEFORE = (
    r"(?<!\bnot\s)(?<!n't\s)(?<!\bnever\s)(?<!\bto\s)(?<!\bshould\s)(?<!\bcould\s)(?<!\bwould\s)"
    r"(?<!\bwill\s)(?<!'ll\s)(?<!\bmight\s)(?<!\bmust\s)(?<!\bcan\s)(?<!\bmay\s)"
)
_STATE_STOPS = r"from|instead|rather|for|after|before|per|because|as|so|if"
# A capitalised word of a name; a "." only inside it or as an initial/title ("H.", "Dr."), so a
# name never runs across a sentence end ("... United States. Howard Milstein is the chairman").
_NAME_WORD = r"(?:[A-Z]\.|(?:Mr|Mrs|Ms|Dr|St)\.|[A-Z](?:[\w'-]|\.(?=\w))*)"
_ROLE_STOPS = r"at|in|for|since|from|who|with|on|and|to|now|because|but"
_ZH_STATE_ATTRS = "|".join(sorted((k for k, v in ZH_ATTRIBUTES.items() if v in STATE_ATTRIBUTES), key=len, reverse=True))
_STATE_NEEDLES_EN = tuple(sorted({k.rsplit("_", 1)[-1] for k in STATE_ATTRIBUTES} | {"due", "zone", "mail"}))
_STATE_NEEDLES_ZH = tuple(k for k, v in ZH_ATTRIBUTES.items() if v in STATE_ATTRIBUTES)
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
    _en(None, rf"\bmy\s+(?P<a>(?-i:[A-Za-z][a-z]*(?:\s+[a-z]+){{0,2}}?))\s+(?:is|are)\s+{_NOW}(?!not\b|a\s+bit\b)"),
    # State attributes without "my": "the budget is now 60k", "The deadline moved to Friday",
    # "We raised the budget to 60k", "set the budget to 60k", "Deadline is March 3".
    _en(None, rf"\b(?:the|our|my)\s+{_STATE_ATTR}{_FOR}\s+{_BE_UPDATED}{_VERBS_INTRANSITIVE}{_PARTICLE}{_FROM_TO}",
        _STATE_STOPS, "state"),
    _en(None, rf"\b{_STATE_BARE}\s+{_BE_UPDATED}{_VERBS_INTRANSITIVE}{_PARTICLE}{_FROM_TO}",
        _STATE_STOPS, "state", clause_start=True),
    _en(None, rf"\b(?:the|our|my)\s+{_STATE_ATTR}{_FOR}\s+(?:is|'s|are)\s+{_NOW}", _STATE_STOPS, "state"),
    _en(None, rf"\b{_STATE_BARE}\s+(?:is|'s)\s+{_NOW}", _STATE_STOPS, "state", clause_start=True),
    # The lookahead first: the lookbehinds are only tried where a verb starts.
    _en(None, rf"\b(?={_VERBS_PAST}\s){_NOT_BEFORE}{_VERBS_PAST}\s+(?:the|our|my)\s+{_STATE_ATTR}{_FOR}{_PARTICLE}"
              rf"{_FROM_TO}", _STATE_STOPS, "state"),
    _en(None, rf"\b{_VERBS_BASE}\s+(?:the|our|my)\s+{_STATE_ATTR}{_FOR}{_PARTICLE}{_FROM_TO}",
        _STATE_STOPS, "state", clause_start=True),
    _en(None, rf"\b(?:(?:decided|agreed|chose|voted)\s+to|let's|let\s+us)\s+{_VERBS_BASE}\s+(?:the|our|my)\s+{_STATE_ATTR}"
              rf"{_FOR}{_PARTICLE}{_FROM_TO}", _STATE_STOPS, "state"),
    # Roles: "Dana Whitfield is the procurement lead", "I'm the team lead".
    _Rule(
        "role",
        re.compile(rf"(?<![\w'])(?P<s>{_NAME_WORD}(?:\s+{_NAME_WORD}){{0,3}})(?:\s+is|'s)\s+"
                   r"(?:(?:now|currently|still|officially)\s+)?(?:the|our|their|an?)\s+"),
        "en", _ROLE_STOPS, "role",
    ),
    _en("role", rf"{_IM}\s+{_NOW}(?:the|our|their)\s+", _ROLE_STOPS, "role"),
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
    # State attributes: "预算加到六万了", "预算是五万", "截止日期改到周五", "把预算提高到6万".
    _zh(None, rf"(?P<a>{_ZH_STATE_ATTRS})"
              r"(?:现在|目前|已经|又|也|还|最终|最后|则)?(?:可能|大概|应该|好像|也许|或许|估计|大约)?"
              r"(?:是|为|改到|改成|改为|改在|调到|调整到|调整为|调成|调为|加到|增加到|提高到|提高至|提到|涨到|升到|降到|降低到"
              r"|降至|减到|减少到|减至|砍到|压到|推迟到|延期到|延迟到|延到|推到|挪到|移到|提前到|变成|变为|定在|定为|定成"
              r"|设为|设在|设成|增至|增加至)了?", "state"),
    # Roles: "张伟是采购负责人", "老王是我们的项目经理".
    _Rule(
        "role",
        re.compile(r"(?:(?<![\u3400-\u9fff])|(?<=的))(?P<s>[\u4e00-\u9fff]{2,3})(?:现在)?是(?:我们|公司|我们公司|项目|这个项目)?的?"
                   r"(?P<v>[^，。！？；,.!?;\s]{0,10}?(?:负责人|总经理|经理|总监|主管|主任|老板|组长|队长|总裁|董事长|创始人"
                   r"|联系人|对接人|工程师|设计师|老师|医生|律师|会计|秘书|助理|顾问|CEO|CTO|CFO|COO))"
                   r"(?=$|[，。！？；,.!?;\s了的])"),
        "zh", mode="role",
    ),
)

# A comma inside a number ("50,000") does not end a value.
_EN_STOP = re.compile(
    r"\s*(?:(?<!\d),|,(?!\d{3}(?!\d))|[!?;:\n()\[\]\"“”]|\.(?=\s|$)|\s-\s"
    r"|\s(?:and|but|because|cause|since|so|which|who|where|when|while"
    r"|though|although|if|unless|or|lol|haha)\b)",
    re.IGNORECASE,
)
_ZH_STOP = re.compile(r"[，。！？；、：!?;:\n（）()「」“”]|(?<!\d)[,.]|[,.](?!\d)|但是|但|而且|并且|不过|可是|因为|所以|然后|还有")
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
_LATIN = re.compile(r"[A-Za-z]")
_WORDS_EN = re.compile(r"[a-z]+")
_HAN = re.compile(r"[\u3400-\u9fff]")
_SENTENCE_END = re.compile(r"[!?。！？\n]|\.(?=\s|$)")  # not the "." of "1.5m"
_HYPOTHETICAL_EN = re.compile(
    r"\b(?:if|unless|suppose|supposing|assuming|whether|wonder|imagine|pretend|hypothetically|in\s+case|what\s+if"
    r"|as\s+if|wish)\b",
    re.IGNORECASE,
)
_HYPOTHETICAL_ZH = re.compile(r"如果|要是|假如|假设|万一|的话|假若|倘若|若是|如若|是否|是不是")
# Approximations are a hedge (see signals), not part of the value: "around 60k" -> "60k".
_APPROX_EN = re.compile(r"^(?:around|about|roughly|approximately|approx\.?|~)\s*", re.IGNORECASE)
_DATE_PREP_EN = re.compile(r"^(?:due\s+)?(?:on|at|by)\s+|^due\s+", re.IGNORECASE)
_ZH_PARTICLES = re.compile(r"(?:左右|的样子|了|啦|吧|呢|哦|呀|啊|嘛)+$")
_ZH_NOT_VALUE = re.compile(r"^(?:不|没|否|多少|几|什么|啥|哪|怎么|多大|多高|多久|多长)|吗$")
_ROLE_QUALIFIERS = re.compile(r"^(?:new|current|interim)\s+")  # "the new lead" -> "lead"; "New York-based" stays
_LAST_WORD_EN = re.compile(r"([\w']+)\s*$")
# Words after which a capitalised name can be a subject: "I think Dana is the lead".
_SUBJECT_LEADS = frozenset(
    "think guess believe heard hear know knew said says say that and but so because now apparently maybe btw fyi "
    "also then since while when".split()
)
_NOT_NAME_WORDS = frozenset(
    """today yesterday tomorrow now also so and but then well ok okay yes no actually btw fyi note update hey hi
    hello maybe monday tuesday wednesday thursday friday saturday sunday""".split()
)


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


def _is_hypothetical(text: str, pos: int, lang: str) -> bool:
    """Whether the sentence of ``pos`` is a condition or a wish ("if the budget is 60k", "如果...的话")."""
    start, end = sentence_span(text, pos)
    if lang == "zh":
        return bool(_HYPOTHETICAL_ZH.search(text, start, end))
    return bool(_HYPOTHETICAL_EN.search(text, start, pos))


def _zh_state_context(text: str, pos: int) -> bool:
    """A Chinese state attribute must start a phrase: "预算是", "我们的预算", "把预算" (not "超出预算是")."""
    if pos == 0 or text[pos - 1] in "，。！？；、：,.!?;:\n（）() \t的把将我新总":
        return True
    return text[max(0, pos - 2) : pos] in ("我们", "咱们", "这次", "本次", "这个", "那个", "项目", "公司", "团队", "目前", "现在")


def _named_subject(name: str, lang: str) -> str | None:
    """The entity key of a rule's named subject ("Dana Whitfield" -> "dana whitfield"), None if not a name."""
    words = name.split()
    if lang == "en":
        while words and (words[0].lower() in STOPWORDS_EN or words[0].lower() in _NOT_NAME_WORDS):
            words = words[1:]
        if not words or any(w.lower() in STOPWORDS_EN or w.lower() in _NOT_NAME_WORDS for w in words):
            return None
    elif name[:1] in "我你您他她它这那谁哪每某有没" or name.endswith("的"):
        return None
    key = entity_key(" ".join(words))
    if key in PRONOUNS or not is_valid_entity(key, "PERSON"):
        return None
    return key


def _subject_position_en(text: str, pos: int) -> bool:
    """A named subject starts its clause or follows a verb of saying ("I think Dana is ..."), not "of"/"at"."""
    if at_clause_start(text, pos):
        return True
    prev = _LAST_WORD_EN.search(text, 0, pos)
    return prev is not None and prev.group(1).lower() in _SUBJECT_LEADS


def _zh_value(raw: str, attribute: str, mode: str) -> str | None:
    cut = _cut_zh(raw, attribute)
    if mode == "state":
        cut = _ZH_PARTICLES.sub("", cut).strip()
        if _ZH_NOT_VALUE.search(cut):
            return None
    if not cut or cut in _BAD_VALUES_ZH or not any(ch.isalnum() for ch in cut):
        return None
    return cut


def extract_facts(text: str, subject: str = "user") -> list[ExtractedFact]:
    """Facts stated in ``text``, in order of appearance, without duplicates.

    ``subject`` is whom first-person and state facts are about: ``"user"`` for a
    plain message, the speaker's entity key for a "Speaker: message" turn.  A
    rule that names its subject ("Dana Whitfield is the procurement lead") uses
    that name's entity key instead.  Attributes are canonical names, values
    normalised (see the module docstring); ``confidence`` is the hedge
    confidence of the fact's sentence.

    >>> extract_facts("my budget is 50k, and I work at Northwind.")
    [ExtractedFact(attribute='budget', value='50000', subject='user', confidence=1.0), \
ExtractedFact(attribute='employer', value='Northwind', subject='user', confidence=1.0)]
    >>> extract_facts("I think the deadline moved to Friday")
    [ExtractedFact(attribute='deadline', value='Friday', subject='user', confidence=0.5)]
    """
    if not text:
        return []
    s = unicodedata.normalize("NFKC", text).replace("\u2019", "'").replace("\u2018", "'")
    found: list[tuple[int, ExtractedFact]] = []
    taken: list[tuple[int, int]] = []  # prefix spans already used: "I don't like" is not also "I like"
    for rule in _rules_for(s):
        for m in rule.pattern.finditer(s):
            if any(a <= m.start() < b for a, b in taken):
                continue
            fact = _fact_of(rule, m, s, subject)
            if fact is not None:
                taken.append((m.start(), m.end()))
                found.append((m.start(), fact))
    found.sort(key=lambda p: p[0])
    out: list[ExtractedFact] = []
    seen: set[tuple[str, str, str]] = set()
    for _, fact in found:
        k = (fact.subject, fact.attribute, fact.value.lower())
        if k not in seen:
            seen.add(k)
            out.append(fact)
    return out


def _rules_for(s: str) -> list[_Rule]:
    """The rules worth trying on ``s``: of its scripts, and whose needles it contains."""
    low = s.lower()
    langs = {"en"} if _LATIN.search(s) else set()
    if _HAN.search(s):
        langs.add("zh")
    hits: dict[tuple[str, ...], bool] = {}  # the state rules share their needles
    words: set[str] | None = None
    out: list[_Rule] = []
    for rule in _RULES:
        if rule.lang not in langs:
            continue
        if rule.needles:
            hit = hits.get(rule.needles)
            if hit is None:
                if rule.lang == "en":  # whole words: "rent" is not in "parents"
                    words = words if words is not None else set(_WORDS_EN.findall(low))
                    hit = not words.isdisjoint(rule.needles)
                else:
                    hit = any(n in s for n in rule.needles)
                hits[rule.needles] = hit
            if not hit:
                continue
        out.append(rule)
    return out


def _fact_of(rule: _Rule, m: re.Match[str], s: str, subject: str) -> ExtractedFact | None:
    """The fact of one match of ``rule`` in ``s``, or None when a check rejects it."""
    groups = rule.pattern.groupindex
    # A named subject may swallow a capitalised "If" ("If Dana is the lead"): look up to its end.
    cue_end = m.end("s") if "s" in groups else m.start()
    if _is_question(s, m.start()) or _is_hypothetical(s, cue_end, rule.lang):
        return None
    if rule.clause_start and not at_clause_start(s, m.start()):
        return None
    if rule.attribute is None:
        raw_attribute = m.group("a")
        if rule.lang == "en" and (
            "'" in raw_attribute or any(w in _BAD_ATTRIBUTES for w in raw_attribute.lower().split())
        ):
            return None
        if rule.lang == "zh" and rule.mode == "state" and not _zh_state_context(s, m.start("a")):
            return None
        attribute = normalise_attribute(raw_attribute)
    else:
        attribute = rule.attribute
    about = subject
    if "s" in groups:
        named = _named_subject(m.group("s"), rule.lang)
        if named is None or (rule.lang == "en" and not _subject_position_en(s, m.start("s"))):
            return None
        about = named
    raw = m.group("v") if "v" in groups else s[m.end() :]
    value: str | None
    if rule.lang == "en":
        cut = _cut_en(raw, rule.extra_stop)
        if rule.mode == "state":
            cut = _APPROX_EN.sub("", cut)
            if value_type(attribute) == DATE:
                cut = _DATE_PREP_EN.sub("", cut)  # "the meeting is at 3pm" -> "3pm"
        value = _clean_en(cut, attribute)
    else:
        value = _zh_value(raw, attribute, rule.mode)
    if not value:
        return None
    if rule.mode == "self" and rule.attribute is None and rule.lang == "en":
        if not _looks_like_fact(attribute, raw.lstrip(), value):
            return None
    elif rule.mode == "state" and not fits_value(attribute, raw.lstrip(), value, rule.lang):
        return None
    elif rule.mode == "role" and rule.lang == "en":
        value = _ROLE_QUALIFIERS.sub("", value)
        if not is_role(value):
            return None
    start, end = sentence_span(s, m.start())
    return ExtractedFact(
        attribute=attribute,
        value=normalize_value(value),
        subject=about,
        confidence=hedge_confidence(s[start:end]),
    )


_TODO = re.compile(
    # Written for user -> assistant turns.  First person only for "need to"/"have to": in a
    # dialogue "you need to be" is advice; "remind me of" is a memory, not a task.
    r"\b(?:remind\s+me\s+(?:to|about|at|on|in|tomorrow|tonight|next|this|when|that)|set\s+a\s+reminder"
    r"|don't\s+let\s+me\s+forget|(?:don't|do\s+not)\s+forget\s+(?:to|about|my|the|our|that)"
    r"|i\s+(?:need|have|must)\s+to|i've\s+got\s+to|to-?do\s+list|todo)\b"
    r"|提醒我|别忘了|不要忘记|不要忘了|记得要|待办|我得|我要记得",
    re.IGNORECASE,
)
# A deadline mentioned on its own is a task; a deadline *stated or moved* ("the deadline
# moved to Friday") is a state fact and classified as one.
_TODO_WEAK = re.compile(r"\b(?:deadline|due\s+(?:on|by|tomorrow|today|next))\b|截止", re.IGNORECASE)
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
    A state update ("the budget is now 60k", "The deadline moved to Friday") is a
    ``fact``, or a ``decision`` when worded as one ("we decided to raise the
    budget to 60k").  Hedges do not change the kind, only the confidence.
    The engine uses it to boost or decay memories by kind; it does not have to be
    perfect, only cheap and predictable.
    """
    attributes = {f.attribute for f in facts}
    if _TODO.search(text):
        return "todo"
    if _TODO_WEAK.search(text) and not any(value_type(a) for a in attributes):
        return "todo"
    if _DECISION.search(text):
        return "decision"
    if attributes & _PREFERENCE_ATTRIBUTES:
        return "preference"
    if attributes & PERSONAL_ATTRIBUTES:
        return "personal_info"
    if attributes:
        return "fact"
    if _EVENT.search(text):
        return "event"
    return "message"
