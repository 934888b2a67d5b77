"""Times a text names, resolved against its own date (extractors.timeexpr)."""

from __future__ import annotations

from datetime import date

import pytest

from extractors.timeexpr import overlaps, query_times, resolve_times

WED = date(2023, 7, 12)  # a Wednesday


def day(d: date) -> tuple[date, date]:
    return (d, d)


@pytest.mark.parametrize(("text", "expected"), [
    ("We went camping last month.", [(date(2023, 6, 1), date(2023, 6, 30))]),
    ("I went to a LGBTQ support group yesterday", [day(date(2023, 7, 11))]),
    ("the day before yesterday", [day(date(2023, 7, 10))]),
    ("two weeks ago we moved", [(date(2023, 6, 26), date(2023, 7, 2))]),
    ("3 days ago", [day(date(2023, 7, 9))]),
    ("last Saturday I painted", [day(date(2023, 7, 8))]),
    ("next week", [(date(2023, 7, 17), date(2023, 7, 23))]),
    ("this weekend", [(date(2023, 7, 15), date(2023, 7, 16))]),
    ("last summer", [(date(2022, 6, 1), date(2022, 8, 31))]),
    ("in June I ran a marathon", [(date(2023, 6, 1), date(2023, 6, 30))]),
    ("in August", [(date(2022, 8, 1), date(2022, 8, 31))]),  # the latest August on or before the anchor
    ("on October 13, 2023", [day(date(2023, 10, 13))]),
    ("13 October 2023", [day(date(2023, 10, 13))]),
    ("Oct 2023", [(date(2023, 10, 1), date(2023, 10, 31))]),
    ("in 2022", [(date(2022, 1, 1), date(2022, 12, 31))]),
    ("我昨天去了颐和园", [day(date(2023, 7, 11))]),
    ("上周六我们去爬山", [day(date(2023, 7, 8))]),
    ("三天前", [day(date(2023, 7, 9))]),
    ("上个月", [(date(2023, 6, 1), date(2023, 6, 30))]),
    ("下周", [(date(2023, 7, 17), date(2023, 7, 23))]),
    ("2023年7月", [(date(2023, 7, 1), date(2023, 7, 31))]),
    ("2023年10月13日", [day(date(2023, 10, 13))]),
    ("去年", [(date(2022, 1, 1), date(2022, 12, 31))]),
])
def test_times_are_read_against_the_texts_own_date(text: str, expected: list[tuple[date, date]]) -> None:
    assert resolve_times(text, WED) == expected


@pytest.mark.parametrize("text", ["We may go to the beach.", "March on, soldiers!", "I'll sunbathe", "May I ask?",
                                  "The 2000 people came", "这个很好", "他三十岁了"])
def test_words_that_only_look_like_times_are_not_times(text: str) -> None:
    assert resolve_times(text, WED) == []


def test_a_question_names_its_own_time_and_it_overlaps_the_memory_that_said_it_otherwise() -> None:
    asked = query_times("When did Melanie go camping in June?", date(2023, 10, 20))
    said = resolve_times("Melanie: We went camping last month, the kids loved it.", date(2023, 7, 3))
    assert any(overlaps(a, s) for a in asked for s in said)
    assert not any(overlaps(a, s) for a in asked for s in resolve_times("camping next month", date(2023, 7, 3)))
