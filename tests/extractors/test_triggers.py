from __future__ import annotations

import pytest

from extractors.base import ExtractedFact
from extractors.triggers import classify_kind, extract_facts


def pairs(text: str) -> list[tuple[str, str]]:
    return [(f.attribute, f.value) for f in extract_facts(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("My name is Dana Whitfield.", [("name", "Dana Whitfield")]),
        ("my name is dana", [("name", "dana")]),
        ("My name’s Caroline and I love painting", [("name", "Caroline"), ("preference", "painting")]),
        ("I'm called Bob, nice to meet you", [("name", "Bob")]),
        ("Please call me Dana", [("name", "Dana")]),
        ("I work at Northwind.", [("employer", "Northwind")]),
        ("I work for Acme Corp as a buyer", [("employer", "Acme Corp")]),
        ("I currently work at Google, but I'm looking", [("employer", "Google")]),
        ("I live in New York City with my wife", [("location", "New York City")]),
        ("I live in Berlin and I work at SAP", [("location", "Berlin"), ("employer", "SAP")]),
        ("I prefer tea over coffee", [("preference", "tea")]),
        ("I prefer window seats.", [("preference", "window seats")]),
        ("I like to paint", [("preference", "paint")]),
        ("I love hiking in the mountains!", [("preference", "hiking in the mountains")]),
        ("I really like jazz, but not rock", [("preference", "jazz")]),
        ("I don't like cilantro", [("dislike", "cilantro")]),
        ("I am a software engineer", [("identity", "software engineer")]),
        ("I'm an artist; I also teach", [("identity", "artist")]),
        ("my budget is 50k", [("budget", "50000")]),
        ("My favorite color is blue.", [("favorite_color", "blue")]),
        ("my budget is 50k, and I work at Northwind.", [("budget", "50000"), ("employer", "Northwind")]),
        ("Caroline said my dog is called Max", [("dog", "called Max")]),
        ("My goal is to give kids a loving home.", [("goal", "give kids a loving home")]),
        ("my mom is a teacher", [("mom", "teacher")]),
        ("My favorite restaurant is the Olive Garden.", [("favorite_restaurant", "Olive Garden")]),
        ("My family is the best", []),
        ("I'm a big fan of pottery - the creativity is awesome.", [("preference", "pottery")]),
        ("I've been working at Contoso since 2019", [("employer", "Contoso")]),
        ("I have been living in Denver for years", [("location", "Denver")]),
    ],
)
def test_english_rules(text: str, expected: list[tuple[str, str]]) -> None:
    assert pairs(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Do I like jazz?",  # a question states nothing
        "What is my name?",
        "call me tomorrow",  # not a name
        "I really love that",  # pronoun value
        "I like it a lot",
        "I love you",
        "I'm a bit tired",
        "I'd like a coffee",  # a request, not a preference
        "They live in Paris",  # not first person
        "You work at Google",
        "my friend and I are going to Rome",
        "I don't work at Acme anymore?",
        "",
    ],
)
def test_english_negatives(text: str) -> None:
    facts = pairs(text)
    assert not any(a in ("preference", "name", "identity", "employer", "location") for a, _ in facts), facts


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我叫张伟", [("name", "张伟")]),
        ("我叫张伟，今年30岁", [("name", "张伟")]),
        ("我的名字是李娜。", [("name", "李娜")]),
        ("我是一名工程师", [("identity", "工程师")]),
        ("我是做销售的", [("identity", "做销售")]),
        ("我在阿里巴巴工作", [("employer", "阿里巴巴")]),
        ("我现在在 Northwind 上班", [("employer", "Northwind")]),
        ("我住在北京。", [("location", "北京")]),
        ("我住在上海，在腾讯上班", [("location", "上海")]),
        ("我喜欢猫", [("preference", "猫")]),
        ("我很喜欢喝咖啡，但是不喜欢茶", [("preference", "喝咖啡")]),
        ("我爱吃火锅！", [("preference", "吃火锅")]),
        ("我不喜欢香菜", [("dislike", "香菜")]),
        ("我的预算是5万", [("budget", "50000")]),
        ("我的狗叫旺财", [("狗", "旺财")]),
    ],
)
def test_chinese_rules(text: str, expected: list[tuple[str, str]]) -> None:
    assert pairs(text) == expected


@pytest.mark.parametrize(
    "text",
    ["我爱你", "我是说我们明天去", "我们喜欢猫", "他叫张伟", "你住在哪里？", "我是不是应该去", "她喜欢猫", "好的"],
)
def test_chinese_negatives(text: str) -> None:
    facts = pairs(text)
    assert not any(a in ("preference", "name", "identity", "employer", "location") for a, _ in facts), facts


def test_subject_is_passed_through() -> None:
    assert extract_facts("I live in Paris", subject="caroline") == [
        ExtractedFact(attribute="location", value="Paris", subject="caroline")
    ]
    assert extract_facts("I live in Paris")[0].subject == "user"


def test_values_are_trimmed() -> None:
    for f in extract_facts("I work at Northwind!!! My budget is 50k. I love jazz :) 我住在北京。"):
        assert f.value == f.value.strip()
        assert f.value[-1] not in ".,!?;:。，！？；"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Remind me to call Bob tomorrow", "todo"),
        ("Don't forget the report due Friday", "todo"),
        ("提醒我明天给张伟打电话", "todo"),
        ("We decided to go with Postgres", "decision"),
        ("我们决定下个月去成都", "decision"),
        ("I prefer window seats", "preference"),
        ("我喜欢猫", "preference"),
        ("My name is Dana", "personal_info"),
        ("I work at Northwind", "personal_info"),
        ("我住在北京", "personal_info"),
        ("my budget is 50k", "fact"),
        ("I went to a support group yesterday", "event"),
        ("我昨天去了杭州", "event"),
        ("The sky is blue", "message"),
        ("These figurines remind me of my mom", "message"),  # a memory, not a task
        ("You need to relax more", "message"),  # advice to someone else
        ("That's a big decision for you", "message"),
        ("Please remind me about the dentist on Monday", "todo"),
        ("今天天气不错", "message"),
    ],
)
def test_classify_kind(text: str, kind: str) -> None:
    assert classify_kind(text, extract_facts(text)) == kind


@pytest.mark.parametrize(
    "text",
    [
        # Real chat turns (LoCoMo) where "my X is/was Y" is an opinion or "'s" a possessive.
        "My kids are so excited about summer break!",
        "My fam's been awesome - they helped out.",
        "Seeing my mentee's face light up was the best!",
        "We celebrated my daughter's birthday with a concert.",
        "Representing inclusivity in my art is important to me.",
        "Losing my job was hard, but I'm livin' my dreams now.",
        "Making my spot inviting for my customers is key.",
        "My online clothes store is open!",
        "Being my own boss and doing something I love is awesome.",
        "I'm a mix of excited and scared to get into fashion.",
        "My manager Lisa is great.",
    ],
)
def test_real_chat_opinions_are_not_facts(text: str) -> None:
    assert pairs(text) == []
