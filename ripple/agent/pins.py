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

import time
import uuid
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from ..errors import InvalidInput, LimitExceeded, NotFound, VersionConflict
from .plan import Plan, Req
from .scopes import Role

if TYPE_CHECKING:
    from .session import SessionCore

__all__ = ["Pin", "PinsCore", "PINS_KEY"]

PINS_KEY = "agent:pins"
_RETRIES = 8


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

    def _write(self, version: int, value: dict[str, Any]) -> Plan[Any]:
        return (yield Req("put_document", (), {"user_id": self._s.access.user_id, "key": PINS_KEY, "value": value,
                                                "expected_version": version}))

    def list(self) -> Plan[list[Pin]]:
        """The active pins, oldest first."""
        _, value = yield from self._doc()
        return [Pin(**p) for p in value.get("pins", [])]

    def pending(self) -> Plan[list[Pin]]:
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
                version, value = yield from self._doc()
                self._check_caps(value, tokens, cap_tokens, cap_count)
                stored = yield Req("add", (pin["text"],), s.write_kwargs("user", kind=None, extra={"pinned_by": by}))
                if stored:
                    pin["memory_id"] = stored[0].id
                    yield Req("pin", (stored[0].id,))
            for _ in range(_RETRIES):
                version, value = yield from self._doc()
                if curator:
                    self._check_caps(value, tokens, cap_tokens, cap_count)
                field = "pins" if curator else "pending"
                value[field] = [*value.get(field, []), pin]
                try:
                    yield from self._write(version, value)
                    break
                except VersionConflict:
                    span.event("retry", reason="the pin list changed meanwhile")
            else:
                raise VersionConflict("the pin list kept changing; try again")
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
        s = self._s
        s.access.require("user", Role.CURATOR, "unpinning a fact")
        for _ in range(_RETRIES):
            version, value = yield from self._doc()
            found = [p for p in value.get("pins", []) if p["id"] == pin_id]
            if not found:
                raise NotFound(f"no pin {pin_id!r}")
            value["pins"] = [p for p in value["pins"] if p["id"] != pin_id]
            try:
                yield from self._write(version, value)
            except VersionConflict:
                continue
            if found[0].get("memory_id"):
                yield Req("pin", (found[0]["memory_id"],), {"pinned": False})
            return Pin(**found[0])
        raise VersionConflict("the pin list kept changing; try again")

    def accept(self, pin_id: str) -> Plan[Pin]:
        """A curator accepts a pending pin (the caps apply now)."""
        s = self._s
        s.access.require("user", Role.CURATOR, "accepting a pending pin")
        for _ in range(_RETRIES):
            version, value = yield from self._doc()
            found = [p for p in value.get("pending", []) if p["id"] == pin_id]
            if not found:
                raise NotFound(f"no pending pin {pin_id!r}")
            pin = {**found[0], "status": "active"}
            self._check_caps(value, int(pin["tokens"]), s.cfg.cap("pins"), s.cfg.max_pins)
            if pin.get("memory_id") is None:
                stored = yield Req("add", (pin["text"],), s.write_kwargs("user", kind=None, extra={
                    "pinned_by": pin["by"], "proposed_by": pin["written_by"]}))
                if stored:
                    pin["memory_id"] = stored[0].id
                    yield Req("pin", (stored[0].id,))
            value["pending"] = [p for p in value["pending"] if p["id"] != pin_id]
            value["pins"] = [*value.get("pins", []), pin]
            try:
                yield from self._write(version, value)
                return Pin(**pin)
            except VersionConflict:
                continue
        raise VersionConflict("the pin list kept changing; try again")
