from __future__ import annotations

import json
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest

from benchmarks.datasets import (
    clean_evidence,
    iter_doc_chunks,
    load_locomo,
    load_multihop,
    parse_locomo_datetime,
    synthetic,
)

# --------------------------------------------------------------------------- LoCoMo, real dev file


@pytest.fixture(scope="module")
def locomo(data_dir: Path):
    return load_locomo(data_dir / "locomo" / "locomo-dev.json")


def test_locomo_dev_counts(locomo) -> None:
    assert len(locomo.queries) == 582
    assert Counter(q.category for q in locomo.queries) == {
        "multi-hop": 111,
        "temporal": 130,
        "open-domain": 30,
        "single-hop": 311,
    }
    # the two open-domain questions of conv-26 with empty evidence are dropped
    assert locomo.info["dropped_no_evidence"] == ["conv-26:q30", "conv-26:q46"]
    assert locomo.info["evidence_cleaning"] == {"split": 1, "missing_turn": 1, "unparseable": 1}  # "D8:6; D9:17", ...
    assert locomo.n_docs == 2080
    assert {d.user_id for d in locomo.docs} == {"conv-26", "conv-30", "conv-41", "conv-42"}


def test_locomo_dev_gold_resolves_within_user(locomo) -> None:
    ids = {d.id: d for d in locomo.docs}
    assert len(ids) == locomo.n_docs
    for q in locomo.queries:
        assert q.gold, q.id
        for g in q.gold:
            assert g in ids, (q.id, g)
            assert ids[g].user_id == q.user_id
    split = next(q for q in locomo.queries if q.meta["raw_evidence"] == ["D8:6; D9:17"])
    assert split.gold == ("conv-26:D8:6", "conv-26:D9:17")
    assert split.category == "multi-hop"


def test_locomo_dev_docs(locomo, data_dir: Path) -> None:
    first = locomo.docs[0]
    assert first.id == "conv-26:D1:1"
    assert first.text.startswith("Caroline: Hey Mel!")
    assert first.session_id == "conv-26:session_1"
    assert first.at == datetime(2023, 5, 8, 13, 56)
    img = next(d for d in locomo.docs if d.id == "conv-26:D1:5")
    assert img.text.endswith("[shares a photo of a dog walking past a wall with a painting of a woman]")
    assert all(d.at is not None for d in locomo.docs)
    assert locomo.info["image_turns"] == sum(1 for d in locomo.docs if "[shares " in d.text) == 438
    # generated summaries and observations are never indexed
    raw = json.loads((data_dir / "locomo" / "locomo-dev.json").read_text())
    summary = raw[0]["session_summary"]["session_1_summary"]
    texts = {d.text for d in locomo.docs}
    assert not any(summary[:60] in t for t in texts)
    n_turns = sum(len(v) for c in raw for k, v in c["conversation"].items() if k.startswith("session_") and isinstance(v, list))
    assert n_turns == locomo.n_docs


# --------------------------------------------------------------------------- LoCoMo, cleaning on hand-made input


@pytest.mark.parametrize(
    ("raw", "expected", "stat"),
    [
        (["D8:6; D9:17"], ["D8:6", "D9:17"], "split"),
        (["D1:3 D1:5"], ["D1:3", "D1:5"], "split"),
        (["D1:3,D1:5"], ["D1:3", "D1:5"], "split"),
        (["D:11:26"], ["D11:26"], "normalised"),
        (["D30:05"], ["D30:5"], "normalised"),
        (["D"], [], "unparseable"),
        (["D99:1"], [], "missing_turn"),
        (["D1:3", "D1:03"], ["D1:3"], "duplicate"),
    ],
)
def test_clean_evidence_forms(raw, expected, stat) -> None:
    valid = {"D8:6", "D9:17", "D1:3", "D1:5", "D11:26", "D30:5"}
    out, stats = clean_evidence(raw, valid)
    assert out == expected
    assert stats[stat] >= 1


def test_clean_evidence_without_valid_ids_keeps_parsed() -> None:
    out, _ = clean_evidence(["D:2:07", "D", "D3:1 D3:2"])
    assert out == ["D2:7", "D3:1", "D3:2"]


def test_parse_locomo_datetime() -> None:
    assert parse_locomo_datetime("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56)
    assert parse_locomo_datetime("12:09 am on 13 September, 2023") == datetime(2023, 9, 13, 0, 9)
    assert parse_locomo_datetime("12:30 pm on 1 Jan, 2024") == datetime(2024, 1, 1, 12, 30)
    assert parse_locomo_datetime("garbage") is None


def test_load_locomo_handmade(tmp_path: Path) -> None:
    conv = {
        "sample_id": "s1",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "9:00 am on 2 March, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "", "blip_caption": "a photo of a black cat"},
            ],
            "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "Moving to Oslo."}],
            "session_3_date_time": "1:00 pm on 4 March, 2023",  # no session_3: ignored
            "session_10_date_time": "1:00 pm on 9 March, 2023",
            "session_10": [{"speaker": "Bob", "dia_id": "D10:1", "text": "Back home."}],
        },
        "observation": {"session_1_observation": "SECRET OBSERVATION"},
        "session_summary": {"session_1_summary": "SECRET SUMMARY"},
        "event_summary": {"events_session_1": "SECRET EVENT"},
        "qa": [
            {"question": "q0", "answer": "a", "evidence": ["D1:1; D2:1"], "category": 1},
            {"question": "q1", "answer": "a", "evidence": ["D:10:01"], "category": 2},
            {"question": "q2", "answer": "a", "evidence": ["D"], "category": 3},
            {"question": "q3", "answer": "a", "evidence": ["D7:7"], "category": 4},
            {"question": "q4", "adversarial_answer": "x", "evidence": ["D1:1"], "category": 5},
            {"question": "q5", "answer": "a", "evidence": ["D1:2 D1:1"], "category": 4},
        ],
    }
    p = tmp_path / "mini.json"
    p.write_text(json.dumps([conv]))
    ds = load_locomo(p)
    assert [d.id for d in ds.docs] == ["s1:D1:1", "s1:D1:2", "s1:D2:1", "s1:D10:1"]  # numeric session order
    assert ds.docs[1].text == "Bob: [shares a photo of a black cat]"
    assert ds.docs[2].at is None and ds.info["sessions_without_date"] == 1
    assert ds.docs[3].at == datetime(2023, 3, 9, 13, 0)
    assert not any("SECRET" in d.text for d in ds.docs)
    assert [(q.id, q.gold, q.category) for q in ds.queries] == [
        ("s1:q0", ("s1:D1:1", "s1:D2:1"), "multi-hop"),
        ("s1:q1", ("s1:D10:1",), "temporal"),
        ("s1:q5", ("s1:D1:2", "s1:D1:1"), "single-hop"),
    ]
    assert ds.info["dropped_no_evidence"] == ["s1:q2", "s1:q3"]
    assert ds.info["questions_by_category_raw"]["adversarial"] == 1
    with_adv = load_locomo(p, categories=(1, 2, 3, 4, 5))
    assert "adversarial" in {q.category for q in with_adv.queries}


# --------------------------------------------------------------------------- multi-hop


@pytest.mark.parametrize(
    ("name", "n_docs", "categories"),
    [
        ("musique", 1890, {"2hop": 68, "3hop": 27, "4hop": 5}),
        ("hotpotqa", 994, {"bridge": 78, "comparison": 22}),
    ],
)
def test_multihop_real(data_dir: Path, name: str, n_docs: int, categories: dict[str, int]) -> None:
    base = data_dir / "multihop"
    ds = load_multihop(name, base / f"{name}_train_corpus.json", base / f"{name}_train.json")
    assert ds.n_docs == n_docs
    assert len(ds.queries) == 100
    assert ds.info["gold_misses"] == []
    assert dict(Counter(q.category for q in ds.queries)) == categories
    ids = {d.id: d for d in ds.docs}
    assert len(ids) == n_docs
    raw = {str(q.get("id", q.get("_id"))): q for q in json.loads((base / f"{name}_train.json").read_text())}
    for q in ds.queries:
        assert q.user_id == name
        assert all(g in ids for g in q.gold)
        if name == "musique":
            assert len(q.gold) == int(q.category[0])  # one supporting passage per hop
            sup = [p for p in raw[q.id]["paragraphs"] if p["is_supporting"]]
            assert sorted(ids[g].meta["title"] for g in q.gold) == sorted(p["title"] for p in sup)
            for g in q.gold:
                assert any(ids[g].text == f"{p['title']}\n{p['paragraph_text']}" for p in sup)
        else:
            assert {ids[g].meta["title"] for g in q.gold} == {t for t, _ in raw[q.id]["supporting_facts"]}
    assert ds.docs[0].text.startswith(ds.docs[0].meta["title"] + "\n")


# --------------------------------------------------------------------------- synthetic


def _snapshot(ds):
    return [(d.id, d.text, d.user_id, d.session_id, d.at, d.speaker, dict(d.meta)) for d in ds.docs], [
        (q.id, q.text, q.user_id, q.gold, q.category) for q in ds.queries
    ]


def test_synthetic_deterministic() -> None:
    a = _snapshot(synthetic(3000, n_users=4, seed=7, block_size=500, n_queries=20))
    b = _snapshot(synthetic(3000, n_users=4, seed=7, block_size=500, n_queries=20))
    c = _snapshot(synthetic(3000, n_users=4, seed=8, block_size=500, n_queries=20))
    assert a == b
    assert a[0] != c[0] and a[1] != c[1]


@pytest.mark.parametrize(("n", "users"), [(1, 1), (7, 3), (1000, 10), (12_345, 7)])
def test_synthetic_sizes_exact(n: int, users: int) -> None:
    ds = synthetic(n, n_users=users, seed=0, block_size=1000)
    docs = list(ds.docs)
    assert len(ds.docs) == ds.n_docs == n == len(docs)
    assert len({d.id for d in docs}) == n
    assert len({d.user_id for d in docs}) == min(users, n)
    assert sum(len(c) for c in iter_doc_chunks(ds.docs, 300)) == n


def test_synthetic_chains_and_queries() -> None:
    ds = synthetic(20_000, n_users=5, seed=3, n_queries=50, block_size=3000)
    assert len(ds.queries) == 50
    assert len({q.id for q in ds.queries}) == 50
    docs = {d.id: d for d in ds.docs}
    for q in ds.queries:
        a, b = (docs[g] for g in q.gold)
        assert a.user_id == b.user_id == q.user_id
        bridge = q.meta["bridge"]
        assert bridge in a.text and bridge in b.text  # A links X->Y, B links Y->Z
        assert bridge not in q.text  # the question names X and Z only
        distractor = docs[q.meta["distractor"]]
        assert distractor.meta["role"] == "distractor" and distractor.id not in q.gold
        assert a.meta["role"] == "fact_a" and b.meta["role"] == "fact_b"
    # sessions and times are consistent within a user
    u0 = [d for d in docs.values() if d.user_id == "u0000"]
    assert all(x.at < y.at for x, y in zip(u0, u0[1:]))
    assert len({d.session_id for d in u0}) > 10


def test_synthetic_chunks_independent_of_consumption() -> None:
    ds = synthetic(5000, n_users=2, seed=1, block_size=1000)
    first = list(ds.docs)
    again = [d for chunk in ds.docs.chunks() for d in chunk]
    assert [(d.id, d.text) for d in first] == [(d.id, d.text) for d in again]


def test_synthetic_fast() -> None:
    t = time.perf_counter()
    ds = synthetic(100_000, n_users=10, seed=0)
    n = sum(len(c) for c in ds.docs.chunks())
    assert n == 100_000
    assert time.perf_counter() - t < 5.0  # ~0.4 s here; 1M takes ~4 s
