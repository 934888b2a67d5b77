"""Times a text names, as date ranges: "yesterday", "last week", "in June", "2023年7月", "上周六".

Why: "When did Melanie go camping in June?" is answered by a turn that says
"we went camping last month", written in July.  The words share nothing; the
dates do, once "last month" is read against the day the turn was written.  So
the write path resolves the relative times of each memory against its own
event time and keeps the ranges (:func:`resolve_times`), and recall reads the
times a query names (:func:`query_times`) and favours memories whose event
time or resolved times fall in them.

A small rule set, English and Chinese, rather than a general date parser: it
must run on every stored turn without slowing ingest, and it must not read
"may" (the verb) or "March" (the verb) as months.  Ranges are inclusive
``(first day, last day)`` pairs of :class:`datetime.date`.
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime, timedelta

__all__ = ["DateRange", "resolve_times", "query_times", "overlaps"]

DateRange = tuple[date, date]

_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
_MONTHS.update({m.lower(): i for i, m in enumerate(calendar.month_abbr) if m})
_MONTHS["sept"] = 9
_WEEKDAYS = {d.lower(): i for i, d in enumerate(calendar.day_name)}
_WEEKDAYS_ZH = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3, "several": 3}
_ZH_NUM = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10,
           "几": 3}

_MONTH_WORDS = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
# "October 13, 2023", "Oct 13 2023", "13 October, 2023", "October 2023", "13 October"
_EN_FULL = re.compile(rf"\b(?:({_MONTH_WORDS})\.?\s+{_DAY}(?:,?\s+(\d{{4}}))?|{_DAY}\s+(?:of\s+)?({_MONTH_WORDS})\.?(?:,?\s+(\d{{4}}))?)\b", re.I)
_EN_MONTH_YEAR = re.compile(rf"\b({_MONTH_WORDS})\.?,?\s+(\d{{4}})\b", re.I)
# a bare month counts only after "in"/"during"/"since"/... ("in June"), never "may" alone
_EN_IN_MONTH = re.compile(rf"\b(?:in|during|since|until|by|early|mid|late|end of|beginning of)\s+({_MONTH_WORDS})\b(?!\s+\d)", re.I)
_EN_YEAR = re.compile(r"\b(?:in|during|since|of)\s+((?:19|20)\d\d)\b")
_EN_RELATIVE_DAY = re.compile(r"\b(the day before yesterday|yesterday|last night|today|tonight|this morning|this afternoon"
                              r"|this evening|tomorrow)\b", re.I)
_EN_AGO = re.compile(r"\b(\d+|a couple of|a few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten)\s+"
                     r"(day|week|month|year)s?\s+ago\b", re.I)
_EN_LAST = re.compile(r"\b(last|this|next|past|previous|coming)\s+(week|weekend|month|year|summer|winter|spring|fall|autumn)\b", re.I)
_EN_WEEKDAY = re.compile(r"\b(last|this|next|on|past)\s+(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", re.I)

_ZH_FULL = re.compile(r"(?:(\d{4})年)?(\d{1,2})月(?:(\d{1,2})[日号])?")
_ZH_YEAR = re.compile(r"(\d{4})年(?!\d{1,2}月)")
_ZH_REL_DAY = {"前天": -2, "昨天": -1, "昨晚": -1, "今天": 0, "今晚": 0, "今早": 0, "明天": 1, "后天": 2}
_ZH_REL_DAY_RE = re.compile("|".join(_ZH_REL_DAY))
_ZH_REL = re.compile(r"(上上|上|这|本|下)(?:个)?(周末|周|星期|礼拜|月)(?![一二三四五六日天])")
_ZH_REL_YEAR = {"前年": -2, "去年": -1, "今年": 0, "明年": 1}
_ZH_REL_YEAR_RE = re.compile("|".join(_ZH_REL_YEAR))
_ZH_AGO = re.compile(r"([一两二三四五六七八九十几\d]+)(?:个)?(天|周|星期|礼拜|月|年)(?:以)?前")
_ZH_WEEKDAY = re.compile(r"(上上|上|这|本|下)?(?:周|星期|礼拜)([一二三四五六日天])")


def _month_range(year: int, month: int) -> DateRange:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def _week_range(day: date, weeks: int) -> DateRange:
    start = day - timedelta(days=day.weekday()) + timedelta(weeks=weeks)
    return start, start + timedelta(days=6)


def _shift_month(year: int, month: int, by: int) -> tuple[int, int]:
    n = year * 12 + (month - 1) + by
    return n // 12, n % 12 + 1


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _latest_before(anchor: date, month: int, day: int | None) -> DateRange | None:
    """A month (and day) without a year: its latest occurrence on or before ``anchor``."""
    for year in (anchor.year, anchor.year - 1):
        if day is None:
            first, last = _month_range(year, month)
            if first <= anchor:
                return first, last
        else:
            d = _safe_date(year, month, day)
            if d is not None and d <= anchor:
                return d, d
    return None


def _season(anchor: date, name: str, by: int) -> DateRange:
    first = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}[name]

    def months(year: int) -> DateRange:
        return date(year, first, 1), _month_range(*_shift_month(year, first, 2))[1]

    start, end = months(anchor.year)
    if by < 0:
        return months(anchor.year if end < anchor else anchor.year - 1)
    if by > 0:
        return months(anchor.year if start > anchor else anchor.year + 1)
    return start, end


def _count(word: str) -> int:
    word = word.lower()
    return int(word) if word.isdigit() else _NUMBER_WORDS.get(word, 1)


def _zh_count(word: str) -> int:
    if word.isdigit():
        return int(word)
    if len(word) == 2 and word[0] == "十":
        return 10 + _ZH_NUM.get(word[1], 0)
    return _ZH_NUM.get(word, 1)


def _absolute(text: str, anchor: date) -> list[DateRange]:
    """Dates, months and years the text names outright; a month or day without a year is the
    latest one on or before ``anchor``."""
    out: list[DateRange] = []
    taken: list[tuple[int, int]] = []
    for m in _EN_FULL.finditer(text):
        month_word, day_s, year_s = (m.group(1), m.group(2), m.group(3)) if m.group(1) else (m.group(5), m.group(4), m.group(6))
        month, day = _MONTHS[month_word.lower()], int(day_s)
        if not 1 <= day <= 31:
            continue
        if year_s:
            d = _safe_date(int(year_s), month, day)
            rng = (d, d) if d else None
        else:
            rng = _latest_before(anchor, month, day)
        if rng:
            out.append(rng)
            taken.append(m.span())
    for m in _EN_MONTH_YEAR.finditer(text):
        if not any(a <= m.start() < b for a, b in taken):
            out.append(_month_range(int(m.group(2)), _MONTHS[m.group(1).lower()]))
            taken.append(m.span())
    for m in _EN_IN_MONTH.finditer(text):
        rng = _latest_before(anchor, _MONTHS[m.group(1).lower()], None)
        if rng and not any(a <= m.start(1) < b for a, b in taken):
            out.append(rng)
    for m in _EN_YEAR.finditer(text):
        year = int(m.group(1))
        out.append((date(year, 1, 1), date(year, 12, 31)))
    for m in _ZH_FULL.finditer(text):
        year_s, month, day_s = m.group(1), int(m.group(2)), m.group(3)
        if not 1 <= month <= 12:
            continue
        if year_s and day_s:
            d = _safe_date(int(year_s), month, int(day_s))
            rng = (d, d) if d else None
        elif year_s:
            rng = _month_range(int(year_s), month)
        else:
            rng = _latest_before(anchor, month, int(day_s) if day_s else None)
        if rng:
            out.append(rng)
    for m in _ZH_YEAR.finditer(text):
        year = int(m.group(1))
        out.append((date(year, 1, 1), date(year, 12, 31)))
    return out


def _relative(text: str, anchor: date) -> list[DateRange]:
    """Times the text names relative to ``anchor`` ("yesterday", "last week", "三天前", "上周六")."""
    out: list[DateRange] = []
    for m in _EN_RELATIVE_DAY.finditer(text):
        word = m.group(1).lower()
        offset = {"the day before yesterday": -2, "yesterday": -1, "last night": -1, "tomorrow": 1}.get(word, 0)
        d = anchor + timedelta(days=offset)
        out.append((d, d))
    for m in _EN_AGO.finditer(text):
        n, unit = _count(m.group(1)), m.group(2).lower()
        if unit == "day":
            d = anchor - timedelta(days=n)
            out.append((d, d))
        elif unit == "week":
            out.append(_week_range(anchor, -n))
        elif unit == "month":
            out.append(_month_range(*_shift_month(anchor.year, anchor.month, -n)))
        else:
            out.append((date(anchor.year - n, 1, 1), date(anchor.year - n, 12, 31)))
    for m in _EN_LAST.finditer(text):
        which, unit = m.group(1).lower(), m.group(2).lower()
        by = {"last": -1, "past": -1, "previous": -1, "this": 0, "next": 1, "coming": 1}[which]
        if unit in ("week", "weekend"):
            start, end = _week_range(anchor, by)
            out.append((end - timedelta(days=1), end) if unit == "weekend" else (start, end))
        elif unit == "month":
            out.append(_month_range(*_shift_month(anchor.year, anchor.month, by)))
        elif unit == "year":
            out.append((date(anchor.year + by, 1, 1), date(anchor.year + by, 12, 31)))
        else:  # a season: its three months; "last" is the latest that ended before the anchor
            out.append(_season(anchor, unit, by))
    for m in _EN_WEEKDAY.finditer(text):
        which, weekday = m.group(1).lower(), _WEEKDAYS[m.group(2).lower()]
        delta = (anchor.weekday() - weekday) % 7
        if which in ("last", "past", "on"):
            d = anchor - timedelta(days=delta or (7 if which != "on" else 0))
        elif which == "next":
            d = anchor + timedelta(days=(weekday - anchor.weekday()) % 7 or 7)
        else:  # "this Friday": the one of this week
            d = anchor - timedelta(days=anchor.weekday()) + timedelta(days=weekday)
        out.append((d, d))
    for m in _ZH_REL_DAY_RE.finditer(text):
        d = anchor + timedelta(days=_ZH_REL_DAY[m.group(0)])
        out.append((d, d))
    for m in _ZH_REL.finditer(text):
        by = {"上上": -2, "上": -1, "这": 0, "本": 0, "下": 1}[m.group(1)]
        unit = m.group(2)
        if unit == "月":
            out.append(_month_range(*_shift_month(anchor.year, anchor.month, by)))
        else:
            start, end = _week_range(anchor, by)
            out.append((end - timedelta(days=1), end) if unit == "周末" else (start, end))
    for m in _ZH_REL_YEAR_RE.finditer(text):
        year = anchor.year + _ZH_REL_YEAR[m.group(0)]
        out.append((date(year, 1, 1), date(year, 12, 31)))
    for m in _ZH_AGO.finditer(text):
        n, unit = _zh_count(m.group(1)), m.group(2)
        if unit == "天":
            d = anchor - timedelta(days=n)
            out.append((d, d))
        elif unit in ("周", "星期", "礼拜"):
            out.append(_week_range(anchor, -n))
        elif unit == "月":
            out.append(_month_range(*_shift_month(anchor.year, anchor.month, -n)))
        else:
            out.append((date(anchor.year - n, 1, 1), date(anchor.year - n, 12, 31)))
    for m in _ZH_WEEKDAY.finditer(text):
        by = {"上上": -2, "上": -1, "这": 0, "本": 0, "下": 1, None: 0}[m.group(1)]
        start, _ = _week_range(anchor, by)
        d = start + timedelta(days=_WEEKDAYS_ZH[m.group(2)])
        out.append((d, d))
    return out


def _dedup(ranges: list[DateRange]) -> list[DateRange]:
    return sorted(set(ranges))


def resolve_times(text: str, at: datetime | date) -> list[DateRange]:
    """Every time a memory names, relative ones read against its own event time ``at``.

    >>> from datetime import date
    >>> resolve_times("We went camping last month.", date(2023, 7, 12))
    [(datetime.date(2023, 6, 1), datetime.date(2023, 6, 30))]
    >>> resolve_times("我昨天去了颐和园", date(2024, 5, 8))
    [(datetime.date(2024, 5, 7), datetime.date(2024, 5, 7))]
    """
    anchor = at.date() if isinstance(at, datetime) else at
    return _dedup(_absolute(text, anchor) + _relative(text, anchor))


def query_times(text: str, now: datetime | date) -> list[DateRange]:
    """The times a query names outright ("in June", "on October 13, 2023", "2023年7月"); relative
    words in a question ("last week") are read against ``now``, the asker's present."""
    return resolve_times(text, now)


def overlaps(a: DateRange, b: DateRange) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]
