"""Title lines of titled documents, and how a query names them."""

from __future__ import annotations

import pytest

from extractors.heading import names_title, split_title, title_key
from extractors.normalize import entity_key


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("Eddie Irvine\nEdmund Irvine Jr. is a retired racing driver.", "Eddie Irvine"),
        ("  Mark King (musician)  \n\nMark King is an English musician.", "Mark King (musician)"),
        ("张伟\n张伟是一名工程师。", "张伟"),
        ("Caroline: I went to a support group", None),  # one line: a turn, not a document
        ("I went to the store.\nThen I went home.", None),  # a sentence
        ("Note:\nbuy milk", None),
        ("Just a title\n   ", None),  # nothing below it
        ("This first line is far too long to be the title of anything at all, it runs on\nbody", None),
    ],
)
def test_split_title(text: str, title: str | None) -> None:
    assert split_title(text) == title


def test_title_key_drops_the_qualifier() -> None:
    assert title_key("Mark King (musician)") == "mark king"
    assert title_key("Welcome to the Show (TV series)") == "welcome to the show"
    assert title_key("The Dandy Warhols") == "dandy warhols"


@pytest.mark.parametrize(
    ("query", "key", "named"),
    [
        ("Which singer is American, Mark King or Nick Hexum?", "mark king", True),
        ("What genre is the author of Act of War; Direct Action associated with?", "act of war direct action", True),
        ("Where did Philip Carlo's subject live?", "philip carlo", True),
        ("Who is Mark Kingston?", "mark king", False),  # whole words only
        ("Who is Al?", "al", False),  # too short to trust
        ("张伟在哪里工作？", "张伟", True),  # CJK: a substring is enough
    ],
)
def test_names_title(query: str, key: str, named: bool) -> None:
    assert names_title(entity_key(query), key) is named
