"""The session window: recent turns within a token budget, as a small I/O-free state machine.

What users of other layers hit (LangMem #111/#77, #98/#126; Letta #2541):
a summariser that drops the latest user message, that splits a tool call
from its result (a 400 from the provider), or that never triggers.  Here:

* a *round* starts at each user turn and holds everything until the next one;
  eviction takes whole rounds from the oldest end, down to a low-water mark
  (so evictions come in batches and the window's prefix stays stable for
  prompt caching), and the last round always stays;
* a *unit* is one turn, or an assistant turn that calls tools together with
  the results of those calls: when even the last round is too big, whole
  units are evicted from its start, never half of one, never its last unit;
* a single turn bigger than its share of the budget is kept *clipped* in the
  window (head and tail, with a marker); its full text is in the graph;
* the budget is checked after the calibration factor (see
  :mod:`ripple.agent.tokens`), so the window never exceeds it.

The caller (the session) stores every turn in the graph before this state
machine sees it, so an evicted turn is never lost: it is summarised in the
background and stays recallable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

__all__ = ["Turn", "Eviction", "Window", "ROLES", "clip_text"]

ROLES = ("user", "assistant", "tool")


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of the session, as the window holds it (``tokens``: raw estimate with overhead)."""

    seq: int
    role: str
    text: str
    tokens: int
    at: float
    round: int
    unit: int
    memory_ids: tuple[str, ...] = ()
    tool_call_id: str | None = None  # a tool result: the call it answers
    tool_calls: tuple[str, ...] = ()  # an assistant turn: the calls it makes
    clipped: bool = False  # the window holds a shortened text; the graph has the full one

    def message(self) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": self.role, "content": self.text}
        if self.tool_call_id:
            msg["tool_call_id"] = self.tool_call_id
        if self.tool_calls:
            msg["tool_calls"] = list(self.tool_calls)
        return msg

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "role": self.role, "text": self.text, "tokens": self.tokens, "at": self.at,
                "round": self.round, "unit": self.unit, "memory_ids": list(self.memory_ids),
                "tool_call_id": self.tool_call_id, "tool_calls": list(self.tool_calls), "clipped": self.clipped}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Turn":
        return cls(seq=int(d["seq"]), role=str(d["role"]), text=str(d["text"]), tokens=int(d["tokens"]),
                   at=float(d["at"]), round=int(d["round"]), unit=int(d["unit"]),
                   memory_ids=tuple(d.get("memory_ids") or ()), tool_call_id=d.get("tool_call_id"),
                   tool_calls=tuple(d.get("tool_calls") or ()), clipped=bool(d.get("clipped")))


@dataclass(slots=True)
class Eviction:
    """What one change of the window did: the turns it evicted (oldest first) and why."""

    evicted: list[Turn] = field(default_factory=list)
    clipped: list[int] = field(default_factory=list)  # seqs of turns clipped in the window
    reason: str = ""
    tokens_before: int = 0
    tokens_after: int = 0

    def rounds(self) -> list[list[Turn]]:
        out: list[list[Turn]] = []
        for t in self.evicted:
            if out and out[-1][-1].round == t.round:
                out[-1].append(t)
            else:
                out.append([t])
        return out


_MARK = "…[{n} tokens elided; the full text is in memory]…"


def clip_text(text: str, target: int, count: Callable[[str], int]) -> str:
    """``text`` shortened to at most ``target`` tokens: its head (2/3) and tail (1/3) around a marker."""
    if count(text) <= target:
        return text
    n = count(text)
    keep = max(0, int(len(text) * max(0, target - 12) / max(1, n)))
    while True:
        head, tail = text[: keep * 2 // 3], text[len(text) - keep // 3 :] if keep // 3 else ""
        out = f"{head}{_MARK.format(n=max(0, n - count(head + tail)))}{tail}"
        if count(out) <= target or keep == 0:
            return out
        keep = int(keep * 0.85)


class Window:
    """Recent turns under a token budget (pure state; see the module docstring).

    ``scale`` maps a raw token sum to the calibrated count the budget is
    checked against (identity by default).
    """

    def __init__(self, budget: int, *, low_water: float = 0.75, max_turn_share: float = 0.5,
                 count: Callable[[str], int] | None = None, overhead: int = 0,
                 scale: Callable[[int], int] | None = None) -> None:
        if budget < 64:
            raise ValueError(f"a window budget of {budget} tokens is too small (at least 64)")
        self.budget = budget
        self.low_water = low_water
        self.max_turn_share = max_turn_share
        self._count = count or (lambda s: math.ceil(len(s) / 4))
        self._overhead = overhead
        self._scale = scale or (lambda n: n)
        self.turns: list[Turn] = []
        self.next_seq = 1
        self._round = 0
        self._unit = 0
        self._calls: dict[str, int] = {}  # open tool call id -> unit

    # -- reading ----------------------------------------------------------------------
    @property
    def raw_tokens(self) -> int:
        return sum(t.tokens for t in self.turns)

    @property
    def tokens(self) -> int:
        """The window's calibrated size (what the budget is checked against)."""
        return self._scale(self.raw_tokens)

    def messages(self) -> list[dict[str, Any]]:
        return [t.message() for t in self.turns]

    # -- changing -------------------------------------------------------------------------
    def make_turn(self, role: str, text: str, *, at: float, tool_call_id: str | None = None,
                  tool_calls: Sequence[str] = (), memory_ids: Sequence[str] = ()) -> Turn:
        """The next turn (numbered, with its round and unit), not yet admitted."""
        if role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
        rnd = self._round + 1 if (role == "user" or not self.turns and self.next_seq == 1) else self._round
        call_unit = self._calls.get(tool_call_id) if tool_call_id is not None else None
        if call_unit is not None and any(t.unit == call_unit and t.round == self._round for t in self.turns):
            unit = call_unit
        else:  # a new unit; also a result whose call is gone or in an older round (joining would split a unit)
            unit = self._unit + 1
        return Turn(seq=self.next_seq, role=role, text=text, tokens=self._count(text) + self._overhead, at=at,
                    round=rnd, unit=unit, memory_ids=tuple(memory_ids), tool_call_id=tool_call_id,
                    tool_calls=tuple(tool_calls))

    def admit(self, turn: Turn) -> Eviction:
        """Append ``turn`` (from :meth:`make_turn`) and evict what no longer fits."""
        self.next_seq = max(self.next_seq, turn.seq + 1)
        self._round, self._unit = max(self._round, turn.round), max(self._unit, turn.unit)
        for call in turn.tool_calls:
            self._calls[call] = turn.unit
        cap = max(16, int(self.budget * self.max_turn_share))
        change = Eviction(tokens_before=self.tokens)
        if self._scale(turn.tokens) > cap:
            turn = self._clip(turn, cap)
            change.clipped.append(turn.seq)
        self.turns.append(turn)
        self._fit(change, "turn added")
        return change

    def rebalance(self, reason: str = "recalibrated") -> Eviction:
        """Evict what no longer fits after the budget or the calibration changed."""
        change = Eviction(tokens_before=self.tokens)
        self._fit(change, reason)
        return change

    def _clip(self, turn: Turn, cap: int) -> Turn:
        # the cap is in calibrated tokens; clip the raw text to the raw equivalent
        raw_cap = max(8, int(cap * turn.tokens / max(1, self._scale(turn.tokens))) - self._overhead)
        text = clip_text(turn.text, raw_cap, self._count)
        return replace(turn, text=text, tokens=self._count(text) + self._overhead, clipped=True)

    def _fit(self, change: Eviction, reason: str) -> None:
        if self.tokens <= self.budget:
            change.tokens_after = self.tokens
            return
        change.reason = f"{reason}: {self.tokens} > budget {self.budget}"
        low = int(self.budget * self.low_water)
        # 1. whole rounds from the oldest end, down to the low-water mark; the last round stays
        while self.tokens > low and len({t.round for t in self.turns}) > 1:
            first = self.turns[0].round
            while self.turns and self.turns[0].round == first:
                change.evicted.append(self.turns.pop(0))
        # 2. the last round alone is over budget: clip its turns, oldest first, the newest last
        if self.tokens > self.budget:
            for i, t in enumerate(self.turns):
                if self.tokens <= self.budget:
                    break
                share = max(16, int(self.budget * self.max_turn_share / 2))
                if self._scale(t.tokens) > share and i < len(self.turns) - 1:
                    self.turns[i] = self._clip(t, share)
                    change.clipped.append(t.seq)
        # 3. still over: whole units from the start of the round, never its last unit
        while self.tokens > self.budget and len({t.unit for t in self.turns}) > 1:
            first = self.turns[0].unit
            while self.turns and self.turns[0].unit == first:
                change.evicted.append(self.turns.pop(0))
        # 4. one unit left and still over: clip it (the newest turn last)
        for i in range(len(self.turns)):
            if self.tokens <= self.budget:
                break
            rest = self._scale(self.raw_tokens - self.turns[i].tokens)
            room = max(8, self.budget - rest)
            self.turns[i] = self._clip(self.turns[i], room)
            change.clipped.append(self.turns[i].seq)
        change.tokens_after = self.tokens

    # -- persistence ---------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {"turns": [t.to_json() for t in self.turns], "next_seq": self.next_seq, "round": self._round,
                "unit": self._unit}

    def restore(self, state: dict[str, Any]) -> None:
        self.turns = [Turn.from_json(t) for t in state.get("turns", [])]
        self.next_seq = int(state.get("next_seq", 1))
        self._round = int(state.get("round", 0))
        self._unit = int(state.get("unit", 0))
        self._calls = {c: t.unit for t in self.turns for c in t.tool_calls}
