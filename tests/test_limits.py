"""Size limits: documented, configurable (``RIPPLE_LIMITS__*``), checked before any write, with errors
that name the limit and the setting (issue 18, item 4).

Before them, 50 MB of metadata on one memory was stored (and fetched by every recall of the user
that had it as a candidate), and a 100,000-character text became 3,932 entities in one write.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from extractors import GazetteerExtractor
from extractors.base import ExtractedEntity, ExtractedFact, ExtractedTriple, Extraction
from ripple import LimitExceeded, Limits, Memory, RippleSettings
from ripple._ingest import cap_entities
from ripple.embedding import HashEmbedder

NAMES = {f"Person{i:03d}": "PERSON" for i in range(60)} | {"Northwind": "ORG", "阿里巴巴": "ORG"}
SMALL = Limits(text_chars=50, query_chars=20, k=5, metadata_bytes=100, metadata_depth=3, user_id_chars=8,
               session_id_chars=8, agent_id_chars=8, memory_id_chars=30, entities_per_memory=4, batch_items=3)


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    m = Memory(path=str(tmp_path / "s"), embedder=HashEmbedder(16), extractor=GazetteerExtractor(NAMES),
               settings=RippleSettings(limits=SMALL))
    m.add("Northwind pays on Fridays.", user_id="u1", session_id="s1")
    yield m
    m.close()


CALLS: dict[str, Callable[[Memory], Any]] = {
    "text_chars": lambda m: m.add("x" * 51, user_id="u1"),
    "query_chars": lambda m: m.recall("q" * 21, user_id="u1"),
    "k": lambda m: m.recall("Northwind", user_id="u1", k=6),
    "metadata_bytes": lambda m: m.add("hello", user_id="u1", metadata={"blob": "x" * 100}),
    "metadata_depth": lambda m: m.add("hello", user_id="u1", metadata={"a": {"b": {"c": {"d": 1}}}}),
    "user_id_chars": lambda m: m.add("hello", user_id="u" * 9),
    "session_id_chars": lambda m: m.add("hello", user_id="u1", session_id="s" * 9),
    "agent_id_chars": lambda m: m.add("hello", user_id="u1", agent_id="a" * 9),
    "memory_id_chars": lambda m: m.get("m" * 31),
    "batch_items": lambda m: m.add_many([{"text": f"item {i}", "user_id": "u1"} for i in range(4)]),
}


def test_every_refusing_limit_has_a_case() -> None:
    assert set(CALLS) == set(Limits.model_fields) - {"entities_per_memory", "import_batch"}


@pytest.mark.parametrize("limit", list(CALLS))
def test_a_call_past_a_limit_is_refused_before_any_write(mem: Memory, limit: str) -> None:
    before = list(mem.export(user_id="u1"))
    with pytest.raises(LimitExceeded) as info:
        CALLS[limit](mem)
    err = info.value
    assert err.limit == limit and err.maximum == getattr(SMALL, limit) and err.value is not None
    assert f"limits.{limit}" in str(err) and f"RIPPLE_LIMITS__{limit.upper()}" in str(err)
    assert list(mem.export(user_id="u1")) == before


def test_at_the_limit_is_allowed(mem: Memory) -> None:
    assert mem.add("x" * 50, user_id="u" * 8, session_id="s" * 8, agent_id="a" * 8,
                   metadata={"a": {"b": "c"}})
    assert mem.recall("q" * 20, user_id="u1", k=5) is not None
    assert len(mem.add_many([{"text": f"Northwind item {i}", "user_id": "u1"} for i in range(3)])) == 3


def test_limits_come_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RIPPLE_LIMITS__TEXT_CHARS", "12")
    monkeypatch.setenv("RIPPLE_LIMITS__ENTITIES_PER_MEMORY", "2")
    settings = RippleSettings()
    assert settings.limits.text_chars == 12 and settings.limits.entities_per_memory == 2
    with Memory(path=str(tmp_path / "env"), embedder=HashEmbedder(16), extractor=GazetteerExtractor(NAMES),
                settings=settings) as m:
        assert m.limits.text_chars == 12
        with pytest.raises(LimitExceeded, match="RIPPLE_LIMITS__TEXT_CHARS"):
            m.add("thirteen chars", user_id="u1")


def test_too_many_entities_are_capped_and_the_cap_is_recorded(mem: Memory) -> None:
    text = " ".join(f"Person{i:03d}" for i in range(5))  # five people in 49 characters
    (stored,) = mem.add_many([{"text": text, "user_id": "u2"}])
    assert stored.metadata["ripple"]["entities_capped"] == {"found": 5, "kept": 4,
                                                            "limit": "limits.entities_per_memory"}
    assert mem.stats(user_id="u2")["entities"] == 4
    (plain,) = mem.add("Person001 met Person002.", user_id="u3")
    assert "ripple" not in plain.metadata


def test_the_cap_keeps_facts_then_named_entities_then_the_most_mentioned() -> None:
    ents = [ExtractedEntity(n, n.lower(), label) for n, label in [
        ("Alpha", "PERSON"), ("thing", "NOUN"), ("Beta", "ORG"), ("Beta", "ORG"), ("Gamma", "PERSON"),
        ("widget", "NOUN"), ("widget", "NOUN"), ("widget", "NOUN")]]
    ex = Extraction(text="...", language="en", entities=tuple(ents),
                    triples=(ExtractedTriple("alpha", "know", "gamma"), ExtractedTriple("beta", "make", "widget")),
                    facts=(ExtractedFact("budget", "60000"),))
    capped, note = cap_entities(ex, 3)
    assert note == {"found": 6, "kept": 3, "limit": "limits.entities_per_memory"}
    assert [f.value for f in capped.facts] == ["60000"]  # its value is kept first
    assert {e.key for e in capped.entities} == {"beta", "alpha"}  # then named ones, the most mentioned first
    assert capped.triples == ()  # each had an end that was dropped
    same, none = cap_entities(ex, 6)
    assert same is ex and none is None


def test_fifty_megabytes_of_metadata_are_refused_fast_and_not_stored(tmp_path: Path) -> None:
    """The issue's case: 50 MB of metadata on one memory (measured: refused in well under a second)."""
    with Memory(path=str(tmp_path / "big"), embedder=HashEmbedder(16), extractor=GazetteerExtractor(NAMES)) as m:
        m.add("Northwind pays on Fridays.", user_id="u1")
        blob = "x" * 50_000_000
        t0 = time.perf_counter()
        with pytest.raises(LimitExceeded, match="metadata_bytes"):
            m.add("Northwind pays on Mondays.", user_id="u1", metadata={"blob": blob})
        assert time.perf_counter() - t0 < 2.0
        assert m.stats(user_id="u1")["memories"] == 1


def test_limits_are_checked_when_items_come_as_models(mem: Memory) -> None:
    from ripple.models import AddItem

    item = AddItem(text="x" * 60, user_id="u1")  # fine under the default limits
    with pytest.raises(LimitExceeded, match="text_chars"):
        mem.add_many([item])
