"""The graph picture's builder: what is drawn, highlighted and left out (no browser)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from ripple.models import MemoryRecord as MemoryModel, PathStep, RecallHit, RecallResult, RecallTrace, ScoreParts
from ripple.viz import GraphIndex, HitMark, build_graph, hits_from_recall
from ripple.viz.graph import EDGE_KINDS, entity_group, wrap_label

from . import sample


@pytest.fixture
def index() -> GraphIndex:
    return GraphIndex.from_records(sample.records())


def _by_id(items: Any) -> dict[str, dict[str, Any]]:
    return {x["id"]: x for x in items}


def _edge(view: Any, kind: str, a: str, b: str) -> dict[str, Any]:
    found = [e for e in view.edges if e["kind"] == kind and {e["from"], e["to"]} == {a, b}]
    assert len(found) == 1, (kind, a, b, found)
    return found[0]


# ---------------------------------------------------------------- the index


def test_index_drops_vectors_and_dangling_edges(index: GraphIndex) -> None:
    assert len(index.memories) == 8 and len(index.entities) == 13
    assert all("embedding" not in m and "terms" not in m for m in index.memories.values())
    assert not any("e_gone" in key for key in index.edges)
    assert index.degree["e_bb"] == 2 and index.degree["e_zw"] == 2 and index.degree.get("e_self", 0) == 0
    assert index.user_id == "u1"


def test_related_stated_twice_is_one_edge_with_both_predicates(index: GraphIndex) -> None:
    view = build_graph(index)
    e = _edge(view, "RELATED", "e_dana", "e_bb")
    assert e["predicates"] == ["lead", "co_mention"]  # the real predicate first, the co-mention last
    assert e["label"] == "lead" and e["weight"] == 1.0 and e["evidence"] == ["m_2"]
    assert _edge(view, "RELATED", "e_ali", "e_bj")["co_mention_only"] is True
    assert _edge(view, "RELATED", "e_zw", "e_sh")["label"] == "去"


def test_bad_record_names_its_number() -> None:
    with pytest.raises(ValueError, match="export record 2"):
        GraphIndex.from_records([sample.records()[0], {"type": "memory", "text": "no id"}])


def test_unknown_record_types_are_ignored() -> None:
    index = GraphIndex.from_records([*sample.records(), {"type": "profile", "anything": 1}])
    assert len(index.memories) == 8


@pytest.mark.parametrize(("text", "expected"), [
    ("Dana Whitfield", "e_dana"), ("dana whitfield", "e_dana"), ("  DANA  ", "e_dana"), ("bluebird", "e_bb"),
    ("Northwind", "e_nw"),  # a "~" alias (one word of the name) counts too
    ("张伟", "e_zw"), ("上海", "e_sh"), ("ＤＡＮＡ", "e_dana"),  # full-width letters fold to ASCII
    ("When is the deadline?", None), ("", None),
])
def test_find_entity(index: GraphIndex, text: str, expected: str | None) -> None:
    assert index.find_entity(text) == expected


def test_find_entity_prefers_the_most_mentioned() -> None:
    recs = sample.records() + [
        {"type": "entity", "id": "e_dana2", "user_id": "u1", "name": "dana", "key": "dana", "label": "PROPN"},
    ]
    index = GraphIndex.from_records(recs)
    assert index.find_entity("dana") == "e_dana2"  # an exact name beats an alias
    recs.append({"type": "edge", "src": "m_8", "edge": "MENTIONS", "dst": "e_dana2", "user_id": "u1", "weight": 1.0})
    recs.append({"type": "edge", "src": "m_7", "edge": "MENTIONS", "dst": "e_dana2", "user_id": "u1", "weight": 1.0})
    assert GraphIndex.from_records(recs).find_entity("Dana") == "e_dana2"


# ---------------------------------------------------------------- overview


def test_overview_of_a_small_graph_draws_all_of_it(index: GraphIndex) -> None:
    view = build_graph(index)
    assert view.mode == "overview" and view.notes == ()
    assert view.shown == {"memories": 8, "entities": 13, "edges": len(index.edges), "nodes": 21}
    assert view.totals["nodes"] == 21
    assert {e["kind"] for e in view.edges} == set(EDGE_KINDS)
    assert all(n["role"] == "" for n in view.nodes) and not any(e["on_path"] for e in view.edges)
    nodes = _by_id(view.nodes)
    assert nodes["m_7"]["text"] == "我叫张伟，在北京的阿里巴巴工作。" and nodes["e_zw"]["label"] == "张伟"
    assert nodes["e_zw"]["group"] == "person" and nodes["e_ali"]["group"] == "organisation"
    assert nodes["e_self"]["group"] == "self" and nodes["e_kehu"]["group"] == "concept"
    assert nodes["e_60k"]["group"] == "time-value" and nodes["e_bb"]["group"] == "named"


def test_replaced_memories_look_different(index: GraphIndex) -> None:
    nodes = _by_id(build_graph(index).nodes)
    assert nodes["m_3"]["group"] == "superseded" and nodes["m_3"]["label"].startswith("(superseded) ")
    assert nodes["m_5"]["group"] == "invalidated" and nodes["m_5"]["label"].startswith("(invalidated) ")
    assert nodes["m_4"]["group"] == "active" and not nodes["m_4"]["label"].startswith("(")
    assert nodes["m_3"]["props"]["valid to"] == "2026-05-04 00:00"
    assert nodes["m_8"]["props"]["metadata"] == {"source": "chat"}


def _big_graph(n_mem: int = 200) -> list[dict[str, Any]]:
    """n_mem memories in sessions of ten; each names a person shared with its neighbours and a noun phrase."""
    recs: list[dict[str, Any]] = []
    for i in range(n_mem):
        recs.append({"type": "memory", "id": f"m{i:04d}", "user_id": "big", "text": f"memory number {i}",
                     "at": 1000.0 + i, "created_at": 1000.0 + i, "session_id": f"s{i // 10}"})
        if i % 10:
            recs.append({"type": "edge", "src": f"m{i - 1:04d}", "edge": "NEXT", "dst": f"m{i:04d}", "user_id": "big",
                         "weight": 1.0})
    for j in range(n_mem // 4):
        recs.append({"type": "entity", "id": f"p{j}", "user_id": "big", "name": f"Person {j}", "key": f"person {j}",
                     "label": "PERSON"})
    for j in range(n_mem):
        recs.append({"type": "entity", "id": f"n{j}", "user_id": "big", "name": f"thing {j}", "key": f"thing {j}",
                     "label": "NOUN"})
    for i in range(n_mem):
        for dst in (f"p{i // 4}", f"n{i}"):
            recs.append({"type": "edge", "src": f"m{i:04d}", "edge": "MENTIONS", "dst": dst, "user_id": "big",
                         "weight": 1.0})
    return recs


def test_overview_of_a_large_graph_is_capped_and_says_so() -> None:
    index = GraphIndex.from_records(_big_graph(200))
    view = build_graph(index, limit=40)
    assert view.shown["nodes"] == 40 and view.totals == {"memories": 200, "entities": 250, "edges": 580, "nodes": 450}
    mems = [n for n in view.nodes if n["kind"] == "memory"]
    ents = [n for n in view.nodes if n["kind"] == "entity"]
    assert len(mems) == 20 and len(ents) == 20
    assert {n["id"] for n in mems} == {f"m{i:04d}" for i in range(180, 200)}  # the most recent
    # names first: the 5 persons those 20 memories mention, then noun phrases of the same memories
    assert [n["id"] for n in ents[:5]] == ["p49", "p48", "p47", "p46", "p45"]
    assert all(n["group"] == "concept" for n in ents[5:])
    drawn = {n["id"] for n in view.nodes}
    assert all(e["from"] in drawn and e["to"] in drawn for e in view.edges)
    assert view.notes and "410 nodes left out" in view.notes[0] and "20 most recent of 200" in view.notes[0]
    assert "410 nodes left out" in view.summary()
    # the memory labels lose a line only in a crowded picture
    assert max(n["label"].count("\n") for n in build_graph(index, limit=100).nodes) <= 1


def test_limit_must_be_positive(index: GraphIndex) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        build_graph(index, limit=0)


# ---------------------------------------------------------------- a recall


def test_recall_highlights_hits_seeds_and_paths(index: GraphIndex) -> None:
    view = build_graph(index, hits=sample.hits(), query=sample.QUERY)
    assert view.mode == "recall" and view.query == sample.QUERY
    nodes = _by_id(view.nodes)
    assert [nodes[h]["role"] for h in ("m_2", "m_1", "m_8")] == ["hit"] * 3
    assert (nodes["m_2"]["rank"], nodes["m_2"]["score"], nodes["m_2"]["via"]) == (1, 0.9, "seed")
    assert nodes["m_8"]["label"].startswith("#3 · 0.42 · session\n张伟下周去上海见客户。")
    assert nodes["m_2"].get("seed") and nodes["m_7"].get("seed")  # a hit's own seed, and a seed that is no hit
    assert nodes["m_7"]["role"] == "seed" and nodes["e_bb"]["role"] == "path"
    assert not nodes["m_1"].get("seed")
    # a path may walk an edge against its stored direction (entity -> memory on MENTIONS)
    assert _edge(view, "MENTIONS", "m_1", "e_bb")["paths"] == [2]
    assert _edge(view, "MENTIONS", "m_2", "e_bb")["on_path"] is True
    next_edge = _edge(view, "NEXT", "m_7", "m_8")
    assert next_edge["paths"] == [3] and next_edge["label"] == "NEXT"
    assert sum(e["on_path"] for e in view.edges) == 3
    # one ring of context around them, faded on the page
    assert nodes["e_dana"]["role"] == "context" and nodes["e_sh"]["role"] == "context"
    assert "m_5" not in nodes  # two steps away from every hit
    assert [(h["rank"], h["text"]) for h in view.hits][2] == (3, "张伟下周去上海见客户。")


def test_recall_nodes_are_drawn_even_past_the_limit(index: GraphIndex) -> None:
    view = build_graph(index, hits=sample.hits(), limit=2)
    roles = {n["id"]: n["role"] for n in view.nodes}
    assert roles == {"m_2": "hit", "m_1": "hit", "m_8": "hit", "m_7": "seed", "e_bb": "path"}
    assert view.notes and "more neighbours left out (limit 2" in view.notes[0]


def test_a_path_step_the_export_lacks_is_still_drawn(index: GraphIndex) -> None:
    hit = HitMark(id="m_6", rank=1, score=0.5, via="entity", path=(("m_4", "RELATED", "m_6"),))
    view = build_graph(index, hits=[hit])
    assert _edge(view, "RELATED", "m_4", "m_6")["on_path"] is True


def test_a_title_link_is_drawn_on_its_path_and_in_the_legend(index: GraphIndex) -> None:
    """A title link (one memory's text names another's title) is no stored edge: drawn from the path alone."""
    hit = HitMark(id="m_6", rank=1, score=0.5, via="title", path=(("m_4", "NAMES_TITLE", "m_6"),))
    view = build_graph(index, hits=[hit])
    edge = _edge(view, "NAMES_TITLE", "m_4", "m_6")
    assert edge["on_path"] is True and edge["label"] == "NAMES_TITLE"
    assert "NAMES_TITLE" in view.to_data()["edge_kinds"]


def test_a_hit_missing_from_the_export_is_drawn_from_the_hit() -> None:
    index = GraphIndex.from_records(sample.records())
    view = build_graph(index, hits=[HitMark(id="m_new", rank=1, score=0.3, text="刚刚说的话", status="active")])
    assert _by_id(view.nodes)["m_new"]["text"] == "刚刚说的话" and view.hits[0]["text"] == "刚刚说的话"


def test_hits_from_recall_keeps_rank_score_via_and_path() -> None:
    now = datetime(2026, 5, 1, tzinfo=timezone.utc)
    mem = MemoryModel(id="m_1", user_id="u1", text="张伟在阿里巴巴工作。", at=now, created_at=now, status="active")
    hit = RecallHit(memory=mem, score=0.8, rank=1, parts=ScoreParts(), via="entity",
                    path=(PathStep(source="m_2", target="e_zw", edge="MENTIONS", weight=1.0, label="张伟"),
                          PathStep(source="e_zw", target="m_1", edge="MENTIONS", weight=0.5, label="张伟")))
    result = RecallResult(query="张伟", user_id="u1", mode="ripple", hits=(hit,), trace=RecallTrace())
    assert hits_from_recall(result) == (HitMark(id="m_1", rank=1, score=0.8, via="entity",
                                                path=(("m_2", "MENTIONS", "e_zw"), ("e_zw", "MENTIONS", "m_1")),
                                                text="张伟在阿里巴巴工作。", status="active"),)


# ---------------------------------------------------------------- an entity


def test_entity_neighbourhood_has_two_rings(index: GraphIndex) -> None:
    view = build_graph(index, focus_entity=index.find_entity("张伟"))
    assert view.mode == "entity" and view.focus == "张伟"
    roles = {n["id"]: n["role"] for n in view.nodes}
    assert roles["e_zw"] == "focus"
    assert {n for n, r in roles.items() if r == "near"} == {"m_7", "m_8", "e_self", "e_sh"}
    assert {"e_bj", "e_ali", "e_kehu", "e_60k"} <= {n for n, r in roles.items() if r == "context"}
    assert "m_1" not in roles


def test_a_hub_keeps_room_for_its_second_ring_and_both_kinds() -> None:
    recs = _big_graph(120)
    recs += [{"type": "edge", "src": f"m{i:04d}", "edge": "MENTIONS", "dst": "p0", "user_id": "big", "weight": 1.0}
             for i in range(120)]  # p0 is mentioned by every memory
    recs += [{"type": "edge", "src": "p0", "edge": "RELATED", "dst": f"p{j}", "user_id": "big", "weight": 1.0,
              "predicate": "knows"} for j in range(1, 30)]
    index = GraphIndex.from_records(recs)
    view = build_graph(index, focus_entity="p0", limit=41)
    roles = [n["role"] for n in view.nodes]
    assert len(view.nodes) == 41 and roles.count("near") == 20 and roles.count("context") == 20
    near = [n for n in view.nodes if n["role"] == "near"]
    assert {n["kind"] for n in near} == {"memory", "entity"}  # memories and entities take turns
    assert view.notes and "more neighbours left out (limit 41" in view.notes[0]


def test_an_unknown_entity_id_is_an_error(index: GraphIndex) -> None:
    with pytest.raises(ValueError, match="no entity"):
        build_graph(index, focus_entity="e_nope")


# ---------------------------------------------------------------- labels


def test_wrap_label_counts_cjk_as_two_columns_and_cuts_with_an_ellipsis() -> None:
    # closing punctuation stays with the character before it
    assert wrap_label("我叫张伟，在北京的阿里巴巴工作。", cols=10, lines=4) == "我叫张伟，\n在北京的阿\n里巴巴工\n作。"
    assert wrap_label("我叫张伟，在北京的阿里巴巴工作。", cols=10, lines=3) == "我叫张伟，\n在北京的阿\n里巴巴工…"
    assert wrap_label("one two three four five six", cols=9, lines=2) == "one two\nthree…"
    assert wrap_label("short") == "short"
    assert wrap_label("a" * 30, cols=10, lines=2) == "aaaaaaaaaa\naaaaaaaaa…"
    for line in wrap_label("Dana Whitfield 负责 Project Bluebird 的预算和上线日期。", cols=12, lines=9).split("\n"):
        assert sum(2 if ord(c) > 0x2E80 else 1 for c in line) <= 12


def test_entity_groups() -> None:
    assert [entity_group(x) for x in ("PERSON", "gpe", "MONEY", "NOUN", "WORK_OF_ART", "SELF")] == [
        "person", "place", "time-value", "concept", "named", "self"]
