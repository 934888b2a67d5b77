"""``ripple graph`` and ``ripple recall --graph`` end to end, with the real models and store."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ripple.cli.__main__ import main

from .conftest import Chromium

TURNS = [
    ("s1", "Internally we call the Northwind rebrand Project Bluebird."),
    ("s1", "Dana Whitfield leads Project Bluebird at Northwind Traders."),
    ("s1", "Bluebird has to go live before the trade fair on 14 June."),
    ("s2", "Our budget is 50,000 CNY."),
    ("s2", "The budget is now 60k."),
    ("s3", "我叫张伟，在北京的阿里巴巴工作。"),
    ("s3", "张伟下周去上海见客户。"),
]


def _data(page: Path) -> dict:
    m = re.search(r'<script type="application/json" id="ripple-data">(.*?)</script>', page.read_text("utf-8"), re.S)
    assert m
    return json.loads(m.group(1))


@pytest.fixture
def store(tmp_path: Path, embedder, extractor) -> str:
    items = tmp_path / "items.jsonl"
    items.write_text("\n".join(json.dumps({"text": t, "session_id": s}, ensure_ascii=False) for s, t in TURNS),
                     encoding="utf-8")
    path = str(tmp_path / "store")
    assert main(["--store", path, "add", "--user", "u1", "--file", str(items)]) == 0
    return path


@pytest.mark.slow
def test_graph_command_draws_overview_entity_and_recall(store: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "all.html"
    assert main(["--store", store, "graph", "--user", "u1", "-o", str(out)]) == 0
    assert f"wrote {out}: 7 of 7 memories" in capsys.readouterr().err
    data = _data(out)
    assert data["mode"] == "overview" and data["shown"]["memories"] == 7
    texts = {n["text"] for n in data["nodes"]}
    assert "张伟下周去上海见客户。" in texts and "张伟" in texts
    statuses = {n["text"]: n.get("status") for n in data["nodes"]}
    assert statuses["Our budget is 50,000 CNY."] == "superseded"
    assert {e["kind"] for e in data["edges"]} >= {"MENTIONS", "NEXT", "RELATED", "SUPERSEDES"}

    out = tmp_path / "zw.html"
    assert main(["--store", store, "graph", "--user", "u1", "--around", "张伟", "-o", str(out)]) == 0
    data = _data(out)
    assert data["mode"] == "entity" and data["focus"] == "张伟"
    assert {n["text"] for n in data["nodes"] if n["role"] == "near"} >= set(t for s, t in TURNS if s == "s3")

    out = tmp_path / "q.html"
    assert main(["--store", store, "graph", "--user", "u1", "--around", "When must Bluebird go live?", "-k", "3",
                 "-o", str(out)]) == 0
    data = _data(out)
    assert data["mode"] == "recall" and [h["rank"] for h in data["hits"]] == [1, 2, 3]
    capsys.readouterr()
    assert main(["--store", store, "recall", "When must Bluebird go live?", "--user", "u1", "-k", "3", "--json"]) == 0
    recalled = json.loads(capsys.readouterr().out)["hits"]
    assert [(h["id"], h["score"]) for h in data["hits"]] == [(h["memory"]["id"], round(h["score"], 4)) for h in recalled]
    assert all(n["role"] in ("hit", "seed", "path", "context") for n in data["nodes"])


@pytest.mark.slow
def test_recall_graph_writes_the_same_page_for_one_recall(store: str, tmp_path: Path, chromium: Chromium,
                                                          output_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = output_dir / "cli-recall.html"
    assert main(["--store", store, "recall", "张伟在哪里工作？", "--user", "u1", "-k", "3", "--explain",
                 "--graph", str(out)]) == 0
    captured = capsys.readouterr()
    assert "阿里巴巴" in captured.out and f"wrote {out}" in captured.err
    data = _data(out)
    assert data["query"] == "张伟在哪里工作？" and data["hits"][0]["text"] == "我叫张伟，在北京的阿里巴巴工作。"
    got = chromium.render(out)
    assert (got.state, got.error, got.nodes) == ("rendered", "", len(data["nodes"]))
    chromium.screenshot(out, out.with_suffix(".png"))


def test_graph_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--store", str(tmp_path / "s"), "graph", "--user", "u1", "--limit", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ripple: error:") and "--limit" in err and "Traceback" not in err
