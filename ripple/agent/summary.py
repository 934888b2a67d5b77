"""Summaries of evicted turns: an extractive default (no LLM, Chinese and English) and a pluggable one.

A summary here never replaces history: every turn is already in the graph
when it is summarised (write-through), so the summary is a compact view for
the prompt, not the archive.  The extractive summariser keeps whole sentences
that carry what later turns need, in five sections: decisions, constraints,
numbers, open tasks and the names involved.  It merges incrementally (a new
batch of evicted turns adds to the previous summary), drops near-repeats,
lets a newer sentence about the same thing ("the budget is now 60k")
replace an older one in the view, and stays under a token cap by dropping the
least important, oldest items first.  Each item keeps the turn numbers it
came from, and the summary records the range of turns it covers.

An LLM summariser is any callable ``(previous_text, messages, max_tokens) ->
text``; :class:`LLMSummariser` adapts it to the same state.

Everything here is pure: it runs in the session's background worker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

from .text import chinese_names, latin_names
from .window import Turn

__all__ = ["SummaryItem", "SummaryState", "Summariser", "ExtractiveSummariser", "LLMSummariser", "split_sentences",
           "SECTIONS"]

#: Sections in the order they are rendered and kept (the first is the last to be dropped).
SECTIONS = ("constraints", "decisions", "todos", "numbers", "entities")

_HEADERS = {
    "en": {"title": "Summary of earlier turns ({a}-{b})", "constraints": "Constraints", "decisions": "Decisions",
           "todos": "Open tasks", "numbers": "Figures", "entities": "Involved"},
    "zh": {"title": "之前对话摘要（第{a}-{b}轮）", "constraints": "约束", "decisions": "决定", "todos": "待办",
           "numbers": "数字", "entities": "涉及"},
}

_CUES: dict[str, re.Pattern[str]] = {
    "decisions": re.compile(
        r"\b(decided?|decision|agreed?|let'?s (go|book|use|do|pick|take|choose)|we'?ll (go|use|take|book)|going with|"
        r"settled on|chose|choose|confirmed?|final(ly|ised|ized)?|we will|plan is to|booked|picked|go with)\b"
        r"|决定|定了|就定|确定|敲定|选定|选了|那就|就按|同意|拍板|确认|定下|就用|改成|改为",
        re.IGNORECASE),
    "constraints": re.compile(
        r"\b(must|mustn'?t|can'?t|cannot|never|always|at most|at least|no more than|not more than|under|within|"
        r"limit|cap(ped)?|budget|deadline|allerg(ic|y|ies)|avoid|don'?t|do not|required?|requirement|only|"
        r"vegetarian|vegan|no later than|maximum|minimum|max|min)\b"
        r"|不能|不要|不可以|必须|只能|不超过|以内|以下|至少|最多|过敏|忌口|限制|上限|下限|预算|截止|务必|禁止|别|不吃|素食",
        re.IGNORECASE),
    "todos": re.compile(
        r"\b(todo|to-do|need to|needs to|have to|has to|remember to|don'?t forget|will send|follow up|next step|"
        r"action item|remind me|i'?ll|we need|pending|still (need|have) to|by (monday|tuesday|wednesday|thursday|"
        r"friday|saturday|sunday|tomorrow|next week|the end of))\b"
        r"|记得|需要|要做|待办|别忘了|下一步|之前把|跟进|安排|还没|提醒我|要去|得去|回头",
        re.IGNORECASE),
}
_NUMBER = re.compile(r"\d|[一二三四五六七八九十百千万两]+\s*(万|千|百|元|块|人|个|天|周|月|号|点|岁|公斤|%)")
_SENTENCE_BREAK = re.compile(r"(?<=[。！？!?；;])\s*|(?<=\.)\s+|\n+")
_CONTENTLESS = re.compile(r"^(ok(ay)?|thanks?( you)?|sure|yes|no|好的?|嗯+|谢谢|行|可以|收到)[.!。！~～]*$", re.IGNORECASE)
_WORDS = re.compile(r"[A-Za-z0-9]+|[\u4e00-\u9fff]")
_CJK = re.compile(r"[\u4e00-\u9fff]")


def split_sentences(text: str) -> list[str]:
    """Sentences of a Chinese or English text (decimal points and 60.5k stay inside)."""
    return [s.strip() for s in _SENTENCE_BREAK.split(text) if s and s.strip()]


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORDS.findall(text)}


def _similar(a: str, b: str) -> float:
    wa, wb = _words(a), _words(b)
    return len(wa & wb) / max(1, len(wa | wb))


def _digits(text: str) -> list[str]:
    return re.findall(r"\d+(?:[.,]\d+)?", text)


def _topic(sentence: str) -> frozenset[str]:
    """What a figure is about: its words without the numbers (so "budget 50k" and "budget 60k" meet)."""
    return frozenset(w for w in _words(sentence) if not any(ch.isdigit() for ch in w) and len(w) > 2 or _CJK.match(w))


@dataclass(slots=True)
class SummaryItem:
    section: str
    text: str
    seqs: tuple[int, ...]
    role: str = "user"

    def to_json(self) -> dict[str, Any]:
        return {"section": self.section, "text": self.text, "seqs": list(self.seqs), "role": self.role}


@dataclass(slots=True)
class SummaryState:
    """The running summary: items by section, the turns it covers, and its rendered text."""

    items: list[SummaryItem] = field(default_factory=list)
    covers: tuple[int, int] | None = None
    language: str = "en"
    text: str = ""  # set by an LLM summariser (then items stay empty)
    dropped: int = 0  # items dropped over the cap so far

    def render(self) -> str:
        if self.text:
            return self.text
        if not self.items or self.covers is None:
            return ""
        h = _HEADERS.get(self.language, _HEADERS["en"])
        sep, colon = ("；", "：") if self.language == "zh" else ("; ", ": ")
        lines = [h["title"].format(a=self.covers[0], b=self.covers[1])]
        for section in SECTIONS:
            texts = [i.text for i in self.items if i.section == section]
            if texts:
                lines.append(f"{h[section]}{colon}{sep.join(texts)}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"items": [i.to_json() for i in self.items], "covers": list(self.covers) if self.covers else None,
                "language": self.language, "text": self.text, "dropped": self.dropped}

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> "SummaryState":
        if not d:
            return cls()
        return cls(items=[SummaryItem(i["section"], i["text"], tuple(i["seqs"]), i.get("role", "user"))
                          for i in d.get("items", [])],
                   covers=tuple(d["covers"]) if d.get("covers") else None,
                   language=d.get("language", "en"), text=d.get("text", ""), dropped=int(d.get("dropped", 0)))


class Summariser(Protocol):
    """Merges evicted turns into the running summary, within ``max_tokens``."""

    name: str

    def __call__(self, previous: SummaryState, turns: Sequence[Turn], max_tokens: int,
                 count: Callable[[str], int]) -> SummaryState: ...


def _covers(previous: SummaryState, turns: Sequence[Turn]) -> tuple[int, int]:
    seqs = [t.seq for t in turns]
    if previous.covers:
        seqs += list(previous.covers)
    return min(seqs), max(seqs)


def _language(previous: SummaryState, turns: Sequence[Turn]) -> str:
    text = "".join(t.text for t in turns)
    han = len(_CJK.findall(text))
    letters = sum(ch.isalpha() for ch in text)
    if not letters:
        return previous.language
    return "zh" if han / letters >= 0.3 else "en"


class ExtractiveSummariser:
    """The default summariser: whole sentences by section, merged and capped (see the module docstring)."""

    name = "extractive"

    def __init__(self, *, max_items_per_section: int = 12, max_entities: int = 12) -> None:
        self.max_items = max_items_per_section
        self.max_entities = max_entities

    def extract(self, turns: Sequence[Turn]) -> list[SummaryItem]:
        items: list[SummaryItem] = []
        names: dict[str, list[int]] = {}
        for t in turns:
            if t.role == "tool":
                continue  # tool output: the assistant's reading of it is what matters
            for s in split_sentences(t.text):
                if _CONTENTLESS.match(s) or len(s) < 4:
                    continue
                section = next((sec for sec in ("decisions", "constraints", "todos") if _CUES[sec].search(s)), None)
                if section is None and _NUMBER.search(s):
                    section = "numbers"
                if section is not None and (t.role == "user" or section in ("decisions", "todos")):
                    items.append(SummaryItem(section, s if len(s) <= 240 else s[:237] + "…", (t.seq,), t.role))
            for name in _entities(t.text):
                names.setdefault(name, []).append(t.seq)
        for name, seqs in sorted(names.items(), key=lambda kv: (-len(kv[1]), kv[1][0])):
            items.append(SummaryItem("entities", name, tuple(dict.fromkeys(seqs))))
        return items

    def __call__(self, previous: SummaryState, turns: Sequence[Turn], max_tokens: int,
                 count: Callable[[str], int]) -> SummaryState:
        merged = list(previous.items)
        for item in self.extract(turns):
            merged = _merge(merged, item)
        state = SummaryState(items=merged, covers=_covers(previous, turns), language=_language(previous, turns),
                             dropped=previous.dropped)
        # per-section limits, then the token cap: the least important section's oldest items go first
        for section in SECTIONS:
            limit = self.max_entities if section == "entities" else self.max_items
            of = [i for i in state.items if i.section == section]
            for old in of[: max(0, len(of) - limit)]:
                state.items.remove(old)
                state.dropped += 1
        for section in reversed(SECTIONS):
            while count(state.render()) > max_tokens and any(i.section == section for i in state.items):
                state.items.remove(next(i for i in state.items if i.section == section))
                state.dropped += 1
        return state


def _merge(items: list[SummaryItem], new: SummaryItem) -> list[SummaryItem]:
    """Add ``new``: a near-repeat only adds its turn numbers; a newer figure about the same thing replaces the older."""
    out = []
    for old in items:
        if old.section != new.section:
            out.append(old)
            continue
        if new.section == "entities":
            if old.text == new.text:
                new = SummaryItem(new.section, new.text, tuple(dict.fromkeys(old.seqs + new.seqs)), new.role)
                continue
            out.append(old)
            continue
        if _similar(old.text, new.text) >= 0.8 and _digits(old.text) == _digits(new.text):
            new = SummaryItem(new.section, new.text, tuple(dict.fromkeys(old.seqs + new.seqs)), new.role)
            continue
        if new.section == "numbers":
            a, b = _topic(old.text), _topic(new.text)
            if a and b and len(a & b) / len(a | b) >= 0.6:
                continue  # the same figure, restated with a newer value: the newer one stays in view
        out.append(old)
    out.append(new)
    return out


def _entities(text: str) -> list[str]:
    """Names in a text: capitalised Latin names (a lone word opening a sentence is not taken) and Chinese
    proper nouns."""
    out = []
    for name in latin_names(text):
        at = text.find(name)
        before = text[:at].rstrip()
        if " " not in name and (not before or before[-1] in ".!?。！？:："):
            continue
        out.append(name)
    return list(dict.fromkeys([*out, *chinese_names(text, proper_only=True)]))


class LLMSummariser:
    """Adapts ``fn(previous_text, messages, max_tokens) -> text`` (an LLM call) to a :class:`Summariser`.

    A reply longer than ``max_tokens`` is cut to fit (the cut is counted in
    ``dropped``); an exception propagates, so the session's job list shows it.
    """

    def __init__(self, fn: Callable[[str, list[dict[str, Any]], int], str], name: str = "llm") -> None:
        self.fn = fn
        self.name = name

    def __call__(self, previous: SummaryState, turns: Sequence[Turn], max_tokens: int,
                 count: Callable[[str], int]) -> SummaryState:
        from .window import clip_text

        text = str(self.fn(previous.render(), [t.message() for t in turns], max_tokens)).strip()
        state = SummaryState(covers=_covers(previous, turns), language=_language(previous, turns),
                             dropped=previous.dropped)
        if count(text) > max_tokens:
            text = clip_text(text, max_tokens, count)
            state.dropped += 1
        state.text = text
        return state
