"""The agent's memory: layers around ripple's graph for an agent loop.

``mem.session(user_id, session_id, agent_id=None, context_window=..., budget_ratio=0.5)``
opens a :class:`Session` (or :class:`AsyncSession` on an ``AsyncMemory``):

* a token-budgeted window of recent turns (whole rounds evicted, tool calls
  kept with their results), every turn stored in the graph as it is added;
* background summaries of evicted turns (extractive by default, no LLM);
* pinned facts, capped, in every context; the user's profile as typed slots;
* working memory per task (scratchpad and a versioned task state);
* ``context(query)``: the messages to send, within budget, with a ledger;
* ``patrol(turn)``: proactive alerts (conflicts, repeated questions, open todos);
* scopes and roles for memory shared by several agents; procedural memory;
* traces of every step (JSON, a timeline, OpenTelemetry when installed).

Everything here is a client of the public ``Memory`` / ``AsyncMemory`` API
only (no store or private engine imports: ``tests/test_architecture.py`` checks
it), with I/O-free cores and thin sync and async drivers, so it works on the
embedded store and on Neo4j alike.
"""

from __future__ import annotations

from .config import AgentConfig
from .context import Card, Context, Ledger
from .jobs import Job, JobList
from .patrol import Alert, PatrolResult
from .pins import Pin
from .procedures import Procedure
from .profile import Slot, SlotValue
from .scopes import Access, Role, Scope
from .session import AddResult, AsyncSession, ScopedHit, Session
from .summary import ExtractiveSummariser, LLMSummariser, SummaryState
from .tokens import Calibration, EstimateTokenizer, FunctionTokenizer, Tokenizer
from .trace import Span, Tracer, timeline
from .window import Turn, Window
from .working import Note, TaskState, Todo, Versioned

__all__ = [
    "Access", "AddResult", "AgentConfig", "Alert", "AsyncSession", "Calibration", "Card", "Context",
    "EstimateTokenizer", "ExtractiveSummariser", "FunctionTokenizer", "Job", "JobList", "LLMSummariser", "Ledger",
    "Note", "PatrolResult", "Pin", "Procedure", "Role", "Scope", "ScopedHit", "Session", "Slot", "SlotValue", "Span",
    "SummaryState", "TaskState", "Todo", "Tokenizer", "Tracer", "Turn", "Versioned", "Window", "timeline",
]
