"""The page in a real browser: headless Chromium lays the graph out and draws every node.

Each test keeps its page and a screenshot under ``test-output/viz/`` (or
``$RIPPLE_TEST_OUTPUT/viz``) for a person to look at.
"""

from __future__ import annotations

from pathlib import Path

from ripple.viz import GraphIndex, build_graph, write_page

from . import sample
from .conftest import Chromium
from .test_graph import _big_graph


def _check(chromium: Chromium, page: Path, *, nodes: int, edges: int) -> None:
    got = chromium.render(page)
    assert got.error == "" and got.state == "rendered", (got.state, got.error)
    assert (got.nodes, got.edges) == (nodes, edges)
    png = chromium.screenshot(page, page.with_suffix(".png"))
    print(f"\npage {page}\nscreenshot {png}")
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 30_000  # a drawn graph, not a blank page


def test_recall_page_renders_every_node(chromium: Chromium, output_dir: Path) -> None:
    view = build_graph(GraphIndex.from_records(sample.records()), hits=sample.hits(), query=sample.QUERY)
    assert any(n["text"] == "张伟下周去上海见客户。" for n in view.nodes)
    page = write_page(output_dir / "recall.html", view)
    _check(chromium, page, nodes=len(view.nodes), edges=len(view.edges))


def test_overview_and_entity_pages_render(chromium: Chromium, output_dir: Path) -> None:
    index = GraphIndex.from_records(sample.records())
    view = build_graph(index)
    _check(chromium, write_page(output_dir / "overview.html", view), nodes=21, edges=len(view.edges))
    view = build_graph(index, focus_entity=index.find_entity("张伟"))
    _check(chromium, write_page(output_dir / "entity.html", view), nodes=len(view.nodes), edges=len(view.edges))


def test_a_capped_large_graph_renders(chromium: Chromium, output_dir: Path) -> None:
    view = build_graph(GraphIndex.from_records(_big_graph(400)))
    assert view.shown["nodes"] == 100
    _check(chromium, write_page(output_dir / "capped.html", view), nodes=100, edges=len(view.edges))


def test_an_empty_graph_renders_nothing_without_error(chromium: Chromium, output_dir: Path) -> None:
    page = write_page(output_dir / "empty.html", build_graph(GraphIndex.from_records([]), user_id="nobody"))
    got = chromium.render(page)
    assert (got.state, got.nodes, got.error) == ("rendered", 0, "")
    assert '<div class="empty">nothing to draw' in got.dom
