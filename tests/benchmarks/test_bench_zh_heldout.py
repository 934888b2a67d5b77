"""The sealed Chinese held-out chat set: its shape, its loader, and that no development run reads it.

Only invariants of the file are checked here; nothing recalls on it (it is scored once per candidate).
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.datasets import load_locomo, parse_locomo_datetime
from benchmarks.run import DATASETS, SEALED_DATASETS, check_sealed, load_datasets
from tests.benchmarks.test_bench_zh import _sessions, assert_paraphrased

_CJK = re.compile(r"[\u4e00-\u9fff]")
_FILE = Path("zh") / "zh-chat-heldout.json"


@pytest.fixture(scope="module")
def raw(data_dir: Path) -> list[dict]:
    return json.loads((data_dir / _FILE).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def heldout(data_dir: Path):
    return load_locomo(data_dir / _FILE, name="zh-heldout")


def test_file_is_locomo_shaped_and_in_time_order(raw) -> None:
    assert [item["sample_id"] for item in raw] == ["zh-ho-1", "zh-ho-2"]
    for item in raw:
        conv = item["conversation"]
        speakers = {conv["speaker_a"], conv["speaker_b"]}
        sessions = _sessions(conv)
        assert [n for n, _ in sessions] == list(range(1, len(sessions) + 1))
        dates = [parse_locomo_datetime(conv[f"session_{n}_date_time"]) for n, _ in sessions]
        assert None not in dates and dates == sorted(dates), item["sample_id"]
        for n, turns in sessions:
            assert [t["dia_id"] for t in turns] == [f"D{n}:{i}" for i in range(1, len(turns) + 1)]
            assert all(t["speaker"] in speakers and _CJK.search(t["text"]) for t in turns)
        for qa in item["qa"]:
            assert set(qa) >= {"question", "answer", "evidence", "category"} and qa["category"] in (1, 2, 3, 4)


def test_loads_with_every_question_and_turn(heldout, raw) -> None:
    info = heldout.info
    assert info["sessions_without_date"] == 0 and info["dropped_no_evidence"] == []
    assert info["evidence_cleaning"] == {}  # every evidence id well-formed and naming a turn
    n_sessions = sum(len(_sessions(item["conversation"])) for item in raw)
    assert n_sessions >= 8
    assert heldout.n_docs == sum(len(t) for item in raw for _, t in _sessions(item["conversation"])) >= 160
    assert len(heldout.queries) == sum(len(item["qa"]) for item in raw) >= 60
    cats = Counter(q.category for q in heldout.queries)
    assert set(cats) == {"multi-hop", "temporal", "open-domain", "single-hop"}
    assert cats["multi-hop"] >= 12 and cats["temporal"] >= 14 and cats["open-domain"] >= 6


def test_questions_are_paraphrased_and_multi_hop_spans_sessions(raw) -> None:
    assert_paraphrased(raw)
    for item in raw:
        for qa in item["qa"]:
            if qa["category"] == 1:
                assert len({e.split(":")[0] for e in qa["evidence"]}) >= 2, qa["question"]


def test_some_questions_are_english(heldout) -> None:
    english = [q for q in heldout.queries if not _CJK.search(q.text)]
    assert 5 <= len(english) <= 8
    assert {q.user_id for q in english} == {"zh-ho-1", "zh-ho-2"}


def test_runner_loads_it_by_name_only(data_dir: Path) -> None:
    assert "zh-heldout" in DATASETS and "zh-heldout" in SEALED_DATASETS
    (ds,) = list(load_datasets(["zh-heldout"], data_dir, argparse.Namespace()))
    assert ds.name == "zh-heldout" and {q.user_id for q in ds.queries} == {"zh-ho-1", "zh-ho-2"}


@pytest.mark.parametrize("module", ["benchmarks.run", "benchmarks.embedders", "benchmarks.loo", "benchmarks.calibrate"])
def test_no_default_names_a_sealed_dataset(module: str) -> None:
    parser = argparse.ArgumentParser()
    importlib.import_module(module).register(parser)
    (action,) = [a for a in parser._actions if "--dataset" in a.option_strings]
    assert not set(str(action.default).split(",")) & SEALED_DATASETS


def test_sealed_datasets_are_never_pooled_or_fitted() -> None:
    check_sealed(["zh-heldout"], fits=False)  # scored alone: allowed
    check_sealed(["locomo", "zh"], fits=True)  # development data: allowed
    with pytest.raises(SystemExit, match="pooled"):
        check_sealed(["zh", "zh-heldout"], fits=False)
    with pytest.raises(SystemExit, match="fit"):
        check_sealed(["zh-heldout"], fits=True)
