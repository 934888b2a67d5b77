"""The Chinese development data: shape invariants of the chat set and the probe, and their loaders."""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.datasets import load_locomo, load_zh_probe, parse_locomo_datetime
from benchmarks.run import DATASETS, load_datasets

_CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def raw_chat(data_dir: Path) -> list[dict]:
    return json.loads((data_dir / "zh" / "zh-chat-dev.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def chat(data_dir: Path):
    return load_locomo(data_dir / "zh" / "zh-chat-dev.json", name="zh")


def _sessions(conv: dict) -> list[tuple[int, list[dict]]]:
    return sorted((int(k.split("_")[1]), v) for k, v in conv.items() if re.fullmatch(r"session_\d+", k))


def test_chat_file_is_locomo_shaped(raw_chat) -> None:
    assert [item["sample_id"] for item in raw_chat] == ["zh-conv-1", "zh-conv-2", "zh-conv-3"]
    for item in raw_chat:
        assert set(item) >= {"sample_id", "conversation", "qa"}
        conv = item["conversation"]
        speakers = {conv["speaker_a"], conv["speaker_b"]}
        sessions = _sessions(conv)
        assert len(sessions) >= 8, item["sample_id"]
        assert [n for n, _ in sessions] == list(range(1, len(sessions) + 1))
        for n, turns in sessions:
            assert parse_locomo_datetime(conv[f"session_{n}_date_time"]) is not None
            assert [t["dia_id"] for t in turns] == [f"D{n}:{i}" for i in range(1, len(turns) + 1)]
            for t in turns:
                assert t["speaker"] in speakers
                assert t["text"].strip()
        for qa in item["qa"]:
            assert set(qa) >= {"question", "answer", "evidence", "category"}
            assert qa["category"] in (1, 2, 3, 4)


def test_chat_sessions_are_in_time_order(raw_chat) -> None:
    for item in raw_chat:
        conv = item["conversation"]
        dates = [parse_locomo_datetime(conv[f"session_{n}_date_time"]) for n, _ in _sessions(conv)]
        assert dates == sorted(dates), item["sample_id"]


def test_chat_loads_with_every_question_and_turn(chat, raw_chat) -> None:
    info = chat.info
    assert info["sessions_without_date"] == 0
    assert info["dropped_no_evidence"] == []
    assert info["evidence_cleaning"] == {}  # every id well-formed and resolving: nothing to clean
    assert chat.n_docs == sum(len(t) for item in raw_chat for _, t in _sessions(item["conversation"])) == 578
    assert len(chat.queries) == sum(len(item["qa"]) for item in raw_chat) == 206
    assert Counter(q.category for q in chat.queries) == {"multi-hop": 40, "temporal": 47, "open-domain": 16,
                                                         "single-hop": 103}
    assert len({d.user_id for d in chat.docs}) == len(raw_chat) == 3  # three users to calibrate "anything relevant?"


def test_chat_evidence_resolves_within_the_user(chat) -> None:
    docs = {d.id: d for d in chat.docs}
    for q in chat.queries:
        assert q.gold, q.id
        for g in q.gold:
            assert docs[g].user_id == q.user_id, (q.id, g)


def assert_paraphrased(items: list[dict]) -> None:
    """No question of a LoCoMo-format chat set is a substring of its evidence (nor the reverse)."""
    for item in items:
        text = {t["dia_id"]: t["text"] for _, turns in _sessions(item["conversation"]) for t in turns}
        for qa in item["qa"]:
            q = qa["question"].strip("？?。 ")
            for e in qa["evidence"]:
                assert q not in text[e] and text[e] not in q, (qa["question"], text[e])


def test_chat_questions_are_paraphrased(raw_chat) -> None:
    """No question is a substring of its evidence (nor the reverse): the set tests semantic recall."""
    assert_paraphrased(raw_chat)


def test_chat_multi_hop_spans_sessions(raw_chat) -> None:
    for item in raw_chat:
        for qa in item["qa"]:
            if qa["category"] == 1:
                sessions = {e.split(":")[0] for e in qa["evidence"]}
                assert len(sessions) >= 2, qa["question"]


def test_chat_is_chinese_with_some_english_questions(chat) -> None:
    assert all(_CJK.search(d.text) for d in chat.docs)
    english = [q for q in chat.queries if not _CJK.search(q.text)]
    assert len(english) == 20
    assert {q.user_id for q in english} == {q.user_id for q in chat.queries}


def test_probe_loads(data_dir: Path) -> None:
    ds = load_zh_probe(data_dir / "zh" / "zh-probe-dev.json")
    assert ds.n_docs == 40
    assert Counter(q.category for q in ds.queries) == {"zh": 22, "en-cross": 10}
    ids = {d.id for d in ds.docs}
    for q in ds.queries:
        assert len(q.gold) == 1 and q.gold[0] in ids
        assert q.user_id == "zh-probe"
    memo = {d.id: d.text for d in ds.docs}
    assert "花生" in memo["zh-probe:m18"]


def test_probe_rejects_a_missing_gold_memory(tmp_path: Path) -> None:
    bad = {"memories": [{"id": "m1", "text": "我对花生过敏。"}],
           "questions_zh": [{"id": "z1", "question": "我不能吃什么？", "gold": "m2"}]}
    path = tmp_path / "probe.json"
    path.write_text(json.dumps(bad, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(ValueError, match="m2"):
        load_zh_probe(path)


def test_runner_knows_the_chinese_datasets(data_dir: Path) -> None:
    assert {"zh", "zh-probe"} <= set(DATASETS)
    loaded = list(load_datasets(["zh", "zh-probe"], data_dir, argparse.Namespace()))
    assert [d.name for d in loaded] == ["zh", "zh-probe"]
    assert len(loaded[0].queries) >= 100
