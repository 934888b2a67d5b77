"""The long-term profile: typed slots built from the graph's facts, with evidence and validity.

The graph already holds the facts (``mem.facts(user_id=...)``: the ``@self``
attributes that passed the confidence gate, with the memory that states each
and its validity).  The profile groups them into typed slots (name,
employer, role, location, preferences, dislikes, constraints, other) and
keeps a committed copy in a versioned document (``agent:profile``) with each
slot's history: a newer value closes the old entry's interval
(``valid_to``); nothing is deleted (against silent destructive updates:
mem0 #1674, LangMem #180).

The seed design's consistency rule: the long-term profile is written only at
the end of a session or at explicit key points (:meth:`ProfileCore.commit`);
within a session, what the user just said wins over the stored profile when
the two disagree (facts stated in this session override committed slots in
:meth:`ProfileCore.view`).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable

from pydantic import BaseModel, ConfigDict

from ..models import MemoryConflict
from .plan import Plan, Req, update_document
from .scopes import Role

if TYPE_CHECKING:
    from ..models import Fact
    from .session import SessionCore

__all__ = ["Slot", "SlotValue", "ProfileCore", "slot_of", "PROFILE_KEY", "SLOTS"]

PROFILE_KEY = "agent:profile"

#: Slot -> fact predicates it gathers.  Rendered in this order; the last ones give way first under a cap.
SLOTS: dict[str, tuple[str, ...]] = {
    "name": ("name",),
    "constraints": ("allergy", "diet", "budget", "deadline", "constraint", "limit", "dietary_restriction"),
    "employer": ("employer", "company", "workplace", "school"),
    "role": ("role", "occupation", "job", "job_title", "title", "position"),
    "location": ("location", "city", "residence", "home", "address", "hometown", "origin", "timezone"),
    "preferences": ("preference", "like", "hobby", "interest", "favorite"),
    "dislikes": ("dislike",),
}
MULTI = frozenset({"preferences", "dislikes", "constraints", "other"})
_LABELS = {
    "en": {"name": "Name", "constraints": "Constraints", "employer": "Employer", "role": "Role",
           "location": "Location", "preferences": "Likes", "dislikes": "Dislikes", "other": "Other"},
    "zh": {"name": "姓名", "constraints": "约束", "employer": "单位", "role": "职务", "location": "所在地",
           "preferences": "喜好", "dislikes": "不喜欢", "other": "其他"},
}


def slot_of(predicate: str) -> str:
    """The slot a fact predicate belongs to (``favorite_color`` -> preferences; unknown -> other)."""
    for slot, preds in SLOTS.items():
        if predicate in preds or any(predicate.startswith(p + "_") for p in preds):
            return slot
    for p in SLOTS["constraints"]:  # "offsite_budget", "project_deadline"
        if predicate.endswith("_" + p):
            return "constraints"
    return "other"


class SlotValue(BaseModel):
    model_config = ConfigDict(frozen=True)

    value: str
    predicate: str
    confidence: float
    memory_ids: tuple[str, ...]
    valid_from: float
    valid_to: float | None = None
    session_id: str | None = None
    #: (earlier value, later value) of an open conflict on one of ``memory_ids``: the write path was not
    #: sure the later statement replaces the earlier one ("was 50k, possibly now 60k"); None without one
    disputed: tuple[str, str] | None = None


class Slot(BaseModel):
    """A profile slot: its current values and its closed history."""

    model_config = ConfigDict(frozen=True)

    name: str
    current: tuple[SlotValue, ...]
    history: tuple[SlotValue, ...] = ()
    from_this_session: bool = False


def _ts(d: datetime | None) -> float | None:
    return None if d is None else d.astimezone(timezone.utc).timestamp()


def _entry(f: "Fact") -> dict[str, Any]:
    return {"value": f.value, "predicate": f.predicate, "confidence": f.confidence, "memory_ids": [f.memory_id],
            "valid_from": _ts(f.valid_from), "valid_to": None, "session_id": f.session_id}


def merge_facts(committed: dict[str, list[dict[str, Any]]], facts: list["Fact"]) -> tuple[dict[str, Any], int]:
    """Committed slot entries updated with current facts: new values open entries, replaced ones are closed.

    Returns the new slots and how many entries changed."""
    out = {k: [dict(e) for e in v] for k, v in committed.items()}
    changed = 0
    current: dict[tuple[str, str], "Fact"] = {}
    for f in facts:
        current[(f.predicate, f.value)] = f
    by_slot: dict[str, list["Fact"]] = {}
    for f in current.values():
        by_slot.setdefault(slot_of(f.predicate), []).append(f)
    for slot, fs in by_slot.items():
        entries = out.setdefault(slot, [])
        open_entries = [e for e in entries if e.get("valid_to") is None]
        for f in sorted(fs, key=lambda f: f.valid_from):
            same = next((e for e in open_entries if e["predicate"] == f.predicate and e["value"] == f.value), None)
            if same is not None:
                if f.memory_id not in same["memory_ids"]:
                    same["memory_ids"] = [*same["memory_ids"], f.memory_id]
                    same["confidence"] = max(same["confidence"], f.confidence)
                    changed += 1
                continue
            if slot not in MULTI:  # a single-valued slot: the newer value closes the open one
                for e in open_entries:
                    if e["predicate"] == f.predicate:
                        e["valid_to"] = _ts(f.valid_from)
                        changed += 1
            entries.append(_entry(f))
            open_entries.append(entries[-1])
            changed += 1
    # a committed value whose evidence was superseded or retracted in the graph is closed too
    live = {(f.predicate, f.value) for f in facts}
    for slot, entries in out.items():
        for e in entries:
            if e.get("valid_to") is None and (e["predicate"], e["value"]) not in live:
                e["valid_to"] = max([e["valid_from"], *(_ts(f.valid_from) or 0 for f in facts)])
                changed += 1
    return out, changed


#: Open conflicts shown as lines of their own (newest first) when no profile slot holds their values.
_UNSHOWN_MAX = 3


def _pair(c: Any) -> tuple[str, str]:
    """(earlier value, later value) of a :class:`ripple.MemoryConflict`, as written."""
    if c.values:
        return str(c.values[0]), str(c.values[1])
    return c.old.text, c.new.text


def _undoubled(values: tuple[SlotValue, ...]) -> list[SlotValue]:
    """The values of a slot, the later value of a conflict whose earlier value is shown too left out
    (the earlier one says "possibly now ...")."""
    shown = {v.value for v in values}
    return [v for v in values if not (v.disputed and v.value == v.disputed[1] and v.disputed[0] in shown)]


def _shown(v: SlotValue, slot: str, zh: bool) -> str:
    text = v.value if slot not in ("constraints", "other") else f"{v.predicate.replace('_', ' ')} {v.value}"
    if v.disputed is None:
        return text
    old, new = v.disputed
    if v.value == new:
        return f"{text}（待确认，原为{old}）" if zh else f"{text} (unconfirmed, was {old})"
    return f"{text}（可能已改为{new}）" if zh else f"{text} (possibly now {new})"


class ProfileCore:
    """Plans for the user's profile (bound to a driver as ``session.profile``)."""

    def __init__(self, session: "SessionCore") -> None:
        self._s = session

    def _committed(self) -> Plan[tuple[int, dict[str, Any]]]:
        doc = yield Req("get_document", (), {"user_id": self._s.access.user_id, "key": PROFILE_KEY})
        return (0, {}) if doc is None else (doc.version, dict(doc.value.get("slots", {})))

    def _facts(self) -> Plan[list["Fact"]]:
        try:
            return (yield Req("facts", (), {"user_id": self._s.access.user_id}))
        except Exception:  # noqa: BLE001 - a user with nothing stored has no facts
            return []

    def commit(self) -> Plan[int]:
        """Write the current facts into the committed profile (closing replaced values); returns changes."""
        s = self._s
        if not s.access.may("user", Role.CURATOR):
            return 0  # only a curator writes core facts; others read the committed profile
        span = s.tracer.start("profile.commit")
        try:
            facts = yield from self._facts()

            def merge(value: dict[str, Any]) -> tuple[dict[str, Any], int]:
                merged, n = merge_facts(dict(value.get("slots", {})), facts)
                return {"slots": merged}, n

            changed = yield from update_document(s.access.user_id, PROFILE_KEY, merge, default={"slots": {}},
                                                 on_retry=lambda: span.event("retry", reason="the profile changed"))
            span.set(changes=changed, facts=len(facts))
            s.tracer.done(span)
            return changed
        except BaseException as exc:
            s.tracer.done(span, exc)
            raise

    def _conflicts(self, **which: Any) -> Plan[list[Any]]:
        try:
            return list((yield Req("conflicts", (), {"user_id": self._s.access.user_id, **which})))
        except Exception:  # noqa: BLE001 - as for facts: nothing stored, nothing open
            return []

    def view(self) -> Plan[list[Slot]]:
        """Committed slots, with this session's newer statements winning where they disagree; a value
        an open conflict may have replaced (or that may replace another) says so (``disputed``)."""
        slots, _ = yield from self._view()
        return slots

    def _view(self) -> Plan[tuple[list[Slot], list[Any]]]:
        """The slots and the open conflicts that no slot value shows (see :meth:`view`).

        Only the conflicts a profile can show are read: those involving a slot value's memories,
        and the newest few others (a user's open conflicts accumulate; every context reads this)."""
        slots = yield from self._slots()
        slot_ids = sorted({i for slot in slots for v in slot.current for i in v.memory_ids})
        touching = (yield from self._conflicts(memory_ids=slot_ids)) if slot_ids else []
        seen = {(c.new.id, c.old.id) for c in touching}
        newest = yield from self._conflicts(limit=len(touching) + _UNSHOWN_MAX)
        unshown = [c for c in newest if (c.new.id, c.old.id) not in seen]
        for c in touching:
            pair = _pair(c)
            ids = {c.old.id, c.new.id}
            hit = False
            for n, slot in enumerate(slots):
                current = tuple(v.model_copy(update={"disputed": pair}) if ids & set(v.memory_ids) else v
                                for v in slot.current)
                if current != slot.current:
                    slots[n], hit = slot.model_copy(update={"current": current}), True
            if not hit:
                unshown.append(c)
        return slots, unshown

    def _slots(self) -> Plan[list[Slot]]:
        s = self._s
        version, slots = yield from self._committed()
        facts = yield from self._facts()
        if not version and facts and s.access.may("user", Role.CURATOR):
            yield from self.commit()  # the first session of a user with facts: bootstrap the profile
            version, slots = yield from self._committed()
        here = [f for f in facts if f.session_id == s.access.session_id]
        out: list[Slot] = []
        names = [*SLOTS, "other"]
        for name in names:
            entries = [SlotValue(**{**e, "memory_ids": tuple(e["memory_ids"])}) for e in slots.get(name, [])]
            current = [e for e in entries if e.valid_to is None]
            history = [e for e in entries if e.valid_to is not None]
            said = [f for f in here if slot_of(f.predicate) == name]
            overridden = False
            for f in said:
                if any(e.value == f.value and e.predicate == f.predicate for e in current):
                    continue
                v = SlotValue(**{**_entry(f), "memory_ids": (f.memory_id,)})
                if name not in MULTI:
                    current = [e for e in current if e.predicate != f.predicate]
                current.append(v)
                overridden = True
            if current or history:
                out.append(Slot(name=name, current=tuple(current), history=tuple(history),
                                from_this_session=overridden))
        return out

    def lines(self, language: str = "en") -> Plan[list[tuple[str, str]]]:
        """The profile as ``(slot, line)`` pairs, most important first (what a context shows)."""
        labels = _LABELS.get(language, _LABELS["en"])
        zh = language == "zh"
        sep = "、" if zh else ", "
        colon = "：" if zh else ": "
        out = []
        slots, unshown = yield from self._view()
        for slot in slots:
            if slot.current:
                values = sep.join(_shown(v, slot.name, zh) for v in _undoubled(slot.current))
                out.append((slot.name, f"- {labels[slot.name]}{colon}{values}"))
        for c in sorted(unshown, key=MemoryConflict.newness, reverse=True)[:_UNSHOWN_MAX]:
            old, new = _pair(c)
            what = c.frames[0] if c.frames else c.old.text
            out.append(("conflicts", f"- 待确认：{what}（{old}，可能已改为{new}）" if zh else
                        f"- Unconfirmed: {what} (was {old}, possibly now {new})"))
        return out

    def render(self, max_tokens: int | None = None, language: str = "en",
               count: Callable[[str], int] | None = None) -> Plan[str]:
        """The profile as text within ``max_tokens`` (the least important slots give way first)."""
        count = count or self._s.count
        lines = [line for _, line in (yield from self.lines(language))]
        while lines and max_tokens is not None and count("\n".join(lines)) > max_tokens:
            lines.pop()
        return "\n".join(lines)
