"""ripple as a Model Context Protocol server (the official ``mcp`` SDK): desktop and IDE agents
remember and recall without code.

One server serves one user (``ripple mcp --user U``): an MCP client is one
person's agent, so the tools take no user id and cannot reach anyone else's
memories.  Tools:

* ``remember(text, session_id?)``: store a text (ripple decides what it means:
  a new fact may supersede an old one, "forget that" invalidates one).
* ``recall(query, k)``: the memories most related to a query, with how each was reached.
* ``forget(memory_id? | query?)``: invalidate a memory (never recalled again).
* ``what_do_you_know_about(topic)``: a topic- or entity-centred recall, in time
  order, with the entities the recall walked through.
* ``conflicts()``: statements ripple was not sure replace an older one ("was
  50k, possibly now 60k"), for the agent to ask the user about;
  ``resolve_conflict(new_id, old_id, supersedes)`` settles one.

Resource ``ripple://profile``: the user's current facts, preferences and
personal details, read from their stored memories (no LLM, no summary), and the
open conflicts among them.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from pydantic import BaseModel, Field

from ripple.errors import MemoryNotFound, RippleError, UnknownUser
from ripple.models import MemoryConflict, MemoryRecord, RecallResult

from .errors import one_line, status_and_code

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from ripple import AsyncMemory

__all__ = ["build_mcp_server", "Brief", "Hit", "Recalled", "Dossier", "Conflict", "Conflicts", "PROFILE_URI"]

PROFILE_URI = "ripple://profile"
_PROFILE_KINDS = ("personal_info", "fact", "preference")
_PROFILE_MAX = 40  # most recent profile memories shown; the resource stays small enough for a context window
_PROFILE_MIN_CONFIDENCE = 0.5  # hedged statements ("I know a bit of Rust") stay out until repeated


class Brief(BaseModel):
    """A memory as an agent needs it."""

    id: str
    text: str
    at: str = Field(description="when it happened (ISO date and time, UTC)")
    kind: str
    status: str


class Hit(Brief):
    score: float
    via: str = Field(description="seed (matched the query) | session | entity (reached through the graph)")
    path: list[str] = Field(default_factory=list,
                            description="entity names (or NEXT, for a neighbouring turn) on the way from a seed")


class Recalled(BaseModel):
    query: str
    hits: list[Hit]


class Remembered(BaseModel):
    stored: list[Brief]
    note: str = ""


class Dossier(BaseModel):
    topic: str
    memories: list[Hit] = Field(description="in time order, oldest first")
    related: list[str] = Field(description="entities the recall walked through, most used first")


class Conflict(BaseModel):
    """Two active memories that may state one thing with different values."""

    old: Brief = Field(description="the earlier statement")
    new: Brief = Field(description="the later statement, which may replace it")
    values: list[str] = Field(default_factory=list, description="[earlier value, later value] as written")
    why: str = ""


class Conflicts(BaseModel):
    conflicts: list[Conflict] = Field(description="oldest first")


def _conflict(c: MemoryConflict) -> Conflict:
    return Conflict(old=Brief(**_brief(c.old)), new=Brief(**_brief(c.new)), values=list(c.values or ()), why=c.why)


def _brief(m: MemoryRecord) -> dict[str, Any]:
    return {"id": m.id, "text": m.text, "at": m.at.isoformat(timespec="seconds"), "kind": m.kind, "status": m.status}


def _hits(result: RecallResult) -> list[Hit]:
    return [Hit(**_brief(h.memory), score=round(h.score, 4), via=h.via,
                path=[s.label or s.edge for s in h.path]) for h in result.hits]


def _entities(result: RecallResult) -> list[str]:
    """Entity names on the recall's paths, most used first."""
    counts: dict[str, int] = {}
    for h in result.hits:
        for s in h.path:
            if s.edge in ("MENTIONS", "RELATED") and s.label:
                counts[s.label] = counts.get(s.label, 0) + 1
    return sorted(counts, key=lambda n: (-counts[n], n))


class _Scoped:
    """The public API calls the tools make, always for the server's one user."""

    def __init__(self, memory: "AsyncMemory", user_id: str) -> None:
        self.memory = memory
        self.user_id = user_id

    async def recall(self, query: str, k: int) -> RecallResult | None:
        try:
            return await self.memory.recall(query, user_id=self.user_id, k=k)
        except UnknownUser:
            return None  # nothing stored yet

    async def own(self, memory_id: str) -> MemoryRecord:
        found = await self.memory.get(memory_id)
        if found.user_id != self.user_id:
            raise MemoryNotFound(f"no memory with id {memory_id!r}")
        return found

    async def all(self) -> list[MemoryRecord]:
        try:
            return await self.memory.get_all(user_id=self.user_id)
        except UnknownUser:
            return []

    async def conflicts(self) -> list[MemoryConflict]:
        return await self.memory.conflicts(user_id=self.user_id)


@contextmanager
def _as_tool_error() -> Iterator[None]:
    """A ripple error becomes the tool's error result: ``code: one-line message``."""
    try:
        yield
    except RippleError as exc:
        from mcp.server.mcpserver.exceptions import ToolError

        raise ToolError(f"{status_and_code(exc)[1]}: {one_line(exc)}") from exc


def build_mcp_server(memory: "AsyncMemory", *, user_id: str) -> "MCPServer":
    """An MCP server whose tools and profile resource work on ``user_id``'s memories in ``memory``."""
    from mcp.server import MCPServer

    import ripple

    scoped = _Scoped(memory, user_id)
    server: MCPServer = MCPServer(
        "ripple", version=ripple.__version__,
        instructions=(
            "Long-term memory for this user. Call `remember` with anything worth keeping (facts, preferences, "
            "decisions, plans); call `recall` or `what_do_you_know_about` before answering questions that may "
            "depend on the past; read ripple://profile for who the user is."
        ),
    )

    @server.tool(description="Store a text in long-term memory. Newer facts supersede older ones; "
                             "'forget that' invalidates the previous statement. Empty small talk is not stored.")
    async def remember(text: str, session_id: str | None = None) -> Remembered:
        with _as_tool_error():
            stored = await memory.add(text, user_id=user_id, session_id=session_id)
        return Remembered(stored=[Brief(**_brief(m)) for m in stored],
                          note="" if stored else "nothing to remember in that text (small talk)")

    @server.tool(description="Recall the memories most related to a query (associative: also memories "
                             "connected through shared people, places and projects).")
    async def recall(query: str, k: int = 5) -> Recalled:
        with _as_tool_error():
            found = await scoped.recall(query, k)
        return Recalled(query=query, hits=_hits(found) if found else [])

    @server.tool(description="Forget a memory, by its id or as the best match of a query: it is never "
                             "recalled again.")
    async def forget(memory_id: str | None = None, query: str | None = None) -> Brief:
        with _as_tool_error():
            if memory_id is not None and query is None:
                await scoped.own(memory_id)
                return Brief(**_brief(await memory.forget(memory_id)))
            return Brief(**_brief(await memory.forget(memory_id, query=query, user_id=user_id)))

    @server.tool(description="Everything remembered about a person, organisation, place, project or topic, "
                             "in time order, with the related entities.")
    async def what_do_you_know_about(topic: str, k: int = 10) -> Dossier:
        with _as_tool_error():
            found = await scoped.recall(topic, k)
        if found is None:
            return Dossier(topic=topic, memories=[], related=[])
        return Dossier(topic=topic, memories=sorted(_hits(found), key=lambda h: h.at), related=_entities(found))

    @server.tool(description="Statements that may have replaced an older one, which ripple was not sure of "
                             "('was 50k, possibly now 60k'): ask the user, then call resolve_conflict.")
    async def conflicts() -> Conflicts:
        with _as_tool_error():
            found = await scoped.conflicts()
        return Conflicts(conflicts=[_conflict(c) for c in found])

    @server.tool(description="Settle a conflict: supersedes=true when the later statement replaces the earlier "
                             "one, false when both stay true.")
    async def resolve_conflict(new_id: str, old_id: str, supersedes: bool) -> Conflicts:
        with _as_tool_error():
            await scoped.own(new_id)
            await scoped.own(old_id)
            await memory.resolve_conflict(new_id, old_id, supersedes=supersedes)
            found = await scoped.conflicts()
        return Conflicts(conflicts=[_conflict(c) for c in found])

    @server.resource(PROFILE_URI, name="profile", mime_type="text/markdown",
                     description="The user's current facts, preferences and personal details, from their memories, "
                                 "and the changes not confirmed yet.")
    async def profile() -> str:
        return render_profile(user_id, await scoped.all(), await scoped.conflicts())

    return server


def render_profile(user_id: str, memories: list[MemoryRecord], conflicts: Sequence[MemoryConflict] = ()) -> str:
    """The profile page: active, confident facts, preferences and personal details, newest first; then
    the open conflicts ("was 50k, possibly now 60k"), and each statement they touch says so."""
    keep = [m for m in memories if m.status == "active" and m.kind in _PROFILE_KINDS
            and m.confidence >= _PROFILE_MIN_CONFIDENCE]
    keep.sort(key=lambda m: m.at, reverse=True)
    lines = [f"# What ripple knows about {user_id}", ""]
    if not memories:
        lines.append("Nothing is stored for this user yet.")
        return "\n".join(lines) + "\n"
    titles = {"personal_info": "Personal details", "fact": "Facts", "preference": "Preferences"}
    shown = keep[:_PROFILE_MAX]
    disputed = {m.id for c in conflicts for m in (c.old, c.new)}
    for kind in _PROFILE_KINDS:
        group = [m for m in shown if m.kind == kind]
        if group:
            lines += [f"## {titles[kind]}", *(f"- {m.text} ({m.at.date().isoformat()})"
                                              + (" (unconfirmed: see below)" if m.id in disputed else "")
                                              for m in group), ""]
    if conflicts:
        lines.append("## Unconfirmed changes (ask the user, then call resolve_conflict)")
        for c in conflicts:
            was = f"was {c.values[0]}, possibly now {c.values[1]}: " if c.values else ""
            lines.append(f"- {was}\"{c.old.text}\" ({c.old.at.date().isoformat()}, id {c.old.id}) -> "
                         f"\"{c.new.text}\" ({c.new.at.date().isoformat()}, id {c.new.id})")
        lines.append("")
    if not shown:
        lines += ["No facts, preferences or personal details among the stored memories yet.", ""]
    lines.append(f"{len(memories)} memories stored; {len(keep)} current profile statements"
                 + (f", the {_PROFILE_MAX} newest shown." if len(keep) > _PROFILE_MAX else "."))
    return "\n".join(lines) + "\n"


async def serve_stdio(memory: "AsyncMemory", *, user_id: str) -> None:
    """Serve the MCP protocol on stdin/stdout until the client disconnects."""
    await build_mcp_server(memory, user_id=user_id).run_stdio_async()


def http_app(memory: "AsyncMemory", *, user_id: str, token: str | None, max_body_bytes: int) -> Any:
    """The streamable-HTTP MCP app at ``/mcp``, behind the same bearer auth and body limit as the HTTP API."""
    from .asgi import BearerAuth, BodyLimit

    app: Any = build_mcp_server(memory, user_id=user_id).streamable_http_app(max_request_body_size=max_body_bytes)
    app = BodyLimit(app, max_body_bytes)
    return BearerAuth(app, token, open_paths=()) if token else app

