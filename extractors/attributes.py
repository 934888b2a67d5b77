"""Canonical fact attribute names, shared by English and Chinese rules.

A fact supersedes an older one only when both name the same attribute, so
"my favourite colour", "My favorite color" and "the favorite colour" must
all become ``favorite_color``, and "预算" must meet "budget".  The rule:

1. NFKC, lower case, whitespace collapsed, hyphens read as spaces.
2. Leading determiners (the, our, my, ...) are dropped, and so are qualifiers
   that do not change *which* value is meant (new, current, updated, revised,
   final, latest, total, overall, project, ...) when what is left is a state
   attribute: "the new project budget" is ``budget``, but "project manager"
   stays ``project_manager``.  Other modifiers stay: "the marketing budget"
   is ``marketing_budget``.
3. British spellings of a few words are written the American way
   (favourite -> favorite, colour -> color, ...).
4. A small synonym table maps common variants, in both languages, to one
   English name ("job" -> ``occupation``, "due date"/"截止日期" -> ``deadline``,
   "预算" -> ``budget``).  Chinese attributes outside the table stay in Chinese.
5. Words are joined with "_" (lower snake_case).

It also knows which *kind* of value a state attribute takes (an amount, a
date, anything) and what a role looks like, which the rules use to tell "the
budget is 60k" (a fact) from "the budget is tight" (an opinion), and "Dana is
the procurement lead" from "Paris is the capital of France".
"""

from __future__ import annotations

import re
import unicodedata

from .text import has_cjk

__all__ = [
    "normalise_attribute",
    "value_type",
    "fits_value",
    "is_role",
    "STATE_ATTRIBUTES",
    "STATE_HEADS_EN",
    "ZH_ATTRIBUTES",
    "AMOUNT",
    "DATE",
    "ANY",
]

AMOUNT, DATE, ANY = "amount", "date", "any"

#: Attributes whose value changes over time and that "the X is Y" / "X moved to Y"
#: statements update without a first-person "my".  Value: the kind of value expected.
STATE_ATTRIBUTES: dict[str, str] = {
    "budget": AMOUNT, "price": AMOUNT, "cost": AMOUNT, "fee": AMOUNT, "rent": AMOUNT, "salary": AMOUNT,
    "headcount": AMOUNT, "team_size": AMOUNT, "quota": AMOUNT,
    "deadline": DATE, "launch_date": DATE, "release_date": DATE, "start_date": DATE, "end_date": DATE,
    "meeting": DATE, "meeting_time": DATE, "departure": DATE, "departure_time": DATE,
    "flight": ANY, "hotel": ANY, "venue": ANY, "destination": ANY, "plan": ANY, "goal": ANY, "target": ANY,
    "timezone": ANY, "address": ANY, "email": ANY, "phone_number": ANY, "owner": ANY, "lead": ANY,
    "contact": ANY, "point_of_contact": ANY,
}

#: English heads of the state attributes as a regular expression (longest first).
STATE_HEADS_EN: str = "|".join(
    sorted([k.replace("_", r"\s+") for k in STATE_ATTRIBUTES] + [r"due\s+date", r"time\s+zone", r"e-?mail"], key=len, reverse=True)
)

#: Chinese attribute words -> canonical names (rule 4).
ZH_ATTRIBUTES: dict[str, str] = {
    "预算": "budget", "总预算": "budget",
    "截止日期": "deadline", "截止时间": "deadline", "截止期限": "deadline", "最后期限": "deadline",
    "期限": "deadline", "交付日期": "deadline", "交付时间": "deadline", "截稿日期": "deadline",
    "价格": "price", "价钱": "price", "报价": "price", "费用": "cost", "成本": "cost",
    "工资": "salary", "薪水": "salary", "薪资": "salary", "房租": "rent", "租金": "rent", "人数": "headcount",
    "会议": "meeting", "会议时间": "meeting_time", "开会时间": "meeting_time",
    "出发时间": "departure", "出发日期": "departure", "上线时间": "launch_date", "上线日期": "launch_date",
    "发布日期": "release_date", "发布时间": "release_date",
    "航班": "flight", "酒店": "hotel", "场地": "venue", "目的地": "destination", "计划": "plan", "目标": "goal",
    "地址": "address", "电话": "phone_number", "电话号码": "phone_number", "手机号": "phone_number",
    "手机号码": "phone_number", "邮箱": "email", "时区": "timezone", "负责人": "owner",
    "生日": "birthday", "年龄": "age", "名字": "name", "姓名": "name", "职业": "occupation", "工作": "occupation",
    "角色": "role", "职位": "role", "职务": "role", "岗位": "role",
}

_DETERMINERS = frozenset("the a an our my your their his her its this that these those".split())
_QUALIFIERS = frozenset("new current updated revised final latest official overall total whole entire project".split())
_AMERICAN = {
    "favourite": "favorite", "colour": "color", "colours": "colors", "flavour": "flavor", "neighbour": "neighbor",
    "organisation": "organization", "centre": "center", "programme": "program", "licence": "license",
    "catalogue": "catalog", "theatre": "theater", "honour": "honor", "labour": "labor", "humour": "humor",
}
_EN_SYNONYMS = {
    "full name": "name", "first name": "name", "real name": "name",
    "job": "occupation", "profession": "occupation",
    "due date": "deadline", "time zone": "timezone", "e mail": "email", "email address": "email",
    "e mail address": "email",
    "contact person": "point_of_contact", "poc": "point_of_contact",
    "team headcount": "headcount", "head count": "headcount",
}
_ZH_NUMERAL = re.compile(r"[\d零〇一二两三四五六七八九十百千万亿]")
_ZH_DATE = re.compile(r"[\d零〇一二两三四五六七八九十周星期礼拜月日号天今明后下上本这底初旬点晚早]")
_NUMBER_WORDS_EN = re.compile(
    r"\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|sixty"
    r"|seventy|eighty|ninety|hundred|thousand|million|billion)\b",
    re.IGNORECASE,
)
_DATE_START_EN = re.compile(
    r"^(?:\d|(?:today|tomorrow|tonight|next|this|end|mid|early|late|noon|midnight|eod|eow|eom|asap|q[1-4])\b"
    r"|in\s+(?:\d|an?\b|one|two|three|four|five|six|seven|eight|nine|ten|a\s+few|few))",
    re.IGNORECASE,
)
_ROLE_WORDS = frozenset(
    """lead manager director head owner ceo cto cfo coo cio vp president founder co-founder cofounder engineer
    designer developer architect analyst contact pm chair chairman chairwoman chairperson organizer organiser
    coordinator boss supervisor sponsor admin administrator officer consultant recruiter advisor adviser mentor
    teacher doctor lawyer accountant assistant secretary editor producer captain coach reviewer approver
    stakeholder buyer vendor supplier client customer partner contractor intern specialist liaison representative
    rep principal dean professor treasurer researcher scientist nurse""".split()
)
_ROLE_PHRASES = ("point of contact", "scrum master", "decision maker", "decision-maker")
# Words that make "X is the <role>" an opinion or a ranking, not a role: "the best engineer".
_ROLE_OPINION = frozenset(
    "best worst greatest great good bad nice amazing awesome terrible perfect real true biggest only first last "
    "favorite favourite worst-ever ideal sweetest smartest".split()
)
_ZH_PREFIX = re.compile(r"^(?:我们的|咱们的|我的|我们|咱们|的)")
_DATE_SUFFIXES = ("_date", "_time", "_day")
_AMOUNT_SUFFIXES = ("_budget", "_price", "_cost", "_fee", "_rent", "_salary")


def normalise_attribute(name: str) -> str:
    """The canonical attribute name of ``name`` (see the module docstring for the rule).

    >>> [normalise_attribute(a) for a in ("favourite colour", "the new budget", "Due Date", "预算", "狗")]
    ['favorite_color', 'budget', 'deadline', 'budget', '狗']
    """
    s = unicodedata.normalize("NFKC", name).strip().lower()
    if has_cjk(s):
        s = _ZH_PREFIX.sub("", "".join(s.split()))
        return ZH_ATTRIBUTES.get(s, s)
    words = s.replace("-", " ").replace("_", " ").split()
    while len(words) > 1 and words[0] in _DETERMINERS:
        words = words[1:]
    words = [_AMERICAN.get(w, w) for w in words]
    k = 0
    while k < len(words) - 1 and words[k] in _QUALIFIERS:
        k += 1
    if k and _canonical(words[k:]) in STATE_ATTRIBUTES:
        words = words[k:]
    return _canonical(words)


def _canonical(words: list[str]) -> str:
    phrase = " ".join(words)
    return _EN_SYNONYMS.get(phrase, phrase).replace(" ", "_")


def value_type(attribute: str) -> str | None:
    """``AMOUNT``, ``DATE`` or ``ANY`` for a state attribute (also "marketing_budget"), else None."""
    t = STATE_ATTRIBUTES.get(attribute)
    if t is not None:
        return t
    if attribute.endswith(_AMOUNT_SUFFIXES):
        return AMOUNT
    if attribute.endswith(_DATE_SUFFIXES) or attribute.endswith("_deadline"):
        return DATE
    last = attribute.rsplit("_", 1)[-1]
    return STATE_ATTRIBUTES.get(last)


def fits_value(attribute: str, raw: str, value: str, lang: str) -> bool:
    """Whether ``value`` is the kind of value the state ``attribute`` takes.

    "60k" fits a budget, "Friday" a deadline, "Marriott" a hotel; "tight",
    "approaching" and "nice" do not: "the budget is tight" is an opinion.
    ``raw`` is the text after the cue, before cleaning ("to fly to Rome" for a plan).

    >>> [fits_value("budget", v, v, "en") for v in ("60k", "tight")]
    [True, False]
    """
    vtype = value_type(attribute)
    if vtype is None:
        return False
    if lang == "zh":
        if vtype == AMOUNT:
            return bool(_ZH_NUMERAL.search(value))
        if vtype == DATE:
            return bool(_ZH_DATE.search(value) or re.search(r"[A-Za-z]", value))
        return True
    if vtype == AMOUNT:
        return bool(re.search(r"\d", value) or _NUMBER_WORDS_EN.search(value))
    first = value[:1]
    if vtype == DATE:
        return first.isupper() or bool(_DATE_START_EN.match(value))
    if raw.lower().startswith("to ") and attribute.endswith(("plan", "goal", "target")):
        return True  # "the plan is to fly to Rome"
    return first.isdigit() or first.isupper() or first in "$€£¥" or "@" in value


def is_role(value: str) -> bool:
    """Whether ``value`` names a role: "procurement lead", "head of procurement".

    Not "capital" (no role word) and not "best engineer" (a ranking, an opinion).

    >>> [is_role(v) for v in ("procurement lead", "head of procurement", "best engineer", "capital of France")]
    [True, True, False, False]
    """
    words = [w.strip(".,") for w in value.lower().split()]
    if not words or len(words) > 5:
        return False
    joined = " ".join(words)
    if any(joined.endswith(p) for p in _ROLE_PHRASES):
        return not any(w in _ROLE_OPINION for w in words)
    for i, w in enumerate(words):
        if w in _ROLE_WORDS:
            rest = words[i + 1 :]
            if rest and rest[0] != "of":
                return False
            return not any(x in _ROLE_OPINION for x in words[:i])
    return False
