"""Agent sessions: :class:`Session` (sync) and :class:`AsyncSession` (async) over one core.

:class:`SessionCore` holds everything that needs no I/O (the window, the
summary state, the tokenizer and its calibration, access, the tracer, the job
list) and writes every operation once, as a plan of requests to the public
memory API (:mod:`ripple.agent.plan`).  The two sessions only run plans, one
with plain calls and a worker thread, one with ``await`` and an asyncio task.

Write-through: ``add`` stores the turn in the graph first, then admits it to
the window; turns the window evicts are summarised by a background job, so
``add`` never waits for a summary, and an evicted turn is recallable at once.
"""

from __future__ import annotations

import functools
import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from ..errors import InvalidInput, UnknownUser, VersionConflict
from .config import AgentConfig
from .context import Context, ContextParts, make_card, pack
from .jobs import Job, JobList, TaskWorker, ThreadWorker
from .patrol import CooldownLog, PatrolResult, patrol_plan
from .pins import PinsCore
from .plan import Bound, Plan, Req, adrive, drive
from .procedures import Procedure, ProceduresCore
from .profile import ProfileCore
from .relevance import is_relevant
from .scopes import Access, Role
from .summary import ExtractiveSummariser, Summariser, SummaryState
from .tokens import Calibration, EstimateTokenizer, Tokenizer
from .trace import Span, Tracer, timeline
from .window import Turn, Window
from .working import TaskState, WorkingCore

if TYPE_CHECKING:
    from ..models import RecallHit

__all__ = ["SessionCore", "Session", "AsyncSession", "AddResult", "ScopedHit"]

_SESSION_KEY = "agent:session:{sid}"
_PERSIST_EVERY = 8  # turns between saves of the session state when nothing is evicted
_CJK = __import__("re").compile(r"[\u4e00-\u9fff]")


class AddResult(BaseModel):
    """What ``add`` did: the turn's number and memories, the window after it, what it evicted."""

    model_config = ConfigDict(frozen=True)

    seq: int
    role: str
    memory_ids: tuple[str, ...]
    tokens: int
    window_tokens: int
    window_budget: int
    evicted: tuple[int, ...] = ()
    clipped: tuple[int, ...] = ()
    patrol: PatrolResult | None = None


class ScopedHit(BaseModel):
    """A recall hit and the scope it came from."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    scope: str
    hit: Any


class SessionCore:
    """State and plans shared by :class:`Session` and :class:`AsyncSession` (no I/O here)."""

    reader_role = Role.READER

    def __init__(
        self,
        mem: Any,
        user_id: str,
        session_id: str,
        *,
        agent_id: str | None = None,
        context_window: int | None = None,
        budget_ratio: float | None = None,
        config: AgentConfig | None = None,
        tokenizer: Tokenizer | None = None,
        summariser: Summariser | Callable[..., str] | None = None,
        access: Mapping[str, str] | None = None,
        on_denied: str = "raise",
        otel: bool | Any = "auto",
        clock: Callable[[], float] | None = None,
    ) -> None:
        if not isinstance(session_id, str) or not session_id.strip() or ":" in session_id:
            raise InvalidInput("session_id must be a non-empty string without ':'")
        overrides = {k: v for k, v in (("context_window", context_window), ("budget_ratio", budget_ratio)) if v is not None}
        try:
            self.cfg = (config or AgentConfig()).model_copy(update=overrides) if overrides else (config or AgentConfig())
            if overrides:
                self.cfg = AgentConfig.model_validate(self.cfg.model_dump())
        except Exception as exc:  # pydantic ValidationError -> one clear line
            raise InvalidInput(f"session settings: {exc}") from exc
        self._mem = mem
        self.access = Access(user_id, session_id, agent_id, access, on_denied=on_denied)
        self.tokenizer: Tokenizer = tokenizer or EstimateTokenizer()
        self.calibration = Calibration()
        self.window = Window(self.cfg.cap("window"), low_water=self.cfg.low_water, count=self.tokenizer.count,
                             overhead=self.tokenizer.message_overhead, scale=self.calibration.apply)
        if summariser is None:
            self.summariser: Summariser = ExtractiveSummariser()
        elif hasattr(summariser, "name"):
            self.summariser = summariser  # type: ignore[assignment]
        else:
            from .summary import LLMSummariser

            self.summariser = LLMSummariser(summariser)
        self.summary = SummaryState()
        self.tracer = Tracer(attrs={"session.id": session_id, "user.id": user_id,
                                    **({"gen_ai.agent.id": agent_id} if agent_id else {})})
        if otel:
            from .otel import otel_exporter

            exporter = otel_exporter(None if otel in (True, "auto") else otel, required=otel is True)
            if exporter is not None:
                self.tracer.exporters.append(exporter)
        self.jobs = JobList()
        self.cooldowns = CooldownLog()
        self.pins_core = PinsCore(self)
        self.profile_core = ProfileCore(self)
        self.procedures_core = ProceduresCore(self)
        self.active_task: WorkingCore | None = None
        self._clock = clock or time.time
        self._lock = threading.Lock()
        self._opened = False
        self._doc_version = 0
        self._unsummarised: list[Turn] = []
        self._persist_pending = False
        self._last_context_tokens = 0

    # -- small helpers ---------------------------------------------------------------------------------
    def now(self) -> float:
        return self._clock()

    def count(self, text: str) -> int:
        """Calibrated token count of ``text`` (without message overhead)."""
        return self.calibration.apply(self.tokenizer.count(text))

    def language_of(self, *texts: str) -> str:
        sample = "".join(texts) or "".join(t.text for t in self.window.turns[-6:] if t.role == "user")
        letters = sum(ch.isalpha() for ch in sample)
        return "zh" if letters and len(_CJK.findall(sample)) / letters >= 0.3 else "en"

    def write_kwargs(self, scope: str, *, kind: str | None, extra: dict[str, Any] | None = None,
                     session: bool = True) -> dict[str, Any]:
        """Keyword arguments of ``mem.add`` for a write into ``scope`` by this agent (``written_by`` included)."""
        sc = self.access.scope(scope)
        meta = {"written_by": self.access.agent_id, "scope": str(sc), **(extra or {})}
        return {"user_id": sc.partition, "agent_id": self.access.agent_id,
                "session_id": self.access.session_id if session and sc.kind in ("user", "session") else None,
                "kind": kind, "metadata": meta}

    @property
    def summary_text(self) -> str:
        return self.summary.render()

    # -- opening and persisting the session's own state -----------------------------------------------------
    def _state_key(self) -> str:
        return _SESSION_KEY.format(sid=self.access.session_id)

    def _open(self) -> Plan[None]:
        if self._opened:
            return
        part = self.access.turn_scope().partition
        doc = yield Req("get_document", (), {"user_id": part, "key": self._state_key()})
        if doc is not None:
            value = doc.value
            with self._lock:
                self.window.restore(value.get("window", {}))
                self.summary = SummaryState.from_json(value.get("summary"))
                self.calibration.factor = float(value.get("calibration", 1.0))
                self._unsummarised = [Turn.from_json(t) for t in value.get("unsummarised", [])]
                self.cooldowns.shown = {k: int(v) for k, v in value.get("cooldowns", {}).items()}
            self._doc_version = doc.version
        self._opened = True

    def _persist_plan(self, span: Span) -> Plan[None]:
        with self._lock:
            self._persist_pending = False
            value: dict[str, Any] = {"window": self.window.state(), "summary": self.summary.to_json(),
                     "calibration": self.calibration.factor, "unsummarised": [t.to_json() for t in self._unsummarised],
                     "cooldowns": self.cooldowns.state(), "saved_at": self.now()}
        part = self.access.turn_scope().partition
        for _ in range(3):
            try:
                doc = yield Req("put_document", (), {"user_id": part, "key": self._state_key(), "value": value,
                                                     "expected_version": self._doc_version})
                self._doc_version = doc.version
                span.set(version=doc.version, turns=len(value["window"]["turns"]))
                return
            except VersionConflict as exc:
                # another process wrote this session meanwhile: this object is the owner, take over
                span.event("conflict", reason=str(exc))
                self._doc_version = exc.current
        raise VersionConflict(f"session {self.access.session_id!r} keeps being written by another process")

    # -- add ------------------------------------------------------------------------------------------------
    def _add_plan(self, role: str, text: str, at: float | None, tool_call_id: str | None,
                  tool_calls: Sequence[str], metadata: dict[str, Any] | None) -> Plan[AddResult]:
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("a turn needs a non-empty text")
        yield from self._open()
        span = self.tracer.start("session.add", role=role)
        try:
            when = self.now() if at is None else at
            with self._lock:
                turn = self.window.make_turn(role, text, at=when, tool_call_id=tool_call_id, tool_calls=tool_calls)
            scope = self.access.turn_scope()
            stored_text = text if role == "user" else f"assistant: {text}"
            extra = {"role": role, "seq": turn.seq, **({"tool_call_id": tool_call_id} if tool_call_id else {}),
                     **(metadata or {})}
            kwargs = self.write_kwargs(str(scope), kind=None, extra=extra)
            from datetime import datetime, timezone

            kwargs["at"] = datetime.fromtimestamp(when, tz=timezone.utc)
            store = span.child("store.add", scope=str(scope))
            try:
                stored = yield Req("add", (stored_text,), kwargs)
            finally:
                store.finish()
            store.set(memories=len(stored))
            turn = replace(turn, memory_ids=tuple(m.id for m in stored))
            with self._lock:
                change = self.window.admit(turn)
                if change.evicted:
                    self._unsummarised.extend(change.evicted)
                # the window's state is saved with every summary, at close, and every few turns between
                # (a crash loses at most those few from the resumed window; they are in the graph anyway)
                self._persist_pending = self._persist_pending or turn.seq % _PERSIST_EVERY == 0
            span.set(seq=turn.seq, tokens=self.calibration.apply(turn.tokens), window=change.tokens_after,
                     budget=self.window.budget)
            if change.evicted:
                span.event("evicted", turns=[t.seq for t in change.evicted], rounds=len(change.rounds()),
                           reason=change.reason, before=change.tokens_before, after=change.tokens_after)
            if change.clipped:
                span.event("clipped", turns=change.clipped, reason="a turn over its share of the window")
            patrol = None
            if role == "user" and self.cfg.patrol_on_add:
                patrol = yield from patrol_plan(self, text, seq=turn.seq, current_ids=turn.memory_ids, parent=span)
            self.tracer.done(span)
            return AddResult(seq=turn.seq, role=role, memory_ids=turn.memory_ids, tokens=turn.tokens,
                             window_tokens=change.tokens_after, window_budget=self.window.budget,
                             evicted=tuple(t.seq for t in change.evicted), clipped=tuple(change.clipped),
                             patrol=patrol)
        except BaseException as exc:
            self.tracer.done(span, exc)
            raise

    # -- background jobs (the drivers run them) ------------------------------------------------------------
    def _summary_plan(self, span: Span) -> Plan[None]:
        with self._lock:
            turns = list(self._unsummarised)
        if not turns:
            span.set(turns=0)
            return
        previous = self.summary
        state = self.summariser(previous, turns, self.cfg.cap("summary"), self.count)
        seqs = {t.seq for t in turns}
        piece = state.text or SummaryState(items=[i for i in state.items if set(i.seqs) & seqs],
                                           covers=(min(seqs), max(seqs)), language=state.language).render()
        span.set(turns=len(turns), covers=list(state.covers or ()), items=len(state.items),
                 dropped=state.dropped - previous.dropped, summariser=self.summariser.name)
        span.event("summarised", turns=sorted(seqs), new_items=len(state.items) - len(previous.items))
        if piece:
            kwargs = self.write_kwargs(str(self.access.turn_scope()), kind="summary", session=False,
                                       extra={"summary_of": self.access.session_id, "covers": [min(seqs), max(seqs)]})
            stored = yield Req("add", (piece,), kwargs)
            span.set(memory_ids=[m.id for m in stored])
        with self._lock:
            self.summary = state
            del self._unsummarised[: len(turns)]
        yield from self._persist_plan(span)

    def _job_plan(self, job: Job, make: Callable[[Span], Plan[None]]) -> Plan[None]:
        """Run a job's plan with its bookkeeping: status on the job list, a trace, errors kept, never raised."""
        self.jobs.started(job)
        span = self.tracer.start(f"job.{job.kind}", job_id=job.id)
        try:
            yield from make(span)
        except Exception as exc:  # noqa: BLE001 - a failed job is reported, not raised into add()
            self.jobs.finished(job, exc)
            self.tracer.done(span, exc)
            return
        self.jobs.finished(job)
        self.tracer.done(span)

    def _jobs_after_change(self) -> list[tuple[Job, Callable[[Span], Plan[None]]]]:
        """The jobs a change of the window calls for: a summary when turns wait, a save of the session state."""
        out: list[tuple[Job, Callable[[Span], Plan[None]]]] = []
        with self._lock:
            waiting = len(self._unsummarised)
            persist = self._persist_pending
        if waiting and not any(j.kind == "summary" for j in self.jobs.pending()):  # (pending or running)
            out.append((self.jobs.new("summary", turns=waiting), self._summary_plan))
        elif persist and not any(j.kind in ("persist", "summary") and j.status == "pending" for j in self.jobs.pending()):
            out.append((self.jobs.new("persist"), self._persist_plan))
        return out

    # -- recall across granted scopes -----------------------------------------------------------------
    def recall_plan(self, query: str, *, k: int = 8, scopes: Sequence[str] | None = None,
                    span: Span | None = None) -> Plan[list[ScopedHit]]:
        """Recall in each readable scope (or the named ones, which must be granted) and merge by score."""
        if scopes is None:
            targets = self.access.readable()
        else:
            targets = [self.access.require(name, Role.READER, "recalling") for name in scopes]
        out: list[ScopedHit] = []
        for scope in targets:
            child = span.child("recall", scope=str(scope)) if span is not None else None
            try:
                res = yield Req("recall", (query,), {"user_id": scope.partition, "k": k, "touch": False})
            except UnknownUser:
                res = None
            finally:
                if child is not None:
                    child.finish()
            if res is None:
                continue
            if child is not None:
                child.set(hits=len(res.hits), ms=res.trace.total_ms)
            out.extend(ScopedHit(scope=str(scope), hit=h) for h in res.hits)
        out.sort(key=lambda sh: -sh.hit.score)
        return out

    # -- writes into shared scopes -------------------------------------------------------------------------
    def remember_plan(self, text: str, *, scope: str = "user", kind: str | None = None,
                      extra: dict[str, Any] | None = None) -> Plan[list[Any]]:
        """Store ``text`` in ``scope`` (writers; ``kind="fact"`` needs a curator) with ``written_by``."""
        needed = Role.CURATOR if kind in ("fact", "pin", "personal_info") else Role.WRITER
        self.access.require(scope, needed, f"writing {'a core fact' if needed is Role.CURATOR else 'a memory'}")
        span = self.tracer.start("session.remember", scope=scope, kind=kind or "")
        try:
            stored = yield Req("add", (text,), self.write_kwargs(scope, kind=kind, extra=extra))
            span.set(memories=len(stored))
            self.tracer.done(span)
            return stored
        except BaseException as exc:
            self.tracer.done(span, exc)
            raise

    # -- context ----------------------------------------------------------------------------------------
    def _context_plan(self, query: str | None, max_tokens: int | None) -> Plan[Context]:
        yield from self._open()
        span = self.tracer.start("session.context", query=query is not None, max_tokens=max_tokens or 0)
        try:
            with self._lock:
                turns = list(self.window.turns)
                summary = self.summary.render()
            if query is None:
                query = next((t.text for t in reversed(turns) if t.role == "user"), None)
            language = self.language_of(*(t.text for t in turns[-6:] if t.role == "user"), query or "")
            pins = yield from self.pins_core.list()
            profile = yield from self.profile_core.lines(language)
            working = (yield from self.active_task.lines()) if self.active_task is not None else []
            cards = []
            if query:
                hits = yield from self.recall_plan(query, k=self.cfg.recall_k, span=span)
                floor = [sh for sh in hits if is_relevant(sh.hit, query) and sh.hit.parts.tier not in ("frozen",)]
                span.event("recalled", hits=len(hits), past_floor=len(floor),
                           below_floor=[sh.hit.memory.id for sh in hits if sh not in floor][:16])
                cards = [make_card(sh.hit, scope=sh.scope, card_chars=self.cfg.card_chars) for sh in floor]
                procedure = yield from self.procedures_core.find(query, k=1)
                if procedure:
                    from .context import Card

                    cards.insert(0, Card(procedure[0].key, procedure[0].render(language), "—", "procedure",
                                         procedure[0].score, "agent"))
            caps = {name: self.cfg.cap(name) for name in ("pins", "profile", "working", "summary", "recalled",
                                                           "window")}
            ctx = pack(ContextParts(pins=[(p.id, p.text) for p in pins], profile=profile, working=working,
                                    summary=summary, cards=cards, turns=turns, language=language,
                                    pinned_memory_ids=frozenset(p.memory_id for p in pins if p.memory_id)),
                       caps=caps, budget=self.cfg.budget, max_tokens=max_tokens, count=self.count,
                       overhead=self.tokenizer.message_overhead, max_cards=self.cfg.max_cards,
                       scale=self.calibration.apply)
            self._last_context_tokens = ctx.tokens
            span.set(tokens=ctx.tokens, budget=self.cfg.budget, cards=len(ctx.cards), turns=len(turns),
                     **{f"{k}_tokens": v.tokens for k, v in ctx.ledger.sections.items()})
            for name, sec in ctx.ledger.sections.items():
                if sec.dropped:
                    span.event("dropped", section=name, items=[f"{w} ({y})" for w, y in sec.dropped][:12])
            self.tracer.done(span)
            return ctx
        except BaseException as exc:
            self.tracer.done(span, exc)
            raise

    # -- calibration ----------------------------------------------------------------------------------------
    def _calibrate(self, reported_prompt_tokens: int, estimated: int | None) -> float:
        est = estimated if estimated is not None else self._last_context_tokens
        if not isinstance(reported_prompt_tokens, int) or reported_prompt_tokens <= 0:
            raise InvalidInput("reported_prompt_tokens must be a positive integer")
        if not est:
            raise InvalidInput("nothing to calibrate against yet: call context() first, or pass estimated=")
        span = self.tracer.start("session.calibrate", reported=reported_prompt_tokens, estimated=est)
        with self._lock:
            before = self.calibration.factor
            factor = self.calibration.observe(est, reported_prompt_tokens)
            change = self.window.rebalance("recalibrated")
            if change.evicted:
                self._unsummarised.extend(change.evicted)
            self._persist_pending = True
        span.set(factor_before=round(before, 4), factor=round(factor, 4), window=self.window.tokens)
        if change.evicted:
            span.event("evicted", turns=[t.seq for t in change.evicted], reason=change.reason)
        self.tracer.done(span)
        return factor

    # -- reading the traces and jobs ------------------------------------------------------------------------
    def traces(self, name: str | None = None) -> list[dict[str, Any]]:
        """Recent traces as JSON-ready dicts (``name``: only spans of that name, e.g. ``"session.add"``)."""
        return [s.to_json() for s in self.tracer.traces(name)]

    def timeline(self, last: int = 10) -> str:
        """The last ``last`` traces as a readable timeline."""
        return timeline(self.tracer.traces()[-last:])

    # -- components, bound to the session's driver (``_run`` and ``_schedule`` are the driver's) ------------
    _run: Callable[[Plan[Any]], Any]

    def _schedule(self) -> None:  # pragma: no cover - each driver defines it
        raise NotImplementedError

    def calibrate(self, reported_prompt_tokens: int, *, estimated: int | None = None) -> float:
        """Correct token counts from what the provider reported for the last context; returns the factor
        (the window evicts at once if it no longer fits)."""
        factor = self._calibrate(reported_prompt_tokens, estimated)
        self._schedule()
        return factor

    @property
    def pins(self) -> Any:
        """Pinned facts: ``add(text, by=)``, ``list()``, ``remove(id)``, ``pending()``, ``accept(id)``."""
        return Bound(self.pins_core, self._run)

    @property
    def profile(self) -> Any:
        """The user's profile: ``view()``, ``render(max_tokens)``, ``commit()``."""
        return Bound(self.profile_core, self._run)

    def working(self, task: str, model: type[BaseModel] | None = None, *, activate: bool = True) -> Any:
        """Working memory of ``task``: ``note``, ``notes``, ``state``, ``save``, ``check_step``, ``promote``,
        ``clear`` (with ``activate``, the task's state goes into every context)."""
        return Bound(self._working(task, model, activate), self._run)

    def _working(self, task: str, model: type[BaseModel] | None, activate: bool) -> WorkingCore:
        core = WorkingCore(self, task, model or TaskState)
        if activate:
            self.active_task = core
        return core


class Session(SessionCore):
    """A synchronous agent session over a :class:`ripple.Memory` (see :meth:`ripple.Memory.session`).

    Examples
    --------
    >>> with Memory(path=tmp) as mem:                                        # doctest: +SKIP
    ...     s = mem.session("u1", "s1", context_window=8000)
    ...     s.add("user", "I'm allergic to peanuts.")
    ...     s.pins.add("Allergic to peanuts")
    ...     ctx = s.context("Where should we have dinner?")
    ...     s.close()
    """

    def __init__(self, mem: Any, user_id: str, session_id: str, **options: Any) -> None:
        super().__init__(mem, user_id, session_id, **options)
        self._worker = ThreadWorker(f"ripple-session-{session_id}")

    def _run(self, plan: Plan[Any]) -> Any:
        return drive(self._mem, plan)

    def _run_job(self, job: Any, make: Any) -> Any:
        return drive(self._mem, self._job_plan(job, make))

    def _schedule(self) -> None:
        for job, make in self._jobs_after_change():
            self._worker.submit(job, functools.partial(self._run_job, job, make))

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, role: str, text: str, *, at: float | None = None, tool_call_id: str | None = None,
            tool_calls: Sequence[str] = (), metadata: dict[str, Any] | None = None) -> AddResult:
        """Append a turn (``user``, ``assistant`` or ``tool``); stored in the graph before it enters the window."""
        result = self._run(self._add_plan(role, text, at, tool_call_id, tool_calls, metadata))
        self._schedule()
        return result

    def context(self, query: str | None = None, max_tokens: int | None = None) -> Context:
        """The messages to send next, within budget (see :mod:`ripple.agent.context`)."""
        return self._run(self._context_plan(query, max_tokens))

    def recall(self, query: str, *, k: int = 8, scopes: Sequence[str] | None = None) -> list[ScopedHit]:
        """Recall across the scopes this agent may read, merged by score."""
        return self._run(self.recall_plan(query, k=k, scopes=scopes))

    def patrol(self, turn: str | None = None) -> PatrolResult:
        """Check a turn (default: the latest user turn) against the user's constraints, questions and todos."""
        text, seq, ids = _patrol_target(self, turn)
        return self._run(patrol_plan(self, text, seq=seq, current_ids=ids))

    def remember(self, text: str, *, scope: str = "user", kind: str | None = None) -> list[Any]:
        """Store a memory in a scope this agent may write (``written_by`` is recorded)."""
        return self._run(self.remember_plan(text, scope=scope, kind=kind))

    def record_procedure(self, task: str, steps: Sequence[str], outcome: str, *, error: str | None = None) -> Procedure:
        """Record how a task was done (in this agent's own scope) and whether it worked."""
        return self._run(self.procedures_core.record(task, steps, outcome, error=error))

    def flush(self) -> list[Job]:
        """Wait for the background jobs; returns the failed ones (also on ``jobs.failed`` and in the traces)."""
        self._schedule()
        self._worker.flush()
        return list(self.jobs.failed)

    def close(self) -> None:
        """Finish background work, save the session state and commit the profile (session end)."""
        self.flush()
        with self._lock:
            self._persist_pending = True
        self._schedule()
        self._worker.flush()
        try:
            self._run(self.profile_core.commit())
        finally:
            self._worker.close()


class AsyncSession(SessionCore):
    """The async twin of :class:`Session` over a :class:`ripple.AsyncMemory`: the same methods, awaited."""

    def __init__(self, mem: Any, user_id: str, session_id: str, **options: Any) -> None:
        super().__init__(mem, user_id, session_id, **options)
        self._worker = TaskWorker()

    async def _run(self, plan: Plan[Any]) -> Any:
        return await adrive(self._mem, plan)

    def _run_job(self, job: Any, make: Any) -> Any:
        return adrive(self._mem, self._job_plan(job, make))

    def _schedule(self) -> None:
        for job, make in self._jobs_after_change():
            self._worker.submit(job, functools.partial(self._run_job, job, make))

    async def __aenter__(self) -> "AsyncSession":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def add(self, role: str, text: str, *, at: float | None = None, tool_call_id: str | None = None,
                  tool_calls: Sequence[str] = (), metadata: dict[str, Any] | None = None) -> AddResult:
        result = await self._run(self._add_plan(role, text, at, tool_call_id, tool_calls, metadata))
        self._schedule()
        return result

    async def context(self, query: str | None = None, max_tokens: int | None = None) -> Context:
        return await self._run(self._context_plan(query, max_tokens))

    async def recall(self, query: str, *, k: int = 8, scopes: Sequence[str] | None = None) -> list[ScopedHit]:
        return await self._run(self.recall_plan(query, k=k, scopes=scopes))

    async def patrol(self, turn: str | None = None) -> PatrolResult:
        text, seq, ids = _patrol_target(self, turn)
        return await self._run(patrol_plan(self, text, seq=seq, current_ids=ids))

    async def remember(self, text: str, *, scope: str = "user", kind: str | None = None) -> list[Any]:
        return await self._run(self.remember_plan(text, scope=scope, kind=kind))

    async def record_procedure(self, task: str, steps: Sequence[str], outcome: str, *,
                               error: str | None = None) -> Procedure:
        return await self._run(self.procedures_core.record(task, steps, outcome, error=error))

    async def flush(self) -> list[Job]:
        self._schedule()
        await self._worker.flush()
        return list(self.jobs.failed)

    async def close(self) -> None:
        await self.flush()
        with self._lock:
            self._persist_pending = True
        self._schedule()
        await self._worker.flush()
        try:
            await self._run(self.profile_core.commit())
        finally:
            await self._worker.close()


def _patrol_target(s: SessionCore, turn: str | None) -> tuple[str, int, tuple[str, ...]]:
    """The text to patrol, its turn number (for cooldowns) and its memories (not evidence against itself)."""
    last = next((t for t in reversed(s.window.turns) if t.role == "user"), None)
    if turn is None:
        if last is None:
            raise InvalidInput("nothing to patrol: no user turn yet (pass the text)")
        return last.text, last.seq, last.memory_ids
    if last is not None and last.text == turn:
        return turn, last.seq, last.memory_ids
    return turn, s.window.next_seq, ()
