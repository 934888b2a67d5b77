"""The LangGraph store against the real ``langgraph`` package: a graph that remembers across threads,
and the BaseStore contract (get/put/delete/search/list_namespaces) on ripple's scopes."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

import anyio
import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore, InvalidNamespaceError, SearchOp

from ripple import AsyncMemory, InvalidInput, Memory
from ripple.integrations.langgraph import RippleStore

pytestmark = pytest.mark.slow


class Turn(TypedDict, total=False):
    user: str
    message: str
    recalled: list[str]


def agent_step(state: Turn, runtime: Runtime) -> dict[str, Any]:
    """A plain-Python agent step (no LLM): "remember: ..." stores, anything else recalls."""
    store = runtime.store
    assert store is not None
    ns = (state["user"], "assistant")
    text = state["message"]
    if text.startswith("remember:"):
        fact = text.removeprefix("remember:").strip()
        store.put(ns, f"k{abs(hash(fact))}", {"text": fact, "source": "chat"})
        return {"recalled": []}
    return {"recalled": [item.value["text"] for item in store.search((state["user"],), query=text, limit=3)]}


def _graph(store: BaseStore) -> Any:
    builder = StateGraph(Turn)
    builder.add_node("agent", agent_step)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    return builder.compile(store=store, checkpointer=InMemorySaver())


def test_graph_remembers_across_threads(mem: Memory) -> None:
    graph = _graph(RippleStore(mem))
    for thread, message in (("t1", "remember: My favourite tea is Longjing from Hangzhou."),
                            ("t1", "remember: I am allergic to peanuts."),
                            ("t2", "remember: 我叫张伟，在北京的阿里巴巴工作。")):
        graph.invoke({"user": "u1", "message": message}, {"configurable": {"thread_id": thread}})
    # a new thread (a new conversation, no shared checkpoint) recalls what the others stored
    out = graph.invoke({"user": "u1", "message": "Which tea do I like?"}, {"configurable": {"thread_id": "t3"}})
    assert "Longjing" in out["recalled"][0]
    out = graph.invoke({"user": "u1", "message": "张伟在哪里工作？"}, {"configurable": {"thread_id": "t4"}})
    assert "阿里巴巴" in out["recalled"][0]
    # another user's thread sees nothing of u1's
    graph.invoke({"user": "u2", "message": "remember: I drink coffee, black."}, {"configurable": {"thread_id": "t5"}})
    out = graph.invoke({"user": "u2", "message": "Which tea do I like?"}, {"configurable": {"thread_id": "t6"}})
    assert all("Longjing" not in t and "peanut" not in t for t in out["recalled"])
    # the stored memories carry the namespace's scopes
    assert {m.agent_id for m in mem.get_all(user_id="u1")} == {"assistant"}


def test_graph_async_over_async_memory(tmp_path: Path, embedder, extractor) -> None:
    async def main() -> tuple[list[str], list[str]]:
        async with AsyncMemory(path=str(tmp_path / "a"), embedder=embedder, extractor=extractor) as amem:
            store = RippleStore(amem)
            builder = StateGraph(Turn)

            async def step(state: Turn, runtime: Runtime) -> dict[str, Any]:
                assert runtime.store is not None
                if state["message"].startswith("remember:"):
                    await runtime.store.aput((state["user"],), "budget", {"text": state["message"][9:].strip()})
                    return {"recalled": []}
                hits = await runtime.store.asearch((state["user"],), query=state["message"], limit=2)
                return {"recalled": [h.value["text"] for h in hits]}

            builder.add_node("agent", step)
            builder.add_edge(START, "agent")
            graph = builder.compile(store=store, checkpointer=InMemorySaver())
            await graph.ainvoke({"user": "u1", "message": "remember: 项目预算是五万元。"}, {"configurable": {"thread_id": "a"}})
            zh = (await graph.ainvoke({"user": "u1", "message": "预算是多少？"}, {"configurable": {"thread_id": "b"}}))["recalled"]
            with pytest.raises(Exception, match="abatch only"):
                store.get(("u1",), "budget")  # the sync API over an AsyncMemory says what to use instead
            item = await store.aget(("u1",), "budget")
            assert item is not None and item.value == {"text": "项目预算是五万元。"}
            return zh, [item.value["text"]]

    zh, got = anyio.run(main)
    assert "五万" in zh[0] and got == ["项目预算是五万元。"]


def test_store_contract_on_ripple_scopes(mem: Memory) -> None:
    store = RippleStore(mem)
    ns = ("u1", "planner", "s1")
    store.put(ns, "deadline", {"text": "Bluebird must ship before the fourteenth of June.", "priority": 2})
    store.put(ns, "client", {"content": "Dana Whitfield runs procurement at Northwind Traders.", "priority": 1})
    store.put(("u1", "planner", "s2"), "lisbon", {"memory": "We might open an office in Lisbon.", "priority": 3})

    item = store.get(ns, "deadline")
    assert item is not None and item.value == {"text": "Bluebird must ship before the fourteenth of June.", "priority": 2}
    assert item.namespace == ns and item.key == "deadline"
    assert store.get(("u1", "planner", "s2"), "deadline") is None  # keys live in their namespace
    assert store.get(("u2",), "deadline") is None  # and in their user
    assert {(m.agent_id, m.session_id) for m in mem.get_all(user_id="u1")} == {("planner", "s1"), ("planner", "s2")}

    # search with a query runs ripple recall inside the prefix; without one it lists
    hits = store.search(("u1", "planner"), query="When does Bluebird ship?", limit=2)
    assert hits[0].key == "deadline" and hits[0].score is not None
    assert [h.key for h in store.search(("u1", "planner", "s2"), query="When does Bluebird ship?")] == ["lisbon"]
    assert {h.key for h in store.search(("u1",))} == {"deadline", "client", "lisbon"}
    assert [h.key for h in store.search(("u1",), filter={"priority": {"$gte": 2}}, limit=10)] == ["lisbon", "deadline"]
    assert [h.key for h in store.search(("u1",), filter={"priority": 1})] == ["client"]
    assert len(store.search(("u1",), limit=1, offset=1)) == 1

    # put over an existing key changes that memory in place (same id, new text)
    before = {m.id for m in mem.get_all(user_id="u1")}
    store.put(ns, "deadline", {"text": "Bluebird now ships on the first of July.", "priority": 2})
    assert {m.id for m in mem.get_all(user_id="u1")} == before
    assert store.get(ns, "deadline").value["text"] == "Bluebird now ships on the first of July."  # type: ignore[union-attr]
    assert "July" in store.search(("u1",), query="When does Bluebird ship?", limit=1)[0].value["text"]

    # namespaces as far as ripple knows them
    assert store.list_namespaces() == [("u1", "planner", "s1"), ("u1", "planner", "s2")]
    assert store.list_namespaces(suffix=("s2",)) == [("u1", "planner", "s2")]
    assert store.list_namespaces(prefix=("u1", "*"), max_depth=2) == [("u1", "planner")]

    store.delete(ns, "client")
    assert store.get(ns, "client") is None
    assert len(mem.get_all(user_id="u1")) == 2


def test_repeats_refusals_and_foreign_memories(mem: Memory) -> None:
    store = RippleStore(mem)
    store.put(("u1",), "a", {"text": "I am allergic to peanuts."})
    store.put(("u1",), "b", {"text": "I am allergic to peanuts."})  # a repeat reinforces one memory
    assert len(mem.get_all(user_id="u1")) == 1
    assert store.get(("u1",), "a") is not None and store.get(("u1",), "b") is not None
    store.delete(("u1",), "a")
    assert store.get(("u1",), "a") is None and store.get(("u1",), "b") is not None
    assert len(mem.get_all(user_id="u1")) == 1

    with pytest.raises(InvalidInput, match="nothing to remember"):
        store.put(("u1",), "c", {"text": "ok thanks"})
    with pytest.raises(InvalidNamespaceError):
        store.put((), "d", {"text": "no user"})
    with pytest.raises(InvalidInput, match="needs the user"):
        store.batch([SearchOp((), query="peanuts")])

    # a memory stored through the Python API is an item of (user_id,), keyed by its id
    (m,) = mem.add("Dana Whitfield runs procurement at Northwind Traders.", user_id="u1", session_id="s9")
    item = store.get(("u1",), m.id)
    assert item is not None and item.value["text"] == m.text
    assert m.id in {h.key for h in store.search(("u1",), query="Who handles purchasing at Northwind?")}
    # an unknown user has no items, whatever ripple says about unknown users
    assert store.get(("nobody",), "x") is None and store.search(("nobody",), query="tea") == []
