"""The error contract: everything ripple raises is a ``RippleError`` with a one-line message, and the
command line turns each into one line on stderr and exit status 2 (issue 18, item 3).

Three parts, in the manner of httpx's exception-mapping tests:

* every class of :mod:`ripple.errors` is reachable from the public API (a trigger per class, so a
  new class needs a new row), and each trigger raises exactly that class;
* the inputs of the issue's probe that escaped as ``UnicodeEncodeError``, ``OverflowError``,
  ``RecursionError``, ``TypeError``, ``OSError``, pydantic's ``ValidationError`` or a traceback
  now raise a ripple error (API) or exit 2 with one line (CLI);
* damaged rows in the embedded store raise ``StoreError`` (``SchemaError`` for the version).
"""

from __future__ import annotations

import base64
import inspect
import json
import os
import sqlite3
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

import ripple.errors as E
from extractors import GazetteerExtractor
from extractors.base import Extraction
from ripple import Limits, Memory, RippleSettings
from ripple.cli.__main__ import main
from ripple.embedding import HashEmbedder

ROOT = Path(__file__).resolve().parents[1]
NAMES = {"Dana": "PERSON", "Northwind": "ORG", "张伟": "PERSON"}


def fast_memory(path: Path, **kwargs: Any) -> Memory:
    return Memory(path=str(path), embedder=HashEmbedder(32), extractor=GazetteerExtractor(NAMES), **kwargs)


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    m = fast_memory(tmp_path / "store")
    m.add("Dana runs procurement at Northwind.", user_id="u1", session_id="s1")
    yield m
    m.close()


class _Failing:
    """An extractor with a bug: what any third-party extractor might raise."""

    def extract_many(self, texts: Any) -> list[Extraction]:
        raise ValueError("the extractor broke")


def _damaged_store(tmp_path: Path, sql: str) -> Path:
    path = tmp_path / "damaged"
    with fast_memory(path) as m:
        m.add("Dana runs procurement at Northwind.", user_id="u1")
    db = sqlite3.connect(path / "ripple.db")
    db.execute(sql)
    db.commit()
    db.close()
    return path


def _empty_store_file(tmp_path: Path) -> Path:
    """A store whose file was truncated to 0 bytes (once silently a new, empty store)."""
    path = tmp_path / "empty"
    path.mkdir(parents=True)
    (path / "ripple.db").write_bytes(b"")
    return path


def _session(mem: Memory, **kw: Any) -> Any:
    return mem.session("u1", "s1", **kw)


# (error class) -> a call that raises exactly it, through the public API
TRIGGERS: dict[type[E.RippleError], Callable[[Memory, Path], Any]] = {
    E.ConfigError: lambda mem, tmp: Memory(path=str(tmp), store="memory://"),
    E.InvalidInput: lambda mem, tmp: mem.add("", user_id="u1"),
    E.LimitExceeded: lambda mem, tmp: mem.add_many([{"text": "x", "user_id": "u1"}] * 3),
    E.NotFound: lambda mem, tmp: _session(mem).pins.remove("no-such-pin"),
    E.MemoryNotFound: lambda mem, tmp: mem.get("m_missing"),
    E.VersionConflict: lambda mem, tmp: mem.put_document(user_id="u1", key="k", value=1, expected_version=7),
    E.StepMismatch: lambda mem, tmp: _session(mem).working("t").check_step(3),
    E.PermissionDenied: lambda mem, tmp: _session(mem, agent_id="helper", access={"user": "writer"}).pins.add("x"),
    E.StoreError: lambda mem, tmp: fast_memory(_damaged_store(tmp, "UPDATE memories SET metadata='{bad'"))
    .get_all(user_id="u1"),
    # (a short retry budget, a public setting: the default 8 s of retries were 8 s of this test's time)
    E.StoreUnavailable: lambda mem, tmp: Memory(store="bolt://127.0.0.1:1", embedder=HashEmbedder(8),
                                                settings=RippleSettings(neo4j_retry_seconds=0.5)),
    E.StoreDamaged: lambda mem, tmp: fast_memory(_empty_store_file(tmp)),
    E.SchemaError: lambda mem, tmp: fast_memory(_damaged_store(tmp, "UPDATE meta SET value='x1' WHERE key='schema_version'")),
    E.ExtractionError: lambda mem, tmp: Memory(path=str(tmp / "x"), embedder=HashEmbedder(8), extractor=_Failing())
    .add("Dana called.", user_id="u1"),
    E.ModelNotInstalled: lambda mem, tmp: Memory(path=str(tmp / "m"), embedder="no-such-model-anywhere",
                                                 extractor=GazetteerExtractor({})).add("Dana called.", user_id="u1"),
}
#: Never raised themselves, only their subclasses: the root and the grouping classes.
ABSTRACT = {E.RippleError, E.Conflict}
#: Kept for code that catches them, raised by nothing any more (issue 13: reads of a new user are empty).
RETIRED = {E.UnknownUser}


def test_every_error_class_is_in_the_table() -> None:
    classes = {c for _, c in inspect.getmembers(E, inspect.isclass) if issubclass(c, E.RippleError)}
    assert classes == set(TRIGGERS) | ABSTRACT | RETIRED
    for cls in ABSTRACT:  # reachable through a subclass
        assert any(issubclass(t, cls) for t in TRIGGERS if t is not cls)


def test_a_user_with_nothing_stored_is_no_error(mem: Memory) -> None:
    """(What UnknownUser was raised for.)"""
    assert mem.recall("anything", user_id="nobody").user_known is False
    assert mem.get_all(user_id="nobody") == [] and list(mem.export(user_id="nobody")) == []


@pytest.mark.parametrize("cls", list(TRIGGERS), ids=lambda c: c.__name__)
def test_every_error_class_is_reachable(cls: type[E.RippleError], mem: Memory, tmp_path: Path) -> None:
    limited = fast_memory(tmp_path / "limited", settings=RippleSettings(limits=Limits(batch_items=2)))
    target = limited if cls is E.LimitExceeded else mem
    try:
        with pytest.raises(E.RippleError) as info:
            TRIGGERS[cls](target, tmp_path / "t")
    finally:
        limited.close()
    assert type(info.value) is cls, f"{type(info.value).__name__}: {info.value}"
    assert str(info.value) and "\n" not in str(info.value)


# -- the issue's API inputs ---------------------------------------------------------------------------------

DEEP: dict[str, Any] = {}
_cur = DEEP
for _ in range(1000):
    _cur["a"] = {}
    _cur = _cur["a"]

API_INPUTS: dict[str, Callable[[Memory, str], Any]] = {
    "surrogate in text": lambda m, mid: m.add("cut \ud83d emoji", user_id="u1"),
    "surrogate in user id": lambda m, mid: m.add("hello there", user_id="u\ud83d"),
    "surrogate in session id": lambda m, mid: m.add("hello there", user_id="u1", session_id="\ud83d"),
    "surrogate in agent id": lambda m, mid: m.add("hello there", user_id="u1", agent_id="\udcff"),
    "surrogate in metadata value": lambda m, mid: m.add("hello", user_id="u1", metadata={"k": "\ud83d"}),
    "surrogate in metadata key": lambda m, mid: m.add("hello", user_id="u1", metadata={"\udc00": 1}),
    "surrogate in a query": lambda m, mid: m.recall("where \ud83d", user_id="u1"),
    "surrogate in a recall user": lambda m, mid: m.recall("where", user_id="u\ud83d"),
    "surrogate in a memory id": lambda m, mid: m.get("m_\ud83d"),
    "surrogate in stats": lambda m, mid: m.stats(user_id="\udc00"),
    "surrogate in delete_all": lambda m, mid: m.delete_all(user_id="\udc00"),
    "surrogate in a document key": lambda m, mid: m.put_document(user_id="u1", key="\udc00", value=1,
                                                                 expected_version=None),
    "year-1 aware datetime": lambda m, mid: m.add("hello", user_id="u1",
                                                  at=datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5)))),
    "year-9999 aware datetime": lambda m, mid: m.add("hello", user_id="u1", at=datetime(
        9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5)))),
    "maintain(now=year 1)": lambda m, mid: m.maintain(user_id="u1", now=datetime(1, 1, 1, tzinfo=timezone(
        timedelta(hours=1)))),
    "limit=10**20": lambda m, mid: m.get_all(user_id="u1", limit=10**20),
    "limit=-1": lambda m, mid: m.get_all(user_id="u1", limit=-1),
    "k=10**20": lambda m, mid: m.recall("x", user_id="u1", k=10**20),
    'update(text="")': lambda m, mid: m.update(mid, text=""),
    "update(metadata=str)": lambda m, mid: m.update(mid, metadata="x"),  # type: ignore[arg-type]
    "metadata nested 1,000 deep": lambda m, mid: m.add("hello", user_id="u1", metadata=DEEP),
    "metadata with a NaN": lambda m, mid: m.add("hello", user_id="u1", metadata={"x": float("nan")}),
    "a document nested 1,000 deep": lambda m, mid: m.put_document(user_id="u1", key="k", value=DEEP,
                                                                  expected_version=None),
    "add_many(5)": lambda m, mid: m.add_many(5),  # type: ignore[arg-type]
    "a JSON list as an import record": lambda m, mid: _refused(m.import_records(["[1, 2]"], user_id="u1")),
    "cypher params not a dict": lambda m, mid: m.cypher("RETURN 1", ["x"]),  # type: ignore[arg-type]
}


def _refused(report: Any) -> None:
    if report.refused:
        raise E.InvalidInput(report.refusals[0])


@pytest.mark.parametrize("name", list(API_INPUTS))
def test_the_issues_api_inputs_raise_ripple_errors(name: str, mem: Memory) -> None:
    (m,) = mem.get_all(user_id="u1")
    before = list(mem.export(user_id="u1"))
    with pytest.raises(E.RippleError) as info:
        API_INPUTS[name](mem, m.id)
    assert "\n" not in str(info.value)
    assert list(mem.export(user_id="u1")) == before  # nothing was written


# -- damaged rows -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sql", [
    "UPDATE memories SET metadata='{bad'",  # JSONDecodeError
    "UPDATE memories SET metadata='[1]'",
    "UPDATE memories SET at=9e999",  # OverflowError
    "UPDATE memories SET terms='{bad'",
    "UPDATE memories SET embedding=x'010203'",  # ValueError in numpy
    "UPDATE memories SET token_vectors=x'010203'",
    "UPDATE memories SET text=x'ff00'",
    "UPDATE entities SET aliases='{bad'",
])
def test_a_damaged_row_is_a_store_error(sql: str, tmp_path: Path) -> None:
    with fast_memory(_damaged_store(tmp_path, sql)) as m:
        (mid,) = [r["id"] for r in [{"id": x[0]} for x in sqlite3.connect(m.store.path).execute(  # type: ignore[attr-defined]
            "SELECT id FROM memories")]]
        for call in (lambda: m.get(mid), lambda: m.get_all(user_id="u1"), lambda: list(m.export(user_id="u1")),
                     lambda: m.recall("Dana Northwind", user_id="u1"), lambda: m.update(mid, importance=0.9),
                     lambda: m.add("Dana called Northwind.", user_id="u1")):
            try:
                call()
            except E.RippleError as exc:
                assert isinstance(exc, E.StoreError), f"{sql}: {type(exc).__name__}: {exc}"


def test_a_schema_version_that_is_not_a_number_is_a_schema_error(tmp_path: Path) -> None:
    path = _damaged_store(tmp_path, "UPDATE meta SET value='one' WHERE key='schema_version'")
    with pytest.raises(E.SchemaError, match="'one'"):
        fast_memory(path)


# -- the command line -----------------------------------------------------------------------------------------


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str]]:
    """Run ``ripple --store S ...`` in this process; returns (exit status, stderr)."""
    monkeypatch.setenv("RIPPLE_EMBEDDER", "hash-32")
    monkeypatch.delenv("RIPPLE_STORE", raising=False)
    store = str(tmp_path / "cli-store")
    with fast_memory(Path(store)) as m:
        m.add("Dana runs procurement at Northwind.", user_id="u1")

    def run(*args: str) -> tuple[int, str]:
        capsys.readouterr()
        code = main(["--store", store, *args])
        return code, capsys.readouterr().err

    return run


def _files(tmp_path: Path) -> dict[str, Path]:
    files = {
        "list": b"[1, 2]\n", "string": b'"just a string"\n', "bad-utf8": b'\xff\xfe{"text": "x"}\n',
        "surrogate": b'{"text": "cut \\ud83d here"}\n', "deep": b'{"text": "x", "metadata": ' + b'{"a":' * 1000
        + b"1" + b"}" * 1001 + b"\n", "not-json": b"{text: x}\n",
    }
    out = {}
    for name, data in files.items():
        out[name] = tmp_path / f"{name}.jsonl"
        out[name].write_bytes(data)
    (tmp_path / "a-folder").mkdir()
    out["folder"] = tmp_path / "a-folder"
    return out


CLI_INPUTS: dict[str, Callable[[dict[str, Path]], list[str]]] = {
    "add: missing file": lambda f: ["add", "--user", "u1", "--file", str(f["folder"] / "nope.jsonl")],
    "add: a JSON list line": lambda f: ["add", "--user", "u1", "--file", str(f["list"])],
    "add: a JSON string line": lambda f: ["add", "--user", "u1", "--file", str(f["string"])],
    "add: a line that is not JSON": lambda f: ["add", "--user", "u1", "--file", str(f["not-json"])],
    "add: invalid UTF-8": lambda f: ["add", "--user", "u1", "--file", str(f["bad-utf8"])],
    "add: a lone surrogate in a line": lambda f: ["add", "--user", "u1", "--file", str(f["surrogate"])],
    "add: metadata 1,000 deep in a line": lambda f: ["add", "--user", "u1", "--file", str(f["deep"])],
    "add: a folder as the file": lambda f: ["add", "--user", "u1", "--file", str(f["folder"])],
    "add: --metadata not an object": lambda f: ["add", "hello", "--user", "u1", "--metadata", "[1]"],
    "add: --metadata 1,000 deep": lambda f: ["add", "hello", "--user", "u1", "--metadata", '{"a":' * 1000 + "1"
                                             + "}" * 1000],
    "add: --at year 1 in +05:00": lambda f: ["add", "hello", "--user", "u1", "--at", "0001-01-01T00:00:00+05:00"],
    "add: --at not a time": lambda f: ["add", "hello", "--user", "u1", "--at", "soon"],
    "import: missing file": lambda f: ["import", str(f["folder"] / "nope.jsonl"), "--user", "u1"],
    "import: a folder": lambda f: ["import", str(f["folder"]), "--user", "u1"],
    "import: a JSON list line": lambda f: ["import", str(f["list"]), "--user", "u1"],
    "import: invalid UTF-8": lambda f: ["import", str(f["bad-utf8"]), "--user", "u1"],
    "export -o a folder": lambda f: ["export", "--user", "u1", "-o", str(f["folder"])],
    "export -o a missing folder": lambda f: ["export", "--user", "u1", "-o", str(f["folder"] / "no" / "x.jsonl")],
    "recall: k huge": lambda f: ["recall", "x", "--user", "u1", "-k", str(10**20)],
    "recall: a lone surrogate": lambda f: ["recall", "caf\udce9", "--user", "u1"],
    "stats: a lone surrogate user": lambda f: ["stats", "--user", "\udcff"],
    "cypher on the embedded store": lambda f: ["cypher", "RETURN 1"],
}


@pytest.mark.parametrize("name", list(CLI_INPUTS))
def test_the_issues_cli_inputs_exit_2_with_one_line(name: str, cli: Callable[..., tuple[int, str]],
                                                    tmp_path: Path) -> None:
    code, err = cli(*CLI_INPUTS[name](_files(tmp_path)))
    assert code == 2, err
    lines = err.strip().splitlines()
    if name in ("import: a JSON list line", "import: invalid UTF-8"):  # a report: the record is refused
        assert lines == [f"refused record 1: {'a record must be a JSON object, not list' if 'list' in name else 'not UTF-8 (byte 0xff at 0)'}"]
    else:
        assert len(lines) == 1 and lines[0].startswith("ripple: error: "), err


def test_debug_keeps_the_traceback(cli: Callable[..., tuple[int, str]], tmp_path: Path) -> None:
    with pytest.raises(E.InvalidInput):
        main(["--debug", "--store", str(tmp_path / "s"), "add", "hello", "--user", "u1", "--metadata", "[1]"])


def test_argv_that_is_not_utf8_is_one_line_in_a_real_process(tmp_path: Path) -> None:
    """The OS hands Python undecodable argv bytes as lone surrogates; they must not reach SQLite."""
    env = {**os.environ, "RIPPLE_EMBEDDER": "hash-32", "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable.encode(), b"-m", b"ripple.cli", b"--store", str(tmp_path / "s").encode(),
                          b"add", b"caf\xe9 au lait", b"--user", b"u1"], capture_output=True, env=env, cwd=ROOT,
                         timeout=120)
    err = out.stderr.decode("utf-8", "replace")
    assert out.returncode == 2 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith("ripple: error: text has a lone surrogate '\\udce9'")
    assert "0xe9" in err and "not UTF-8" in err
