"""Scopes as hard partitions, and the roles an agent has in each.

Shared memory leaks when the boundary is a relevance hint instead of a filter
(mem0 #3998: one agent's procedures in another's context).  ripple's store
already isolates users completely: nothing crosses a ``user_id``.  So a scope
*is* a partition key, and isolation is the store's own, not a filter this
layer could forget:

=========  =============================  ==========================================
scope      partition key                  holds
=========  =============================  ==========================================
user       the user id itself             the conversation, the user's facts, pins
agent      ``agent:<agent id>``           the agent's procedures (how it did tasks)
team       ``team:<name>``                memory shared by a team of agents
session    ``session:<user>:<session>``   what a read-only agent says in a session
=========  =============================  ==========================================

An agent reads only the scopes it is granted; a read that spans several
recalls in each partition and merges.  Roles: ``reader`` reads; ``writer``
also adds memories (each carries ``written_by``); ``curator`` (the
orchestrator) alone writes core facts and pins.  A non-curator's pin either
raises :class:`ripple.PermissionDenied` or, with ``on_denied="pending"``,
waits for a curator to accept it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Mapping

from ..errors import InvalidInput, PermissionDenied

__all__ = ["Role", "Scope", "Access", "RESERVED_PREFIXES", "check_user_id"]

RESERVED_PREFIXES = ("agent:", "team:", "session:")


class Role(str, Enum):
    READER = "reader"
    WRITER = "writer"
    CURATOR = "curator"

    @property
    def rank(self) -> int:
        return {"reader": 1, "writer": 2, "curator": 3}[self.value]


@dataclass(frozen=True, slots=True)
class Scope:
    """A named partition: ``kind`` is user, agent, team or session."""

    kind: str
    name: str
    partition: str

    def __str__(self) -> str:
        return self.kind if self.kind in ("user", "agent", "session") else f"{self.kind}:{self.name}"


def check_user_id(user_id: str) -> str:
    if not isinstance(user_id, str) or not user_id.strip():
        raise InvalidInput("user_id must be a non-empty string")
    if user_id.startswith(RESERVED_PREFIXES):
        raise InvalidInput(f"user ids starting with {', '.join(RESERVED_PREFIXES)} are reserved for shared scopes")
    return user_id


class Access:
    """The scopes one agent of one session may read and write, with its role in each.

    ``grants`` maps scope names to roles: ``"user"``, ``"agent"``,
    ``"session"`` (this session's own), and ``"team:<name>"``.  Without
    grants the agent is the curator of its user, its own agent scope and its
    session (a single-agent application).

    >>> a = Access("u1", "s1", "planner", {"user": "reader", "team:acme": "writer"})
    >>> [str(s) for s in a.readable()], a.role("team:acme").value
    (['user', 'session', 'team:acme'], 'writer')
    """

    def __init__(self, user_id: str, session_id: str, agent_id: str | None,
                 grants: Mapping[str, str | Role] | None = None, *, on_denied: str = "raise") -> None:
        if on_denied not in ("raise", "pending"):
            raise InvalidInput("on_denied must be 'raise' or 'pending'")
        self.user_id, self.session_id, self.agent_id = check_user_id(user_id), session_id, agent_id
        self.on_denied = on_denied
        if grants is None:
            raw: dict[str, str | Role] = {"user": Role.CURATOR, **({"agent": Role.CURATOR} if agent_id else {})}
        else:
            raw = dict(grants)
        raw.setdefault("session", Role.CURATOR)  # an agent always owns what it says in its session
        self.grants: dict[str, Role] = {}
        for name, role in raw.items():
            scope = self.scope(name)
            try:
                self.grants[str(scope)] = Role(role)
            except ValueError as exc:
                raise InvalidInput(f"unknown role {role!r} for scope {name!r} (reader, writer, curator)") from exc

    def scope(self, name: str) -> Scope:
        """The :class:`Scope` a name denotes (``"user"``, ``"agent"``, ``"session"``, ``"team:<name>"``)."""
        if name == "user":
            return Scope("user", self.user_id, self.user_id)
        if name == "agent":
            if not self.agent_id:
                raise InvalidInput("the agent scope needs a session with an agent_id")
            return Scope("agent", self.agent_id, f"agent:{self.agent_id}")
        if name == "session":
            return Scope("session", self.session_id, f"session:{self.user_id}:{self.session_id}")
        if name.startswith("team:") and len(name) > 5:
            return Scope("team", name[5:], name)
        raise InvalidInput(f"unknown scope {name!r}: use user, agent, session or team:<name>")

    def role(self, name: str) -> Role | None:
        return self.grants.get(str(self.scope(name)))

    def readable(self, *, include_agent: bool = False) -> list[Scope]:
        """Scopes this agent may recall from (the agent scope only when asked: it holds procedures)."""
        out = []
        for name in self.grants:
            if name == "agent" and not include_agent:
                continue
            if name == "agent" and not self.agent_id:
                continue
            out.append(self.scope(name))
        return out

    def require(self, name: str, needed: Role, what: str) -> Scope:
        """The scope, if this agent's role there is at least ``needed``; else :class:`ripple.PermissionDenied`."""
        scope = self.scope(name)
        have = self.grants.get(str(scope))
        if have is None or have.rank < needed.rank:
            held = have.value if have else "no role"
            raise PermissionDenied(
                f"agent {self.agent_id or '(none)'!s} has {held} in scope {scope}; {what} needs {needed.value}"
            )
        return scope

    def may(self, name: str, needed: Role) -> bool:
        have = self.grants.get(str(self.scope(name)))
        return have is not None and have.rank >= needed.rank

    def turn_scope(self) -> Scope:
        """Where this agent's conversation turns are stored: the user's partition if it may write
        there, else its own session's."""
        return self.scope("user") if self.may("user", Role.WRITER) else self.scope("session")
