"""Extractors loaded once per test session (real models: spaCy's small English pipeline, jieba)."""

from __future__ import annotations

import pytest

from extractors import JiebaExtractor, MultilingualExtractor, SpacyExtractor
from extractors.errors import ModelNotInstalled
from extractors.spacy_en import load_english
from tests.conftest import need


@pytest.fixture(scope="session")
def spacy_ex() -> SpacyExtractor:
    try:
        return SpacyExtractor(load_english())
    except ModelNotInstalled as exc:  # fails in CI (RIPPLE_REQUIRE_ALL=1), skips locally
        need(str(exc))
        raise


@pytest.fixture(scope="session")
def jieba_ex() -> JiebaExtractor:
    ex = JiebaExtractor()
    ex.extract_many(["预热"])  # initialise jieba's dictionary once
    return ex


@pytest.fixture(scope="session")
def multi_ex(spacy_ex: SpacyExtractor, jieba_ex: JiebaExtractor) -> MultilingualExtractor:
    return MultilingualExtractor(english=spacy_ex, chinese=jieba_ex)
