"""Import is tenant-safe, validated record by record, idempotent and batched (issue 18, item 1).

Before the fix a file imported by one user could carry another user's memory id (the import
overwrote it: ``get(id)`` returned the importer's text) or entity id (it gained the importer's
aliases, and its degree went wrong after the importer's ``delete_all``); unknown edge types,
dangling edges, ``"at": 1e400`` and a 3-byte embedding were stored (the user's recall and add
then failed for good); and every re-import of one's own export added the RELATED weights again.

Fast: a hashing embedder and a gazetteer on the embedded store and the reference store; the
tenant test also runs on the real Neo4j server.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from extractors import GazetteerExtractor
from ripple import AsyncMemory, ImportReport, Limits, Memory, RippleSettings
from ripple._import import rekey_memory_id
from ripple.cli.__main__ import main
from ripple.embedding import HashEmbedder
from ripple.errors import InvalidInput
from tests.graphstore.test_neo4j import clean, driver  # noqa: F401 - fixtures

NAMES = {"Dana Whitfield": "PERSON", "Northwind": "ORG", "Acme Corp": "ORG", "张伟": "PERSON", "阿里巴巴": "ORG"}
DIM = 32


def _memory(store: str, **limits: Any) -> Memory:
    return Memory(store=store, embedder=HashEmbedder(DIM), extractor=GazetteerExtractor(NAMES),
                  settings=RippleSettings(limits=Limits(**limits)))


@pytest.fixture(params=["sqlite", "memory"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Memory]]:
    """A factory of clients on one store (``memory://`` is one graph per client: keep to one)."""
    opened: list[Memory] = []
    shared: dict[str, Any] = {}

    def factory(**limits: Any) -> Memory:
        if request.param == "sqlite":
            m = _memory(str(tmp_path / "store"), **limits)
        else:
            from graphstore.memory import InMemoryStore

            store = shared.setdefault("store", InMemoryStore())
            m = Memory(store=store, embedder=HashEmbedder(DIM), extractor=GazetteerExtractor(NAMES),
                       settings=RippleSettings(limits=Limits(**limits)))
        opened.append(m)
        return m

    yield factory
    for m in opened:
        m.close()


def _seed(mem: Memory) -> str:
    """Two users with overlapping entities; returns the victim's first memory id."""
    (victim,) = mem.add("Dana Whitfield runs procurement at Northwind.", user_id="victim", session_id="s1")
    mem.add("Dana Whitfield met Acme Corp about Northwind.", user_id="victim", session_id="s1")
    mem.add("张伟在阿里巴巴工作，和 Dana Whitfield 一起。", user_id="victim", session_id="s2")
    mem.add("Acme Corp and Northwind signed with Dana Whitfield.", user_id="me", session_id="s1")
    mem.add("Northwind pays Acme Corp on Fridays.", user_id="me", session_id="s1")
    return victim.id


def _of(mem: Memory, user: str, kind: str) -> list[dict[str, Any]]:
    return [r for r in mem.export(user_id=user) if r["type"] == kind]


def test_an_import_never_touches_another_users_rows(make: Callable[..., Memory]) -> None:
    _never_touches_another_user(make())


@pytest.mark.neo4j
def test_an_import_never_touches_another_users_rows_on_neo4j(clean: Any) -> None:
    from tests.graphstore.test_neo4j import PASSWORD, URI

    with Memory(embedder=HashEmbedder(DIM), extractor=GazetteerExtractor(NAMES),
                settings=RippleSettings(store=URI, neo4j_password=PASSWORD)) as mem:
        _never_touches_another_user(mem)
        report = mem.import_records(list(mem.export(user_id="victim")), user_id="victim")
        assert report.imported == {"memories": 0, "entities": 0, "edges": 0}  # idempotent on Neo4j too


def _never_touches_another_user(mem: Memory) -> None:
    victim_id = _seed(mem)
    victim_before = list(mem.export(user_id="victim"))
    victim_entity = _of(mem, "victim", "entity")[0]
    mine = _of(mem, "me", "memory")[0]
    hostile = [
        dict(mine, id=victim_id, text="OVERWRITTEN by me"),  # the victim's memory id, my user_id
        dict(victim_entity, user_id="me", aliases=["pwned"]),  # the victim's entity id
        {"type": "edge", "src": mine["id"], "edge": "MENTIONS", "dst": victim_entity["id"], "user_id": "me",
         "weight": 1.0},
        {"type": "edge", "src": victim_entity["id"], "edge": "RELATED", "dst": victim_entity["id"],
         "user_id": "victim", "weight": 5.0, "predicate": "x"},  # the victim's, by their own user_id
    ]
    report = mem.import_records(hostile, user_id="me")
    assert mem.get(victim_id).text == "Dana Whitfield runs procurement at Northwind."
    assert list(mem.export(user_id="victim")) == victim_before
    assert report.refused >= 1 and any("belongs to another user" in r for r in report.refusals)
    mem.delete_all(user_id="me")
    assert list(mem.export(user_id="victim")) == victim_before  # degrees included
    assert mem.recall("Northwind", user_id="victim", k=3).hits


def test_records_of_another_user_are_rekeyed_and_the_graph_survives(make: Callable[..., Memory]) -> None:
    mem = make()
    _seed(mem)
    exported = list(mem.export(user_id="victim"))
    report = mem.import_records(exported, user_id="copy")
    assert report.refused == 0 and report.rekeyed == len(exported)
    assert report.imported == {"memories": 3, "entities": len(_of(mem, "victim", "entity")),
                               "edges": len(_of(mem, "victim", "edge"))}
    copied = _of(mem, "copy", "memory")
    old_ids = {m["id"] for m in _of(mem, "victim", "memory")}
    assert not old_ids & {m["id"] for m in copied}
    for m in _of(mem, "victim", "memory"):  # deterministic, and the time prefix (turn order) is kept
        new = rekey_memory_id("copy", "victim", m["id"])
        assert new[:18] == m["id"][:18] and any(c["id"] == new for c in copied)
    assert mem.stats(user_id="copy") | {"bytes_on_disk": 0} == mem.stats(user_id="victim") | {"bytes_on_disk": 0}
    assert mem.recall("张伟在哪里工作", user_id="copy", k=1, touch=False).hits[0].memory.text.startswith("张伟")
    again = mem.import_records(exported, user_id="copy")  # the same file again: nothing to do
    assert again.imported == {"memories": 0, "entities": 0, "edges": 0} and again.refused == 0


def test_reimporting_ones_own_export_changes_nothing(make: Callable[..., Memory]) -> None:
    mem = make()
    _seed(mem)
    before = list(mem.export(user_id="me"))
    assert any(r["type"] == "edge" and r["edge"] == "RELATED" for r in before)
    for _ in range(3):
        report = mem.import_records(list(mem.export(user_id="me")), user_id="me")
        assert report.imported == {"memories": 0, "entities": 0, "edges": 0} and report.refused == 0
        assert sum(report.skipped.values()) == len(before)
    assert list(mem.export(user_id="me")) == before  # RELATED weights did not grow


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False)


def test_each_record_is_validated_and_a_bad_one_is_refused_alone(make: Callable[..., Memory]) -> None:
    mem = make(text_chars=200)
    _seed(mem)
    good = _of(mem, "me", "memory")[0]
    other = _of(mem, "me", "memory")[1]
    bad = {
        "at out of range": dict(good, id="m_at", at=1e400),
        "3-byte embedding": dict(good, id="m_vec", embedding=base64.b64encode(b"abc").decode()),
        "embedding of another dimension": dict(good, id="m_dim", embedding=base64.b64encode(b"\0" * 4 * 8).decode()),
        "token vectors not rows": dict(good, id="m_tok", token_vectors=base64.b64encode(b"\1" * (DIM + 1)).decode()),
        "text over the limit": dict(good, id="m_long", text="x" * 201),
        "lone surrogate": dict(good, id="m_sur", text="cut \ud83d here"),
        "metadata too deep": dict(good, id="m_deep", metadata=json.loads('{"a":' * 40 + "1" + "}" * 40)),
        "status unknown": dict(good, id="m_status", status="deleted"),
        "entity id as memory id": dict(good, id="e_123"),
        "unknown edge type": {"type": "edge", "src": good["id"], "edge": "OWNS", "dst": other["id"],
                              "user_id": "me", "weight": 1.0},
        "dangling edge": {"type": "edge", "src": good["id"], "edge": "NEXT", "dst": "m_nowhere",
                          "user_id": "me", "weight": 1.0},
        "edge of the wrong kinds": {"type": "edge", "src": good["id"], "edge": "RELATED", "dst": other["id"],
                                    "user_id": "me", "weight": 1.0, "predicate": "x"},
        "weight not finite": {"type": "edge", "src": good["id"], "edge": "NEXT", "dst": other["id"],
                              "user_id": "me", "weight": float("inf")},
        "unknown record type": {"type": "user", "id": "x"},
    }
    lines: list[Any] = [_line(r) for r in bad.values()]
    lines += ["[1, 2]", "not json", b"\xff\xfe{}", "", json.dumps(dict(good, id="m_fine", text="A fine one."))]
    report = mem.import_records(lines, user_id="me")
    assert report.refused == len(bad) + 3, report.refusals
    assert report.imported["memories"] == 1 and mem.get("m_fine").text == "A fine one."
    assert [int(r.split()[1].rstrip(":")) for r in report.refusals] == sorted(
        int(r.split()[1].rstrip(":")) for r in report.refusals)  # in file order, numbered
    assert any("not UTF-8" in r for r in report.refusals) and any("dangling" in r for r in report.refusals)
    # nothing bad got in: the user's recall, add and export still work
    assert mem.recall("Northwind", user_id="me", k=5).hits
    assert mem.add("Dana Whitfield called Northwind again.", user_id="me")
    assert all(r.get("id") not in {"m_at", "m_vec", "m_dim", "m_tok", "m_long", "m_sur", "m_deep"}
               for r in mem.export(user_id="me"))


def test_an_import_is_written_in_batches_and_reports_them(make: Callable[..., Memory]) -> None:
    mem = make(import_batch=2)
    _seed(mem)
    exported = list(mem.export(user_id="victim"))
    nodes = sum(r["type"] != "edge" for r in exported)
    edges = len(exported) - nodes
    report = mem.import_records(exported, user_id="batched")
    assert isinstance(report, ImportReport)
    assert report.batches == -(-nodes // 2) + -(-edges // 2)
    assert "imported 3 memories" in report.summary()


def test_the_importing_user_is_checked(make: Callable[..., Memory]) -> None:
    mem = make()
    with pytest.raises(InvalidInput):
        mem.import_records([], user_id="")
    with pytest.raises(InvalidInput):
        mem.import_records("not records", user_id="u1")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="surrogate"):
        mem.import_records([], user_id="u\udcff")


@pytest.mark.anyio
async def test_the_async_twin_imports_the_same(tmp_path: Path) -> None:
    with _memory(str(tmp_path / "a")) as sync:
        _seed(sync)
        exported = list(sync.export(user_id="victim"))
        expected = sync.import_records(exported, user_id="copy")
    async with AsyncMemory(path=str(tmp_path / "b"), embedder=HashEmbedder(DIM),
                           extractor=GazetteerExtractor(NAMES)) as amem:
        got = await amem.import_records(exported, user_id="copy")
        assert got.imported == expected.imported and got.refused == 0
        assert (await amem.recall("Northwind", user_id="copy", k=1)).hits


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- the command line -----------------------------------------------------------------------------------


def test_cli_import_names_the_user_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIPPLE_EMBEDDER", "hash-32")
    store = str(tmp_path / "s")
    with _memory(store) as mem:
        _seed(mem)
    dump = tmp_path / "victim.jsonl"
    assert main(["--store", store, "export", "--user", "victim", "-o", str(dump)]) == 0
    with pytest.raises(SystemExit):  # --user is required
        main(["--store", store, "import", str(dump)])
    capsys.readouterr()
    assert main(["--store", store, "import", str(dump), "--user", "copy"]) == 0
    assert "imported 3 memories" in capsys.readouterr().out
    assert main(["--store", store, "import", str(dump), "--user", "victim"]) == 0  # its own export: all skipped
    assert "imported 0 memories, 0 entities, 0 edges" in capsys.readouterr().out
    with dump.open("a", encoding="utf-8") as f:
        f.write('[1, 2]\n{"type": "edge", "src": "m_x", "edge": "OWNS", "dst": "m_y", "user_id": "copy", "weight": 1}\n')
    assert main(["--store", store, "import", str(dump), "--user", "copy"]) == 2
    out, err = capsys.readouterr()
    assert "refused 2 records" in out and "a record must be a JSON object" in err and "OWNS" in err
    assert main(["--store", store, "import", str(tmp_path / "missing.jsonl"), "--user", "copy"]) == 2
    assert capsys.readouterr().err.strip() == f"ripple: error: cannot read {tmp_path / 'missing.jsonl'}: No such file or directory"


def test_add_file_refuses_a_line_of_another_user(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the fix a line's user_id overrode --user: a file could add memories for anyone."""
    monkeypatch.setenv("RIPPLE_EMBEDDER", "hash-32")
    store = str(tmp_path / "s")
    items = tmp_path / "items.jsonl"
    items.write_text(_line({"text": "Mine, and says so.", "user_id": "u1"}) + "\n"
                     + _line({"text": "Slipped in for someone else.", "user_id": "victim"}) + "\n", encoding="utf-8")
    assert main(["--store", store, "add", "--user", "u1", "--file", str(items)]) == 2
    err = capsys.readouterr().err
    assert "items.jsonl:2" in err and "'victim'" in err and len(err.strip().splitlines()) == 1
    with _memory(store) as mem:
        assert mem.users() == []  # the whole file refused: nothing written
