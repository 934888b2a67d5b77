"""Normalised fact values: "60k", "60,000" and "六万" are one value, "60000".

The engine supersedes a fact when a newer one has the same subject and
attribute, and it compares values to tell a real update from a repetition.
That only works when the same amount is written the same way, whatever the
language or shorthand of the message: "the budget is 60k", "预算加到六万了"
and "we raised the budget to 60,000" must all store ``60000``.

No installed library covers Chinese numerals together with "k"/"m"
shorthand, so this is a small hand-written parser.  It only rewrites a value
that is *entirely* an amount (an optional currency, a number, an optional
multiplier, an optional unit); anything else — names, dates, phrases — is
returned stripped and otherwise untouched, in its original case.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, InvalidOperation

__all__ = ["normalize_value", "parse_number", "parse_chinese_number", "CURRENCIES"]

#: Currency words and symbols -> ISO code written after the number ("50000 CNY").
#: "¥" is read as CNY: ripple's second language is Chinese.
CURRENCIES: dict[str, str] = {
    "$": "USD", "us$": "USD", "usd": "USD", "dollar": "USD", "dollars": "USD", "buck": "USD", "bucks": "USD",
    "¥": "CNY", "￥": "CNY", "cny": "CNY", "rmb": "CNY", "yuan": "CNY", "元": "CNY", "块": "CNY", "块钱": "CNY",
    "人民币": "CNY", "元人民币": "CNY",
    "€": "EUR", "eur": "EUR", "euro": "EUR", "euros": "EUR",
    "£": "GBP", "gbp": "GBP", "pound": "GBP", "pounds": "GBP",
    "美元": "USD", "美金": "USD", "欧元": "EUR", "英镑": "GBP", "日元": "JPY", "jpy": "JPY", "yen": "JPY",
}

#: Multiplier suffixes of English shorthand ("60k", "1.5m", "2 million").
_EN_MULTIPLIERS: dict[str, int] = {
    "k": 1_000, "thousand": 1_000, "grand": 1_000,
    "m": 1_000_000, "mm": 1_000_000, "mn": 1_000_000, "mil": 1_000_000, "million": 1_000_000,
    "b": 1_000_000_000, "bn": 1_000_000_000, "billion": 1_000_000_000,
}

_ZH_DIGITS: dict[str, int] = {
    "零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9,
}
_ZH_SMALL_UNITS: dict[str, int] = {"十": 10, "百": 100, "千": 1_000}
_ZH_BIG_UNITS: dict[str, int] = {"万": 10_000, "亿": 100_000_000}
_ZH_NUMBER = re.compile(r"(?:\d+(?:\.\d+)?|[零〇一二两三四五六七八九十百千万亿])+")
_ZH_TOKEN = re.compile(r"\d+(?:\.\d+)?|[零〇一二两三四五六七八九十百千万亿]")

_CURRENCY_WORDS = "|".join(sorted((re.escape(c) for c in CURRENCIES), key=len, reverse=True))
_MULTIPLIER_WORDS = "|".join(sorted(_EN_MULTIPLIERS, key=len, reverse=True))
# [currency] number [multiplier] [unit]; the unit is a currency or one short Latin word
# ("50 kg").  A Han unit other than a currency ("五月", "三个人") leaves the value alone.
_AMOUNT = re.compile(
    rf"^(?P<pre>{_CURRENCY_WORDS})?\s*"
    r"(?P<num>[\d零〇一二两三四五六七八九十百千万亿][\d.,零〇一二两三四五六七八九十百千万亿]*)"
    rf"\s*(?P<mult>(?:{_MULTIPLIER_WORDS})(?![a-z]))?"
    rf"\s*(?P<unit>{_CURRENCY_WORDS}|[A-Za-z]{{1,12}})?$",
    re.IGNORECASE,
)


def _format(d: Decimal) -> str:
    """``Decimal`` -> shortest plain string: 60000, 1.5 (never an exponent)."""
    if d == d.to_integral_value():
        return str(int(d))
    return format(d.normalize(), "f")


def parse_chinese_number(text: str) -> Decimal | None:
    """The value of a Chinese (or mixed) numeral, or None.

    Handles 六万, 五千, 一百零五, 3万, 1.5万, 两千五 (colloquial 2500) and 三万五 (35000).

    >>> [int(parse_chinese_number(s)) for s in ("六万", "3万", "两千五", "一百零五", "1.5万")]
    [60000, 30000, 2500, 105, 15000]
    """
    if not text or not _ZH_NUMBER.fullmatch(text):
        return None
    total = Decimal(0)  # finished 亿 groups
    wan = Decimal(0)  # finished 万 group
    section = Decimal(0)  # below 万
    number: Decimal | None = None
    last_unit = 0
    after_unit = False  # the pending digit directly follows a unit ("三万五")
    zero_seen = False
    for tok in _ZH_TOKEN.findall(text):
        if tok[0].isdigit():
            if number is not None:
                return None  # "5 5" has no meaning
            number, after_unit = Decimal(tok), False
        elif tok in _ZH_DIGITS:
            if tok in ("零", "〇"):
                zero_seen = True
                continue
            if number is not None:
                return None
            number = Decimal(_ZH_DIGITS[tok])
            after_unit = bool(last_unit) and not zero_seen
        elif tok in _ZH_SMALL_UNITS:
            unit = _ZH_SMALL_UNITS[tok]
            section += (number if number is not None else Decimal(1)) * unit
            number, last_unit, zero_seen = None, unit, False
        else:
            unit = _ZH_BIG_UNITS[tok]
            group = section + (number or 0)
            if group == 0:
                return None  # "万" alone
            if unit == 100_000_000:
                total = (total + wan + group) * unit
                wan = Decimal(0)
            else:
                wan += group * unit
            section, number, last_unit, zero_seen = Decimal(0), None, unit, False
    if number is not None:
        if after_unit and last_unit >= 10:
            number *= Decimal(last_unit) / 10  # colloquial: 三万五 = 35000, 两千五 = 2500
        section += number
    return total + wan + section


def parse_number(text: str) -> Decimal | None:
    """The value of "60000", "60,000", "1.5", or a Chinese numeral; None for anything else."""
    t = text.strip()
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+", t):
        try:
            return Decimal(t.replace(",", ""))
        except InvalidOperation:  # pragma: no cover - the pattern rules it out
            return None
    return parse_chinese_number(t)


def normalize_value(value: str) -> str:
    """A fact value in canonical form: amounts as plain numbers, everything else stripped.

    The multiplier is applied ("60k" -> "60000", "1.5m" -> "1500000", "3万" -> "30000"),
    thousands separators dropped, and a currency written before or after the number
    becomes an ISO code after it ("$60k" -> "60000 USD", "5万元" -> "50000 CNY").  Any
    other single-word unit is kept as written ("50 kg", "3pm").  Values that are not amounts
    keep their text and case ("Dana Whitfield", "March 3", "周五").

    >>> [normalize_value(v) for v in ("60k", "50,000 CNY", "1.5m", "六万", "五千块", "$2.5k", "Friday ")]
    ['60000', '50000 CNY', '1500000', '60000', '5000 CNY', '2500 USD', 'Friday']
    """
    v = unicodedata.normalize("NFKC", value).strip()
    m = _AMOUNT.match(v)
    if not m:
        return v
    number = parse_number(m.group("num"))
    if number is None:
        return v
    mult = m.group("mult")
    if mult:
        number *= _EN_MULTIPLIERS[mult.lower()]
    pre, unit = m.group("pre"), m.group("unit")
    if pre and unit and unit.lower() not in CURRENCIES:
        return v  # "$5 kg" is not an amount this parser understands
    currency = CURRENCIES.get((pre or unit or "").lower())
    if currency is not None:
        return f"{_format(number)} {currency}"
    if unit:
        sep = " " if v[m.end("num") : m.start("unit")] else ""  # "3pm" stays "3pm", "60 kg" "60 kg"
        return f"{_format(number)}{sep}{unit}"
    return _format(number)
