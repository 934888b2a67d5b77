"""Proactive reminders ("patrol"): conflicts with stated constraints, repeated questions, open todos.

Nobody else ships this (the research notes); the seed design sketches it: a
patrol that matches the current turn against the user's memory and raises a
reminder when something strong comes up.  Everything here is rule-based and
LLM-free; the scorer is pure and the evidence comes from recall.

Three kinds of alert:

``conflict``
    the turn goes against a constraint the user stated earlier in any
    session, pinned, or has in the profile: an amount above a stated limit
    ("a plan of 80k" against "the budget is capped at 60k"), or a dish,
    restaurant or product that involves what a stated allergy forbids, named
    in the turn or in what the memory says about something the turn names
    ("dinner at Satay House" and, last week, "Satay House puts peanut sauce
    on everything").
``repeat``
    a question similar to one asked at least ``repeat_min_count`` times in
    the last ``repeat_window_days`` days.
``todo``
    an open task that names something the turn just mentioned.

Each candidate gets a score in [0, 1] from its evidence; at or above
``alert_threshold`` (0.8) it may be shown, between ``log_threshold`` (0.6) and
that it is only logged (in the trace).  At most one alert is shown per turn,
an alert's ``dedupe_key`` is not shown again within ``cooldown_turns``, and
memories in the cold or frozen forgetting tier are never surfaced.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from .plan import Plan, Req
from .text import HAN_WORD, chinese_names, latin_names

if TYPE_CHECKING:
    from .session import SessionCore
    from .trace import Span

__all__ = ["Alert", "PatrolResult", "Limit", "Evidence", "parse_limits", "parse_forbidden", "amounts",
           "is_question", "score_candidates", "select", "patrol_plan", "CooldownLog"]


class Alert(BaseModel):
    """One patrol finding: what, why (evidence memory ids), how sure (score), and its dedupe key."""

    model_config = ConfigDict(frozen=True)

    kind: str  # conflict | repeat | todo
    message: str
    evidence: tuple[str, ...]
    score: float
    dedupe_key: str
    shown: bool = False
    reason: str = ""


class PatrolResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    alerts: tuple[Alert, ...] = ()  # shown (at most one)
    logged: tuple[Alert, ...] = ()  # above the log threshold, not shown (score, cooldown or one-per-turn)

    @property
    def alert(self) -> Alert | None:
        return self.alerts[0] if self.alerts else None


# -- parsing (pure) ----------------------------------------------------------------------------------
_AMOUNT = re.compile(
    r"(?:[$€£¥￥]\s?)?\d[\d,]*(?:\.\d+)?\s?(?:k|K|m|M|thousand|million|grand|万|千)?(?:\s?(?:usd|USD|cny|CNY|rmb|RMB|"
    r"eur|EUR|dollars?|yuan|元|块钱?|美元|欧元))?(?![\w])"
    r"|[零一二两三四五六七八九十百千]*[一二两三四五六七八九十][零一二两三四五六七八九十百千]*[万千百][零一二两三四五六七八九十百千]*"
    r"(?:元|块钱?|美元)?"
)
_LIMIT_WORDS = re.compile(
    r"\b(budget|cap(ped)?|limit|max(imum)?|at most|no more than|not more than|under|below|within|ceiling|"
    r"up to|spend(ing)?|afford)\b|预算|上限|不超过|不能超过|以内|以下|最多|控制在|封顶|不高于",
    re.IGNORECASE)
_COST_WORDS = re.compile(
    r"\b(cost(s|ing)?|price[ds]?|quote[ds]?|total(s|ling)?|plan|proposal|estimate[ds]?|spend|pay|paying|charge[ds]?|"
    r"budget|come[s]? to|fee|invoice|bill)\b|花费|费用|报价|总共|一共|方案|计划|预计|价格|要花|成本|总价|收费|预算",
    re.IGNORECASE)
_ALLERGY = [
    re.compile(r"\b(?:(?:i'?m|i am|i'?ve been|she'?s|he'?s|is|am|are)\s+)?(?:severely\s+|very\s+|quite\s+)?allergic to\s+"
               r"(?P<x>[a-z][a-z ,\-]{1,60}?)(?=[.;!?]|\s+so\b|\s+but\b|\s+which\b|$)", re.IGNORECASE),
    re.compile(r"\b(?P<x>[a-z][a-z\-]{2,30}) allergy\b", re.IGNORECASE),
    re.compile(r"\b(?:i\s+)?(?:can'?t|cannot|must not|mustn'?t|never) eat\s+(?P<x>[a-z][a-z \-]{1,30}?)(?=[,.;!?]|\s+and\b|$)",
               re.IGNORECASE),
    re.compile(r"对(?P<x>[\u4e00-\u9fff、和]{1,12}?)过敏"),
    re.compile(r"(?:不能吃|不吃|忌口|不可以吃|别给我吃)(?P<x>[\u4e00-\u9fff]{1,8}?)(?=[，。,.!！；;、的]|$)"),
]
_NEGATED_ITEM = re.compile(r"\b(no|without|free of|free from|-free|nut-free|不含|无|没有|去掉|不放|不加)\b", re.IGNORECASE)
_QUESTION = re.compile(
    r"[?？]\s*$|^(what|when|where|who|whom|which|why|how|is|are|do|does|did|can|could|should|will|would)\b|"
    r"(吗|呢|么|几|多少|什么|哪|怎么|是否|有没有)[？?。]?\s*$", re.IGNORECASE)
_TODO = re.compile(
    r"\b(remind me to|remember to|don'?t forget to|need to|have to|todo|to-do|i'?ll|i will|i must|we need to|"
    r"follow up (on|with))\b|记得|别忘了|提醒我|要去|得去|待办|需要|回头",
    re.IGNORECASE)
_DONE = re.compile(r"\b(done|finished|completed|sent|already did)\b|已经|完成了|搞定|做完了|发了", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Limit:
    amount: float
    currency: str
    text: str


def amounts(text: str) -> list[tuple[float, str]]:
    """Amounts in a text as ``(value, currency)`` ("80k" -> 80000; "八万块" -> 80000 CNY; currency "" if none)."""
    from extractors.values import normalize_value

    out = []
    for m in _AMOUNT.finditer(text):
        span = m.group(0).strip()
        if not span or re.fullmatch(r"\d{1,2}", span) or re.fullmatch(r"(19|20)\d\d", span):
            continue  # small counts ("2 people") and years are not amounts
        norm = normalize_value(span)
        parts = norm.split()
        try:
            value = float(parts[0])
        except (ValueError, IndexError):
            continue
        if value < 100:
            continue
        out.append((value, parts[1] if len(parts) > 1 else ""))
    return out


def parse_limits(text: str) -> list[Limit]:
    """Upper limits a text states ("the budget is capped at 60k", "预算控制在五万以内")."""
    out = []
    for sentence in re.split(r"(?<=[.!?。！？；;])\s*", text):
        if _LIMIT_WORDS.search(sentence):
            for value, cur in amounts(sentence):
                out.append(Limit(value, cur, sentence.strip()))
    return out


def _singular(word: str) -> str:
    w = word.lower().strip(" -")
    for suffix, rep in (("ies", "y"), ("oes", "o"), ("s", "")):
        if w.endswith(suffix) and len(w) > len(suffix) + 2:
            return w[: -len(suffix)] + rep
    return w


def parse_forbidden(text: str) -> list[str]:
    """What a stated allergy or diet forbids ("I'm allergic to peanuts and shellfish" -> peanut, shellfish)."""
    out: list[str] = []
    for pattern in _ALLERGY:
        for m in pattern.finditer(text):
            raw = m.group("x")
            for part in re.split(r"\s*(?:,|、|和|\band\b|\bor\b)\s*", raw):
                part = part.strip()
                if part.lower().startswith(("i ", "we ", "she ", "he ")) or len(part.split()) > 3:
                    continue  # "allergic to peanuts and I love cats": the list ended
                if part and part.lower() not in ("it", "that", "this", "them", "something", "anything"):
                    out.append(part if re.search(r"[\u4e00-\u9fff]", part) else _singular(part))
    return list(dict.fromkeys(out))


def mentions_item(text: str, item: str) -> bool:
    """Whether ``text`` names ``item`` (plural-insensitive; Chinese by substring), not negated right before it."""
    if re.search(r"[\u4e00-\u9fff]", item):
        at = text.find(item)
        if at < 0:
            return False
        return not re.search(r"(不含|无|没有|去掉|不放|不加)$", text[max(0, at - 3):at])
    m = re.search(rf"\b{re.escape(item)}(s|es)?\b", text, re.IGNORECASE) or (
        re.search(rf"\b{re.escape(item[:-1])}ies\b", text, re.IGNORECASE) if item.endswith("y") else None)
    if m is None:
        return False
    before = text[max(0, m.start() - 12):m.start()]
    after = text[m.end():m.end() + 6]
    return not (_NEGATED_ITEM.search(before) or after.startswith("-free") or after.startswith(" free"))


def is_question(text: str) -> bool:
    return bool(_QUESTION.search(text.strip()))


def names(text: str) -> set[str]:
    """Names a turn mentions, lower-cased: capitalised Latin words and Chinese words of 2+ characters."""
    return {n.lower() for n in latin_names(text)} | set(chinese_names(text, proper_only=False))


# -- scoring (pure) ------------------------------------------------------------------------------------
@dataclass(slots=True)
class Evidence:
    """One memory the patrol may use: id, text, when (POSIX s), how often said, its tier, dense cosine, source."""

    memory_id: str
    text: str
    at: float
    mentions: int = 1
    tier: str = "hot"
    dense: float = 0.0
    source: str = "memory"  # memory | pin | profile | todo
    current: bool = False  # the turn being patrolled itself
    said_by_agent: bool = False  # an assistant or tool turn (the user's own statement is stronger evidence)


@dataclass(slots=True)
class Candidate:
    kind: str
    score: float
    evidence: tuple[str, ...]
    key: str
    message: str
    reason: str


def score_candidates(turn: str, evidence: Sequence[Evidence], *, now: float, language: str = "en",
                     repeat_window_days: float = 7.0, repeat_min_count: int = 3,
                     open_todos: Sequence[tuple[str, str]] = ()) -> list[Candidate]:
    """Every alert candidate for ``turn`` with its score (see the module docstring)."""
    usable = [e for e in evidence if e.tier not in ("cold", "frozen") and not e.current]
    zh = language == "zh"
    out: list[Candidate] = []

    # -- conflicts with a stated limit ----------------------------------------------------------------------
    turn_amounts = amounts(turn)
    costy = bool(_COST_WORDS.search(turn))
    if turn_amounts and not _LIMIT_WORDS.search(turn) or (turn_amounts and costy and not parse_limits(turn)):
        for e in usable:
            for lim in parse_limits(e.text):
                for value, cur in turn_amounts:
                    if cur and lim.currency and cur != lim.currency:
                        continue
                    if value <= lim.amount:
                        continue
                    over = (value - lim.amount) / lim.amount
                    score = 0.5 + (0.25 if costy else 0.0) + (0.1 if e.source in ("pin", "profile") else 0.05)
                    score -= 0.05 if e.said_by_agent else 0.0  # the user's own words are the better evidence
                    score += 0.1 * min(1.0, over / 0.2)
                    msg = (f"这超出了之前设定的上限（{lim.text}）" if zh else
                           f"This goes over a limit stated earlier ({lim.text})")
                    out.append(Candidate("conflict", round(min(1.0, score), 3), (e.memory_id,),
                                         f"limit:{lim.amount:g}{lim.currency}", msg,
                                         f"{value:g} > {lim.amount:g}"))
    # -- conflicts with a stated allergy or diet ---------------------------------------------------------------
    forbidden = [(item, e) for e in usable for item in parse_forbidden(e.text)]
    if forbidden and not parse_forbidden(turn):
        turn_names = names(turn)
        about = [e for e in usable if not parse_forbidden(e.text) and turn_names
                 and any(n in e.text.lower() for n in turn_names if len(n) >= 3 or HAN_WORD.fullmatch(n))]
        for item, source in forbidden:
            if mentions_item(turn, item):
                score = 0.85 + (0.1 if source.source in ("pin", "profile") else 0.05)
                out.append(Candidate("conflict", round(score, 3), (source.memory_id,), f"forbidden:{item.lower()}",
                                     f"注意：用户对{item}过敏/忌口" if zh else f"Careful: the user must avoid {item}",
                                     f"the turn names {item}"))
                continue
            for e in about:
                if mentions_item(e.text, item):
                    score = 0.75 + (0.1 if source.source in ("pin", "profile") else 0.05)
                    out.append(Candidate("conflict", round(score, 3), (source.memory_id, e.memory_id),
                                         f"forbidden:{item.lower()}",
                                         f"注意：用户对{item}过敏/忌口，而“{e.text[:40]}”" if zh else
                                         f"Careful: the user must avoid {item}, and “{e.text[:80]}”",
                                         f"what the turn names involves {item} (memory {e.memory_id})"))
    # -- a question asked again --------------------------------------------------------------------------------
    if is_question(turn):
        since = now - repeat_window_days * 86400.0
        same = [e for e in evidence if e.source == "memory" and is_question(e.text) and e.dense >= 0.8
                and e.at >= since]
        asked = sum(max(0, e.mentions - (1 if e.current else 0)) for e in same)
        if asked >= repeat_min_count:
            best = max(e.dense for e in same)
            score = 0.6 + 0.1 * min(3, asked - repeat_min_count + 1) + 0.25 * (best - 0.8) / 0.2
            ids = tuple(e.memory_id for e in same if not e.current) or tuple(e.memory_id for e in same)
            out.append(Candidate("repeat", round(min(1.0, score), 3), ids, f"repeat:{min(ids)}",
                                 f"这个问题最近已经问过{asked}次了" if zh else
                                 f"This question was asked {asked} times in the last {repeat_window_days:g} days",
                                 f"{asked} earlier askings, best cosine {best:.2f}"))
    # -- an open todo about something the turn names ------------------------------------------------------------
    turn_names = names(turn)
    if turn_names and not _TODO.search(turn):
        todos = [(e.memory_id, e.text) for e in usable if e.source in ("memory", "todo") and _TODO.search(e.text)
                 and not _DONE.search(e.text)]
        for tid, text in [*open_todos, *todos]:
            shared = {n for n in turn_names if len(n) >= 2 and n in text.lower()}
            if shared:
                # a multi-word or long Latin name, or a Chinese word (proper names there are 2-3 characters)
                strong = any(" " in n or HAN_WORD.fullmatch(n) or n[:1].isalpha() and len(n) >= 4 for n in shared)
                score = 0.7 + (0.15 if strong else 0.05) + 0.05 * min(2, len(shared) - 1)
                out.append(Candidate("todo", round(min(1.0, score), 3), (tid,), f"todo:{tid}",
                                     f"还有一件待办与此相关：{text[:60]}" if zh else f"Open task about this: {text[:80]}",
                                     f"shares {', '.join(sorted(shared))}"))
    return out


@dataclass(slots=True)
class CooldownLog:
    """When each dedupe key was last shown (turn number), for the cooldown."""

    shown: dict[str, int] = field(default_factory=dict)

    def state(self) -> dict[str, int]:
        return dict(self.shown)


def select(candidates: Iterable[Candidate], log: CooldownLog, *, turn: int, alert_threshold: float,
           log_threshold: float, cooldown_turns: int) -> PatrolResult:
    """At most one alert shown (the best past the threshold and out of cooldown); the rest above the log threshold
    are logged."""
    best: dict[str, Candidate] = {}
    support: dict[str, list[str]] = {}
    for c in sorted(candidates, key=lambda c: -c.score):
        support.setdefault(c.key, []).extend(e for e in c.evidence if e not in support.get(c.key, []))
        if c.key not in best:
            best[c.key] = c
    for key, c in best.items():  # the best candidate's evidence first, then what else supports the same alert
        c.evidence = tuple(support[key])
    ranked = sorted(best.values(), key=lambda c: (-c.score, c.key))
    shown: list[Alert] = []
    logged: list[Alert] = []
    for c in ranked:
        if c.score < log_threshold:
            continue
        cooling = c.key in log.shown and turn - log.shown[c.key] < cooldown_turns
        why = c.reason
        if c.score >= alert_threshold and not shown and not cooling:
            log.shown[c.key] = turn
            shown.append(Alert(kind=c.kind, message=c.message, evidence=c.evidence, score=c.score,
                               dedupe_key=c.key, shown=True, reason=why))
            continue
        if cooling:
            why += "; in cooldown"
        elif c.score >= alert_threshold:
            why += "; one alert per turn"
        else:
            why += "; below the alert threshold"
        logged.append(Alert(kind=c.kind, message=c.message, evidence=c.evidence, score=c.score, dedupe_key=c.key,
                            reason=why))
    return PatrolResult(alerts=tuple(shown), logged=tuple(logged))


# -- the plan: gather evidence through the public API, then score ---------------------------------------------
def patrol_plan(s: "SessionCore", turn: str, *, seq: int, current_ids: Sequence[str] = (),
                parent: "Span | None" = None) -> Plan[PatrolResult]:
    span = parent.child("patrol") if parent is not None else s.tracer.start("session.patrol")
    try:
        now = s.now()
        language = s.language_of(turn)
        evidence: dict[str, Evidence] = {}
        queries = [turn]
        if amounts(turn):
            queries.append("预算 上限 不超过" if language == "zh" else "budget limit cap maximum")
        if s.access.may("user", s.reader_role):
            for q in queries:
                for sh in (yield from s.recall_plan(q, k=s.cfg.recall_k, span=span)):
                    h = sh.hit
                    m = h.memory
                    if m.id in evidence or m.kind in ("summary", "procedure"):
                        continue
                    # (a repeat merged into one memory keeps the first time it was said in `at`: all its
                    # mentions are at or after it, so that is the time the repeat window can trust)
                    evidence[m.id] = Evidence(m.id, _plain(m.text), _ts(m.at), m.mentions,
                                              h.parts.tier, h.parts.dense, "memory", current=m.id in current_ids,
                                              said_by_agent=m.text.startswith("assistant: "))
        for pin in (yield from s.pins_core.list()):
            evidence[pin.id] = Evidence(pin.memory_id or pin.id, pin.text, pin.at, source="pin")
        for slot, line in (yield from s.profile_core.lines("en")):
            if slot in ("constraints", "dislikes"):
                evidence[f"profile:{slot}:{line}"] = Evidence(f"profile:{slot}", line, now, source="profile")
        todos: list[tuple[str, str]] = []
        if s.active_task is not None:
            state = (yield from s.active_task.state()).state
            for n, todo in enumerate(getattr(state, "todos", []) or []):
                if not getattr(todo, "done", False):
                    todos.append((f"task:{s.active_task.task}:todo:{n}", getattr(todo, "text", str(todo))))
        cands = score_candidates(turn, list(evidence.values()), now=now, language=language,
                                 repeat_window_days=s.cfg.repeat_window_days, repeat_min_count=s.cfg.repeat_min_count,
                                 open_todos=todos)
        result = select(cands, s.cooldowns, turn=seq, alert_threshold=s.cfg.alert_threshold,
                        log_threshold=s.cfg.log_threshold, cooldown_turns=s.cfg.cooldown_turns)
        span.set(evidence=len(evidence), candidates=len(cands), shown=len(result.alerts), logged=len(result.logged))
        for a in result.alerts:
            span.event("alert", kind=a.kind, score=a.score, key=a.dedupe_key, reason=a.reason,
                       evidence=list(a.evidence))
        for a in result.logged:
            span.event("logged", kind=a.kind, score=a.score, key=a.dedupe_key, reason=a.reason)
        if parent is None:
            s.tracer.done(span)
        else:
            span.finish()
        return result
    except BaseException as exc:
        if parent is None:
            s.tracer.done(span, exc)
        else:
            span.finish(exc)
        raise


def _plain(text: str) -> str:
    return text[len("assistant: "):] if text.startswith("assistant: ") else text


def _ts(value: Any) -> float:
    return value.timestamp() if hasattr(value, "timestamp") else float(value or time.time())
