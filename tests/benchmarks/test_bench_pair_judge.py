"""The pair judge's training pairs (benchmarks/pair_judge.py): every time-ordered pair within an item,
positive where the item says the newer supersedes the older; a retraction is a negative beside the
statement it takes back, and the other pairs with a retraction in them stay out, as does a chain's
skipped step."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.pair_judge import pairs


def _item(id_: str, texts: list[str], supersedes: list[list[int]], retracts: list[list[int]],
          split: str = "dev") -> dict:
    return {"id": id_, "lang": "zh" if id_.startswith("zh") else "en", "class": "update", "split": split,
            "turns": [{"text": t, "at": f"2026-03-0{k + 1}T09:00:00Z", "session": f"s{k}"} for k, t in enumerate(texts)],
            "expect": {"status": ["active"] * len(texts), "supersedes": supersedes, "retracts": retracts}}


def test_labels_of_a_chain_and_a_retraction(tmp_path: Path) -> None:
    data = {"items": [
        _item("en-a", ["Rent is 900.", "Rent went up to 950.", "Rent is 1,000 now."], [[1, 0], [2, 1]], []),
        _item("zh-b", ["预算是五千", "周六请了两桌同学吃饭", "周六请客那条删掉吧，我瞎说的"], [], [[2, 1]]),
        _item("en-c", ["Rent is 900.", "Rent is 950."], [[1, 0]], [], split="heldout99"),
    ]}
    path = tmp_path / "set.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    got = {(r["item"], r["new"], r["old"]): r["label"] for r in pairs(path, exclude=("heldout99",))}
    assert got == {
        ("en-a", 1, 0): 1, ("en-a", 2, 1): 1,  # the chain's steps; its skipped step (2 over 0) left out
        ("zh-b", 2, 1): 0,  # the retraction beside what it takes back: no new value, no supersession
    }  # zh-b's other pairs hold a turn of the retraction without being it: left out; en-c: an excluded split
