"""Pinned facts ("hard memory"): what the agent must never forget, in every context, under hard caps.

A pin comes from the user or the operator, never from extraction alone; it is
stored as a memory (recallable, and pinned so it keeps full weight in every
forgetting tier) and listed in a versioned document of the user
(``agent:pins``) that every context reads.  The list is capped by count and
by token share of the budget: a pin past a cap raises
:class:`ripple.LimitExceeded` and nothing is written, never a silent
truncation (Letta #3241: always-in-context memory whose limits were bypassed).
Only a curator of the user's scope may pin; another agent's pin raises
:class:`ripple.PermissionDenied` or, with ``on_denied="pending"``, waits for a
curator to :meth:`accept` it.  Concurrent pinners are serialised by the
document's compare-and-set (a conflict re-reads and re-checks the caps).
"""

from __future__ import annotations

import builtins

import time
import uuid
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from ..errors import InvalidInput, LimitExceeded, NotFound
from .plan import Plan, Req, update_document
from .scopes import Role

if TYPE_CHECKING:
    from .session import SessionCore

__all__ = ["Pin", "PinsCore", "PINS_KEY"]

PINS_KEY = "agent:pins"


class Pin(BaseModel):
    """One pinned fact."""

    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    memory_id: str | None
    by: Literal["user", "operator"]
    written_by: str | None
    at: float
    tokens: int
    status: Literal["active", "pending"] = "active"


class PinsCore:
    """Plans for the pins of a session's user (bound to a driver as ``session.pins``)."""

    def __init__(self, session: "SessionCore") -> None:
        self._s = session

    def _doc(self) -> Plan[tuple[int, dict[str, Any]]]:
        doc = yield Req("get_document", (), {"user_id": self._s.access.user_id, "key": PINS_KEY})
        if doc is None:
            return 0, {"pins": [], "pending": []}
        return doc.version, dict(doc.value)

    def _update(self, mutate: Any, span: Any = None) -> Plan[Any]:
        retry = (lambda: span.event("retry", reason="the pin list changed meanwhile")) if span is not None else None
        return (yield from update_document(self._s.access.user_id, PINS_KEY, mutate,
                                           default={"pins": [], "pending": []}, on_retry=retry))

    def list(self) -> Plan[builtins.list[Pin]]:
        """The active pins, oldest first."""
        _, value = yield from self._doc()
        return [Pin(**p) for p in value.get("pins", [])]

    def pending(self) -> Plan[builtins.list[Pin]]:
        """Pins proposed by agents that are not curators, waiting for a curator."""
        _, value = yield from self._doc()
        return [Pin(**p) for p in value.get("pending", [])]

    def add(self, text: str, *, by: Literal["user", "operator"] = "user") -> Plan[Pin]:
        """Pin ``text`` (said by the user, or set by the operator); raises past a cap."""
        s = self._s
        if by not in ("user", "operator"):
            raise InvalidInput("a pin comes from the user or the operator (by='user' or by='operator')")
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("a pin needs a non-empty text")
        span = s.tracer.start("session.pin", by=by)
        try:
            curator = s.access.may("user", Role.CURATOR)
            if not curator and s.access.on_denied == "raise":
                s.access.require("user", Role.CURATOR, "pinning a fact")
            tokens = s.count(text.strip()) + 2
            cap_tokens, cap_count = s.cfg.cap("pins"), s.cfg.max_pins
            pin = {"id": "pin_" + uuid.uuid4().hex[:12], "text": text.strip(), "memory_id": None, "by": by,
                   "written_by": s.access.agent_id, "at": time.time(), "tokens": tokens,
                   "status": "active" if curator else "pending"}
            if curator:
                _, value = yield from self._doc()
                self._check_caps(value, tokens, cap_tokens, cap_count)
                stored = yield Req("add", (pin["text"],), s.write_kwargs("user", kind=None, extra={"pinned_by": by}))
                if stored:
                    pin["memory_id"] = stored[0].id
                    yield Req("pin", (stored[0].id,))
            field = "pins" if curator else "pending"

            def put(value: dict[str, Any]) -> tuple[dict[str, Any], None]:
                if curator:
                    self._check_caps(value, tokens, cap_tokens, cap_count)
                value[field] = [*value.get(field, []), pin]
                return value, None

            yield from self._update(put, span)
            span.set(status=pin["status"], tokens=tokens, pin_id=pin["id"])
            s.tracer.done(span)
            return Pin(**pin)
        except BaseException as exc:
            s.tracer.done(span, exc)
            raise

    @staticmethod
    def _check_caps(value: dict[str, Any], tokens: int, cap_tokens: int, cap_count: int) -> None:
        pins = value.get("pins", [])
        if len(pins) + 1 > cap_count:
            raise LimitExceeded(f"{len(pins)} pins already; the cap is {cap_count} (unpin one first)")
        used = sum(int(p["tokens"]) for p in pins)
        if used + tokens > cap_tokens:
            raise LimitExceeded(
                f"pinned facts would take {used + tokens} tokens; their cap is {cap_tokens}"
                " (pins_share of the budget): unpin or shorten one first"
            )

    def remove(self, pin_id: str) -> Plan[Pin]:
        """Unpin (the memory stays, unpinned)."""
        self._s.access.require("user", Role.CURATOR, "unpinning a fact")

        def drop(value: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
            found = [p for p in value.get("pins", []) if p["id"] == pin_id]
            if not found:
                raise NotFound(f"no pin {pin_id!r}")
            value["pins"] = [p for p in value["pins"] if p["id"] != pin_id]
            return value, found[0]

        pin = yield from self._update(drop)
        if pin.get("memory_id"):
            yield Req("pin", (pin["memory_id"],), {"pinned": False})
        return Pin(**pin)

    def accept(self, pin_id: str) -> Plan[Pin]:
        """A curator accepts a pending pin (the caps apply now)."""
        s = self._s
        s.access.require("user", Role.CURATOR, "accepting a pending pin")
        _, value = yield from self._doc()
        found = [p for p in value.get("pending", []) if p["id"] == pin_id]
        if not found:
            raise NotFound(f"no pending pin {pin_id!r}")
        pin = {**found[0], "status": "active"}
        self._check_caps(value, int(pin["tokens"]), s.cfg.cap("pins"), s.cfg.max_pins)
        stored = yield Req("add", (pin["text"],), s.write_kwargs("user", kind=None, extra={
            "pinned_by": pin["by"], "proposed_by": pin["written_by"]}))
        if stored:
            pin["memory_id"] = stored[0].id
            yield Req("pin", (stored[0].id,))

        def move(value: dict[str, Any]) -> tuple[dict[str, Any], None]:
            if not any(p["id"] == pin_id for p in value.get("pending", [])):
                raise NotFound(f"no pending pin {pin_id!r}")
            self._check_caps(value, int(pin["tokens"]), s.cfg.cap("pins"), s.cfg.max_pins)
            value["pending"] = [p for p in value["pending"] if p["id"] != pin_id]
            value["pins"] = [*value.get("pins", []), pin]
            return value, None

        yield from self._update(move)
        return Pin(**pin)
