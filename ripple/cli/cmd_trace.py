"""``ripple trace FILE``: the readable timeline of traces saved by ``ripple chat --trace-out``."""

from __future__ import annotations

import argparse
import json

from ripple.agent.trace import Span, timeline
from ripple.errors import InvalidInput
from ripple.settings import RippleSettings


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="JSONL file of traces (one root span per line)")
    p.add_argument("--name", help="only traces with this name (e.g. session.context)")
    p.add_argument("--last", type=int, default=0, help="only the last N traces")


def _span(d: dict) -> Span:
    span = Span(d["name"], float(d["start"]), dict(d.get("attrs", {})),
                [(e["name"], float(e["at"]), dict(e.get("attrs", {}))) for e in d.get("events", [])],
                [_span(c) for c in d.get("children", [])], end=d.get("end"), status=d.get("status", "ok"),
                error=d.get("error"), span_id=d.get("span_id", ""))
    span._t0, span._t1 = 0.0, float(d.get("duration_ms", 0.0)) / 1000.0
    return span


def run(args: argparse.Namespace, settings: RippleSettings) -> int:
    spans = []
    try:
        with open(args.file, encoding="utf-8") as f:
            for n, line in enumerate(f, start=1):
                if line.strip():
                    spans.append(_span(json.loads(line)))
    except (OSError, ValueError, KeyError) as exc:
        raise InvalidInput(f"{args.file}: cannot read traces: {exc}") from exc
    if args.name:
        spans = [s for s in spans if s.name == args.name]
    if args.last:
        spans = spans[-args.last:]
    print(timeline(spans))
    return 0
