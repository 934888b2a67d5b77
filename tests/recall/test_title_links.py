"""Title links: a titled document that one of the strongest candidates names ranks just below it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ripple.recall.candidates import Candidate
from ripple.recall.merge import title_links


@dataclass
class _Rec:
    id: str
    text: str


FAWELL = _Rec("fawell", "Harris W. Fawell\nFawell is a graduate of West Chicago High School and a lawyer.")
CITY = _Rec("city", "West Chicago\nWest Chicago is a city in DuPage County, Illinois.")
BOSTON = _Rec("boston", "Boston\nBoston is the capital of Massachusetts.")
TURN = _Rec("turn", "Melanie: we drove through West Chicago last week.")
RECORDS: dict[str, Any] = {r.id: r for r in (FAWELL, CITY, BOSTON, TURN)}


def _cands(*scored: tuple[str, float]) -> list[Candidate]:
    return [Candidate(id=i, score=s) for i, s in scored]


def test_the_named_page_ranks_just_below_the_page_naming_it() -> None:
    got = title_links(_cands(("fawell", 1.0), ("boston", 0.3), ("city", 0.1)), RECORDS, 0.9, 3)
    assert [c.id for c in got] == ["fawell", "city", "boston"]
    city = got[1]
    assert city.score == pytest.approx(0.9) and city.via == "title" and city.channels == {"title": 0.9}
    assert [(e.source, e.target, e.type, e.predicate) for e in city.path] == [("fawell", "city", "NAMES_TITLE", "West Chicago")]
    assert got[2].score == pytest.approx(0.3) and got[2].via == "seed"  # named by nobody: untouched


def test_a_chat_turn_links_to_a_page_it_names_and_is_never_a_target() -> None:
    got = title_links(_cands(("turn", 1.0), ("city", 0.2), ("fawell", 0.1)), RECORDS, 0.9, 3)
    assert [(c.id, round(c.score, 6)) for c in got] == [("turn", 1.0), ("city", 0.9), ("fawell", 0.1)]
    # a store of chat alone has no titles: nothing changes
    chat = _cands(("turn", 1.0), ("other", 0.5))
    records = {**RECORDS, "other": _Rec("other", "Caroline: West Chicago is lovely.")}
    assert [(c.id, c.score, c.via) for c in title_links(chat, records, 0.9, 3)] == [("turn", 1.0, "seed"), ("other", 0.5, "seed")]


def test_no_lift_from_a_page_s_own_title_above_the_floor_or_beyond_the_sources() -> None:
    # the city page names itself in its body: no link to itself; Fawell names no title of another
    got = title_links(_cands(("city", 1.0), ("fawell", 0.5)), RECORDS, 0.9, 3)
    assert [(c.id, c.score) for c in got] == [("city", 1.0), ("fawell", 0.5)]
    # nor to another passage of the same page (several paragraphs under one title)
    records = {**RECORDS, "city2": _Rec("city2", "West Chicago\nThe city was first named Junction.")}
    got = title_links(_cands(("city", 1.0), ("city2", 0.2)), records, 0.9, 3)
    assert [(c.id, c.score, c.via) for c in got] == [("city", 1.0, "seed"), ("city2", 0.2, "seed")]
    # a page is lifted once: its best passage (the others of its title stay where they are)
    records = {**RECORDS, "city2": _Rec("city2", "West Chicago\nThe city was first named Junction.")}
    got = title_links(_cands(("fawell", 1.0), ("city", 0.3), ("city2", 0.2)), records, 0.9, 3)
    assert [(c.id, round(c.score, 6), c.via) for c in got] == [("fawell", 1.0, "seed"), ("city", 0.9, "title"),
                                                                 ("city2", 0.2, "seed")]
    # a target already above weight x the source's score keeps its own
    got = title_links(_cands(("fawell", 1.0), ("city", 0.95)), RECORDS, 0.9, 3)
    assert got[1].score == pytest.approx(0.95) and got[1].via == "seed"
    # Fawell is the third best: read only when three sources are
    cands = [("boston", 1.0), ("turn2", 0.9), ("fawell", 0.8), ("city", 0.1)]
    records = {**RECORDS, "turn2": _Rec("turn2", "Gina: my store opened.")}
    assert title_links(_cands(*cands), records, 0.9, 2)[-1].id == "city"
    assert title_links(_cands(*cands), records, 0.9, 3)[3].score == pytest.approx(0.72)
    # weight 0 (the baselines) or no sources: off
    assert title_links(_cands(("fawell", 1.0), ("city", 0.1)), RECORDS, 0.0, 3)[1].score == 0.1
    assert title_links(_cands(("fawell", 1.0), ("city", 0.1)), RECORDS, 0.9, 0)[1].score == 0.1


def test_a_page_naming_many_pages_shares_its_score_among_them() -> None:
    """Fan damping: the euro's page names every country that adopted it; each link passes score / n ** d."""
    records = {**RECORDS,
               "euro": _Rec("euro", "Euro\nThe euro replaced the markka in Finland and the lats in Latvia and Estonia."),
               "finland": _Rec("finland", "Finland\nFinland is a Nordic country."),
               "latvia": _Rec("latvia", "Latvia\nLatvia is a Baltic country."),
               "estonia": _Rec("estonia", "Estonia\nEstonia is a Baltic country."),
               "signmark": _Rec("signmark", "Signmark\nSignmark is a Finnish rapper.")}
    cands = [("euro", 1.0), ("signmark", 0.8), ("turn2", 0.0), ("finland", 0.3), ("latvia", 0.2), ("estonia", 0.1)]
    records["turn2"] = _Rec("turn2", "Gina: my store opened.")
    undamped = title_links(_cands(*cands), records, 0.9, 1)
    assert [c.id for c in undamped[:2]] == ["euro", "estonia"]  # three pages tie at .9, above the first hop's page
    damped = title_links(_cands(*cands), records, 0.9, 1, 0.5)
    assert [c.id for c in damped[:2]] == ["euro", "signmark"]
    assert {c.id: round(c.score, 6) for c in damped if c.via == "title"} == {
        i: round(0.9 / 3 ** 0.5, 6) for i in ("finland", "latvia", "estonia")}
    # a page naming one candidate page passes the whole weight, damped or not
    one = title_links(_cands(("fawell", 1.0), ("boston", 0.3), ("city", 0.1)), RECORDS, 0.9, 3, 1.0)
    assert one[1].id == "city" and one[1].score == pytest.approx(0.9)


def test_recall_follows_the_link_a_two_hop_question_needs(tmp_path: Path, embedder, extractor) -> None:
    """End to end: the city page shares no word with the question but 'West Chicago', named by the page the
    question is about; the link brings it in right after that page, with the link as its path."""
    from ripple import Memory, RecallConfig

    docs = [
        FAWELL.text,
        CITY.text,
        "Naperville\nNaperville is a city in DuPage and Will counties, west of Chicago.",
        "DuPage County\nDuPage County is a county in Illinois; its county seat is Wheaton.",
        "Boston\nBoston is the capital and largest city of Massachusetts.",
    ]
    question = "In what county is the city where Harris W. Fawell went to school?"
    with Memory(path=str(tmp_path / "s"), embedder=embedder, extractor=extractor) as mem:
        mem.add_many([{"text": t, "user_id": "u"} for t in docs])
        on = mem.recall(question, user_id="u", k=5, touch=False)
        texts = [h.memory.text for h in on.hits]
        assert texts[0] == FAWELL.text and texts[1] == CITY.text
        assert on.hits[1].via == "title"
        assert [(s.source, s.edge, s.label) for s in on.hits[1].path] == [(on.hits[0].memory.id, "NAMES_TITLE", "West Chicago")]
        assert on.hits[1].score == pytest.approx(0.9 * on.hits[0].score, rel=1e-6)
        # calibrated relevance: at least the naming page's, times the link's weight (as a spread hit's)
        assert on.hits[1].relevance >= 0.9 * on.hits[0].relevance - 1e-6
        assert on.hits[1].parts.channels["title"] == 0.9
        base = RecallConfig()
        mem.config = base.model_copy(update={"merge": base.merge.model_copy(update={"title_link_weight": 0.0})})
        off = mem.recall(question, user_id="u", k=5, touch=False)
        assert all(h.via != "title" for h in off.hits)
        alone = next(h for h in off.hits if h.memory.text == CITY.text)
        assert alone.score < on.hits[1].score and alone.path != on.hits[1].path


def test_a_chinese_page_names_a_chinese_title() -> None:
    """CJK titles are matched inside the text (no spaces between words), as the title prior matches them."""
    records = {
        "chengdu": _Rec("chengdu", "成都\n成都是四川省的省会，以美食闻名。"),
        "sichuan": _Rec("sichuan", "四川省\n四川省位于中国西南部，简称川。"),
        "wuhan": _Rec("wuhan", "武汉\n武汉是湖北省的省会。"),
    }
    got = title_links(_cands(("chengdu", 1.0), ("wuhan", 0.4), ("sichuan", 0.2)), records, 0.9, 3)
    assert [(c.id, round(c.score, 6), c.via) for c in got] == [
        ("chengdu", 1.0, "seed"), ("sichuan", 0.9, "title"), ("wuhan", 0.4, "seed")]
