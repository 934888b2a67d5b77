"""Context assembly: the messages to send, within budget, in a stable order, with a ledger.

Order (a cacheable prefix first: what changes least comes first):
pinned facts, profile, working memory, summary, recalled memories, then the
recent turns.  Each section is capped (a share of the budget, see
:class:`~ripple.agent.config.AgentConfig`); when ``max_tokens`` is below the
budget, sections give way in this order: recalled cards (lowest score
first), older rounds of the window, the summary, working memory, the
profile.  Pinned facts and the latest round never give way: if they alone do
not fit, that is an error, not a silent truncation.

:func:`pack` is pure: the session gathers the parts (reads, recall) and
calls it.  ``Context.ledger`` says, per section, its tokens and cap, what was
kept and what was dropped and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Sequence

from ..errors import InvalidInput
from .window import Turn

__all__ = ["Card", "Section", "Ledger", "Context", "ContextParts", "pack", "make_card", "HEADERS"]

HEADERS = {
    "en": {"pins": "Pinned facts (always true, never ignore):", "profile": "About the user:",
           "working": "Current task (working memory):", "summary": "", "recalled": "Possibly relevant memories:"},
    "zh": {"pins": "固定事实（始终成立，不可忽略）：", "profile": "关于用户：", "working": "当前任务（工作记忆）：",
           "summary": "", "recalled": "可能相关的记忆："},
}
SECTION_ORDER = ("pins", "profile", "working", "summary", "recalled")


@dataclass(frozen=True, slots=True)
class Card:
    """A recalled memory as one short line: date, source, text (at most ``card_chars`` characters)."""

    memory_id: str
    text: str
    date: str
    source: str
    score: float
    scope: str = "user"

    def line(self) -> str:
        return f"[{self.date} · {self.source}] {self.text}"


def make_card(hit: Any, *, scope: str, card_chars: int) -> Card:
    m = hit.memory
    text = " ".join(m.text.split())
    for prefix in ("assistant: ", "user: "):
        if text.startswith(prefix):
            text = text[len(prefix):]
    if len(text) > card_chars:
        text = text[: card_chars - 1].rstrip() + "…"
    at = m.at if isinstance(m.at, datetime) else datetime.fromtimestamp(float(m.at), tz=timezone.utc)
    source = m.kind if m.kind in ("summary", "procedure") else (m.session_id or scope)
    if scope not in ("user",):
        source = f"{scope}/{source}" if source != scope else scope
    if getattr(hit, "conflicts", ()):  # an open conflict: this may be out of date, or may replace another
        source = f"{source} · unconfirmed"
    if m.status == "superseded":  # history a question about a change asked for: no longer true
        source = f"{source} · replaced"
    return Card(m.id, text, at.strftime("%Y-%m-%d"), source, float(hit.score), scope)


@dataclass(slots=True)
class Section:
    name: str
    cap: int
    tokens: int = 0
    kept: list[str] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (what, why)

    def to_json(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "cap": self.cap, "kept": list(self.kept),
                "dropped": [{"item": w, "why": y} for w, y in self.dropped]}


@dataclass(slots=True)
class Ledger:
    budget: int
    max_tokens: int
    sections: dict[str, Section] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(s.tokens for s in self.sections.values())

    def to_json(self) -> dict[str, Any]:
        return {"budget": self.budget, "max_tokens": self.max_tokens, "total": self.total,
                "sections": {k: v.to_json() for k, v in self.sections.items()}}

    def render(self) -> str:
        rows = [f"{name:9} {s.tokens:6} / {s.cap:<6} kept {len(s.kept):3}  dropped {len(s.dropped)}"
                for name, s in self.sections.items()]
        return "\n".join([*rows, f"{'total':9} {self.total:6} / {self.max_tokens}"])


@dataclass(slots=True)
class Context:
    """What :meth:`~ripple.agent.Session.context` returns: ``messages`` to send and the ``ledger``."""

    messages: list[dict[str, Any]]
    ledger: Ledger
    cards: list[Card]
    language: str

    @property
    def tokens(self) -> int:
        return self.ledger.total

    def text(self) -> str:
        return "\n\n".join(f"{m['role']}: {m['content']}" for m in self.messages)


@dataclass(slots=True)
class ContextParts:
    """Everything :func:`pack` needs, gathered by the session."""

    pins: list[tuple[str, str]]  # (pin id, text)
    profile: list[tuple[str, str]]  # (slot, rendered line), most important first
    working: list[str]  # lines, most important first
    summary: str
    cards: list[Card]  # candidates, best first, already past the relevance floor
    turns: list[Turn]
    language: str = "en"
    pinned_memory_ids: frozenset[str] = frozenset()


def _similar(a: str, b: str) -> float:
    wa, wb = set(a.lower().split()), set(b.lower().split())
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def pack(parts: ContextParts, *, caps: dict[str, int], budget: int, max_tokens: int | None,
         count: Callable[[str], int], overhead: int, max_cards: int,
         scale: Callable[[int], int] = lambda n: n) -> Context:
    """Assemble the context from ``parts`` (see the module docstring)."""
    limit = budget if max_tokens is None else min(max_tokens, budget)
    if limit <= 0:
        raise InvalidInput("max_tokens must be positive")
    lang = parts.language if parts.language in HEADERS else "en"
    heads = HEADERS[lang]
    ledger = Ledger(budget=budget, max_tokens=limit)
    sec = {name: Section(name, caps[name]) for name in (*SECTION_ORDER, "window")}
    ledger.sections = sec

    def tokens_of(lines: Sequence[str], head: str) -> int:
        return count("\n".join([head, *lines]) if head else "\n".join(lines)) + overhead if lines else 0

    # -- each section at its cap ------------------------------------------------------------------
    pin_lines = [f"- {t}" for _, t in parts.pins]
    sec["pins"].kept = [pid for pid, _ in parts.pins]
    profile = _fill([line for _, line in parts.profile], [slot for slot, _ in parts.profile], heads["profile"],
                    caps["profile"], tokens_of, sec["profile"], "over the profile cap")
    working = _fill(parts.working, [f"line {i + 1}" for i in range(len(parts.working))], heads["working"],
                    caps["working"], tokens_of, sec["working"], "over the working-memory cap")
    summary = [parts.summary] if parts.summary else []
    if summary and tokens_of(summary, "") > caps["summary"]:
        sec["summary"].dropped.append(("summary", "over the summary cap"))
        summary = []
    window_text = "\n".join(t.text for t in parts.turns)
    cards: list[Card] = []
    for card in parts.cards:
        if card.memory_id in parts.pinned_memory_ids:
            sec["recalled"].dropped.append((card.memory_id, "pinned"))
        elif any(card.memory_id in t.memory_ids for t in parts.turns):
            sec["recalled"].dropped.append((card.memory_id, "in the window"))
        elif any(_similar(card.text.rstrip("…"), t.text) >= 0.6 for t in parts.turns) or (
                len(card.text) > 12 and card.text.rstrip("…") in window_text):
            sec["recalled"].dropped.append((card.memory_id, "repeats the window"))
        elif any(_similar(card.text, c.text) >= 0.8 for c in cards):
            sec["recalled"].dropped.append((card.memory_id, "repeats another card"))
        elif len(cards) >= max_cards:
            sec["recalled"].dropped.append((card.memory_id, f"more than {max_cards} cards"))
        else:
            cards.append(card)
    while cards and tokens_of([c.line() for c in cards], heads["recalled"]) > caps["recalled"]:
        sec["recalled"].dropped.append((cards.pop().memory_id, "over the recalled cap"))
    turns = list(parts.turns)

    # -- then fit max_tokens: recalled, older rounds, summary, working, profile give way -----------------
    def total() -> int:
        return (tokens_of(pin_lines, heads["pins"]) + tokens_of(profile, heads["profile"])
                + tokens_of(working, heads["working"]) + tokens_of(summary, "")
                + tokens_of([c.line() for c in cards], heads["recalled"]) + scale(sum(t.tokens for t in turns)))

    while total() > limit and cards:
        sec["recalled"].dropped.append((cards.pop().memory_id, "max_tokens"))
    last_round = turns[-1].round if turns else None
    while total() > limit and turns and turns[0].round != last_round:
        first = turns[0].round
        while turns and turns[0].round == first:
            sec["window"].dropped.append((f"turn {turns.pop(0).seq}", "max_tokens"))
    if total() > limit and summary:
        summary = []
        sec["summary"].dropped.append(("summary", "max_tokens"))
    while total() > limit and working:
        working.pop()
        sec["working"].dropped.append((f"line {len(working) + 1}", "max_tokens"))
    while total() > limit and profile:
        profile.pop()
        sec["profile"].dropped.append((parts.profile[len(profile)][0], "max_tokens"))
    if total() > limit:
        raise InvalidInput(
            f"max_tokens={limit} cannot hold the pinned facts and the latest round ({total()} tokens);"
            " raise it, or unpin something"
        )

    # -- messages, in the stable order --------------------------------------------------------------------
    messages: list[dict[str, Any]] = []
    for name, lines in (("pins", pin_lines), ("profile", profile), ("working", working), ("summary", summary),
                        ("recalled", [c.line() for c in cards])):
        if lines:
            head = heads[name]
            messages.append({"role": "system", "content": "\n".join([head, *lines]) if head else "\n".join(lines)})
            sec[name].tokens = tokens_of(lines, head)
    sec["summary"].kept = ["summary"] if summary else []
    sec["recalled"].kept = [c.memory_id for c in cards]
    sec["window"].kept = [f"turn {t.seq}" for t in turns]
    sec["window"].tokens = scale(sum(t.tokens for t in turns))
    messages.extend(t.message() for t in turns)
    return Context(messages=messages, ledger=ledger, cards=cards, language=lang)


def _fill(lines: list[str], names: list[str], head: str, cap: int, tokens_of: Callable[[Sequence[str], str], int],
          section: Section, why: str) -> list[str]:
    """The leading ``lines`` that fit ``cap``; the rest are dropped with ``why``."""
    kept: list[str] = []
    for line, name in zip(lines, names):
        if tokens_of([*kept, line], head) <= cap:
            kept.append(line)
            section.kept.append(name)
        else:
            section.dropped.append((name, why))
    return kept
