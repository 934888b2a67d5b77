"""``ripple mcp`` driven by the MCP SDK's own client: over stdio (a real subprocess the client starts)
and over streamable HTTP (a real server process, behind a bearer token)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from ripple import Memory
from ripple.server.process import ROOT, child_env, ripple_process

pytestmark = pytest.mark.slow

TOOLS = {"remember", "recall", "forget", "what_do_you_know_about", "conflicts", "resolve_conflict"}


def _seed_other_user(store: str, embedder: Any, extractor: Any) -> str:
    """A memory of another user in the same store: the MCP server (one user) must never reach it."""
    with Memory(path=store, embedder=embedder, extractor=extractor) as mem:
        (m,) = mem.add("Mallory's favourite tea is Earl Grey.", user_id="mallory")
    return m.id


def test_stdio_tools_and_profile(tmp_path: Path, embedder: Any, extractor: Any) -> None:
    from mcp import Client, StdioServerParameters

    store = str(tmp_path / "store")
    foreign = _seed_other_user(store, embedder, extractor)
    params = StdioServerParameters(command=sys.executable, cwd=str(ROOT), env=child_env(),
                                   args=["-m", "ripple.cli", "--store", store, "mcp", "--user", "u1"])

    async def session() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with Client(params) as client:
            seen["tools"] = {t.name for t in (await client.list_tools()).tools}
            seen["empty"] = (await client.call_tool("recall", {"query": "tea"})).structured_content
            for text in ("My favourite tea is Longjing from Hangzhou.", "I am allergic to peanuts.",
                         "我叫张伟，在北京的阿里巴巴工作。", "ok thanks"):
                result = await client.call_tool("remember", {"text": text, "session_id": "s1"})
                assert not result.is_error, result.content
                seen.setdefault("remembered", []).append(result.structured_content)
            seen["tea"] = (await client.call_tool("recall", {"query": "Which tea do I like?", "k": 3})).structured_content
            seen["zh"] = (await client.call_tool("what_do_you_know_about", {"topic": "阿里巴巴"})).structured_content
            seen["foreign"] = await client.call_tool("forget", {"memory_id": foreign})
            peanuts = seen["remembered"][1]["stored"][0]["id"]
            seen["forgot"] = (await client.call_tool("forget", {"memory_id": peanuts})).structured_content
            seen["after"] = (await client.call_tool("recall", {"query": "What am I allergic to?"})).structured_content
            seen["bad"] = await client.call_tool("recall", {"query": "   "})
            for text in ("Our budget is 50,000 CNY.", "The budget for the team dinner is 800 CNY."):
                await client.call_tool("remember", {"text": text, "session_id": f"b-{len(text)}"})
            seen["conflicts"] = (await client.call_tool("conflicts", {})).structured_content
            seen["conflict_profile"] = (await client.read_resource("ripple://profile")).contents[0].text  # type: ignore[union-attr]
            (c,) = seen["conflicts"]["conflicts"]
            seen["foreign_resolve"] = await client.call_tool(
                "resolve_conflict", {"new_id": c["new"]["id"], "old_id": foreign, "supersedes": True})
            seen["resolved"] = (await client.call_tool(
                "resolve_conflict", {"new_id": c["new"]["id"], "old_id": c["old"]["id"], "supersedes": False})).structured_content
            seen["again"] = await client.call_tool(
                "resolve_conflict", {"new_id": c["new"]["id"], "old_id": c["old"]["id"], "supersedes": False})
            resources = {str(r.uri) for r in (await client.list_resources()).resources}
            seen["resources"] = resources
            seen["profile"] = (await client.read_resource("ripple://profile")).contents[0].text  # type: ignore[union-attr]
        return seen

    seen = anyio.run(session)
    assert seen["tools"] == TOOLS
    assert seen["empty"] == {"query": "tea", "hits": []}  # a new user: empty, not an error
    assert [len(r["stored"]) for r in seen["remembered"]] == [1, 1, 1, 0]
    assert "small talk" in seen["remembered"][3]["note"]
    assert "Longjing" in seen["tea"]["hits"][0]["text"]
    assert all("Earl Grey" not in h["text"] for h in seen["tea"]["hits"])
    dossier = seen["zh"]["memories"]
    assert max(dossier, key=lambda m: m["score"])["text"] == "我叫张伟，在北京的阿里巴巴工作。"
    assert [m["at"] for m in dossier] == sorted(m["at"] for m in dossier)
    assert seen["foreign"].is_error and "memory_not_found" in seen["foreign"].content[0].text
    assert "Earl Grey" not in seen["foreign"].content[0].text
    assert seen["forgot"]["status"] == "invalidated"
    assert all("peanut" not in h["text"] for h in seen["after"]["hits"])
    assert seen["bad"].is_error and "invalid_input" in seen["bad"].content[0].text
    (c,) = seen["conflicts"]["conflicts"]
    assert (c["old"]["text"], c["new"]["text"]) == ("Our budget is 50,000 CNY.", "The budget for the team dinner is 800 CNY.")
    assert "Unconfirmed changes" in seen["conflict_profile"] and c["old"]["id"] in seen["conflict_profile"]
    assert seen["foreign_resolve"].is_error and "memory_not_found" in seen["foreign_resolve"].content[0].text
    assert seen["resolved"] == {"conflicts": []}
    assert seen["again"].is_error and "invalid_input" in seen["again"].content[0].text
    assert "ripple://profile" in seen["resources"]
    profile = seen["profile"]
    assert "# What ripple knows about u1" in profile and "Longjing" in profile and "阿里巴巴" in profile
    assert "peanut" not in profile and "Earl Grey" not in profile
    with Memory(path=store, embedder=embedder, extractor=extractor) as mem:  # mallory untouched
        assert mem.get(foreign).status == "active"


def test_streamable_http_with_token(tmp_path: Path) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    token = "mcp-test-token"
    command = ["mcp", "--transport", "http", "--user", "u1", "--token", token]
    with ripple_process(str(tmp_path / "store"), command, log=tmp_path / "mcp.log", ready_path="/mcp",
                        any_answer=True) as server:
        refused = httpx.post(f"{server.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"

        async def session() -> tuple[set[str], Any, Any]:
            auth = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120)
            async with auth, Client(streamable_http_client(f"{server.url}/mcp", http_client=auth)) as client:
                tools = {t.name for t in (await client.list_tools()).tools}
                stored = await client.call_tool("remember", {"text": "项目预算是五万元。"})
                found = await client.call_tool("recall", {"query": "预算是多少？"})
                return tools, stored.structured_content, found.structured_content

        tools, stored, found = anyio.run(session)
    assert tools == TOOLS
    assert stored["stored"][0]["text"] == "项目预算是五万元。"
    assert found["hits"][0]["text"] == "项目预算是五万元。"
