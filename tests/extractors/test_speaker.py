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


def test_roles_are_stripped_but_not_speakers() -> None:
    t = split_speaker("User: I live in Paris")
    assert t.speaker is None and t.subject == "user"
    assert "User: I live in Paris"[t.message_start :] == "I live in Paris"
    assert split_speaker("assistant: noted").subject == "assistant"
