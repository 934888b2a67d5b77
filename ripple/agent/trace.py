"""Traces of what the agent layer did: spans with durations, counts and decisions.

Background work that fails or decides silently is what users of other memory
layers cannot debug (LangMem #14: reflection never ran, no error; Graphiti
#1266: no cost tracing).  Every ``add``, ``recall``, ``context``, summary job
and patrol run here is a root :class:`Span` with children; a span carries
attributes (counts, sizes) and events (decisions: what was evicted,
summarised, kept, dropped, alerted, and why).  A session keeps its recent
traces; :func:`timeline` renders one for people, :meth:`Span.to_json` for
machines, and :mod:`ripple.agent.otel` replays finished traces into
OpenTelemetry when it is installed.

Spans are plain objects passed explicitly (no context variables), so a
generator that is suspended while the driver does I/O is timed correctly in
both the sync and the async session.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

__all__ = ["Span", "Tracer", "timeline"]

_ids = itertools.count(1)
_id_lock = threading.Lock()


def _new_id() -> str:
    with _id_lock:
        return f"{os.getpid():x}-{next(_ids):x}"


@dataclass(slots=True)
class Span:
    """One timed step: ``name``, wall-clock ``start``/``end`` (POSIX seconds), attributes, events, children."""

    name: str
    start: float
    attrs: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[str, float, dict[str, Any]]] = field(default_factory=list)
    children: list["Span"] = field(default_factory=list)
    end: float | None = None
    status: str = "ok"
    error: str | None = None
    span_id: str = field(default_factory=_new_id)
    _t0: float = field(default_factory=time.perf_counter)
    _t1: float | None = None

    @property
    def duration_ms(self) -> float:
        end = self._t1 if self._t1 is not None else time.perf_counter()
        return (end - self._t0) * 1000.0

    def set(self, **attrs: Any) -> "Span":
        self.attrs.update(attrs)
        return self

    def event(self, name: str, **attrs: Any) -> None:
        """A decision or a notable moment (``evicted``, ``dropped``, ``alert``) with its reasons."""
        self.events.append((name, time.time(), attrs))

    def child(self, name: str, **attrs: Any) -> "Span":
        span = Span(name, time.time(), dict(attrs))
        self.children.append(span)
        return span

    def finish(self, error: BaseException | None = None) -> "Span":
        if self._t1 is None:
            self._t1 = time.perf_counter()
            self.end = self.start + (self._t1 - self._t0)
        if error is not None:
            self.status, self.error = "error", f"{type(error).__name__}: {error}"
        return self

    def __enter__(self) -> "Span":
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        self.finish(exc)

    def walk(self, depth: int = 0) -> Iterator[tuple[int, "Span"]]:
        yield depth, self
        for c in self.children:
            yield from c.walk(depth + 1)

    def find(self, name: str) -> "Span | None":
        return next((s for _, s in self.walk() if s.name == name), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "span_id": self.span_id, "start": self.start, "end": self.end,
            "duration_ms": round(self.duration_ms, 3), "status": self.status, "error": self.error,
            "attrs": self.attrs, "events": [{"name": n, "at": t, "attrs": a} for n, t, a in self.events],
            "children": [c.to_json() for c in self.children],
        }


class Tracer:
    """Starts root spans and keeps the last ``keep`` finished ones; ``exporters`` see each when it ends."""

    def __init__(self, *, keep: int = 200, attrs: dict[str, Any] | None = None,
                 exporters: list[Callable[[Span], None]] | None = None) -> None:
        self.attrs = dict(attrs or {})
        self.exporters = list(exporters or [])
        self._done: deque[Span] = deque(maxlen=keep)
        self._lock = threading.Lock()
        self.export_errors: list[str] = []

    def start(self, name: str, **attrs: Any) -> Span:
        return Span(name, time.time(), {**self.attrs, **attrs})

    def done(self, span: Span, error: BaseException | None = None) -> Span:
        span.finish(error)
        with self._lock:
            self._done.append(span)
        for export in self.exporters:
            try:
                export(span)
            except Exception as exc:  # noqa: BLE001 - an exporter must never break the agent loop
                self.export_errors.append(f"{type(exc).__name__}: {exc}")
        return span

    def traces(self, name: str | None = None) -> list[Span]:
        with self._lock:
            return [s for s in self._done if name is None or s.name == name]

    def last(self, name: str | None = None) -> Span | None:
        found = self.traces(name)
        return found[-1] if found else None


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_fmt(v) for v in value[:8]) + (",…" if len(value) > 8 else "") + "]"
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "…"


def timeline(spans: Span | list[Span], *, events: bool = True) -> str:
    """A readable timeline: offset from the first span, indented by depth, duration, attributes, events.

    ::

        [00:00.000] session.add 4.1 ms role=user tokens=18 window=412/2000
        [00:00.001]   store.add 3.6 ms memories=1
        [00:00.004]   · evicted rounds=2 turns=5 reason=turn added: 2031 > budget 2000
    """
    roots = [spans] if isinstance(spans, Span) else list(spans)
    if not roots:
        return ""
    t0 = min(s.start for s in roots)
    lines: list[str] = []

    def stamp(t: float) -> str:
        dt = max(0.0, t - t0)
        return f"[{int(dt // 60):02d}:{dt % 60:06.3f}]"

    for root in roots:
        for depth, span in root.walk():
            pad = "  " * depth
            attrs = " ".join(f"{k}={_fmt(v)}" for k, v in span.attrs.items() if not k.startswith("_"))
            status = f" ERROR {span.error}" if span.status == "error" else ""
            lines.append(f"{stamp(span.start)} {pad}{span.name} {span.duration_ms:.1f} ms {attrs}{status}".rstrip())
            if events:
                for name, at, ev in span.events:
                    detail = " ".join(f"{k}={_fmt(v)}" for k, v in ev.items())
                    lines.append(f"{stamp(at)} {pad}  · {name} {detail}".rstrip())
    return "\n".join(lines)
