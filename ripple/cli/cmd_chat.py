"""``ripple chat``: watch the agent's memory layers work, one line of input per user turn.

No LLM is called: each line you type is a user turn; ripple stores it, runs the
patrol, assembles the context it would send to a model, and shows the window,
the budget ledger, any alert and what was recalled.  Commands: ``/assistant
TEXT`` (an assistant turn), ``/pin TEXT``, ``/note TEXT`` (working memory of the
task "chat"), ``/context [QUERY]`` (the messages themselves), ``/summary``,
``/jobs``, ``/trace``, ``/quit``.  Input may be piped (one turn per line).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from ripple.errors import RippleError
from ripple.settings import RippleSettings

from ._store import open_memory


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--user", "-u", required=True, help="user id")
    p.add_argument("--session", "-s", default="chat", help="session id (default: chat)")
    p.add_argument("--agent", help="agent id")
    p.add_argument("--window", type=int, default=8000, help="the model's context window in tokens (default 8000)")
    p.add_argument("--budget-ratio", type=float, default=0.5, help="share of the window for memory (default 0.5)")
    p.add_argument("--explain", action="store_true", help="print the trace timeline of every turn")
    p.add_argument("--trace-out", help="append every trace as a JSON line to this file (read it with ripple trace)")


def _ledger(ctx: Any) -> str:
    parts = [f"{name} {s.tokens}/{s.cap}" for name, s in ctx.ledger.sections.items()]
    return " · ".join(parts) + f" · total {ctx.tokens}/{ctx.ledger.max_tokens}"


def _turn(session: Any, line: str, out: TextIO) -> None:
    added = session.add("user", line)
    result = session.patrol()
    ctx = session.context()
    w = session.window
    out.write(f"[turn {added.seq}] window {len(w.turns)} turns, {w.tokens}/{w.budget} tokens"
              f"{f' (evicted turns {added.evicted[0]}-{added.evicted[-1]})' if added.evicted else ''}\n")
    for alert in result.alerts:
        out.write(f"  alert ({alert.kind} {alert.score:.2f}): {alert.message}\n")
    for card in ctx.cards:
        out.write(f"  recalled: {card.line()}\n")
    out.write(f"  ledger: {_ledger(ctx)}\n")


def _command(session: Any, line: str, out: TextIO) -> bool:
    cmd, _, rest = line.partition(" ")
    rest = rest.strip()
    if cmd in ("/quit", "/exit"):
        return False
    if cmd == "/assistant" and rest:
        added = session.add("assistant", rest)
        out.write(f"[turn {added.seq}] assistant turn stored\n")
    elif cmd == "/pin" and rest:
        pin = session.pins.add(rest)
        out.write(f"pinned {pin.id}: {pin.text}\n")
    elif cmd == "/note" and rest:
        note = session.working("chat").note(rest)
        out.write(f"noted {note.id}\n")
    elif cmd == "/context":
        for m in session.context(rest or None).messages:
            out.write(f"--- {m['role']}\n{m['content']}\n")
    elif cmd == "/summary":
        session.flush()
        out.write((session.summary_text or "(no summary yet)") + "\n")
    elif cmd == "/jobs":
        session.flush()
        jobs = session.jobs.all()
        out.write(f"{len(jobs)} background job(s), {len(session.jobs.failed)} failed\n")
        for job in jobs:
            out.write(f"job {job.id} {job.kind} {job.status}{' ' + job.error if job.error else ''}\n")
    elif cmd == "/trace":
        out.write(session.timeline(last=5) + "\n")
    else:
        out.write("commands: /assistant TEXT, /pin TEXT, /note TEXT, /context [QUERY], /summary, /jobs, /trace, /quit\n")
    return True


def run(args: argparse.Namespace, settings: RippleSettings) -> int:
    interactive = sys.stdin.isatty()
    out = sys.stdout
    traces = open(args.trace_out, "a", encoding="utf-8") if args.trace_out else None
    seen = 0
    with open_memory(settings, write=True) as mem:
        session = mem.session(args.user, args.session, agent_id=args.agent, context_window=args.window,
                              budget_ratio=args.budget_ratio)
        try:
            while True:
                if interactive:
                    out.write("you> ")
                    out.flush()
                line = sys.stdin.readline()
                if not line:
                    break
                line = line.strip()
                if not line:
                    continue
                try:
                    if line.startswith("/"):
                        if not _command(session, line, out):
                            break
                    else:
                        _turn(session, line, out)
                except RippleError as exc:
                    out.write(f"error: {exc}\n")
                spans = session.tracer.traces()
                if args.explain:
                    out.write(session.timeline(last=max(1, len(spans) - seen)) + "\n")
                if traces is not None:
                    for span in spans[seen:]:
                        traces.write(json.dumps(span.to_json(), ensure_ascii=False) + "\n")
                seen = len(spans)
                out.flush()
        finally:
            session.close()
            if traces is not None:
                traces.close()
    return 0
