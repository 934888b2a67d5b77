"""State facts without a first-person "my" ("the budget is now 60k", "预算加到六万了"), roles, and confidence."""

from __future__ import annotations

import pytest

from extractors.triggers import classify_kind, extract_facts


def triples(text: str, subject: str = "user") -> list[tuple[str, str, str]]:
    return [(f.subject, f.attribute, f.value) for f in extract_facts(text, subject=subject)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("the budget is now 60k", [("user", "budget", "60000")]),
        ("our budget is 50,000 CNY", [("user", "budget", "50000 CNY")]),
        ("Our budget for the office move is 50,000 CNY.", [("user", "budget", "50000 CNY")]),
        ("The deadline for my tax return is at the end of April.", [("user", "deadline", "end of April")]),
        ("We raised the budget to 60k", [("user", "budget", "60000")]),
        ("We've bumped our budget up to $60k.", [("user", "budget", "60000 USD")]),
        ("The budget went from 50k to 60k", [("user", "budget", "60000")]),
        ("set the budget to 70k", [("user", "budget", "70000")]),
        ("We decided to raise the budget to 70k", [("user", "budget", "70000")]),
        ("the new project budget is 1.5m", [("user", "budget", "1500000")]),
        ("Our budget is around 50k", [("user", "budget", "50000")]),
        ("The marketing budget is 20k", [("user", "marketing_budget", "20000")]),
        ("The deadline moved to Friday", [("user", "deadline", "Friday")]),
        ("The deadline has been pushed back to next Monday", [("user", "deadline", "next Monday")]),
        ("deadline is March 3", [("user", "deadline", "March 3")]),
        ("The due date is on Friday", [("user", "deadline", "Friday")]),
        ("They moved the meeting to 3pm", [("user", "meeting", "3pm")]),
        ("The hotel is the Marriott", [("user", "hotel", "Marriott")]),
        ("The plan is to fly to Rome on Monday", [("user", "plan", "fly to Rome on Monday")]),
        ("my favourite colour is now green", [("user", "favorite_color", "green")]),
        ("My budget is 60k now", [("user", "budget", "60000")]),
        (
            "The budget is 60k and the deadline is Friday",
            [("user", "budget", "60000"), ("user", "deadline", "Friday")],
        ),
        ("Dana Whitfield is the procurement lead", [("dana whitfield", "role", "procurement lead")]),
        ("Dana Whitfield is now the procurement lead.", [("dana whitfield", "role", "procurement lead")]),
        ("Lisa is the head of procurement at Northwind", [("lisa", "role", "head of procurement")]),
        ("Dana's the team lead", [("dana", "role", "team lead")]),
        ("I'm the procurement lead", [("user", "role", "procurement lead")]),
        ("no, I meant the budget is 70k", [("user", "budget", "70000")]),
        ("Actually, the deadline is Tuesday, not Monday", [("user", "deadline", "Tuesday")]),
    ],
)
def test_english_state_facts(text: str, expected: list[tuple[str, str, str]]) -> None:
    assert triples(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("预算加到六万了", [("user", "budget", "60000")]),
        ("预算是五万", [("user", "budget", "50000")]),
        ("我们的预算是5万元", [("user", "budget", "50000 CNY")]),
        ("我们把预算提高到6万", [("user", "budget", "60000")]),
        ("预算改成六万吧", [("user", "budget", "60000")]),
        ("截止日期改到周五", [("user", "deadline", "周五")]),
        ("我们的截止日期是3月3日", [("user", "deadline", "3月3日")]),
        ("不对，预算是六万", [("user", "budget", "60000")]),
        ("张伟是采购负责人", [("张伟", "role", "采购负责人")]),
        ("老王是我们的项目经理", [("老王", "role", "项目经理")]),
    ],
)
def test_chinese_state_facts(text: str, expected: list[tuple[str, str, str]]) -> None:
    assert triples(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        # questions
        "is the budget 60k?",
        "Is the deadline Friday?",
        "Is Dana the procurement lead?",
        "The budget is 1.5m?",
        "预算是多少",
        "预算是多少？",
        "预算是五万吗",
        "预算是不是五万",
        # hypotheticals
        "if the budget were 60k",
        "if the budget is 60k, we can go",
        "I wonder if the budget is 60k",
        "If Dana is the lead, we're fine",
        "如果预算是五万的话",
        # pronoun, negated or opinion values
        "the budget is it",
        "the budget is tight",
        "The budget for the trip is tight",
        "the budget isn't 60k",
        "the budget is not 60k",
        "The plan is great",
        "The hotel is nice",
        "The meeting is over",
        "The deadline is approaching",
        "超出预算是常事",
        # not a state statement
        "The budget was 50k",  # a past value says nothing about the current one
        "I need to raise the budget to 70k",  # a task, not an update
        "We should move the deadline to Friday",
        "We didn't raise the budget to 60k",
        "the team's budget is 40k",
        # roles: opinions, rankings and non-names
        "Paris is the capital of France",
        "Bob is the best engineer",
        "Dana is a great teacher",
        "Dana is not the lead",
        "Dana is the one",
        "It is the team lead who decides",
        "This is the manager",
        "I'm the one who called",
        "他是经理",
    ],
)
def test_negatives(text: str) -> None:
    assert triples(text) == []


def test_subject_follows_the_speaker_but_not_a_named_subject() -> None:
    assert triples("the budget is now 60k", subject="caroline") == [("caroline", "budget", "60000")]
    assert triples("Dana is the team lead", subject="caroline") == [("dana", "role", "team lead")]


def test_hedged_facts_carry_low_confidence() -> None:
    [fact] = extract_facts("I think the deadline moved to Friday")
    assert (fact.attribute, fact.value, fact.confidence) == ("deadline", "Friday", 0.5)
    [fact] = extract_facts("预算可能是五万")
    assert (fact.attribute, fact.value, fact.confidence) == ("budget", "50000", 0.5)
    # Confidence is per sentence: the hedge of the second sentence leaves the first alone.
    budget, deadline = extract_facts("Our budget is 50k. I think the deadline is Friday.")
    assert (budget.attribute, budget.confidence) == ("budget", 1.0)
    assert (deadline.attribute, deadline.confidence) == ("deadline", 0.5)
    assert all(f.confidence == 1.0 for f in extract_facts("My name is Dana and I live in Paris"))


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("the budget is now 60k", "fact"),
        ("The deadline moved to Friday", "fact"),  # a moved deadline is a state, not a task
        ("截止日期改到周五", "fact"),
        ("预算加到六万了", "fact"),
        ("We decided to raise the budget to 70k", "decision"),
        ("我们决定把预算加到六万", "decision"),
        ("I think the budget is 60k", "fact"),  # a hedge keeps the kind
        ("I think I prefer tea", "preference"),
        ("The deadline is approaching", "todo"),  # no value stated: still a task cue
        ("截止前要交报告", "todo"),
    ],
)
def test_kinds_of_updates(text: str, kind: str) -> None:
    assert classify_kind(text, extract_facts(text)) == kind
