from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.__main__ import main
from benchmarks.datasets import Dataset, Doc, Query
from benchmarks.methods import METHODS, BM25Method, Method, RippleMethod
from benchmarks.report import BEGIN, END, update_results_md


def test_bm25_per_user_and_ranking() -> None:
    docs = [
        Doc("a1", "Ann: I adopted a cat named Miso", "ann"),
        Doc("a2", "Ann: we went hiking in Oslo", "ann"),
        Doc("a3", "Ann: cats cats cats, Miso again", "ann"),
        Doc("b1", "Bob: my cat Miso is the best cat", "bob"),
        Doc("c1", "我在北京大学工作", "cn"),
        Doc("c2", "我喜欢吃火锅", "cn"),
    ]
    qs = [Query("q", "What is the name of the cat?", "ann", ("a1",), "x")]
    m = BM25Method()
    assert isinstance(m, Method)
    m.index(Dataset("toy", docs, qs))
    assert m.indexed_count() == 6
    ranked = m.recall(qs[0], 10)
    assert set(ranked) == {"a1", "a3"}  # never bob's doc, never a doc without a shared term
    assert m.recall(Query("q2", "cat", "bob", ("b1",), "x"), 10) == ["b1"]
    assert m.recall(Query("q3", "zebra", "ann", ("a1",), "x"), 10) == []
    assert m.recall(Query("q4", "cat", "nobody", (), "x"), 10) == []
    assert m.recall(Query("q5", "北京", "cn", ("c1",), "x"), 10) == ["c1"]  # jieba search mode
    assert len(m.recall(Query("q6", "cat Miso hiking Ann", "ann", (), "x"), 2)) == 2


def test_method_registry() -> None:
    assert {"bm25", "ripple", "flat"} <= set(METHODS)
    r = METHODS["flat"]()
    assert isinstance(r, RippleMethod) and r.name == "flat" and r.mode == "flat"
    assert isinstance(r, Method)


def _read(path: Path) -> tuple[dict, list[dict]]:
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    assert lines[0]["type"] == "header"
    return lines[0], lines[1:]


def test_run_and_report(tmp_path: Path, data_dir: Path) -> None:
    out = tmp_path / "results"
    rc = main(["run", "--dataset", "locomo,synthetic", "--size", "2k", "--n-queries", "30", "--methods", "bm25",
               "--k", "25", "--limit", "40", "--out", str(out), "--data-dir", str(data_dir), "--no-progress"])
    assert rc == 0
    header, rows = _read(out / "locomo" / "bm25.jsonl")
    assert header["dataset"] == "locomo" and header["method"] == "bm25"
    assert header["n_docs"] == 2080 == header["n_indexed"]
    assert header["n_queries"] == 40 == len(rows)
    assert header["index_s"] > 0 and header["ingest_docs_per_s"] > 0
    assert header["peak_rss_mb"] > 10 and header["machine"]["cores"] >= 1
    assert header["versions"]["bm25s"] and header["config"]["k1"] == 1.5
    assert header["command"].startswith("python -m benchmarks run")
    for r in rows:
        assert r["type"] == "query" and len(r["ranked"]) <= 25
        assert 0 <= r["latency_ms"] < 1000  # milliseconds: BM25 over ~400 turns takes well under one
        assert all(x.startswith(r["user_id"] + ":") for x in r["ranked"])
    _, syn_rows = _read(out / "synthetic-2k" / "bm25.jsonl")
    assert len(syn_rows) == 30

    results_md = tmp_path / "RESULTS.md"
    results_md.write_text(f"# Results\n\nintro kept\n\n{BEGIN}\nold stuff\n{END}\n\ntail kept\n")
    assert main(["report", "--out", str(out), "--update-results-md", str(results_md)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    loc = summary["datasets"]["locomo"]["methods"]["bm25"]
    assert loc["overall"]["n"] == 40
    for name in ("recall@2", "recall@5", "recall@10", "recall@25", "recall_all@10", "ndcg@10", "mrr"):
        assert 0.0 <= loc["overall"][name] <= 1.0
    assert loc["overall"]["recall@5"] <= loc["overall"]["recall@10"] <= loc["overall"]["recall@25"]
    assert loc["overall"]["recall@10"] > 0.3  # BM25 finds evidence for a good share of the questions
    assert loc["latency_ms"]["p50"] <= loc["latency_ms"]["p95"] <= loc["latency_ms"]["p99"]
    md = (out / "summary.md").read_text()
    assert "### locomo" in md and "### synthetic scale" in md and "| bm25 |" in md
    plots = out / "plots"
    for name in ("locomo-recall10-by-category.png", "locomo-latency.png", "synthetic-2k-latency.png", "synthetic-scale.png"):
        p = plots / name
        assert p.is_file() and p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    text = results_md.read_text()
    assert "old stuff" not in text and "intro kept" in text and "tail kept" in text
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    assert "python -m benchmarks run --dataset locomo,synthetic" in text
    assert "python -m benchmarks report" in text and "Machine:" in text


def test_update_results_md_creates_and_is_idempotent(tmp_path: Path) -> None:
    p = tmp_path / "sub" / "RESULTS.md"
    update_results_md(p, "first")
    update_results_md(p, "second")
    text = p.read_text()
    assert "first" not in text and text.count("second") == 1
    assert text.index(BEGIN) < text.index("second") < text.index(END)


def test_report_without_results_fails(tmp_path: Path) -> None:
    assert main(["report", "--out", str(tmp_path)]) == 1


def test_unknown_method_is_an_error(tmp_path: Path, data_dir: Path) -> None:
    assert main(["run", "--methods", "nope", "--out", str(tmp_path), "--data-dir", str(data_dir)]) == 2


def test_cli_requires_a_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "run" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["bogus"])


def test_the_report_shows_where_ripples_time_goes(tmp_path: Path) -> None:
    """Per-stage traces recorded with each ripple query become a p50 / p95 row in the summary."""
    from benchmarks.report import RunResult, render_markdown, summarise

    def row(i: int, encode: float, spread: float) -> dict:
        return {"type": "query", "query_id": str(i), "user_id": "u", "category": "all", "gold": ["a"], "ranked": ["a"],
                "latency_ms": encode + spread, "explain": {"stages_ms": {"seed.encode": encode, "spread.entity": spread}}}

    header = {"dataset": "toy", "method": "ripple", "k": 1, "n_docs": 3}
    run = RunResult(tmp_path / "toy" / "ripple.jsonl", header, [row(i, 8.0 + i, 2.0 * i) for i in range(21)])
    summary = summarise([run])
    stages = summary["datasets"]["toy"]["methods"]["ripple"]["stages_ms"]
    assert stages == {"seed.encode": {"p50": 18.0, "p95": 27.0}, "spread.entity": {"p50": 20.0, "p95": 38.0}}
    md = render_markdown(summary)
    assert "Where ripple's recall time goes" in md and "| ripple | 18.0 / 27.0 | 20.0 / 38.0 |" in md
