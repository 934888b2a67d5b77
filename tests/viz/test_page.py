"""The page's HTML without a browser: self-contained, escaped, and carrying the view's data."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ripple.viz import GraphIndex, build_graph, render_page, write_page

from . import sample

EVIL = '</script><script>alert("x")</script><!-- & \u2028'


def _data(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="ripple-data">(.*?)</script>', page, re.S)
    assert m, "no data element"
    return json.loads(m.group(1))


def test_page_is_self_contained_and_carries_the_view() -> None:
    view = build_graph(GraphIndex.from_records(sample.records()), hits=sample.hits(), query=sample.QUERY)
    page = render_page(view)
    assert page.startswith("<!doctype html>") and '<meta charset="utf-8">' in page
    # nothing to fetch: no external script, style sheet, image or font
    assert not re.search(r'<(script|link|img|iframe)[^>]+(src|href)=', page)
    assert "@import" not in page and "sourceMappingURL" not in page
    assert "vis-network" in page and "new vis.Network" in page
    assert _data(page) == json.loads(json.dumps(view.to_data()))
    assert "张伟下周去上海见客户。" in page  # UTF-8 as it is, not escaped
    assert "Bluebird 的负责人是谁？" in page.split("</header>")[0]  # the query in the header
    assert "memory graph of user <q>u1</q>" in page


def test_memory_text_cannot_break_out_of_the_page(tmp_path: Path) -> None:
    recs = sample.records()
    recs[0] = dict(recs[0], text=EVIL)
    view = build_graph(GraphIndex.from_records(recs), hits=sample.hits(), query=EVIL)
    page = write_page(tmp_path / "g.html", view).read_text(encoding="utf-8")
    assert '<script>alert("x")' not in page
    assert page.count("</script>") == 3  # the library, the data and the page script: nothing else closes one
    assert _data(page)["nodes"][[n["id"] for n in view.nodes].index("m_1")]["text"] == EVIL
    assert "&lt;/script&gt;" in page.split("</header>")[0]  # the query in the header, escaped


def test_an_empty_graph_still_makes_a_page() -> None:
    view = build_graph(GraphIndex.from_records([]), user_id="nobody")
    page = render_page(view)
    assert _data(page)["nodes"] == [] and "nobody" in page
