"""OpenTelemetry export of the agent layer's traces (optional: ``pip install ripple-memory[otel]``).

Following the OpenTelemetry conventions for libraries, ripple only uses the
API (``opentelemetry-api``): it asks the global tracer provider (or the one
passed in) for a tracer named ``ripple.agent`` and emits nothing unless the
application configured an SDK.  Each finished ripple trace is replayed as
OpenTelemetry spans with the original start and end times, parent links,
attributes (``session.id``, ``user.id`` and ``gen_ai.agent.id`` from the
semantic conventions; ripple's own under ``ripple.*``), span events for the
decisions, and an ERROR status with the exception message for a failed step.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from .trace import Span

__all__ = ["otel_exporter", "TRACER_NAME"]

TRACER_NAME = "ripple.agent"
_CONVENTIONAL = frozenset({"session.id", "user.id", "gen_ai.agent.id"})


def _attr(value: Any) -> Any:
    if isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float, bool)) for v in value):
        kinds = {type(v) for v in value}
        if len(kinds) <= 1:
            return list(value)
    return json.dumps(value, ensure_ascii=False, default=str)


def _attrs(raw: dict[str, Any]) -> dict[str, Any]:
    return {(k if k in _CONVENTIONAL or k.startswith("ripple.") else f"ripple.{k}"): _attr(v)
            for k, v in raw.items() if v is not None}


def otel_exporter(tracer_provider: Any = None, *, required: bool = False) -> Callable[[Span], None] | None:
    """An exporter for :class:`~ripple.agent.trace.Tracer`, or None when OpenTelemetry is not installed
    (``required=True`` raises :class:`ripple.ConfigError` instead)."""
    try:
        from opentelemetry import trace
        from opentelemetry.trace import SpanKind, Status, StatusCode
    except ImportError as exc:
        if required:
            from ..errors import ConfigError

            raise ConfigError("OpenTelemetry export needs: pip install 'ripple-memory[otel]'") from exc
        return None
    from .. import __version__

    def get_tracer() -> Any:
        provider = tracer_provider or trace.get_tracer_provider()
        return provider.get_tracer(TRACER_NAME, __version__)

    def emit(span: Span, parent: Any, tracer: Any) -> None:
        ns = lambda t: int(t * 1e9)  # noqa: E731
        otel = tracer.start_span(span.name, context=parent, kind=SpanKind.INTERNAL, start_time=ns(span.start),
                                 attributes=_attrs(span.attrs))
        for name, at, attrs in span.events:
            otel.add_event(name, attributes=_attrs(attrs), timestamp=ns(at))
        if span.status == "error":
            otel.set_status(Status(StatusCode.ERROR, span.error or "error"))
            otel.add_event("exception", attributes={"exception.message": span.error or ""},
                           timestamp=ns(span.end or span.start))
        ctx = trace.set_span_in_context(otel)
        for child in span.children:
            emit(child, ctx, tracer)
        otel.end(end_time=ns(span.end or span.start))

    def export(span: Span) -> None:
        emit(span, None, get_tracer())

    return export
