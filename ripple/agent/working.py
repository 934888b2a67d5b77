"""Working memory: a scratchpad and a structured, versioned task state per (user, agent, task).

State lives in the system, not in the model's memory (seed article 002): the
agent reads it before each action and writes it after.  It must be
checkable (``expected step 3, got step 5`` raises
:class:`ripple.StepMismatch`), durable (two documents of the user:
``agent:wm:<agent>:<task>:state`` and ``...:notes``, so a restart keeps
them), and safe under concurrency: every state write names the version it
was based on, and a stale write is refused with
:class:`ripple.VersionConflict` (optimistic locking; Letta answers 409).

The developer defines the state as a pydantic model (:class:`TaskState` is a
ready one: goal, plan, current step, todos, variables).  Notes are free text;
:meth:`WorkingCore.promote` turns a note into a long-term memory of the user.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import InvalidInput, NotFound, StepMismatch, VersionConflict
from .plan import Plan, Req, update_document

if TYPE_CHECKING:
    from .session import SessionCore

__all__ = ["TaskState", "Todo", "Note", "Versioned", "WorkingCore"]

S = TypeVar("S", bound=BaseModel)


class Todo(BaseModel):
    text: str
    done: bool = False


class TaskState(BaseModel):
    """A ready-made task state; any pydantic model works."""

    goal: str = ""
    plan: list[str] = Field(default_factory=list)
    step: int = 0
    todos: list[Todo] = Field(default_factory=list)
    variables: dict[str, Any] = Field(default_factory=dict)


class Note(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    at: float
    written_by: str | None = None
    promoted_to: str | None = None


class Versioned(BaseModel, Generic[S]):
    """A task state with the version it was read at (pass it back to :meth:`WorkingCore.save`)."""

    version: int
    state: S


class WorkingCore:
    """Plans for one task's working memory (bound to a driver by ``session.working(task)``)."""

    def __init__(self, session: "SessionCore", task: str, model: type[BaseModel] = TaskState) -> None:
        if not isinstance(task, str) or not task.strip() or ":" in task:
            raise InvalidInput("a task name must be a non-empty string without ':'")
        self._s = session
        self.task = task
        self.model = model
        base = f"agent:wm:{session.access.agent_id or '-'}:{task}"
        self.state_key, self.notes_key = f"{base}:state", f"{base}:notes"

    def _get(self, key: str) -> Plan[Any]:
        return (yield Req("get_document", (), {"user_id": self._s.access.user_id, "key": key}))

    def _put(self, key: str, value: Any, version: int) -> Plan[Any]:
        return (yield Req("put_document", (), {"user_id": self._s.access.user_id, "key": key, "value": value,
                                                "expected_version": version}))

    # -- task state ----------------------------------------------------------------------------------
    def state(self) -> Plan[Versioned[Any]]:
        """The task state and its version (version 0 and a default state when none is stored)."""
        doc = yield from self._get(self.state_key)
        if doc is None:
            return Versioned(version=0, state=self.model())
        try:
            return Versioned(version=doc.version, state=self.model.model_validate(doc.value))
        except ValidationError as exc:
            raise InvalidInput(f"the stored state of task {self.task!r} does not fit {self.model.__name__}: {exc}") from exc

    def save(self, state: BaseModel, *, expected_version: int) -> Plan[Versioned[Any]]:
        """Write the state if the stored one is still at ``expected_version``; else :class:`ripple.VersionConflict`."""
        if not isinstance(state, self.model):
            raise InvalidInput(f"the state must be a {self.model.__name__}")
        span = self._s.tracer.start("working.save", task=self.task, expected_version=expected_version)
        try:
            doc = yield from self._put(self.state_key, state.model_dump(mode="json"), expected_version)
            span.set(version=doc.version)
            self._s.tracer.done(span)
            return Versioned(version=doc.version, state=state)
        except VersionConflict as exc:
            span.event("refused", reason=str(exc))
            self._s.tracer.done(span, exc)
            raise VersionConflict(
                f"stale task state for {self.task!r}: it is at version {exc.current}, the write was based on"
                f" version {expected_version} (read it again, reapply the change, retry)", current=exc.current,
            ) from exc

    def check_step(self, expected: int) -> Plan[Versioned[Any]]:
        """The state, if its ``step`` is ``expected``; else :class:`ripple.StepMismatch`."""
        current = yield from self.state()
        step = getattr(current.state, "step", None)
        if step != expected:
            raise StepMismatch(f"task {self.task!r}: expected step {expected}, got step {step}")
        return current

    def clear(self) -> Plan[None]:
        """Forget this task's state and notes (when the task is done)."""
        for key in (self.state_key, self.notes_key):
            yield Req("delete_document", (), {"user_id": self._s.access.user_id, "key": key})

    # -- scratchpad -----------------------------------------------------------------------------------
    def notes(self) -> Plan[list[Note]]:
        doc = yield from self._get(self.notes_key)
        return [] if doc is None else [Note(**n) for n in doc.value.get("notes", [])]

    def note(self, text: str) -> Plan[Note]:
        """Add a note to the scratchpad (appends commute: a conflict just re-reads and retries)."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("a note needs a non-empty text")
        note = Note(id="note_" + uuid.uuid4().hex[:10], text=text.strip(), at=time.time(),
                    written_by=self._s.access.agent_id)

        def append(value: dict[str, Any]) -> tuple[dict[str, Any], Note]:
            value["notes"] = [*value.get("notes", []), note.model_dump()]
            return value, note

        return (yield from update_document(self._s.access.user_id, self.notes_key, append, default={"notes": []}))

    def promote(self, note_id: str, *, scope: str = "user") -> Plan[Note]:
        """Turn a note into a long-term memory (in ``scope``); the note records the memory id."""
        found = [n for n in (yield from self.notes()) if n.id == note_id]
        if not found:
            raise NotFound(f"no note {note_id!r} in task {self.task!r}")
        if found[0].promoted_to:
            return found[0]
        stored = yield from self._s.remember_plan(found[0].text, scope=scope, kind=None,
                                                  extra={"from_note": note_id, "task": self.task})
        memory_id = stored[0].id if stored else None

        def mark(value: dict[str, Any]) -> tuple[dict[str, Any], Note]:
            notes = [n for n in value.get("notes", []) if n["id"] == note_id]
            if not notes:
                raise NotFound(f"no note {note_id!r} in task {self.task!r}")
            updated = {**notes[0], "promoted_to": memory_id}
            value["notes"] = [updated if n["id"] == note_id else n for n in value["notes"]]
            return value, Note(**updated)

        return (yield from update_document(self._s.access.user_id, self.notes_key, mark, default={"notes": []}))

    def lines(self) -> Plan[list[str]]:
        """What a context shows: goal, step, open todos, then the latest notes."""
        current = (yield from self.state()).state
        out: list[str] = []
        data = current.model_dump(mode="json")
        if data.get("goal"):
            out.append(f"- goal: {data['goal']}")
        plan = data.get("plan") or []
        if "step" in data and (plan or data.get("step")):
            step = int(data["step"] or 0)
            what = f" ({plan[step - 1]})" if 0 < step <= len(plan) else ""
            out.append(f"- step {step} of {len(plan)}{what}" if plan else f"- step {step}")
        for todo in data.get("todos") or []:
            if isinstance(todo, dict) and not todo.get("done"):
                out.append(f"- todo: {todo.get('text', '')}")
        for key, value in (data.get("variables") or {}).items():
            out.append(f"- {key} = {value}")
        for key, value in data.items():
            if key not in ("goal", "plan", "step", "todos", "variables") and value not in (None, "", [], {}):
                out.append(f"- {key}: {value}")
        for n in reversed((yield from self.notes())[-5:]):
            out.append(f"- note: {n.text}")
        return out
