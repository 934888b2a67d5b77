"""``ripple serve`` as a real process on the loopback interface, driven by a real HTTP client (httpx),
on the embedded store and on Neo4j: auth, user scoping, structured errors, size limits, streamed
export, and ``ripple recall --server`` (which must not load torch).

One server process per backend for the whole module; every test works in users of its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from tests.graphstore.test_neo4j import PASSWORD, URI, driver, wipe  # noqa: F401  (fixture)
from ripple.server.process import ROOT, ServerProcess, child_env, ripple_process, wait_ready

pytestmark = pytest.mark.slow

TOKEN = "test-token_0mega.7~"
MAX_BODY = 64 * 1024


@pytest.fixture(scope="module", params=["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp(f"serve-{request.param}")
    env = child_env()
    if request.param == "neo4j":
        drv = request.getfixturevalue("driver")  # skips, or fails under RIPPLE_REQUIRE_ALL, without a server
        wipe(drv)
        store, env = URI, child_env(RIPPLE_NEO4J_PASSWORD=PASSWORD)
    else:
        store = str(folder / "store")
    command = ["serve", "--token", TOKEN, "--max-body-bytes", str(MAX_BODY)]
    with ripple_process(store, command, log=folder / "server.log", env=env) as proc:
        yield proc
    if request.param == "neo4j":
        wipe(drv)


@pytest.fixture
def api(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as client:
        yield client


def user() -> str:
    return f"u-{uuid.uuid4().hex[:8]}"


def error(response: httpx.Response) -> dict[str, str]:
    """The structured error of a response; never a traceback."""
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    assert "Traceback" not in response.text and "\n" not in body["error"]["message"]
    return body["error"]  # type: ignore[no-any-return]


def add(api: httpx.Client, uid: str, text: str, **fields: Any) -> dict[str, Any]:
    r = api.post(f"/v1/users/{uid}/memories", json={"text": text, **fields})
    assert r.status_code == 201, r.text
    (stored,) = r.json()
    return stored  # type: ignore[no-any-return]


# -- open endpoints and auth ------------------------------------------------------------------------
def test_health_and_schema_are_open(server: ServerProcess) -> None:
    for path in ("/health/live", "/health/ready"):
        r = httpx.get(server.url + path)
        assert r.status_code == 200 and r.json()["status"] in ("alive", "ready")
    schema = httpx.get(server.url + "/openapi.json").json()
    assert "/v1/users/{user_id}/recall" in schema["paths"]
    assert "RecallResult" in schema["components"]["schemas"] and "AddBody" in schema["components"]["schemas"]


def test_missing_or_wrong_token_is_401(server: ServerProcess) -> None:
    path = f"{server.url}/v1/users/u1/memories"
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}):
        r = httpx.post(path, json={"text": "Sneaky write."}, headers=headers)
        assert r.status_code == 401 and error(r)["code"] == "unauthorized"
        assert r.headers["www-authenticate"].startswith("Bearer")
        assert httpx.get(path, headers=headers).status_code == 401


# -- the API ------------------------------------------------------------------------------------------
def test_memories_add_get_recall_update_history_forget_delete(api: httpx.Client) -> None:
    uid = user()
    budget = add(api, uid, "Our budget is 50,000 CNY.", session_id="s1")
    dana = add(api, uid, "Dana Whitfield runs procurement at Northwind Traders.", session_id="s1",
               metadata={"source": "chat"}, at="2026-05-01T09:00:00Z")
    zh = add(api, uid, "我叫张伟，在北京的阿里巴巴工作。", session_id="s2")
    assert dana["metadata"] == {"source": "chat"} and dana["at"].startswith("2026-05-01T09:00:00")
    assert api.post(f"/v1/users/{uid}/memories", json={"text": "ok thanks"}).json() == []  # nothing to remember

    r = api.post(f"/v1/users/{uid}/memories/batch", json={"items": [
        {"text": "Bluebird must ship before the fourteenth of June.", "session_id": "s3"},
        {"text": "项目代号是青鸟。", "session_id": "s3"}]})
    assert r.status_code == 201 and [m["session_id"] for m in r.json()] == ["s3", "s3"]

    assert api.get(f"/v1/users/{uid}/memories/{zh['id']}").json()["text"] == zh["text"]
    listed = api.get(f"/v1/users/{uid}/memories", params={"session_id": "s1"}).json()
    assert {m["id"] for m in listed} == {budget["id"], dana["id"]}
    assert len(api.get(f"/v1/users/{uid}/memories", params={"limit": 2}).json()) == 2

    plain = api.post(f"/v1/users/{uid}/recall", json={"query": "张伟在哪里工作？", "k": 3}).json()
    assert plain["hits"][0]["memory"]["id"] == zh["id"]
    assert plain["trace"]["stages"] == [] and all(h["path"] == [] for h in plain["hits"])
    explained = api.post(f"/v1/users/{uid}/recall",
                         json={"query": "Who signs off purchases for the Northwind rebrand?", "k": 5,
                               "explain": True}).json()
    assert {h["memory"]["id"] for h in explained["hits"]} >= {dana["id"], budget["id"]}
    assert [s["name"] for s in explained["trace"]["stages"]] and explained["trace"]["total_ms"] > 0
    assert any(h["path"] for h in explained["hits"] if h["via"] != "seed")

    r = api.post(f"/v1/users/{uid}/memories", json={"text": "The budget is now 60k.", "session_id": "s4"})
    newer = r.json()[0]
    history = api.get(f"/v1/users/{uid}/memories/{newer['id']}/history").json()
    assert [m["id"] for m in history] == [budget["id"], newer["id"]] and history[0]["status"] == "superseded"

    changed = api.patch(f"/v1/users/{uid}/memories/{dana['id']}", json={"metadata": {"source": "email"}}).json()
    assert changed["id"] == dana["id"] and changed["metadata"] == {"source": "email"}
    assert api.post(f"/v1/users/{uid}/memories/{dana['id']}/pin", json={}).json()["pinned"] is True
    forgotten = api.post(f"/v1/users/{uid}/memories/{zh['id']}/forget").json()
    assert forgotten["status"] == "invalidated"
    again = api.post(f"/v1/users/{uid}/recall", json={"query": "张伟在哪里工作？", "k": 3}).json()
    assert zh["id"] not in [h["memory"]["id"] for h in again["hits"]]
    by_query = api.post(f"/v1/users/{uid}/forget", json={"query": "When must Bluebird ship?"}).json()
    assert "Bluebird" in by_query["text"] and by_query["status"] == "invalidated"

    assert api.delete(f"/v1/users/{uid}/memories/{dana['id']}").status_code == 204
    assert error(api.get(f"/v1/users/{uid}/memories/{dana['id']}"))["code"] == "memory_not_found"
    stats = api.get(f"/v1/users/{uid}/stats").json()
    assert stats["memories"] == 5
    tiers = api.post(f"/v1/users/{uid}/maintain").json()
    assert tiers["invalidated"] == 2 and tiers["superseded"] == 1


def test_users_cannot_reach_each_other(api: httpx.Client) -> None:
    alice, bob = user(), user()
    secret = add(api, alice, "Alice's locker code is QZX-4711.")
    add(api, bob, "Bob keeps his bicycle in the basement.")
    mid = secret["id"]
    refused = [
        api.get(f"/v1/users/{bob}/memories/{mid}"),
        api.patch(f"/v1/users/{bob}/memories/{mid}", json={"text": "Hijacked."}),
        api.delete(f"/v1/users/{bob}/memories/{mid}"),
        api.get(f"/v1/users/{bob}/memories/{mid}/history"),
        api.post(f"/v1/users/{bob}/memories/{mid}/forget"),
        api.post(f"/v1/users/{bob}/memories/{mid}/pin", json={"pinned": True}),
    ]
    for r in refused:
        assert r.status_code == 404 and error(r) == {
            "code": "memory_not_found", "message": f"no memory with id '{mid}' for user '{bob}'"}
        assert "QZX" not in r.text
    # the same answer as an id that does not exist: nothing to learn from probing
    assert error(api.get(f"/v1/users/{bob}/memories/m_nope"))["message"] == f"no memory with id 'm_nope' for user '{bob}'"
    # nothing changed for Alice
    kept = api.get(f"/v1/users/{alice}/memories/{mid}").json()
    assert (kept["text"], kept["status"], kept["metadata"]) == (secret["text"], "active", {})
    # Bob's reads never return Alice's memories
    hits = api.post(f"/v1/users/{bob}/recall", json={"query": "What is the locker code?", "k": 10}).json()["hits"]
    assert all(h["memory"]["user_id"] == bob for h in hits) and "QZX" not in json.dumps(hits)
    assert "QZX" not in api.get(f"/v1/users/{bob}/memories").text
    assert "QZX" not in api.get(f"/v1/users/{bob}/export").text
    # a body cannot name another user
    r = api.post(f"/v1/users/{bob}/memories", json={"text": "Planted memory.", "user_id": alice})
    assert r.status_code == 422 and error(r)["code"] == "invalid_request"


def test_conflicts_are_listed_and_resolved_with_typed_errors(api: httpx.Client) -> None:
    """An unsure supersession is a conflict the user's client can list and settle; another user's
    memory, an unknown id and a pair with nothing open are the same errors as in Python."""
    uid, other = user(), user()
    old = add(api, uid, "Our budget is 50,000 CNY.", session_id="s1", at="2026-03-02T09:00:00Z")
    new = add(api, uid, "The budget for the team dinner is 800 CNY.", session_id="s2", at="2026-03-03T09:00:00Z")
    foreign = add(api, other, "我们的预算是五万。")
    (c,) = api.get(f"/v1/users/{uid}/conflicts").json()
    assert (c["old"]["id"], c["new"]["id"], c["confidence"]) == (old["id"], new["id"], "medium")
    assert c["values"] and c["why"]
    assert api.get(f"/v1/users/{other}/conflicts").json() == []
    hits = api.post(f"/v1/users/{uid}/recall", json={"query": "What is the budget?", "k": 5}).json()["hits"]
    assert {h["memory"]["id"]: h["conflicts"] for h in hits}[old["id"]] == [new["id"]]
    resolve = f"/v1/users/{uid}/conflicts/resolve"
    for body, status, code in [
        ({"new_id": new["id"], "old_id": foreign["id"], "supersedes": True}, 404, "memory_not_found"),
        ({"new_id": new["id"], "old_id": "m_missing", "supersedes": True}, 404, "memory_not_found"),
        ({"new_id": new["id"], "old_id": old["id"]}, 422, "invalid_request"),
    ]:
        r = api.post(resolve, json=body)
        assert (r.status_code, error(r)["code"]) == (status, code), r.text
    r = api.post(f"/v1/users/{other}/conflicts/resolve", json={"new_id": new["id"], "old_id": old["id"],
                                                               "supersedes": True})
    assert r.status_code == 404 and error(r)["code"] == "memory_not_found"
    assert api.post(resolve, json={"new_id": old["id"], "old_id": new["id"], "supersedes": True}).status_code == 204
    assert api.get(f"/v1/users/{uid}/memories/{old['id']}").json()["status"] == "superseded"
    assert api.get(f"/v1/users/{uid}/conflicts").json() == []
    r = api.post(resolve, json={"new_id": new["id"], "old_id": old["id"], "supersedes": False})
    assert r.status_code == 422 and error(r)["code"] == "invalid_input"  # nothing open any more


def test_errors_are_structured(api: httpx.Client) -> None:
    uid = user()
    add(api, uid, "Maple syrup comes from Quebec.")
    cases = [
        (api.post(f"/v1/users/{uid}/memories", json={"text": "   "}), 422, "invalid_input"),
        (api.post(f"/v1/users/{uid}/recall", json={"query": "syrup", "k": 0}), 422, "invalid_input"),
        (api.post(f"/v1/users/{uid}/recall", json={"query": "syrup", "mode": "magic"}), 422, "invalid_input"),
        (api.post(f"/v1/users/{uid}/recall", json={"k": 3}), 422, "invalid_request"),
        (api.post(f"/v1/users/{uid}/recall", content=b"{not json", headers={"content-type": "application/json"}),
         422, "invalid_request"),
        (api.get(f"/v1/users/{uid}/memories/m_missing"), 404, "memory_not_found"),
        (api.get("/v1/nothing/here"), 404, "not_found"),
        (api.put(f"/v1/users/{uid}/recall", json={}), 405, "method_not_allowed"),
    ]
    for response, status, code in cases:
        assert (response.status_code, error(response)["code"]) == (status, code), response.text


def test_request_size_limit(api: httpx.Client) -> None:
    uid = user()
    big = {"items": [{"text": "A long line about nothing in particular. " * 40} for _ in range(60)]}
    r = api.post(f"/v1/users/{uid}/memories/batch", json=big)
    assert r.status_code == 413 and error(r)["code"] == "request_too_large"

    def chunks() -> Iterator[bytes]:  # no content-length: counted as it arrives
        yield b'{"items": ['
        for n in range(200):
            yield (b", " if n else b"") + json.dumps({"text": "x" * 1000}).encode()
        yield b"]}"

    r = api.post(f"/v1/users/{uid}/memories/batch", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413 and error(r)["code"] == "request_too_large"
    assert api.get(f"/v1/users/{uid}/stats").json()["memories"] == 0  # nothing was stored


def test_export_streams_json_lines(api: httpx.Client) -> None:
    uid = user()
    r = api.post(f"/v1/users/{uid}/memories/batch", json={"items": [
        {"text": f"Meeting {n} with Dana Whitfield about the Northwind rebrand.", "session_id": "s1"} for n in range(30)
    ] + [{"text": "张伟在北京的阿里巴巴工作。", "session_id": "s2"}]})
    assert r.status_code == 201
    with api.stream("GET", f"/v1/users/{uid}/export") as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("application/x-ndjson")
        assert "content-length" not in response.headers  # streamed
        rows = [json.loads(line) for line in response.iter_lines() if line]
    kinds = {row["type"] for row in rows}
    assert kinds == {"memory", "entity", "edge"}
    memories = [row for row in rows if row["type"] == "memory"]
    assert len(memories) == 31 and all(row["user_id"] == uid for row in rows)
    assert any(row["text"] == "张伟在北京的阿里巴巴工作。" for row in memories)


def test_delete_all(api: httpx.Client) -> None:
    uid, other = user(), user()
    add(api, uid, "Dana Whitfield runs procurement at Northwind Traders.")
    add(api, other, "Otto collects vinyl records.")
    counts = api.delete(f"/v1/users/{uid}").json()
    assert counts["memories"] == 1
    assert api.get(f"/v1/users/{uid}/stats").json()["memories"] == 0
    assert api.get(f"/v1/users/{other}/stats").json()["memories"] == 1


# -- the CLI as a client ------------------------------------------------------------------------------
def test_cli_recall_and_add_via_server_load_no_model(server: ServerProcess, tmp_path: Path) -> None:
    uid = user()
    code = (
        "import sys, json\n"
        "from ripple.cli.__main__ import main\n"
        f"assert main(['add', '通过服务器记住：周五交付青鸟项目。', '--user', {uid!r}, '--server', {server.url!r}]) == 0\n"
        f"assert main(['recall', '青鸟项目什么时候交付？', '--user', {uid!r}, '--json']) == 0\n"
        "print('HEAVY', [m for m in ('torch', 'sentence_transformers', 'spacy', 'jieba', 'transformers')"
        " if m in sys.modules])\n"
    )
    env = child_env(RIPPLE_SERVER=server.url, RIPPLE_SERVER_TOKEN=TOKEN, RIPPLE_HOME=str(tmp_path / "no-store"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "HEAVY []" in out.stdout
    assert "stored 1 memory" in out.stdout and "周五交付青鸟项目" in out.stdout
    assert not (tmp_path / "no-store").exists()  # nothing was opened locally

    # a wrong token: one line, non-zero
    env["RIPPLE_SERVER_TOKEN"] = "wrong"
    out = subprocess.run([sys.executable, "-m", "ripple.cli", "recall", "x", "--user", uid], capture_output=True,
                         text=True, env=env, cwd=ROOT, timeout=120)
    assert out.returncode == 2 and out.stderr.startswith("ripple: error: wrong bearer token")
    assert len(out.stderr.strip().splitlines()) == 1


# -- several worker processes -------------------------------------------------------------------------
def _children(pid: int) -> set[int]:
    """The live child processes of ``pid`` (from /proc)."""
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.add(int(stat.parent.name))
    return out


def test_workers_share_the_port_and_the_store(tmp_path: Path) -> None:
    """``--workers 2``: two server processes answer on one port, each with its own memory on the one
    embedded store; what one worker writes, any worker recalls (caches coherent across processes);
    SIGTERM stops them all gracefully."""
    command = ["serve", "--workers", "2", "--token", TOKEN, "--log-level", "warning"]
    with ripple_process(str(tmp_path / "store"), command, log=tmp_path / "server.log", workers=2) as srv:
        workers = _children(srv.proc.pid)
        workers.discard(next((p for p in workers if "resource_tracker" in Path(f"/proc/{p}/cmdline").read_text()), -1))
        assert len(workers) == 2, workers
        headers = {"Authorization": f"Bearer {TOKEN}"}
        answered = set()
        for n in range(12):  # a new connection each time: the kernel hands each to whichever worker accepts
            with httpx.Client(base_url=srv.url, headers=headers, timeout=120) as fresh:
                ready = fresh.get("/health/ready")  # (ripple_process waited for both workers)
                assert ready.status_code == 200, ready.text
                answered.add(ready.json()["pid"])
                if n == 0:
                    r = fresh.post("/v1/users/w/memories", json={"text": "The Atlas go-live moved to May 9."})
                    assert r.status_code == 201, r.text
                    r = fresh.post("/v1/users/w/memories", json={"text": "Atlas 项目的负责人是王芳。"})
                    assert r.status_code == 201, r.text
                else:
                    for query in ("When is the Atlas go-live?", "Atlas 项目谁负责？"):
                        hits = fresh.post("/v1/users/w/recall", json={"query": query, "k": 2}).json()["hits"]
                        assert len(hits) == 2, hits
        assert answered <= workers and answered  # the workers answer, not the supervisor
        assert srv.stop() == 0
    assert not any(Path(f"/proc/{p}").exists() for p in workers)


class _Workers:
    """Fake readiness probes: a scripted sequence of (status, pid) answers, on a fake clock."""

    def __init__(self, answers: list[tuple[int | None, int | None]]) -> None:
        self.answers = list(answers)
        self.now = 0.0
        self.probes = 0

    def probe(self) -> tuple[int | None, int | None]:
        self.probes += 1
        return self.answers.pop(0) if self.answers else (200, 101)  # then only the first worker answers

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_wait_ready_waits_for_every_worker() -> None:
    """The first worker ready (and answering again and again) is not enough: the wait goes on until
    the second one, which answered 503 while loading its models, answers 200."""
    w = _Workers([(None, None), (200, 101), (200, 101), (503, 202), (200, 101), (503, 202), (200, 202), (200, 101)])
    assert wait_ready(w.probe, workers=2, timeout=60, clock=lambda: w.now, sleep=w.sleep) == {101, 202}
    assert w.probes == 7
    one = _Workers([(503, 7), (200, 7)])
    assert wait_ready(one.probe, clock=lambda: one.now, sleep=one.sleep) == {7} and one.probes == 2


def test_wait_ready_times_out_naming_the_workers() -> None:
    w = _Workers([(200, 101), (503, 202), (503, 202)])
    with pytest.raises(TimeoutError, match=r"1 of 2 server process\(es\) ready after 30 s \(ready pids \[101\];"
                                           r" not ready: \[202\]\)"):
        wait_ready(w.probe, workers=2, timeout=30, clock=lambda: w.now, sleep=w.sleep)
    assert 140 <= w.probes <= 160  # every 0.2 s for 30 s


def test_wait_ready_stops_when_the_server_died() -> None:
    w = _Workers([(503, 101)] * 3)
    with pytest.raises(RuntimeError, match="exited with 3"):
        wait_ready(w.probe, workers=2, clock=lambda: w.now, sleep=w.sleep,
                   exited=lambda: "server exited with 3" if w.probes >= 2 else None)
    assert w.probes == 2
