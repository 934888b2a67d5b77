"""Plain-text tables and recall printing for the CLI."""

from __future__ import annotations

import shutil
import unicodedata
from typing import Sequence

from ripple.models import RecallHit


def width(text: str) -> int:
    """Display width: CJK and other wide characters take two columns."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def clip(text: str, cols: int) -> str:
    text = " ".join(text.split())
    if width(text) <= cols:
        return text + " " * (cols - width(text))
    out, used = [], 0
    for ch in text:
        w = width(ch)
        if used + w > cols - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + "…" + " " * (cols - used - 1)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, flex: int = -1) -> str:
    """A table fitted to the terminal; column ``flex`` absorbs the spare width."""
    total = shutil.get_terminal_size((120, 20)).columns
    widths = [max([width(h)] + [width(r[i]) for r in rows]) for i, h in enumerate(headers)]
    flex = flex % len(headers)
    fixed = sum(w for i, w in enumerate(widths) if i != flex) + 2 * (len(headers) - 1)
    widths[flex] = max(20, min(widths[flex], total - fixed))
    line = "  ".join(clip(h, widths[i]) for i, h in enumerate(headers))
    sep = "  ".join("-" * w for w in widths)
    body = ["  ".join(clip(c, widths[i]) for i, c in enumerate(r)) for r in rows]
    return "\n".join([line, sep, *body])


def explain(hit: RecallHit) -> str:
    """One line per path step: seed -> entity -> memory, with weights."""
    if not hit.path:
        p = hit.parts
        return f"    seed (lexical {p.lexical:.2f}, dense {p.dense:.2f}, late {p.late:.2f})"
    steps = [f"    via {hit.via}:"]
    for s in hit.path:
        name = f" [{s.label}]" if s.label else ""
        steps.append(f"      {s.source} -{s.edge}({s.weight:.2f})-> {s.target}{name}")
    return "\n".join(steps)
