"""End-to-end tests of the public API with the real models on the embedded store."""

from __future__ import annotations

import json
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest

from ripple import (
    AsyncMemory,
    ExtractionError,
    InvalidInput,
    Memory,
    MemoryNotFound,
    RecallConfig,
    RippleError,
)

pytestmark = pytest.mark.slow

# The deadline is said of a code name ("it" = Project Bluebird) in the turn right
# after the one that ties the code name to the client.  The question names the
# client: the answer shares no content word with it and is two hops away
# (client -> the turn naming the code name -> the next turn), while other turns
# merely *sound* like the question.
TWO_HOP = [
    ("Internally we call the Northwind rebrand Project Bluebird.", "s1"),
    ("Bluebird has to ship before the fourteenth of June.", "s1"),
    ("The team had pizza on Friday.", "s2"),
    ("Is there a due date for the library books? Yes, next Monday.", "s2"),
    ("The deadline for my tax return is at the end of April.", "s3"),
    ("When does the gym close on Sundays? At six, I think.", "s3"),
    ("The dentist moved my appointment to Tuesday morning.", "s4"),
    ("My bike has a flat tyre again.", "s4"),
    ("We bought a large-format printer for poster work.", "s5"),
    ("The printer dealer is in Utrecht.", "s5"),
    ("My sister is visiting from Lagos next week.", "s6"),
]


def _add_two_hop(mem: Memory) -> None:
    mem.add_many(
        [{"text": t, "user_id": "u1", "session_id": s, "at": datetime(2026, 3, 1 + i)} for i, (t, s) in enumerate(TWO_HOP)]
    )


def test_add_returns_stored_memory_with_round_tripping_fields(mem: Memory) -> None:
    at = datetime(2026, 5, 1, 9, 30, tzinfo=timezone.utc)
    meta = {"source": "chat", "tags": ["a", "b"], "n": 3, "nested": {"x": None, "中": "文"}}
    (m,) = mem.add("Dana runs procurement at Northwind.", user_id="u1", session_id="s1", at=at, metadata=meta)
    assert m.id.startswith("m_") and m.user_id == "u1" and m.session_id == "s1"
    assert m.at == at and m.metadata == meta and m.status == "active"
    got = mem.get(m.id)
    assert got == m
    assert got.metadata == meta and json.dumps(got.metadata) == json.dumps(meta)


def test_naive_datetimes_are_utc(mem: Memory) -> None:
    (m,) = mem.add("The kickoff was in Lisbon.", user_id="u1", at=datetime(2026, 1, 2, 3, 4))
    assert m.at == datetime(2026, 1, 2, 3, 4, tzinfo=timezone.utc)


def test_contentless_turns_are_not_stored(mem: Memory) -> None:
    assert mem.add("ok thanks!", user_id="u1") == []
    assert mem.add("好的", user_id="u1") == []
    stored = mem.add_many([{"text": "嗯嗯", "user_id": "u1"}, {"text": "我叫张伟，在北京工作。", "user_id": "u1"}])
    assert [m.text for m in stored] == ["我叫张伟，在北京工作。"]
    assert stored[0].language == "zh"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"text": "", "user_id": "u1"},
        {"text": "   ", "user_id": "u1"},
        {"text": "x" * 100_001, "user_id": "u1"},
        {"text": "fine", "user_id": ""},
        {"text": "fine", "user_id": 3},
        {"text": 42, "user_id": "u1"},
        {"text": "fine", "user_id": "u1", "metadata": {"f": object()}},
        {"text": "fine", "user_id": "u1", "importance": 3.0},
    ],
)
def test_bad_input_is_a_clear_error_and_writes_nothing(mem: Memory, kwargs: dict) -> None:
    with pytest.raises(InvalidInput):
        mem.add_many([{"text": "a good memory about Lisbon", "user_id": "u1"}, kwargs])
    assert mem.stats()["memories"] == 0


def test_bad_recall_arguments(mem: Memory) -> None:
    mem.add("Dana runs procurement at Northwind.", user_id="u1")
    with pytest.raises(InvalidInput):
        mem.recall("", user_id="u1")
    with pytest.raises(InvalidInput):
        mem.recall("who?", user_id="u1", k=0)
    with pytest.raises(InvalidInput):
        mem.recall("who?", user_id="u1", mode="magic")
    # a user with nothing stored yet is not an error: the first turn of every new user recalls nothing
    empty = mem.recall("who?", user_id="nobody")
    assert empty.hits == () and empty.user_known is False
    assert mem.get_all(user_id="nobody") == [] and list(mem.export(user_id="nobody")) == []
    assert mem.maintain(user_id="nobody")["hot"] == 0
    with pytest.raises(MemoryNotFound):
        mem.get("m_missing")
    with pytest.raises(RippleError):  # one root for everything
        mem.delete("m_missing")


def test_two_hop_answer_found_by_ripple_not_by_flat(mem: Memory) -> None:
    _add_two_hop(mem)
    query = "When is the deadline for the Northwind work?"
    answer = "Bluebird has to ship before the fourteenth of June."
    flat = mem.recall(query, user_id="u1", k=3, mode="flat", touch=False)  # (a touch would warm flat's hits up)
    rip = mem.recall(query, user_id="u1", k=3)
    assert answer not in flat.texts(), "the scenario must stay out of flat's reach"
    assert answer in rip.texts()
    hit = next(h for h in rip.hits if h.memory.text == answer)
    assert hit.via in {"entity", "session"} and hit.path, "a spread hit explains its path"
    assert hit.path[0].source in {h.memory.id for h in rip.hits if h.via == "seed"}
    assert hit.path[-1].target == hit.memory.id
    assert hit.parts.activation > 0
    stages = [s.name for s in rip.trace.stages]
    assert stages[0].startswith("seed") and any(s.startswith("spread") for s in stages)


def test_users_are_isolated(mem: Memory) -> None:
    mem.add("Dana runs procurement at Northwind.", user_id="u1")
    mem.add("Dana is my cat and she hates procurement meetings.", user_id="u2")
    for mode in ("ripple", "flat", "bm25", "hybrid", "ppr"):
        res = mem.recall("Dana procurement", user_id="u1", k=10, mode=mode)
        assert {h.memory.user_id for h in res.hits} == {"u1"}, mode
    assert [m.user_id for m in mem.get_all(user_id="u2")] == ["u2"]


def test_restart_keeps_everything(tmp_path: Path, embedder, extractor) -> None:
    path = str(tmp_path / "s")
    with Memory(path=path, embedder=embedder, extractor=extractor) as m1:
        _add_two_hop(m1)
        before = m1.recall("Northwind deadline", user_id="u1", k=5, touch=False)
    with Memory(path=path, embedder=embedder, extractor=extractor) as m2:
        after = m2.recall("Northwind deadline", user_id="u1", k=5, touch=False)
        assert [h.memory.id for h in after.hits] == [h.memory.id for h in before.hits]
        assert len(m2.get_all(user_id="u1")) == len(TWO_HOP)


def test_concurrent_writers(mem: Memory) -> None:
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(5):
                mem.add(f"Writer {n} noted fact number {i} about Lisbon.", user_id="u1", session_id=f"s{n}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(mem.get_all(user_id="u1")) == 20
    stats = mem.stats(user_id="u1")
    assert stats["edges_next"] == 4 * 4  # each session is one unbroken chain


def test_update_delete_forget_delete_all(mem: Memory) -> None:
    _add_two_hop(mem)
    target = next(m for m in mem.get_all(user_id="u1") if "pizza" in m.text)
    updated = mem.update(target.id, text="The team had sushi in Osaka on Friday.")
    assert updated.id == target.id and "sushi" in updated.text and updated.created_at == target.created_at
    assert mem.recall("sushi Osaka", user_id="u1", k=1).hits[0].memory.id == target.id
    mem.forget(target.id)
    assert target.id not in [h.memory.id for h in mem.recall("sushi Osaka", user_id="u1", k=10).hits]
    assert mem.get(target.id).status == "invalidated"
    mem.delete(target.id)
    with pytest.raises(MemoryNotFound):
        mem.get(target.id)
    counts = mem.delete_all(user_id="u1")
    assert counts["memories"] == len(TWO_HOP) - 1 and counts["entities"] > 0
    assert mem.stats(user_id="u1")["memories"] == 0
    assert mem.get_all(user_id="u1") == [] and mem.recall("Dana?", user_id="u1").user_known is False


def test_recall_counts_access(mem: Memory) -> None:
    _add_two_hop(mem)
    hit = mem.recall("printer dealer", user_id="u1", k=1).hits[0]
    assert mem.get(hit.memory.id).access_count == 1
    mem.recall("printer dealer", user_id="u1", k=1, touch=False)
    assert mem.get(hit.memory.id).access_count == 1


def test_chinese_recall(mem: Memory) -> None:
    mem.add_many(
        [
            {"text": "我叫张伟，在北京的阿里巴巴工作。", "user_id": "zh"},
            {"text": "下个月我们要去上海参加包装设计展。", "user_id": "zh"},
            {"text": "我喜欢喝绿茶。", "user_id": "zh"},
        ]
    )
    res = mem.recall("张伟在哪里工作？", user_id="zh", k=1)
    assert "阿里巴巴" in res.hits[0].memory.text
    res = mem.recall("展会在哪个城市？", user_id="zh", k=1)
    assert "上海" in res.hits[0].memory.text


def test_export_is_jsonl_ready(mem: Memory) -> None:
    _add_two_hop(mem)
    rows = [json.loads(json.dumps(r)) for r in mem.export(user_id="u1")]
    kinds = {r["type"] for r in rows}
    assert kinds == {"memory", "entity", "edge"}
    assert sum(r["type"] == "memory" for r in rows) == len(TWO_HOP)


def test_config_variants_are_frozen_copies(mem: Memory) -> None:
    _add_two_hop(mem)
    base = RecallConfig()
    no_spread = base.model_copy(update={"spread": base.spread.model_copy(update={"channels": ()})})
    res = mem.recall("When is the deadline for the Northwind work?", user_id="u1", k=3, config=no_spread)
    assert all(h.via == "seed" for h in res.hits)
    with pytest.raises(Exception):
        base.seed.pool = 3  # type: ignore[misc]


def test_async_twin_gives_the_same_answers(tmp_path: Path, embedder, extractor) -> None:
    import anyio

    async def main() -> tuple[list[str], list[str]]:
        async with AsyncMemory(path=str(tmp_path / "a"), embedder=embedder, extractor=extractor) as amem:
            await amem.add_many(
                [{"text": t, "user_id": "u1", "session_id": s, "at": datetime(2026, 3, 1 + i)} for i, (t, s) in enumerate(TWO_HOP)]
            )
            res = await amem.recall("When is the deadline for the Northwind work?", user_id="u1", k=3, touch=False)
            return res.texts(), [m.text for m in await amem.get_all(user_id="u1")]

    texts, all_texts = anyio.run(main)
    with Memory(path=str(tmp_path / "a"), embedder=embedder, extractor=extractor) as m:
        same = m.recall("When is the deadline for the Northwind work?", user_id="u1", k=3, touch=False)
    assert texts == same.texts()
    assert len(all_texts) == len(TWO_HOP)


def test_the_async_driver_answers_instant_questions_on_the_loop(tmp_path: Path, embedder, extractor,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Model work goes to a worker thread; a question about the runtime's state (``instant``, such as whether
    a recall encodes beside its first read) is answered on the event loop, without a thread hop."""
    import anyio

    from ripple import _memory
    from ripple._requests import EncodesBeside, PrepareQuery

    threaded: list[type] = []
    real = _memory._thread

    async def counted(fn, *args):  # type: ignore[no-untyped-def]
        threaded.append(type(getattr(fn, "__self__", None)))
        return await real(fn, *args)

    monkeypatch.setattr(_memory, "_thread", counted)

    async def main() -> None:
        async with AsyncMemory(path=str(tmp_path / "a"), embedder=embedder, extractor=extractor) as amem:
            await amem.add("The printer dealer is in Utrecht.", user_id="u1")
            threaded.clear()
            assert (await amem.recall("printer dealer", user_id="u1", k=3, touch=False)).hits

    anyio.run(main)
    assert PrepareQuery in threaded and EncodesBeside not in threaded


def test_maxsim_reranker_scores_every_head_hit(mem: Memory) -> None:
    from ripple import RerankConfig

    _add_two_hop(mem)
    cfg = RecallConfig().model_copy(update={"rerank": RerankConfig(method="maxsim", top_n=5, weight=1.0)})
    res = mem.recall("printer dealer in Utrecht", user_id="u1", k=3, config=cfg)
    assert all(h.parts.rerank is not None for h in res.hits)
    assert res.hits[0].memory.text == "The printer dealer is in Utrecht."
    assert [h.parts.rerank for h in res.hits] == sorted((h.parts.rerank for h in res.hits), reverse=True)
    assert any(s.name == "rerank.maxsim" for s in res.trace.stages)


def test_a_session_chain_follows_the_order_of_turns_across_batches(mem: Memory) -> None:
    """Turns with one event time keep their order in the NEXT chain, also where a second write batch
    continues the session (the session's last turn must not be picked at random among equal times)."""
    from ripple._ingest import new_memory_id

    ids = [new_memory_id() for _ in range(5000)]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    at = datetime(2026, 3, 1, 10, 0)
    texts = [f"Turn {n} of the planning call mentions topic number {n}." for n in range(300)]
    stored = mem.add_many([{"text": t, "user_id": "u1", "session_id": "s1", "at": at} for t in texts])
    assert [m.text for m in stored] == texts
    order = {m.id: n for n, m in enumerate(stored)}
    nexts = sorted((order[e["src"]], order[e["dst"]]) for e in mem.export(user_id="u1")
                   if e["type"] == "edge" and e["edge"] == "NEXT")
    assert nexts == [(n, n + 1) for n in range(299)]


@pytest.mark.parametrize("in_process, thread", [(True, "MainThread"), (False, "ripple-query_0")])
def test_the_store_decides_where_the_query_is_encoded(tmp_path: Path, extractor, in_process: bool, thread: str) -> None:
    """An in-process store (reads hold the GIL) gets the query encoded first, on the caller's
    thread; any other store gets it encoded in a worker thread beside the lexical route, with the
    dense search run there too.  Both rank alike; what the encoder raises reaches the caller
    as an ExtractionError (its cause chained), and close() stops the worker."""
    from graphstore.sqlite import SQLiteStore
    from ripple.embedding import HashEmbedder

    class Recording(HashEmbedder):
        threads: list[str] = []
        fail = False

        def encode_with_tokens(self, texts):  # type: ignore[no-untyped-def]
            if len(texts) == 1 and texts[0].startswith("Where"):
                Recording.threads.append(threading.current_thread().name)
                if Recording.fail:
                    raise RuntimeError("encoder broke")
            return super().encode_with_tokens(texts)

    class Store(SQLiteStore):
        pass

    Store.in_process = in_process
    store = Store(str(tmp_path / "s"))
    mem = Memory(store=store, embedder=Recording(), extractor=extractor)
    try:
        mem.add_many([{"text": t, "user_id": "u"} for t in (
            "Dana moved to Berlin last spring.", "Berlin rents went up again.", "Dana's sister lives in Lyon.")])
        res = mem.recall("Where does Dana live?", user_id="u", k=3)
        assert len(res.hits) == 3 and res.hits[0].memory.text.startswith("Dana") and res.hits[0].parts.dense > 0
        assert Recording.threads == [thread]
        # the worker's dense search is the plan's own: the same ranking as a plan that searches itself
        own = Memory(store=store, embedder=HashEmbedder(), extractor=extractor).recall("Where does Dana live?", user_id="u", k=3)
        assert [(h.memory.id, round(h.parts.dense, 6)) for h in res.hits] == [(h.memory.id, round(h.parts.dense, 6)) for h in own.hits]
        Recording.fail = True
        with pytest.raises(ExtractionError, match="encoder broke") as info:  # typed, the cause chained
            mem.recall("Where does Dana's sister live?", user_id="u", k=1)  # (a new question: one asked before is not encoded again)
        assert isinstance(info.value.__cause__, RuntimeError)
    finally:
        mem.close()
        store.close()
    assert mem._runtime._pools == {}  # (the query worker was stopped)


def test_warm_loads_a_users_vectors_and_changes_no_recall(mem: Memory, embedder, extractor) -> None:
    """``Memory.warm`` (and its async twin) loads what the store keeps for a user's recalls: the embedded
    store's vector index is built before the first recall, which is the recall it would have been; a
    store that keeps nothing (the in-memory reference) warms nothing; a bad user id is a clear error."""
    import anyio

    from ripple import AsyncMemory
    from ripple.errors import InvalidInput

    _add_two_hop(mem)
    want = mem.recall("printer dealer", user_id="u1", k=5, touch=False)
    store = mem.store
    store._vectors.clear()  # type: ignore[attr-defined]
    mem.warm(user_id="u1")
    assert "u1" in store._vectors  # type: ignore[attr-defined]
    got = mem.recall("printer dealer", user_id="u1", k=5, touch=False)
    assert [(h.memory.id, h.score) for h in got.hits] == [(h.memory.id, h.score) for h in want.hits]
    with pytest.raises(InvalidInput):
        mem.warm(user_id="")
    with Memory(store="memory://", embedder=embedder, extractor=extractor) as plain:
        plain.warm(user_id="u1")

    async def twin() -> None:
        async with AsyncMemory(store="memory://", embedder=embedder, extractor=extractor) as amem:
            await amem.add("Dana runs procurement.", user_id="u2")
            await amem.warm(user_id="u2")

    anyio.run(twin)
