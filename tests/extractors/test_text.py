from __future__ import annotations

import pytest

from extractors.text import detect_language, estimate_tokens, is_cjk_char, lexical_tokens


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("Dana runs procurement at Northwind.", "en"),
        ("张伟在北京的阿里巴巴工作。", "zh"),
        ("我在 Northwind 工作", "zh"),  # mixed script, Han share >= 30 %
        ("I visited 北京 last year with my whole family", "en"),
        ("", "en"),
        ("12345 !!!", "en"),
        ("🎉", "en"),
        ("こんにちは、東京に住んでいます", "ja"),
        ("안녕하세요 반갑습니다", "ko"),
        ("Ça va très bien, merci", "en"),  # other Latin-script languages go the English way
    ],
)
def test_detect_language(text: str, lang: str) -> None:
    assert detect_language(text) == lang


def test_lexical_tokens_english() -> None:
    assert lexical_tokens("Dana runs procurement at Northwind") == ["dana", "run", "procurement", "northwind"]
    # stop words dropped, possessive and case normalised, light stemming
    assert lexical_tokens("The Northwind's painters were painting") == ["northwind", "painter", "paint"]
    assert lexical_tokens("matches boxes makes cats status") == ["match", "box", "make", "cat", "status"]
    assert lexical_tokens("running stopped studies") == ["run", "stop", "study"]


def test_lexical_tokens_options() -> None:
    assert lexical_tokens("the cats", keep_stopwords=True, stem=False) == ["the", "cats"]
    assert lexical_tokens("Ｃａｔｓ") == ["cat"]  # NFKC


def test_lexical_tokens_chinese() -> None:
    toks = lexical_tokens("张伟在北京大学工作")
    assert "张伟" in toks and "北京大学" in toks and "工作" in toks
    assert "北京" in toks  # search mode also yields the parts of compounds
    assert "在" not in toks  # Chinese stop word


def test_lexical_tokens_mixed_script_without_spaces() -> None:
    # Latin and Han runs are split even without spaces between them.
    toks = lexical_tokens("我在Northwind工作")
    assert "northwind" in toks and "工作" in toks
    assert not any(("northwind" in t and t != "northwind") for t in toks)


def test_lexical_tokens_kana_bigrams() -> None:
    assert lexical_tokens("こんにちは") == ["こん", "んに", "にち", "ちは"]


def test_estimate_tokens() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("你好世界") == 4
    assert estimate_tokens("hello world") == 3  # 2 words * 1.3
    assert estimate_tokens("こんにちは") == 5  # kana are counted once, not also as a word
    long_en = "word " * 100
    assert 120 <= estimate_tokens(long_en) <= 140
    assert estimate_tokens("Hello, 世界!") == 4  # 1.3 + 2 + 1.0 punctuation


def test_is_cjk_char() -> None:
    assert is_cjk_char("中") and is_cjk_char("の") and is_cjk_char("한")
    assert not is_cjk_char("a") and not is_cjk_char("1") and not is_cjk_char("，")
