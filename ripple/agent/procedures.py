"""Procedural memory: how a task was done before, with how often that worked.

``record_procedure(task, steps, outcome)`` stores one run of a task in the
agent's own scope (``agent:<id>``: another agent never sees it, against
mem0 #3998): a memory of kind ``procedure`` (recallable by task similarity
and by the entities it shares with a new task, through ripple's graph), and
per distinct procedure a tally of successes and failures in a versioned
document.  Failures are remembered like successes, with what went wrong.
:meth:`ProceduresCore.card` renders the best match as one "how this was
done last time" card for the context.
"""

from __future__ import annotations

import hashlib
import re
import time
from typing import TYPE_CHECKING, Any, Sequence

from pydantic import BaseModel, ConfigDict

from ..errors import InvalidInput, UnknownUser
from .plan import Plan, Req, update_document
from .relevance import is_relevant
from .scopes import Role

if TYPE_CHECKING:
    from .session import SessionCore

__all__ = ["Procedure", "ProceduresCore", "PROCEDURES_KEY"]

PROCEDURES_KEY = "agent:procedures"


class Procedure(BaseModel):
    model_config = ConfigDict(frozen=True)

    key: str
    task: str
    steps: tuple[str, ...]
    successes: int = 0
    failures: int = 0
    last_outcome: str = ""
    last_failure: str | None = None
    updated: float = 0.0
    score: float = 0.0

    def render(self, language: str = "en") -> str:
        steps = " → ".join(self.steps)
        runs = self.successes + self.failures
        if language == "zh":
            text = f"上次怎么做的（{runs}次中成功{self.successes}次）：{self.task}：{steps}"
            return text + (f"；上次失败：{self.last_failure}" if self.last_failure else "")
        text = f"How this was done before ({self.successes} of {runs} runs succeeded): {self.task}: {steps}"
        return text + (f"; last failure: {self.last_failure}" if self.last_failure else "")


def _key(task: str, steps: Sequence[str]) -> str:
    norm = " ".join(re.findall(r"\w+", task.lower())) + "\x1f" + "\x1f".join(" ".join(s.lower().split()) for s in steps)
    return "proc_" + hashlib.sha1(norm.encode("utf-8")).hexdigest()[:16]


class ProceduresCore:
    def __init__(self, session: "SessionCore") -> None:
        self._s = session

    def _partition(self) -> str:
        return self._s.access.scope("agent").partition

    def _doc(self) -> Plan[tuple[int, dict[str, Any]]]:
        doc = yield Req("get_document", (), {"user_id": self._partition(), "key": PROCEDURES_KEY})
        return (0, {}) if doc is None else (doc.version, dict(doc.value))

    def record(self, task: str, steps: Sequence[str], outcome: str, *, error: str | None = None) -> Plan[Procedure]:
        """Record one run: ``outcome`` is ``"success"`` or ``"failure"`` (``error``: what went wrong)."""
        s = self._s
        if not isinstance(task, str) or not task.strip():
            raise InvalidInput("a procedure needs a task description")
        steps = [str(x).strip() for x in steps if str(x).strip()]
        if not steps:
            raise InvalidInput("a procedure needs at least one step (or tool call)")
        if outcome not in ("success", "failure"):
            raise InvalidInput("outcome must be 'success' or 'failure'")
        s.access.require("agent", Role.WRITER, "recording a procedure")
        key = _key(task, steps)
        span = s.tracer.start("procedure.record", outcome=outcome, key=key)
        try:
            text = f"{task.strip()}: " + " → ".join(steps) + (f" ({outcome}" + (f": {error})" if error else ")"))
            yield Req("add", (text,), {"user_id": self._partition(), "agent_id": s.access.agent_id, "kind": "procedure",
                                       "metadata": {"written_by": s.access.agent_id, "procedure": key,
                                                    "outcome": outcome, "user": s.access.user_id}})

            def tally(value: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
                entry = dict(value.get(key) or {"task": task.strip(), "steps": steps, "successes": 0, "failures": 0})
                entry["successes" if outcome == "success" else "failures"] += 1
                entry["last_outcome"], entry["updated"] = outcome, time.time()
                if outcome == "failure":
                    entry["last_failure"] = error or "failed"
                value[key] = entry
                return value, entry

            entry = yield from update_document(self._partition(), PROCEDURES_KEY, tally, default={})
            proc = Procedure(key=key, **{k: v for k, v in entry.items() if k in Procedure.model_fields})
            span.set(successes=proc.successes, failures=proc.failures)
            s.tracer.done(span)
            return proc
        except BaseException as exc:
            s.tracer.done(span, exc)
            raise

    def find(self, task: str, *, k: int = 3) -> Plan[list[Procedure]]:
        """Recorded procedures for a task like ``task``, best first (past the relevance floor)."""
        s = self._s
        if not s.access.agent_id or not s.access.may("agent", Role.READER):
            return []
        try:
            res = yield Req("recall", (task,), {"user_id": self._partition(), "k": 10, "touch": False})
        except UnknownUser:
            return []
        _, value = yield from self._doc()
        out: dict[str, Procedure] = {}
        for hit in res.hits:
            key = hit.memory.metadata.get("procedure")
            if hit.memory.kind != "procedure" or key not in value or key in out or not is_relevant(hit, task):
                continue
            entry = value[key]
            out[key] = Procedure(key=key, score=float(hit.score),
                                 **{f: entry[f] for f in ("task", "steps", "successes", "failures", "last_outcome",
                                                          "last_failure", "updated") if f in entry})
        return list(out.values())[:k]

    def card(self, task: str, language: str = "en") -> Plan[str | None]:
        found = yield from self.find(task, k=1)
        return found[0].render(language) if found else None
