from __future__ import annotations

import pytest

from extractors.speaker import split_speaker


@pytest.mark.parametrize(
    ("text", "speaker", "subject"),
    [
        ("Caroline: I went to a support group", "Caroline", "caroline"),
        ("Dana Whitfield: hi there", "Dana Whitfield", "dana whitfield"),
        ("  Mel :  ok", "Mel", "mel"),
        ("张伟：我今天去了北京", "张伟", "张伟"),
        ("Melanie：我叫李娜", "Melanie", "melanie"),
    ],
)
def test_speaker_prefix(text: str, speaker: str, subject: str) -> None:
    t = split_speaker(text)
    assert t.speaker == speaker
    assert t.subject == subject
    assert text[t.start : t.end] == speaker
    assert text[t.message_start :] == text[t.message_start :].lstrip()
    assert t.message_start > t.end


@pytest.mark.parametrize(
    "text",
    ["Note: buy milk", "Meeting Notes: budget", "https://example.com", "at 10:30 we meet", "dear diary: today",
     "This is a long sentence: with a colon", "注意：明天开会", "No colon here", "", "Q: what?"],
)
def test_no_speaker(text: str) -> None:
    t = split_speaker(text)
    assert t.speaker is None and t.start == -1 and t.message_start == 0 and t.subject == "user"


@pytest.mark.parametrize("text,speaker", [
    ("林晓雨：浩子！在不？", "林晓雨"), ("何一鸣：到了", "何一鸣"), ("李总：明天开会", "李总"), ("张医生：按时吃药", "张医生"),
    ("妈妈：吃饭了吗", "妈妈"), ("小张：收到", "小张"), ("浩子：在呢", "浩子"), ("欧阳娜娜：好的", "欧阳娜娜"),
])
def test_chinese_speakers_are_names_familiar_forms_and_roles(text: str, speaker: str) -> None:
    assert split_speaker(text).speaker == speaker


@pytest.mark.parametrize("text", [
    # what a note is about, before a colon, is no speaker
    "广场舞：晚上6点半开始", "目标院校：南大软件工程", "婚宴酒店：香格里拉", "妈妈床位：18床", "周会：周三上午",
    "合唱排练时间：周四晚 7:00-9:00",
    # nor is the text before the colon of a time
    "我每天坐7:20那趟班车去园区", "去大阪的机票是3月28号早上8:30",
])
def test_chinese_labels_and_times_are_no_speakers(text: str) -> None:
    t = split_speaker(text)
    assert t.speaker is None and t.message_start == 0


def test_roles_are_stripped_but_not_speakers() -> None:
    t = split_speaker("User: I live in Paris")
    assert t.speaker is None and t.subject == "user"
    assert "User: I live in Paris"[t.message_start :] == "I live in Paris"
    assert split_speaker("assistant: noted").subject == "assistant"
