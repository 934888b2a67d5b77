"""Pictures of a user's memory graph: ``ripple graph`` and ``ripple recall --graph``.

:mod:`ripple.viz.graph` decides what to draw (a pure function over the
records of ``Memory.export`` and a recall's hits); :mod:`ripple.viz.page`
renders it as one self-contained interactive HTML page (vis-network inlined).
"""

from __future__ import annotations

from .graph import DEFAULT_LIMIT, GraphIndex, GraphView, HitMark, build_graph, hits_from_recall
from .page import render_page, write_page

__all__ = ["DEFAULT_LIMIT", "GraphIndex", "GraphView", "HitMark", "build_graph", "hits_from_recall", "render_page",
           "write_page"]
