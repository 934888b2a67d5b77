"""The shared shape contract (extractors.testing) on every shipped extractor."""

from __future__ import annotations

import pytest

from extractors import JiebaExtractor, MultilingualExtractor, SpacyExtractor
from extractors.testing import ExtractorConformance

pytestmark = pytest.mark.slow


class TestSpacyConformance(ExtractorConformance):
    @pytest.fixture
    def extractor(self, spacy_ex: SpacyExtractor) -> SpacyExtractor:
        return spacy_ex


class TestJiebaConformance(ExtractorConformance):
    @pytest.fixture
    def extractor(self, jieba_ex: JiebaExtractor) -> JiebaExtractor:
        return jieba_ex


class TestMultilingualConformance(ExtractorConformance):
    @pytest.fixture
    def extractor(self, multi_ex: MultilingualExtractor) -> MultilingualExtractor:
        return multi_ex
