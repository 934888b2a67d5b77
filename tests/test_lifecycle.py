"""Memory that stays true over time (issue #5), on every backend: facts that supersede, retractions,
corrections, repeats, hedges, forgetting tiers with injected time, and complete deletion."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

import pytest

from ripple import Memory, RippleSettings
from ripple.errors import InvalidInput, MemoryNotFound
from tests.graphstore.test_neo4j import driver  # noqa: F401  (fixture, used by the neo4j parameter)
from graphstore.testing import entity_degrees, user_entities

pytestmark = pytest.mark.slow

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=timezone.utc)


class Clock:
    """Injected time: tests move it, nothing sleeps."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now.timestamp()

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> Clock:
    return Clock(T0 + timedelta(days=1))


@pytest.fixture(params=["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def mem(request: pytest.FixtureRequest, tmp_path: Path, embedder: Any, extractor: Any, clock: Clock) -> Iterator[Memory]:
    if request.param == "sqlite":
        m = Memory(path=str(tmp_path / "store"), embedder=embedder, extractor=extractor, clock=clock)
        yield m
        m.close()
        return
    from tests.graphstore.test_neo4j import PASSWORD, URI, wipe

    drv = request.getfixturevalue("driver")
    wipe(drv)
    m = Memory(store=URI, settings=RippleSettings(neo4j_password=PASSWORD), embedder=embedder, extractor=extractor,
               clock=clock)
    try:
        yield m
    finally:
        m.close()
        wipe(drv)


def say(mem: Memory, text: str, day: float, session: str = "s1", user: str = "u1") -> Any:
    (m,) = mem.add(text, user_id=user, session_id=session, at=T0 + timedelta(days=day))
    return m


def test_a_new_value_supersedes_the_old_one_in_english(mem: Memory) -> None:
    old = say(mem, "Our budget for the office move is 50,000 CNY.", 0)
    say(mem, "I booked the movers for the second week of July.", 1)
    new = say(mem, "The budget is now 60k.", 2, session="s2")
    assert mem.get(old.id).status == "superseded"
    assert mem.get(old.id).valid_to == new.at
    assert mem.get(new.id).status == "active"

    ids = [h.memory.id for h in mem.recall("What is the budget?", user_id="u1", k=5).hits]
    assert new.id in ids and old.id not in ids
    both = [h.memory.id for h in mem.recall("What is the budget?", user_id="u1", k=5, include_history=True).hits]
    assert old.id in both and both.index(old.id) + 1 == both.index(new.id)  # side by side, oldest first
    assert [m.id for m in mem.history(new.id)] == [old.id, new.id]
    assert [m.id for m in mem.history(old.id)] == [old.id, new.id]


def test_a_new_value_supersedes_the_old_one_in_chinese(mem: Memory) -> None:
    old = say(mem, "项目预算是五万。", 0)
    new = say(mem, "预算加到六万了。", 3)
    assert mem.get(old.id).status == "superseded" and mem.get(new.id).status == "active"
    hits = mem.recall("预算是多少？", user_id="u1", k=3).hits
    assert hits[0].memory.id == new.id and old.id not in [h.memory.id for h in hits]
    assert [m.id for m in mem.history(new.id)] == [old.id, new.id]


@pytest.mark.parametrize("query,explicit,old_back", [
    ("What was the budget originally?", None, True),  # a question about a change: the replaced value is evidence
    ("预算原本是多少，后来加到多少？", None, True),
    ("What is the budget?", None, False),  # the current value only
    ("预算是多少？", None, False),
    ("What was the budget originally?", False, False),  # the caller's word wins
])
def test_a_question_about_a_change_recalls_what_was_replaced(mem: Memory, query: str, explicit: bool | None,
                                                             old_back: bool) -> None:
    old = say(mem, "项目预算是五万。", 0)
    new = say(mem, "预算加到六万了。", 3)
    assert mem.get(old.id).status == "superseded"
    ids = [h.memory.id for h in mem.recall(query, user_id="u1", k=3, include_history=explicit).hits]
    assert new.id in ids and (old.id in ids) is old_back
    if old_back:
        assert ids.index(old.id) + 1 == ids.index(new.id)  # side by side, oldest first


def test_different_attributes_and_multi_valued_ones_do_not_supersede(mem: Memory) -> None:
    a = say(mem, "The budget is 50,000 CNY.", 0)
    b = say(mem, "The deadline is March 3.", 1)
    c = say(mem, "I love hiking.", 2)
    d = say(mem, "I love sushi.", 3)
    assert all(mem.get(m.id).status == "active" for m in (a, b, c, d))


def test_retraction_by_message_in_english(mem: Memory) -> None:
    plan = say(mem, "Let's plan a weekend trip to Lisbon in May.", 0)
    other = say(mem, "My sister Ada is visiting from Lagos next week.", 0.5)
    (retraction,) = mem.add("Never mind, drop the Lisbon plan.", user_id="u1", session_id="s1",
                            at=T0 + timedelta(days=1))
    assert mem.get(plan.id).status == "invalidated"
    assert mem.get(other.id).status == "active"
    assert retraction.metadata["ripple"]["retracts"] == plan.id  # the choice is visible
    assert "reason" in retraction.metadata["ripple"]
    ids = [h.memory.id for h in mem.recall("trip to Lisbon", user_id="u1", k=5).hits]
    assert plan.id not in ids
    assert plan.id not in [h.memory.id for h in mem.recall("trip to Lisbon", user_id="u1", k=5,
                                                           include_history=True).hits]
    exported = {r["id"]: r for r in mem.export(user_id="u1") if r["type"] == "memory"}
    assert exported[plan.id]["status"] == "invalidated"  # kept until deleted
    edges = [r for r in mem.export(user_id="u1") if r["type"] == "edge" and r["edge"] == "RETRACTS"]
    assert [(e["src"], e["dst"]) for e in edges] == [(retraction.id, plan.id)]


def test_retraction_by_message_in_chinese(mem: Memory) -> None:
    say(mem, "我叫李雷。", 0, session="s0")
    plan = say(mem, "我想这个周末去爬山。", 1)
    (retraction,) = mem.add("算了，不要了。", user_id="u1", session_id="s1", at=T0 + timedelta(days=1, hours=1))
    assert mem.get(plan.id).status == "invalidated"
    assert retraction.metadata["ripple"]["retracts"] == plan.id
    assert plan.id not in [h.memory.id for h in mem.recall("周末爬山", user_id="u1", k=5).hits]


def test_retraction_inside_one_batch(mem: Memory) -> None:
    items = [
        {"text": "Remind me to call the bank about the mortgage.", "user_id": "u1", "session_id": "s1",
         "at": T0},
        {"text": "Forget that.", "user_id": "u1", "session_id": "s1", "at": T0 + timedelta(minutes=1)},
    ]
    first, second = mem.add_many(items)
    assert mem.get(first.id).status == "invalidated"
    assert second.metadata["ripple"]["retracts"] == first.id


@pytest.mark.parametrize(("question", "reply", "own"), [
    ("陈浩: 哈哈有道理。你日本签证下来了吗", "林晓雨: 别提了，日本去不成了", "林晓雨: 我国庆打算去日本玩一周"),
    ("Jon: Did your visa for Japan come through?", "Gina: Forget it, Japan is off.", "Gina: I'm going to Japan in May."),
])
def test_a_retraction_answering_another_speaker_takes_back_nothing(mem: Memory, question: str, reply: str,
                                                                   own: str) -> None:
    """One takes back only one's own words: "别提了" / "forget it" said to another speaker's message
    answers it; neither that message nor the speaker's own earlier one is invalidated, and the reply
    stays a statement.  Said after the speaker's own message, it still retracts it."""
    mine = say(mem, own, 0)
    asked = say(mem, question, 0.01)
    (answer,) = mem.add(reply, user_id="u1", session_id="s1", at=T0 + timedelta(days=0.02))
    assert mem.get(asked.id).status == "active" and mem.get(mine.id).status == "active"
    assert answer.kind != "retraction" and answer.metadata["ripple"]["retracts"] is None
    assert "not the speaker's" in answer.metadata["ripple"]["reason"]
    assert not [r for r in mem.export(user_id="u1") if r["type"] == "edge" and r["edge"] == "RETRACTS"]
    said = mem.add(own, user_id="u2", session_id="s3", at=T0 + timedelta(days=2))[0]
    (taken,) = mem.add(reply, user_id="u2", session_id="s3", at=T0 + timedelta(days=2.01))
    assert mem.get(said.id).status == "invalidated" and taken.metadata["ripple"]["retracts"] == said.id


def test_a_retraction_naming_its_object_takes_back_the_speakers_own_statement(mem: Memory) -> None:
    theirs = say(mem, "Jon: The Lisbon plan is on for May.", 0)
    mine = say(mem, "Gina: Let's plan a weekend in Lisbon.", 0.01)
    (retraction,) = mem.add("Gina: Never mind, drop the Lisbon plan.", user_id="u1", session_id="s1",
                            at=T0 + timedelta(days=0.02))
    assert retraction.metadata["ripple"]["retracts"] == mine.id
    assert mem.get(theirs.id).status == "active" and mem.get(mine.id).status == "invalidated"


def test_a_correction_supersedes_what_it_corrects(mem: Memory) -> None:
    wrong = say(mem, "The design review with Northwind is on Monday.", 0)
    fixed = say(mem, "No, I meant Tuesday.", 0.01)
    assert mem.get(wrong.id).status == "superseded"
    assert fixed.kind == "correction" and fixed.metadata["ripple"]["corrects"] == wrong.id
    hits = mem.recall("When is the Northwind design review?", user_id="u1", k=3).hits
    assert hits[0].memory.id == fixed.id and wrong.id not in [h.memory.id for h in hits]
    assert [m.id for m in mem.history(fixed.id)] == [wrong.id, fixed.id]


def _agent_says(mem: Memory, text: str, day: float, agent: bool) -> Any:
    """A turn as ripple.agent writes the assistant's: "assistant: ..." with metadata role "assistant"."""
    (m,) = mem.add(f"assistant: {text}", user_id="u1", session_id="s1", at=T0 + timedelta(days=day),
                   metadata={"role": "assistant"} if agent else {})
    return m


@pytest.mark.parametrize("batch", [False, True], ids=["one-by-one", "add_many"])
def test_the_agents_turns_neither_replace_nor_are_replaced(mem: Memory, batch: bool) -> None:
    """An agent's replies are suggestions and sums about many things, not the user's facts: two of them with
    another value of one attribute both stay, and a user's answer to the agent's question corrects nothing of
    it.  Without the role the same texts are one speaker's statements, and the later replaces the earlier."""
    texts = [("The flight to Kunming is about 1,300 yuan one way.", True),
             ("The flight to Kunming is now about 1,600 yuan one way.", True)]
    if batch:
        written = mem.add_many([{"text": f"assistant: {t}", "user_id": "u1", "session_id": "s1",
                                 "at": T0 + timedelta(days=k), "metadata": {"role": "assistant"}}
                                for k, (t, _) in enumerate(texts)])
    else:
        written = [_agent_says(mem, t, k, agent) for k, (t, agent) in enumerate(texts)]
    assert [mem.get(m.id).status for m in written] == ["active", "active"]
    asked = _agent_says(mem, "So you leave on Monday, April 30?", 3, agent=True)
    answer = say(mem, "No, I meant Tuesday.", 3.01)
    assert mem.get(asked.id).status == "active" and answer.metadata["ripple"].get("corrects") is None
    # the same texts as a person's (no role): a change, and a correction of the question
    plain = [_agent_says(mem, t.replace("Kunming", "Dali"), 5 + k, agent=False) for k, (t, _) in enumerate(texts)]
    assert mem.get(plain[0].id).status == "superseded"


@pytest.mark.parametrize("batch", [False, True], ids=["one-by-one", "add_many"])
@pytest.mark.parametrize("texts", [
    # "不对不对，牙医是两点半" corrects the appointment, not the errand said after it: the latest of the session's
    # last messages that holds a value of the kind the correction states (a time)
    ["明天牙医约的下午两点", "洗完牙顺便带咪咪去打疫苗", "不对不对，牙医是两点半，刚看错短信了"],
    # both earlier messages name a day: the correction corrects the one it shares a word with (张姐), not the
    # latest, which stays true
    ["张姐周三休息", "钟点工周五来", "说错了，张姐是周四休"],
], ids=["skips-a-message-without-a-value", "takes-the-message-it-shares-a-word-with"])
def test_a_correction_corrects_the_message_it_is_about(mem: Memory, batch: bool, texts: list[str]) -> None:
    items = [{"text": t, "user_id": "u1", "session_id": "s1", "at": T0 + timedelta(minutes=3 * n)}
             for n, t in enumerate(texts)]
    written = mem.add_many(items) if batch else [mem.add(**item)[0] for item in items]
    assert [mem.get(m.id).status for m in written] == ["superseded", "active", "active"]
    assert mem.get(written[2].id).metadata["ripple"]["corrects"] == written[0].id


def test_an_admitted_slip_followed_by_a_value_corrects(mem: Memory) -> None:
    wrong = say(mem, "Piano tuner's coming Thursday the 10th", 0)
    fixed = say(mem, "oops, Friday the 11th, misread my diary", 0.002)
    assert mem.get(wrong.id).status == "superseded"
    assert fixed.kind == "correction" and fixed.metadata["ripple"]["corrects"] == wrong.id


def test_a_repeated_statement_reinforces_instead_of_duplicating(mem: Memory) -> None:
    first = say(mem, "I live in Berlin with my partner Sam.", 0)
    again = say(mem, "I live in Berlin with my partner Sam.", 5, session="s2")
    assert again.id == first.id and again.mentions == 2
    assert again.last_seen == T0 + timedelta(days=5)
    assert len(mem.get_all(user_id="u1")) == 1
    # a statement carrying a fact repeats too (its value entity is one of the shared entities)
    fact = say(mem, "Our budget is 50,000 CNY.", 5.5)
    assert say(mem, "Our budget is 50,000 CNY.", 5.6).id == fact.id
    # a different number is a different statement, not a repeat
    say(mem, "Order 12 shipped on Monday.", 6)
    say(mem, "Order 21 shipped on Monday.", 6.1)
    assert len(mem.get_all(user_id="u1")) == 4


def test_a_rewritten_memory_keeps_its_vectors_and_only_it_is_read_with_them(mem: Memory) -> None:
    """The decisions read stored memories without their vectors; a memory the batch rewrites (superseded,
    reinforced) gets them back before the write, so the rewrite keeps what its text was encoded to."""
    old = say(mem, "Our budget for the office move is 50,000 CNY.", 0)
    same = say(mem, "I live in Berlin with my partner Sam.", 0.5)
    order = say(mem, "Order 12 shipped on Monday.", 0.7)
    say(mem, "I booked the movers for the second week of July.", 1)
    store = mem.store
    before = {r.id: r for r in store.get_memories([old.id, same.id], with_vectors=True)}
    asked: list[tuple[list[str], bool]] = []
    real = store.get_memories

    def spy(ids: Any, *, with_vectors: bool = False) -> Any:
        asked.append((list(ids), with_vectors))
        return real(ids, with_vectors=with_vectors)

    def said(text: str, day: float) -> tuple[Any, list[tuple[list[str], bool]]]:
        asked.clear()
        store.get_memories = spy  # type: ignore[method-assign]
        try:
            return say(mem, text, day, session="s2"), list(asked)
        finally:
            del store.get_memories

    # a near-duplicate candidate that is not a repeat (another number): read, not rewritten, no vectors
    other, reads = said("Order 21 shipped on Monday.", 1.5)
    assert other.id != order.id and any(order.id in ids for ids, _ in reads)
    assert not [ids for ids, vectors in reads if vectors]
    new, reads = said("The budget is now 60k.", 2)
    assert mem.get(old.id).status == "superseded"
    assert [ids for ids, vectors in reads if vectors] == [[old.id]]  # the rewritten memory alone
    again, reads = said("I live in Berlin with my partner Sam.", 3)
    assert again.id == same.id and again.mentions == 2
    assert [ids for ids, vectors in reads if vectors] == [[same.id]]
    after = {r.id: r for r in store.get_memories([old.id, same.id], with_vectors=True)}
    for mid in (old.id, same.id):
        assert after[mid].embedding is not None and after[mid].token_vectors is not None
        assert (after[mid].embedding, after[mid].token_vectors) == (before[mid].embedding, before[mid].token_vectors)
    assert old.id in [h.memory.id for h in mem.recall("What is the budget?", user_id="u1", k=5,
                                                      include_history=True).hits]
    assert new.id in [h.memory.id for h in mem.recall("What is the budget?", user_id="u1", k=5).hits]


def test_a_repeat_of_a_memory_deleted_while_its_batch_decides_does_not_fail(mem: Memory) -> None:
    """Another client deletes the memory a new one repeats between the decisions and the read of its
    vectors: the add still answers (the memory is written back as the decisions left it, as before)."""
    first = say(mem, "I live in Berlin with my partner Sam.", 0)
    store = mem.store
    real = store.get_memories

    def deleting(ids: Any, *, with_vectors: bool = False) -> Any:
        if with_vectors:
            store.delete_memories(list(ids))
        return real(ids, with_vectors=with_vectors)

    store.get_memories = deleting  # type: ignore[method-assign]
    try:
        again = say(mem, "I live in Berlin with my partner Sam.", 1, session="s2")
    finally:
        del store.get_memories
    assert again.id == first.id and again.mentions == 2
    assert mem.get(first.id).mentions == 2


def test_a_retraction_whose_target_is_deleted_while_it_decides_does_not_fail(mem: Memory) -> None:
    """Another client deletes the memory a retraction's words point at between the vector search that found it
    and the read of its record: the retraction is written, with nothing to take back, instead of failing."""
    plan = say(mem, "The plan is to launch the pop-up shop in Lisbon in May.", 0)
    store = mem.store
    real = store.get_memories

    def deleting(ids: Any, *, with_vectors: bool = False) -> Any:
        if plan.id in ids:
            store.delete_memories([plan.id])
        return real(ids, with_vectors=with_vectors)

    store.get_memories = deleting  # type: ignore[method-assign]
    try:
        (taken,) = mem.add("Never mind, drop the plan.", user_id="u1", session_id="s2", at=T0 + timedelta(days=1))
    finally:
        del store.get_memories
    assert taken.kind == "retraction" and taken.status == "active"
    note = taken.metadata["ripple"]
    assert note["retracts"] is None and note["reason"] == "no memory close enough to 'the plan'"


def test_a_hedged_statement_is_kept_at_low_confidence_and_repetition_raises_it(mem: Memory) -> None:
    hedged = say(mem, "I know a bit of Rust.", 0)
    sure = say(mem, "I work at Northwind Traders.", 0.1)
    assert hedged.confidence < 0.7 and sure.confidence == 1.0
    zh = say(mem, "我了解一点日语，可能不太好。", 0.2)
    assert zh.confidence < 0.7
    again = say(mem, "I know a bit of Rust.", 3, session="s2")
    assert again.id == hedged.id and again.confidence > hedged.confidence
    hit = next(h for h in mem.recall("Rust programming", user_id="u1", k=3).hits if h.memory.id == hedged.id)
    assert hit.parts.confidence == again.confidence


def test_forgetting_tiers_change_scores_as_time_passes(mem: Memory, clock: Clock) -> None:
    from ripple import RecallConfig, TierConfig

    defaults = TierConfig()
    assert 0 < defaults.frozen_weight <= defaults.cold_weight < defaults.warm_weight == 1.0
    steep = TierConfig(cold_weight=0.8, frozen_weight=0.6)
    mem.config = RecallConfig().model_copy(update={"merge": RecallConfig().merge.model_copy(update={"tiers": steep})})
    note = say(mem, "The storage unit code is 4471.", 0)
    pinned = say(mem, "My blood type is O negative.", 0)
    mem.pin(pinned.id)
    scores, tiers = [], []
    for days in (2, 20, 45, 120):
        clock.now = T0 + timedelta(days=days)
        hit = next(h for h in mem.recall("storage unit code", user_id="u1", k=2, touch=False).hits
                   if h.memory.id == note.id)
        scores.append(hit.score)
        tiers.append(hit.parts.tier)
    assert tiers == ["hot", "warm", "cold", "frozen"]
    assert scores[0] == pytest.approx(scores[1]) and scores[1] > scores[2] > scores[3]
    hit = next(h for h in mem.recall("blood type", user_id="u1", k=2, touch=False).hits if h.memory.id == pinned.id)
    assert hit.parts.tier == "hot"
    assert mem.maintain(user_id="u1")["frozen"] == 1 and mem.maintain(user_id="u1")["pinned"] == 1
    # a recall is a use: the hit is hot again
    mem.recall("storage unit code", user_id="u1", k=1)
    hit = next(h for h in mem.recall("storage unit code", user_id="u1", k=2, touch=False).hits
               if h.memory.id == note.id)
    assert hit.parts.tier == "hot" and hit.score > scores[3]


def test_forget_by_id_and_by_query(mem: Memory) -> None:
    a = say(mem, "The alarm code for the studio is 1234.", 0)
    b = say(mem, "Dana from procurement prefers email over calls.", 1)
    gone = mem.forget(query="studio alarm code", user_id="u1")
    assert gone.id == a.id and gone.status == "invalidated"
    assert a.id not in [h.memory.id for h in mem.recall("alarm code", user_id="u1", k=5).hits]
    assert mem.forget(b.id).status == "invalidated"
    with pytest.raises(InvalidInput):
        mem.forget()
    with pytest.raises(InvalidInput):
        mem.forget(query="x")
    with pytest.raises(MemoryNotFound):
        mem.forget("m_missing")


def test_delete_all_leaves_nothing_of_that_user(mem: Memory) -> None:
    say(mem, "Dana Whitfield is the procurement lead at Northwind.", 0)
    say(mem, "The budget is 50,000 CNY.", 1)
    say(mem, "The budget is now 60k.", 2)
    say(mem, "Forget that.", 2.1)
    say(mem, "我叫张伟，我在北京工作。", 3, session="s9")
    say(mem, "Dana likes the Lisbon office.", 0, user="u2")
    counts = mem.delete_all(user_id="u1")
    assert counts["memories"] == 5 and counts["entities"] > 0 and counts["edges"] > 0
    stats = mem.stats(user_id="u1")
    assert {k: v for k, v in stats.items() if k != "bytes_on_disk"} == {
        k: 0 for k in stats if k != "bytes_on_disk"}
    assert list(mem.users()) == ["u2"]
    store = mem.store
    assert store.lexical_stats("u1", ["budget", "dana", "北京"]) == (0, 0.0, {})
    assert user_entities(store, "u1") == [] and store.get_entities("u1", ["dana whitfield", "~dana", "@self"]) == []
    from ripple.embedding import default_embedder

    assert store.nearest_memories("u1", default_embedder().encode(["budget"])[0], 5) == []
    if hasattr(store, "cypher"):  # Neo4j: not one node or relationship of u1, of any label or type
        _, rows = store.cypher("MATCH (n) WHERE n.user_id = 'u1' RETURN count(n)")
        assert rows == [[0]]
        _, rows = store.cypher("MATCH ()-[r]->() WHERE r.user_id = 'u1' RETURN count(r)")
        assert rows == [[0]]
    else:  # SQLite: no row of u1 in any table
        db = store._db  # noqa: SLF001 - checking behind the store's back is the point
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall():
            cols = [c[1] for c in db.execute(f"PRAGMA table_info({table})")]
            if "user_id" in cols:
                assert db.execute(f"SELECT count(*) FROM {table} WHERE user_id='u1'").fetchone()[0] == 0, table
    assert mem.get_all(user_id="u2")[0].text == "Dana likes the Lisbon office."
    assert json.dumps(list(mem.export(user_id="u2")))


def test_name_variants_resolve_to_one_entity_and_the_merge_is_recorded(mem: Memory) -> None:
    say(mem, "Dana Whitfield is the procurement lead at Northwind.", 0)
    say(mem, "Dana said the budget review moves to Friday.", 1)
    say(mem, "Ms Whitfield approved the purchase order.", 2, session="s2")
    say(mem, "Ms. Whitfield wants the invoice by Monday.", 3, session="s2")
    ents = [e for e in user_entities(mem.store, "u1") if e.label == "PERSON"]
    degrees = entity_degrees(mem.store, [e.id for e in ents])
    people = [(e, degrees[e.id]) for e in ents]
    assert [(e.key, n) for e, n in people] == [("dana whitfield", 4)]
    assert {"dana", "whitfield"} <= set(people[0][0].aliases)  # how each variant was merged
    role = mem.store.related_edges("u1", [people[0][0].id], ["role"])
    assert [mem.store.entity_names([r.dst])[r.dst] for r in role] == ["procurement lead"]
