"""Lifecycle signals: hedges (confidence), retractions ("forget that") and corrections ("no, I meant")."""

from __future__ import annotations

import pytest

from extractors.signals import Signals, detect_signals, find_retraction, hedge_confidence, is_correction

# --------------------------------------------------------------------------- hedges


@pytest.mark.parametrize(
    ("text", "confidence"),
    [
        ("I know a bit of Rust", 0.6),
        ("I speak a little French", 0.6),
        ("It's sort of done", 0.6),
        ("I kinda like it", 0.6),
        ("maybe Friday", 0.5),
        ("I think the budget is 60k", 0.5),
        ("The budget is 60k, I think.", 0.5),
        ("It's probably Friday", 0.5),
        ("I might move to Berlin", 0.5),
        ("I'm not sure it's Friday", 0.4),
        ("not 100% sure about the venue", 0.4),
        ("around 50k", 0.8),
        ("我了解一点 Rust", 0.6),
        ("略懂", 0.6),
        ("可能是周五", 0.5),
        ("也许下周", 0.5),
        ("好像是五万", 0.5),
        ("大概五万", 0.5),
        ("我不确定", 0.4),
        ("五万左右", 0.8),
    ],
)
def test_hedges_lower_confidence(text: str, confidence: float) -> None:
    assert hedge_confidence(text) == confidence


@pytest.mark.parametrize(
    "text",
    [
        "The budget is 60k.",
        "I know Rust",
        "what kind of music do you like?",
        "What kinda jobs are you thinkin' of?",
        "I think about you a lot",
        "I believe in you",
        "不可能",  # "impossible" is certain, not a hedge
        "我住在北京",
        "",
    ],
)
def test_plain_statements_are_confident(text: str) -> None:
    assert hedge_confidence(text) == 1.0


def test_lowest_cue_wins() -> None:
    assert hedge_confidence("Maybe around 50k, I'm not sure") == 0.4


# --------------------------------------------------------------------------- retractions


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("forget that", ""),
        ("Forget it.", ""),
        ("Oh, forget it", ""),
        ("forget about the plan", "the plan"),
        ("Please forget about the hotel booking.", "the hotel booking"),
        ("Forget the hotel, we'll stay with friends", "the hotel"),
        ("never mind, drop the plan", "the plan"),
        ("Never mind.", ""),
        ("nvm", ""),
        ("never mind about the hotel", "the hotel"),
        ("scratch that", ""),
        ("Scratch that, the budget is 70k", ""),
        ("ignore what I said about the hotel", "the hotel"),
        ("Disregard my last message", ""),
        ("I take that back", ""),
        ("Can you forget what I said about the hotel?", "the hotel"),
        ("Please don't remember that", ""),
        ("不要了", ""),
        ("酒店不要了", "酒店"),
        ("那个计划不要了", "计划"),
        ("算了", ""),
        ("算了吧，不去了", ""),
        ("酒店的事就算了", "酒店"),
        ("别再提了", ""),
        ("忘了它吧", ""),
        ("忘掉这个", ""),
        ("请把预算的事忘掉", "预算"),
        ("当我没说", ""),
        ("Never mind the bedroom idea.", "the bedroom idea"),
        ("刚才那句作废。", ""),
        ("上一条删一下，看错日历了", ""),  # (a retraction, not a correction: nothing replaces it)
        ("装修的事就别提了", "装修"),
    ],
)
def test_retractions(text: str, hint: str) -> None:
    assert find_retraction(text) == (True, hint)


@pytest.mark.parametrize(
    "text",
    [
        "I forgot my keys",
        "don't forget the meeting",
        "Don't forget to call Bob",
        "I'll never forget that day",
        "You always forget about the plan",
        "I tend to forget about the plan",
        "never mind the weather, the trip was great",
        "Drop me a line when you land",
        "Let's not forget the budget",
        "我忘了带钥匙",
        "别忘了开会",
        "我把钥匙忘在家里了",
        "我想忘掉过去",
        "我算了一下，要五万",
        "我打算了很久",
        "你要不要了解一下",
        "你不要了吗？",
        "The plan is to fly to Rome",
        "Never mind the rain, the trip was great",
        "这张发票作废了",
        "工作的事先不说了，聊聊旅行吧",
        "",
    ],
)
def test_not_retractions(text: str) -> None:
    assert find_retraction(text) == (False, "")


# --------------------------------------------------------------------------- corrections


@pytest.mark.parametrize(
    "text",
    [
        "no, I meant Tuesday",
        "sorry, I meant Tuesday",
        "I meant Tuesday",
        "My bad, I meant 70k",
        "No, I mean Tuesday",
        "I said Monday but I meant Tuesday",
        "actually it's Tuesday, not Monday",
        "It's Tuesday, not Monday.",
        "70k, not 60k",
        "No, it's Tuesday",
        "No, the budget is 70k",
        "correction: the meeting is at 3",
        "I misspoke, it's Friday",
        "make that Tuesday",
        "Scratch that, the budget is 70k",
        "不对，是周二",
        "不对不对，预算是六万",
        "我是说周二",
        "我说错了，是周三",
        "不是周一，是周二",
        "应该是周五才对",
        "更正一下：预算是六万",
        "Sorry, the 13th, not the 12th.",
        "Oops, wrong number, it's BA 429.",
        "Wrong address, sorry: it's accounts@acme.com.",
        "不好意思，是十三号，不是十二号。",
        "地址写错了，是建国路86号。",
        "改成七个人吧，小孙也来。",
        "*KX19 ABD",  # the chat convention for a typo fixed
        "eh, it's 11:30, I had it wrong",
        "G1823，数字记反了",  # a misreading owned up to
        "不对不对，牙医是两点半，刚看错短信了",
        "改一下，10个人，忘了我表哥一家",
        "oops, Friday the 11th, misread my diary",  # a value right after an admitted slip
        "my bad, 5pm",
        "misheard the time, it's 2:45",  # the English counterpart of "看错了"
        "吃饭是周四不是周五，我记岔了",  # "是 A 不是 B" without a comma, and "记岔了" (misremembered)
    ],
)
def test_corrections(text: str) -> None:
    assert is_correction(text)


@pytest.mark.parametrize(
    "text",
    [
        "I meant to call you",
        "I meant it",
        "I mean, it's fine",
        "No, it's fine",
        "Thanks, not today",
        "Maybe later, not today",
        "I like jazz, not rock",
        "What I meant was nice",
        "make that happen",
        "Is it Tuesday, not Monday?",
        "The budget is 60k",
        "这样不对",
        "不对吗？",
        "不是我不想去，是没时间",
        "我是工程师",
        "Something went wrong with the build",
        "周报改成周四交了。",
        "他搞错了方向",
        "他写错了字",  # (the cue must end its clause)
        "我看错了一部电影",
        "**bold** and * a list item",
        "I had a great time",
        "sorry, I can't make it",  # an admitted slip with no value after it
        "Oops! I forgot",
        "I misheard what he said lol",  # a misreading with no value said
        "",
    ],
)
def test_not_corrections(text: str) -> None:
    assert not is_correction(text)


# --------------------------------------------------------------------------- together


def test_detect_signals_combines_all() -> None:
    assert detect_signals("The budget is 60k.") == Signals()
    assert detect_signals("never mind, drop the plan") == Signals(retracts=True, retract_hint="the plan")
    assert detect_signals("Scratch that, I think the budget is 70k") == Signals(
        confidence=0.5, retracts=True, retract_hint="", corrects=True
    )
    assert detect_signals("不对，可能是周二") == Signals(confidence=0.5, corrects=True)


@pytest.mark.parametrize("text", ["Thanks! I'm excited and kinda nervous.", "It was kinda nerve-wracking but fun.",
                                  "That sounds sort of overwhelming."])
def test_kinda_before_a_feeling_grades_it_and_is_no_hedge(text: str) -> None:
    assert hedge_confidence(text) == 1.0
