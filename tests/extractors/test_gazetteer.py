"""The gazetteer extractor: known names only, the shared rules for everything else."""

from __future__ import annotations

import pytest

from extractors import GazetteerExtractor, SpacyExtractor
from extractors.testing import ExtractorConformance

NAMES = {"Dana Whitfield": "PERSON", "Northwind": "ORG", "Project Lezou": "PRODUCT", "Port Femom": "GPE",
         "Port": "GPE", "北京": "GPE", "阿里巴巴": "ORG", "张伟": "PERSON", "Seattle": "GPE"}


class TestGazetteerConformance(ExtractorConformance):
    @pytest.fixture
    def extractor(self) -> GazetteerExtractor:
        return GazetteerExtractor(NAMES)


def _found(text: str) -> list[tuple[str, str, str]]:
    return [(e.name, e.key, e.label) for e in GazetteerExtractor(NAMES).extract(text).entities]


def test_known_names_in_any_case_longest_first() -> None:
    text = "Ana: the northwind team met DANA WHITFIELD in Port Femom about Project Lezou's budget."
    assert _found(text) == [
        ("Ana", "ana", "PERSON"),  # the speaker, as with every extractor
        ("northwind", "northwind", "ORG"),
        ("DANA WHITFIELD", "dana whitfield", "PERSON"),
        ("Port Femom", "port femom", "GPE"),  # not the shorter "Port"
        ("Project Lezou's", "project lezou", "PRODUCT"),
    ]
    for e in GazetteerExtractor(NAMES).extract(text).entities[1:]:
        assert text[e.start : e.end] == e.name


def test_whole_words_only_and_unknown_names_ignored() -> None:
    assert _found("Northwinds and Seattleite Dana met Whitfield at Portland.") == []


def test_chinese_names_match_inside_runs() -> None:
    assert _found("张伟在北京的阿里巴巴工作。") == [("张伟", "张伟", "PERSON"), ("北京", "北京", "GPE"),
                                                    ("阿里巴巴", "阿里巴巴", "ORG")]


def test_facts_signals_and_kind_follow_the_shared_rules(spacy_ex: SpacyExtractor) -> None:
    text = "Dana: forget that, my budget is 60k now and I work at Northwind."
    mine, theirs = GazetteerExtractor(NAMES).extract(text), spacy_ex.extract(text)
    assert mine.facts == theirs.facts and mine.facts
    assert (mine.retracts, mine.kind, mine.language, mine.extra) == (theirs.retracts, theirs.kind, theirs.language,
                                                                        theirs.extra)
    assert mine.triples == ()
    assert GazetteerExtractor(NAMES).extract("Dana: thanks!").contentless


def test_names_must_be_a_mapping() -> None:
    with pytest.raises(TypeError, match="mapping of name -> label"):
        GazetteerExtractor(["Northwind"])  # type: ignore[arg-type]
    assert len(GazetteerExtractor({"": "ORG", "Northwind": "ORG"})) == 1
