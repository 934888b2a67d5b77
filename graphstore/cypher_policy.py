"""What a Cypher query run through ripple may do, judged from Neo4j's own plan of it.

A read transaction stops writes, but it is not a sandbox: in read mode Neo4j
still runs ``LOAD CSV FROM 'file:///etc/passwd'`` (the server's files),
``SHOW USERS``, ``CALL dbms.listConfig()`` and ``CALL db.clearQueryCaches()``
(issue 18).  So :meth:`graphstore.neo4j.Neo4jStore.cypher` first asks Neo4j to
``EXPLAIN`` the query (in the same transaction, which runs nothing) and judges
the plan it gets back, not the text: comments, case, whitespace, string
escapes and subqueries cannot hide a ``ProcedureCall`` or ``LoadCSV``
operator from the planner, while a string check is easy to evade.

Three kinds of capability are named (:data:`PROCEDURES`, :data:`ADMIN`,
:data:`WRITE`) and each needs its own explicit permission:

* procedures: any ``CALL proc()`` (a ``ProcedureCall`` operator);
* admin: administration commands (``SHOW ...``, ``CREATE/DROP/ALTER USER``,
  ``... DATABASE``, ``TERMINATE TRANSACTIONS``), schema commands (indexes,
  constraints), procedures that run in DBMS or schema mode (``dbms.*``,
  ``db.clearQueryCaches``: the plan's query type is ``s``), and ``LOAD CSV``
  (it reads files or URLs from the server's side);
* write: a plan whose query type is ``w`` or ``rw``, or that creates or drops
  an index or constraint.

A query Neo4j cannot plan is refused by the failed ``EXPLAIN`` itself.  This
is a guard for a tool, not an isolation boundary: real isolation between
tenants on a shared Neo4j comes from database users and roles (see
RELIABILITY.md, "Cypher on Neo4j").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ripple.errors import InvalidInput

__all__ = ["CypherPlan", "needs", "check", "plan_of", "PROCEDURES", "ADMIN", "WRITE"]

PROCEDURES = "procedures"
ADMIN = "admin"
WRITE = "write"

_ADMIN_OPERATORS = frozenset({"AdministrationCommand", "LoadCSV"})
_ADMIN_PREFIXES = ("Show", "Terminate", "Create", "Drop", "Alter", "Grant", "Deny", "Revoke", "Rename",
                   "Start", "Stop", "Enable", "Deallocate", "Reallocate")
_WRITE_OPERATORS = frozenset({"Create"})  # the CREATE clause; CreateIndex etc. are schema commands


@dataclass(frozen=True, slots=True)
class CypherPlan:
    """What Neo4j's EXPLAIN says of a query: its type (``r``, ``rw``, ``w``, ``s``) and plan operators."""

    query_type: str
    operators: frozenset[str]


def plan_of(summary: Any) -> CypherPlan:
    """The :class:`CypherPlan` of a neo4j ``ResultSummary`` of an ``EXPLAIN``."""
    ops: set[str] = set()
    stack = [summary.plan] if summary.plan else []
    while stack:
        node = stack.pop()
        ops.add(str(node.get("operatorType", "")).split("@", 1)[0])
        stack.extend(node.get("children", ()))
    return CypherPlan(str(summary.query_type or ""), frozenset(ops))


def needs(plan: CypherPlan) -> frozenset[str]:
    """The capabilities a plan uses."""
    out = set()
    if "ProcedureCall" in plan.operators:
        out.add(PROCEDURES)
    if plan.query_type == "s" or plan.operators & _ADMIN_OPERATORS or any(
        op.startswith(_ADMIN_PREFIXES) and op not in _WRITE_OPERATORS for op in plan.operators
    ):
        out.add(ADMIN)
    if plan.query_type in ("w", "rw") or any(
        op.startswith(("Create", "Drop")) and op not in _WRITE_OPERATORS for op in plan.operators
    ):  # (an index or constraint created or dropped is a write too)
        out.add(WRITE)
    return frozenset(out)


def check(plan: CypherPlan, *, write: bool, allow_procedures: bool, allow_admin: bool) -> None:
    """Refuse a plan that needs a capability the caller did not allow (:class:`~ripple.InvalidInput`)."""
    missing = []
    used = needs(plan)
    if PROCEDURES in used and not allow_procedures:
        missing.append("calls a procedure (allow_procedures=True, ripple cypher --allow-procedures)")
    if ADMIN in used and not allow_admin:
        missing.append("is an administration command, schema command or LOAD CSV"
                       " (allow_admin=True, ripple cypher --allow-admin)")
    if WRITE in used and not write:
        missing.append("writes (write=True, ripple cypher --write)")
    if missing:
        ops = ", ".join(sorted(plan.operators & (_ADMIN_OPERATORS | {"ProcedureCall"}))
                        or sorted(op for op in plan.operators if op.startswith(_ADMIN_PREFIXES)))
        raise InvalidInput(
            "refused: the query " + "; it ".join(missing)
            + (f" [plan: {ops}]" if ops else "") + ". Neo4j's roles, not ripple, isolate tenants: see RELIABILITY.md"
        )
