"""One self-contained HTML page for a :class:`~ripple.viz.graph.GraphView`.

The page inlines vis-network (``vendor/``, MIT) and the view's data, so it
opens from a file with no network access and can be mailed or attached to an
issue as it is.  Everything a person reads in the header is written here,
HTML-escaped; the graph data goes in as JSON that cannot close its ``<script>``
element, and the page script puts memory texts into the DOM as text only.
"""

from __future__ import annotations

import functools
import html
import json
import re
from importlib import resources
from pathlib import Path

from .graph import GraphView

__all__ = ["render_page", "write_page", "page_title"]

_VENDOR_JS = "vendor/vis-network.min.js"
_MARKER = re.compile(r"@(HEADER|TITLE|VERSION|DATA|VIS)@")
# JSON inside <script>: no "<" (no "</script>", no "<!--"), and the two line separators JavaScript
# once treated as newlines; the escapes are valid JSON, so JSON.parse reads the same data back.
_JSON_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026", 0x2028: "\\u2028", 0x2029: "\\u2029"}


@functools.cache
def _asset(name: str) -> str:
    return resources.files("ripple.viz").joinpath(name).read_text(encoding="utf-8")


def _library() -> str:
    """The vendored vis-network, without its source-map comment (the map is not shipped)."""
    lines = _asset(_VENDOR_JS).rstrip().splitlines()
    if lines and lines[-1].startswith("//# sourceMappingURL="):
        lines.pop()
    return "\n".join(lines)


def page_title(view: GraphView) -> str:
    """The page's title: whose graph, and which part of it."""
    if view.mode == "recall":
        return f"ripple · recall “{view.query}” · user {view.user_id}"
    if view.mode == "entity":
        return f"ripple · “{view.focus}” · user {view.user_id}"
    return f"ripple · memory graph · user {view.user_id}"


def _header(view: GraphView) -> str:
    e = html.escape
    s, t = view.shown, view.totals
    if view.mode == "recall":
        n = len(view.hits)
        what = (f"Recall of <q>{e(view.query or '')}</q>: {n} hit{'' if n == 1 else 's'}, the seeds their activation "
                f"started from and the entities and turns on the way")
    elif view.mode == "entity":
        what = f"Everything around the entity <q>{e(view.focus or '')}</q>"
    else:
        what = "All of it" if s["nodes"] >= t["nodes"] else "An overview"
    counts = (f"drawn: {s['memories']} of {t['memories']} memories · {s['entities']} of {t['entities']} entities · "
              f"{s['edges']} of {t['edges']} edges")
    parts = [
        f'<h1><span class="brand">ripple</span> · memory graph of user <q>{e(view.user_id)}</q></h1>',
        f'<p class="sub">{what}</p>',
        f'<p class="counts">{e(counts)}</p>',
    ]
    parts += [f'<p class="note">{e(note)}</p>' for note in view.notes]
    return "\n".join(parts)


def render_page(view: GraphView) -> str:
    """The whole page as one string (UTF-8 text; about 700 KB, most of it the library)."""
    from ripple import __version__

    data = json.dumps(view.to_data(), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    fills = {
        "HEADER": _header(view),
        "TITLE": html.escape(page_title(view)),
        "VERSION": html.escape(__version__),
        "DATA": data.translate(_JSON_ESCAPES),
        "VIS": _library(),
    }
    # One pass: text put in (memory texts, the library) is never searched for markers again.
    return _MARKER.sub(lambda m: fills[m.group(1)], _asset("template.html"))


def write_page(path: str | Path, view: GraphView) -> Path:
    """Write :func:`render_page` to ``path`` (UTF-8) and return the path."""
    out = Path(path)
    out.write_text(render_page(view), encoding="utf-8")
    return out
