"""The server's life: refusing a public bind without a token, the error table, an unexpected
exception answered without its details, and a graceful shutdown that finishes an in-flight add_many."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

import ripple.errors as E
from ripple.server.errors import HTTP_CODES, WIRE, error_from_wire, status_and_code
from ripple.server.settings import check_bind, is_loopback
from ripple.server.process import ROOT, child_env, ripple_process


# -- binding ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", [["serve"], ["mcp", "--transport", "http"]])
def test_refuses_public_bind_without_token(command: list[str], tmp_path: Path) -> None:
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "ripple.cli", "--store", str(tmp_path / "s"), *command,
                          "--host", "0.0.0.0"], capture_output=True, text=True, env=child_env(), cwd=ROOT, timeout=60)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip() == ("ripple: error: refusing to listen on 0.0.0.0 without a token: set "
                                  "RIPPLE_SERVER_TOKEN or --token, or listen on 127.0.0.1")
    assert time.monotonic() - started < 30  # refused before any model or store was touched
    assert not (tmp_path / "s").exists()


def test_bind_rules() -> None:
    for host in ("127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost"):
        assert is_loopback(host)
        check_bind(host, None)
    for host in ("0.0.0.0", "::", "192.168.1.4", "example.org"):
        assert not is_loopback(host)
        with pytest.raises(E.ConfigError, match="without a token"):
            check_bind(host, None)
        check_bind(host, "a-token")


# -- the error table ----------------------------------------------------------------------------------
def test_every_ripple_error_has_a_wire_code_that_maps_back() -> None:
    classes = [getattr(E, name) for name in E.__all__]
    assert {cls for cls, _, _ in WIRE} == set(classes)  # a new error class needs a row
    codes = [code for _, _, code in WIRE]
    assert len(codes) == len(set(codes))
    for cls in classes:
        status, code = status_and_code(cls("boom"))
        assert 400 <= status < 600 and code
        back = error_from_wire(status, {"error": {"code": code, "message": "boom"}})
        assert type(back) is cls and str(back) == "boom"
    assert status_and_code(E.MemoryNotFound("x")) == (404, "memory_not_found")
    assert status_and_code(E.StoreUnavailable("x")) == (503, "store_unavailable")
    assert status_and_code(E.InvalidInput("x")) == (422, "invalid_input")
    assert isinstance(error_from_wire(413, {"error": {"code": "request_too_large", "message": "m"}}), E.InvalidInput)
    assert isinstance(error_from_wire(502, "<html>bad gateway</html>"), E.RippleError)
    assert HTTP_CODES[401] == "unauthorized"


def test_unexpected_exception_is_500_without_details(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from ripple import AsyncMemory
    from ripple.server.app import create_app

    class Broken(AsyncMemory):
        async def get_all(self, **_: Any) -> Any:
            raise RuntimeError("secret detail: /etc/passwd")

    mem = Broken(path=str(tmp_path / "s"))  # no model is needed: the models load on first use
    with TestClient(create_app(mem, warm=False, close=True), raise_server_exceptions=False) as client:
        for _ in range(100):
            if client.get("/health/ready").status_code == 200:
                break
            time.sleep(0.05)
        r = client.get("/v1/users/u1/memories")
    assert r.status_code == 500
    body = r.json()["error"]
    assert body["code"] == "internal_error" and "secret" not in r.text and "Traceback" not in r.text
    assert body["message"].startswith("internal error (incident ")


def test_failed_start_is_reported_not_hidden(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from ripple import AsyncMemory
    from ripple.server.app import create_app

    class Unreachable(AsyncMemory):
        async def stats(self, **_: Any) -> Any:
            raise E.StoreUnavailable("cannot connect to bolt://10.0.0.9:7687")

    with TestClient(create_app(Unreachable(path=str(tmp_path / "s")), close=True)) as client:
        for _ in range(200):
            ready = client.get("/health/ready")
            if ready.json()["status"] != "starting":
                break
            time.sleep(0.05)
        api = client.get("/v1/users/u1/stats")
    assert ready.status_code == 503 and ready.json()["status"] == "failed"
    assert ready.json()["error"] == {"code": "store_unavailable", "message": "cannot connect to bolt://10.0.0.9:7687"}
    assert api.status_code == 503 and api.json()["error"]["code"] == "not_ready"
    assert api.headers["retry-after"] == "1"


def test_warm_users_are_loaded_before_ready(tmp_path: Path) -> None:
    """``create_app(warm_users=...)`` (``ripple serve --warm-user``) warms each user before reporting ready,
    and a user that cannot be warmed is a failed start that says why."""
    from fastapi.testclient import TestClient

    from ripple import AsyncMemory
    from ripple.server.app import create_app

    class Recording(AsyncMemory):
        warmed: list[str] = []

        async def warm(self, *, user_id: str) -> None:
            if user_id == "bad user":
                raise E.InvalidInput("user_id 'bad user' is not valid")
            self.warmed.append(user_id)
            await super().warm(user_id=user_id)

    for users, status in ((("u1", "用户甲"), "ready"), (("u1", "bad user"), "failed")):
        mem = Recording(path=str(tmp_path / f"s{len(users)}{status}"))
        mem.warmed = []
        with TestClient(create_app(mem, warm=False, warm_users=users, close=True)) as client:
            for _ in range(200):
                ready = client.get("/health/ready").json()
                if ready["status"] != "starting":
                    break
                time.sleep(0.05)
        assert ready["status"] == status, ready
        assert mem.warmed == (list(users) if status == "ready" else ["u1"])


# -- graceful shutdown --------------------------------------------------------------------------------
@pytest.mark.slow
def test_sigterm_during_add_many_finishes_the_write(tmp_path: Path, embedder: Any, extractor: Any) -> None:
    store = str(tmp_path / "store")
    items = [{"text": f"Note {n}: Dana Whitfield asked about invoice {1000 + n} for Northwind.", "session_id": "s1"}
             for n in range(60)] + [{"text": "张伟周五把合同寄给阿里巴巴。", "session_id": "s2"}]
    answer: dict[str, Any] = {}

    with ripple_process(store, ["serve", "--graceful-timeout", "120"], log=tmp_path / "server.log") as server:
        def post() -> None:
            try:
                answer["response"] = httpx.post(f"{server.url}/v1/users/u1/memories/batch", json={"items": items},
                                                timeout=300)
            except Exception as exc:  # noqa: BLE001 - reported by the asserts below
                answer["error"] = exc

        writer = threading.Thread(target=post)
        writer.start()
        deadline = time.monotonic() + 60
        while httpx.get(f"{server.url}/health/ready").json()["in_flight_writes"] < 1:
            assert time.monotonic() < deadline, "the add_many never started"
            time.sleep(0.02)
        status = server.stop(timeout=300)  # SIGTERM while the write runs
        writer.join(60)
        log = server.log_text()

    assert "error" not in answer, answer.get("error")
    response = answer["response"]
    assert response.status_code == 201, response.text
    stored = response.json()
    assert len(stored) == len(items)
    assert status == 0, log[-2000:]
    assert "Waiting for connections to close" in log  # the request was still running at SIGTERM
    assert "stopped (in-flight writes finished)" in log
    from ripple import Memory

    with Memory(path=store, embedder=embedder, extractor=extractor) as mem:
        kept = mem.get_all(user_id="u1")
    assert {m.id for m in kept} == {m["id"] for m in stored}
    assert any(m.text == "张伟周五把合同寄给阿里巴巴。" for m in kept)


def test_cli_without_a_server_says_so_in_one_line() -> None:
    from ripple.server.process import free_port

    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    for argv, expected in (
        (["recall", "tea", "--user", "u1", "--server", url], f"ripple: error: cannot reach the ripple server at {url}"),
        (["add", "I drink tea.", "--user", "u1", "--server", "ftp://x"], "ripple: error: server URL must be http(s)"),
    ):
        out = subprocess.run([sys.executable, "-m", "ripple.cli", *argv], capture_output=True, text=True,
                             env=child_env(), cwd=ROOT, timeout=60)
        assert out.returncode == 2 and out.stderr.startswith(expected), out.stderr
        assert len(out.stderr.strip().splitlines()) == 1
