"""The command line: fast help, lazy imports, and the commands end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ripple.cli.__main__ import main

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "sentence_transformers", "spacy", "jieba", "neo4j", "transformers")


def _run(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout


def test_import_ripple_loads_no_heavy_library() -> None:
    out = _run(f"import sys, ripple, extractors, graphstore; print([m for m in {HEAVY!r} if m in sys.modules])")
    assert out.strip() == "[]"


def test_help_loads_no_heavy_library() -> None:
    code = (
        "import sys, contextlib, io\n"
        "from ripple.cli.__main__ import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as buf:\n"
        "    try:\n"
        "        main(['recall', '--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"print([m for m in {HEAVY!r} if m in sys.modules])\n"
    )
    assert _run(code).strip().splitlines()[-1] == "[]"


def test_top_level_help_lists_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    for cmd in ("add", "recall", "demo", "stats", "export", "import", "bench"):
        assert cmd in out


def test_errors_are_one_line_and_nonzero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--store", str(tmp_path / "s"), "recall", "anything", "--user", "nobody"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ripple: error:") and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", [["stats"], ["recall", "q", "--user", "u"], ["export", "--user", "u"],
                                     ["maintain", "--user", "u"], ["graph", "--user", "u"]])
def test_reading_a_store_that_does_not_exist_names_the_path_and_creates_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    typo = tmp_path / "typo" / "path"
    assert main(["--store", str(typo), *command]) == 2  # a ripple error exits 2 (issue 18)
    err = capsys.readouterr().err
    assert err.startswith("ripple: error: no ripple store at") and str(typo) in err
    assert not typo.exists()


def test_version_prints_and_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.startswith("ripple 0.")


@pytest.mark.parametrize(("text", "message"), [("   ", "ripple: error: text is empty"), ("", "ripple: error: text is empty")])
def test_add_of_an_empty_text_says_so_in_ripples_words(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        text: str, message: str) -> None:
    assert main(["--store", str(tmp_path / "s"), "add", text, "--user", "u1"]) == 2
    assert capsys.readouterr().err.strip() == message


@pytest.mark.slow
def test_add_recall_stats_export_import(tmp_path: Path, capsys: pytest.CaptureFixture[str], embedder, extractor) -> None:
    store = str(tmp_path / "s")
    items = tmp_path / "items.jsonl"
    items.write_text(
        "\n".join(json.dumps({"text": t, "session_id": "s1"}) for t in [
            "Dana Whitfield runs procurement at Northwind.",
            "ok thanks",
            "我叫张伟，在北京的阿里巴巴工作。",
        ]),
        encoding="utf-8",
    )
    assert main(["--store", store, "add", "--user", "u1", "--file", str(items)]) == 0
    out, err = capsys.readouterr()
    assert "stored 2 memories (1 without content skipped)" in out
    assert err.count("created a new store at") == 1  # a write command creates the store and says so once
    assert main(["--store", store, "recall", "nobody's here", "--user", "u9", "--json"]) == 0  # a new user: no error
    assert json.loads(capsys.readouterr().out)["user_known"] is False
    assert main(["--store", store, "recall", "who runs procurement?", "--user", "u1", "-k", "1", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["hits"][0]["memory"]["text"].startswith("Dana Whitfield")
    assert main(["--store", store, "recall", "张伟在哪里工作", "--user", "u1", "-k", "1", "--explain"]) == 0
    out, err = capsys.readouterr()
    assert "阿里巴巴" in out and "trace:" in out and "Loading weights" not in err
    # recall hits count as use, as the README says (--no-touch looks without touching)
    assert main(["--store", store, "recall", "张伟在哪里工作", "--user", "u1", "-k", "1", "--json", "--no-touch"]) == 0
    hit = json.loads(capsys.readouterr().out)["hits"][0]["memory"]
    assert hit["access_count"] == 1
    assert main(["--store", store, "stats", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["memories"] == 2
    dump = tmp_path / "u1.jsonl"
    assert main(["--store", store, "export", "--user", "u1", "-o", str(dump)]) == 0
    assert main(["--store", str(tmp_path / "other"), "import", str(dump), "--user", "u1"]) == 0
    assert "2 memories" in capsys.readouterr().out
    assert main(["--store", str(tmp_path / "other"), "recall", "procurement", "--user", "u1", "-k", "1"]) == 0
    assert "Dana Whitfield" in capsys.readouterr().out
    assert main(["--store", store, "maintain", "--user", "u1", "--json"]) == 0
    assert sum(v for k, v in json.loads(capsys.readouterr().out).items() if k != "pinned") == 2
    assert main(["--store", store, "forget", "--query", "procurement at Northwind", "--user", "u1"]) == 0
    assert "Dana Whitfield" in capsys.readouterr().out
    assert main(["--store", store, "maintain", "--user", "u1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["invalidated"] == 1


@pytest.mark.slow
def test_demo_shows_ripple_vs_flat(capsys: pytest.CaptureFixture[str], embedder, extractor) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "ripple" in out and "flat" in out and "answer in top 5: ripple" in out
    line = next(l for l in out.splitlines() if l.startswith("answer in top 5"))
    ripple_found = int(line.split("ripple ")[1].split("/")[0])
    flat_found = int(line.split("flat ")[1].split("/")[0])
    assert ripple_found > flat_found
    firsts = line.split("answer first: ")[1]
    assert int(firsts.split("ripple ")[1].split("/")[0]) > int(firsts.split("flat ")[1].split("/")[0])
    # the headline question: flat misses the answer, ripple ranks it first (through the Bluebird turn)
    headline = out.split("Q: When is the Northwind deadline?")[1].split("Q: ")[0]
    assert "answer at: ripple #1, flat not in top 5" in headline
