"""Value normalisation ("60k" == "60,000" == "六万") and canonical attribute names."""

from __future__ import annotations

import pytest

from extractors.attributes import AMOUNT, DATE, normalise_attribute, value_type
from extractors.values import normalize_value, parse_chinese_number


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("60k", "60000"),
        ("60K", "60000"),
        ("50,000", "50000"),
        ("1,000,000", "1000000"),
        ("1.5m", "1500000"),
        ("1.5 million dollars", "1500000 USD"),
        ("2bn", "2000000000"),
        ("0.5", "0.5"),
        ("50,000 CNY", "50000 CNY"),
        ("$60k", "60000 USD"),
        ("60k USD", "60000 USD"),
        ("€5k", "5000 EUR"),
        ("RMB 50000", "50000 CNY"),
        ("¥50,000", "50000 CNY"),
        ("６０ｋ", "60000"),  # full-width digits
        ("六万", "60000"),
        ("五千", "5000"),
        ("3万", "30000"),
        ("1.5万", "15000"),
        ("三万五", "35000"),
        ("两千五", "2500"),
        ("一百零五", "105"),
        ("十五", "15"),
        ("一亿五千万", "150000000"),
        ("3万5000", "35000"),
        ("5万元", "50000 CNY"),
        ("六万块", "60000 CNY"),
        ("五千块钱", "5000 CNY"),
        ("60 kg", "60 kg"),
        ("3pm", "3pm"),
    ],
)
def test_amounts(raw: str, expected: str) -> None:
    assert normalize_value(raw) == expected


@pytest.mark.parametrize(
    "raw",
    ["Friday", "March 3", "Dana Whitfield", "周五", "五月三号", "三个人", "10 Downing Street", "555-1234", "万一", "2,5", "fly to Rome"],
)
def test_non_amounts_keep_text_and_case(raw: str) -> None:
    assert normalize_value(f"  {raw} ") == raw


def test_chinese_numbers() -> None:
    assert parse_chinese_number("六万") == 60000
    assert parse_chinese_number("万") is None
    assert parse_chinese_number("abc") is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("budget", "budget"),
        ("the budget", "budget"),
        ("our new budget", "budget"),
        ("the new project budget", "budget"),
        ("marketing budget", "marketing_budget"),
        ("favourite colour", "favorite_color"),
        ("Favorite Color", "favorite_color"),
        ("due date", "deadline"),
        ("time zone", "timezone"),
        ("job", "occupation"),
        ("full name", "name"),
        ("project manager", "project_manager"),  # a qualifier is only dropped before a state attribute
        ("预算", "budget"),
        ("我们的预算", "budget"),
        ("截止日期", "deadline"),
        ("名字", "name"),
        ("狗", "狗"),  # outside the table: stays Chinese
    ],
)
def test_attribute_names(raw: str, expected: str) -> None:
    assert normalise_attribute(raw) == expected


def test_value_types() -> None:
    assert value_type("budget") == AMOUNT
    assert value_type("marketing_budget") == AMOUNT
    assert value_type("deadline") == DATE
    assert value_type("launch_date") == DATE
    assert value_type("dog") is None
