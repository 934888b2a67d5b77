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
    ["extractors.normalize", "extractors.filters", "extractors.triggers", "extractors.text", "extractors.speaker"],
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
