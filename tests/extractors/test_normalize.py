from __future__ import annotations

import pytest

from extractors.normalize import entity_key, is_valid_entity


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("The Northwind's", "northwind"),
        ("Dana  Whitfield", "dana whitfield"),
        ("Northwind’s", "northwind"),
        ("my pottery class", "pottery class"),
        ("our team", "team"),
        ("a LGBTQ support group", "lgbtq support group"),
        ("the the Lakers", "lakers"),
        ("Ｎｏｒｔｈｗｉｎｄ", "northwind"),  # full-width, NFKC
        ("\"Acme Corp.\"", "acme corp"),
        ("AT&T", "at&t"),
        ("C++", "c++"),
        ("Wi-Fi", "wi-fi"),
        ("  Paris!  ", "paris"),
        ("张 伟", "张伟"),
        ("北京 的 阿里巴巴", "北京的阿里巴巴"),
        ("阿里巴巴（中国）", "阿里巴巴中国"),  # punctuation gone, then Han spaces
        ("Northwind 北京", "northwind 北京"),
        ("the", "the"),  # a lone determiner is kept (and rejected by is_valid_entity)
    ],
)
def test_entity_key(name: str, key: str) -> None:
    assert entity_key(name) == key


def test_entity_key_is_idempotent() -> None:
    for name in ("The Northwind's", "Dana  Whitfield", "张 伟", "C++", "Ｔｏｋｙｏ"):
        k = entity_key(name)
        assert entity_key(k) == k


def test_possessive_only_at_word_end() -> None:
    assert entity_key("Dana's team") == "dana team"
    assert entity_key("o'brien") == "o'brien"


@pytest.mark.parametrize(
    ("key", "label"),
    [("dana whitfield", "PERSON"), ("northwind", "ORG"), ("pottery class", "NOUN"), ("张伟", "PERSON"),
     ("北京", "GPE"), ("c++", "PROPN"), ("may 7 2023", "DATE"), ("猫", "NOUN")],
)
def test_valid_entities(key: str, label: str) -> None:
    assert is_valid_entity(key, label)


@pytest.mark.parametrize(
    ("key", "label"),
    [
        ("", "PERSON"),
        ("i", "PERSON"),
        ("she", "PERSON"),
        ("them", "NOUN"),
        ("我们", "PERSON"),
        ("the", "NOUN"),
        ("of the", "NOUN"),
        ("42", "DATE"),
        ("3.5", "NOUN"),
        ("!!", "NOUN"),
        ("x", "PROPN"),
        ("one two three four five six seven", "NOUN"),
        ("thing", "NOUN"),
        ("name", "NOUN"),
        ("yesterday", "DATE"),
        ("last week", "DATE"),
        ("two days ago", "DATE"),
        ("这是一个非常非常非常长的中文短语", "NOUN"),
    ],
)
def test_invalid_entities(key: str, label: str) -> None:
    assert not is_valid_entity(key, label)


def test_generic_nouns_only_rejected_as_nouns() -> None:
    # "Time" the magazine, tagged ORG by NER, is still an entity.
    assert not is_valid_entity("time", "NOUN")
    assert is_valid_entity("time", "ORG")


@pytest.mark.parametrize("key", ["thanks", "congrats", "yep", "谢谢"])
def test_chat_courtesies_are_not_entities(key: str) -> None:
    for label in ("NOUN", "PROPN", "PERSON"):
        assert not is_valid_entity(key, label)


def test_city_named_like_an_adjective_survives() -> None:
    assert is_valid_entity("nice", "GPE")
