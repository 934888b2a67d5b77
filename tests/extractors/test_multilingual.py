"""Dispatch by language, import hygiene and throughput of the shipped extractors."""

from __future__ import annotations

import doctest
import importlib
import os
import subprocess
import sys
from typing import Sequence

import pytest

import extractors
from extractors import JiebaExtractor, MultilingualExtractor, SpacyExtractor, default_extractor
from extractors.base import Extraction
from extractors.testing import sample_turns

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Recording:
    """A stand-in extractor that records the batches it gets (dispatch is what is tested here)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.batches: list[list[str]] = []

    def extract_many(self, texts: Sequence[str]) -> list[Extraction]:
        self.batches.append(list(texts))
        return [Extraction(text=t, language=self.name) for t in texts]


def test_dispatch_preserves_order_and_batches_per_language() -> None:
    en, zh = Recording("en"), Recording("zh")
    m = MultilingualExtractor(english=en, chinese=zh)
    texts = ["hello Dana", "张伟在北京工作", "Caroline: 我今天去了北京", "Bonjour Paris", "こんにちは", "", "李娜：ok"]
    out = m.extract_many(texts)
    assert [r.text for r in out] == texts
    assert [r.language for r in out] == ["en", "zh", "zh", "en", "en", "en", "en"]
    assert zh.batches == [["张伟在北京工作", "Caroline: 我今天去了北京"]]  # one batch per language
    assert len(en.batches) == 1
    assert m.extract_many([]) == [] and len(en.batches) == 1


def test_lazy_sub_extractors() -> None:
    zh = Recording("zh")
    m = MultilingualExtractor(chinese=zh)
    m.extract_many(["张伟在北京工作"])
    assert m._english is None  # a Chinese-only workload never builds the spaCy extractor


@pytest.mark.slow
def test_real_models_mixed_batch(multi_ex: MultilingualExtractor) -> None:
    texts = ["Dana Whitfield runs procurement at Northwind.", "张伟在北京的阿里巴巴工作。", "ok", "好的"]
    r = multi_ex.extract_many(texts)
    assert [x.language for x in r] == ["en", "zh", "en", "zh"]
    assert "northwind" in {e.key for e in r[0].entities}
    assert "张伟" in {e.key for e in r[1].entities}
    assert r[2].contentless and r[3].contentless


@pytest.mark.slow
def test_lifecycle_fields_through_both_languages(multi_ex: MultilingualExtractor) -> None:
    """Facts, confidence, retracts/retract_hint and corrects come out of the spaCy and jieba paths alike."""
    texts = [
        "I think the budget is now 60k.",
        "Caroline: never mind, drop the plan",
        "No, I meant Tuesday",
        "Dana Whitfield is the procurement lead",
        "预算加到六万了",
        "张伟：算了，酒店不要了",
        "不对，是周二",
        "我了解一点 Rust",
        "The trip was great",
    ]
    r = multi_ex.extract_many(texts)
    assert [x.language for x in r] == ["en", "en", "en", "en", "zh", "zh", "zh", "zh", "en"]
    fact = r[0].facts[0]
    assert (fact.subject, fact.attribute, fact.value, fact.confidence) == ("user", "budget", "60000", 0.5)
    assert r[0].confidence == 0.5 and r[0].kind == "fact" and not r[0].retracts
    assert (r[1].retracts, r[1].retract_hint, r[1].extra) == (True, "the plan", {"speaker": "caroline"})
    assert r[2].corrects and not r[2].facts and not r[2].retracts
    assert [(f.subject, f.attribute, f.value) for f in r[3].facts] == [("dana whitfield", "role", "procurement lead")]
    assert [(f.subject, f.attribute, f.value) for f in r[4].facts] == [("user", "budget", "60000")]
    assert r[4].kind == "fact" and r[4].confidence == 1.0
    assert (r[5].retracts, r[5].retract_hint) == (True, "酒店")
    assert r[6].corrects
    assert r[7].confidence == 0.6
    plain = r[8]
    assert (plain.confidence, plain.retracts, plain.retract_hint, plain.corrects) == (1.0, False, "", False)


@pytest.mark.slow
def test_default_extractor_returns_lifecycle_fields() -> None:
    [en, zh] = default_extractor().extract_many(["Forget about the plan.", "截止日期改到周五"])
    assert (en.retracts, en.retract_hint) == (True, "the plan")
    assert [(f.attribute, f.value) for f in zh.facts] == [("deadline", "周五")]


def test_default_extractor_is_cached() -> None:
    assert default_extractor() is default_extractor()
    assert isinstance(default_extractor(), MultilingualExtractor)


def test_import_is_light() -> None:
    """``import extractors`` must not import spaCy, jieba or torch (CLI start-up time)."""
    code = (
        "import sys, extractors, extractors.testing;"
        "bad = [m for m in ('spacy', 'jieba', 'torch', 'thinc') if m in sys.modules];"
        "print(','.join(bad))"
    )
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, cwd=ROOT)
    assert out.stdout.strip() == ""


@pytest.mark.parametrize(
    "module",
    [
        "extractors.normalize",
        "extractors.filters",
        "extractors.triggers",
        "extractors.text",
        "extractors.speaker",
        "extractors.values",
        "extractors.attributes",
        "extractors.signals",
    ],
)
def test_doctests(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.slow
def test_package_doctest() -> None:
    result = doctest.testmod(extractors)
    assert result.attempted > 0 and result.failed == 0


def test_sample_turns_is_deterministic() -> None:
    assert sample_turns(50, "en", seed=3) == sample_turns(50, "en", seed=3)
    assert sample_turns(50, "zh", seed=3) != sample_turns(50, "zh", seed=4)
    assert not any(t.endswith("ok thanks!") for t in sample_turns(500, "en"))
    assert any(t.endswith("ok thanks!") for t in sample_turns(500, "en", contentless_share=0.2))
