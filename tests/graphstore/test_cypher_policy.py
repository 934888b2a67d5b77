"""``Memory.cypher`` / ``ripple cypher`` is read-only *and* refuses procedures and admin commands
unless allowed, judged from Neo4j's own EXPLAIN plan; the local launcher refuses file URLs in
LOAD CSV (issue 18, item 5).

The first tests judge plans without a server; the rest run every probe of the issue, evasions
(comments, case, whitespace, subqueries, backticks) and the write forms against the real server.
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from graphstore.cypher_policy import ADMIN, PROCEDURES, WRITE, CypherPlan, check, needs
from ripple.errors import InvalidInput, StoreError
from tests.graphstore.test_neo4j import PASSWORD, URI, _cli, clean, driver  # noqa: F401 - fixtures

# -- plans, judged without a server ---------------------------------------------------------------------


def _plan(query_type: str, *ops: str) -> CypherPlan:
    return CypherPlan(query_type, frozenset(ops))


@pytest.mark.parametrize(
    "plan, expected",
    [
        (_plan("r", "ProduceResults", "NodeByLabelScan"), set()),
        (_plan("r", "ProduceResults", "ProcedureCall"), {PROCEDURES}),
        (_plan("s", "ProduceResults", "ProcedureCall"), {PROCEDURES, ADMIN}),  # dbms.listConfig, clearQueryCaches
        (_plan("s", "AdministrationCommand"), {ADMIN}),  # SHOW USERS, CREATE USER
        (_plan("r", "ProduceResults", "ShowProcedures"), {ADMIN}),
        (_plan("r", "ProduceResults", "TerminateTransactions"), {ADMIN}),
        (_plan("r", "ProduceResults", "Limit", "LoadCSV"), {ADMIN}),
        (_plan("s", "CreateIndex"), {ADMIN, WRITE}),
        (_plan("rw", "ProduceResults", "Create"), {WRITE}),  # the CREATE clause is a write, not admin
        (_plan("w", "ProduceResults", "EmptyResult", "DetachDelete", "AllNodesScan"), {WRITE}),
    ],
)
def test_what_a_plan_needs(plan: CypherPlan, expected: set[str]) -> None:
    assert needs(plan) == expected


def test_each_capability_needs_its_own_permission() -> None:
    plan = _plan("s", "ProduceResults", "ProcedureCall")
    with pytest.raises(InvalidInput, match="procedure.*administration"):
        check(plan, write=False, allow_procedures=False, allow_admin=False)
    with pytest.raises(InvalidInput, match="administration"):
        check(plan, write=True, allow_procedures=True, allow_admin=False)
    check(plan, write=False, allow_procedures=True, allow_admin=True)
    with pytest.raises(InvalidInput, match="--write"):
        check(_plan("rw", "Create"), write=False, allow_procedures=True, allow_admin=True)


# -- the real server -------------------------------------------------------------------------------------

PROBES = {  # the issue's probes, and what each needs
    "LOAD CSV FROM 'file:///etc/passwd' AS row RETURN row LIMIT 2": {ADMIN},
    "SHOW USERS": {ADMIN},
    "SHOW DATABASES": {ADMIN},
    "SHOW PROCEDURES YIELD name RETURN name LIMIT 1": {ADMIN},
    "SHOW TRANSACTIONS": {ADMIN},
    "CALL dbms.listConfig() YIELD name RETURN name LIMIT 1": {PROCEDURES, ADMIN},
    "CALL db.clearQueryCaches()": {PROCEDURES, ADMIN},
    "CALL dbms.components()": {PROCEDURES, ADMIN},
    "CALL db.labels()": {PROCEDURES},
}

EVASIONS = [  # procedures and admin commands hidden from a string check
    "/* nothing to see */ cAlL\n\tdb.labels()",
    "RETURN 1 AS x UNION ALL CALL db.labels() YIELD label RETURN 1 AS x",
    "MATCH (n) WITH count(n) AS c CALL db.labels() YIELD label RETURN label",
    "CALL () { CALL db.labels() YIELD label RETURN label } RETURN label",
    "CALL `db`.`labels`()",
    "// a comment\nshow\nusers",
    "WITH 'file:///etc/passwd' AS u LOAD CSV FROM u AS row RETURN row",
    "CALL dbms.showCurrentUser()",
]

WRITE_FORMS = [  # nine ways to write: each refused in a read (before it runs), nothing written
    "CREATE (:Probe {x: 1})",
    "MERGE (:Probe {x: 1})",
    "MATCH (n:Memory) SET n.probe = 1",
    "MATCH (n:Memory) REMOVE n.text",
    "MATCH (n:Memory) DELETE n",
    "MATCH (n) DETACH DELETE n",
    "FOREACH (i IN [1, 2] | CREATE (:Probe {i: i}))",
    "CALL () { CREATE (:Probe) } RETURN 1 AS one",
    "CREATE INDEX probe_x IF NOT EXISTS FOR (p:Probe) ON (p.x)",
]


@pytest.fixture
def mem(clean: Any) -> Iterator[Any]:
    """A Memory on the test server holding one memory (so a successful delete would show)."""
    from extractors import GazetteerExtractor
    from ripple import Memory, RippleSettings
    from ripple.embedding import HashEmbedder

    settings = RippleSettings(store=URI, neo4j_password=PASSWORD)
    with Memory(settings=settings, embedder=HashEmbedder(16), extractor=GazetteerExtractor({})) as m:
        m.add("The probe must not delete this.", user_id="u1")
        yield m


def _untouched(driver: Any) -> None:
    with driver.session() as s:
        assert s.run("MATCH (m:Memory) RETURN m.text AS t").single()["t"] == "The probe must not delete this."
        assert s.run("MATCH (p:Probe) RETURN count(p) AS n").single()["n"] == 0
        assert s.run("SHOW INDEXES YIELD name WHERE name = 'probe_x' RETURN count(*) AS n").single()["n"] == 0


@pytest.mark.neo4j
@pytest.mark.parametrize("query", list(PROBES))
def test_the_issues_probes_are_refused_by_default(mem: Any, driver: Any, query: str) -> None:
    with pytest.raises(InvalidInput, match="refused"):
        mem.cypher(query)
    _untouched(driver)


@pytest.mark.neo4j
@pytest.mark.parametrize("query", [q for q in PROBES if "LOAD CSV" not in q and "clearQueryCaches" not in q])
def test_an_explicit_permission_runs_them(mem: Any, query: str) -> None:
    allowed = PROBES[query]
    keys, _rows = mem.cypher(query, allow_procedures=PROCEDURES in allowed, allow_admin=ADMIN in allowed)
    assert keys  # every probe returns columns
    if allowed == {PROCEDURES, ADMIN}:  # one permission is not enough
        with pytest.raises(InvalidInput):
            mem.cypher(query, allow_procedures=True)
        with pytest.raises(InvalidInput):
            mem.cypher(query, allow_admin=True)


@pytest.mark.neo4j
@pytest.mark.parametrize("query", EVASIONS)
def test_comments_case_whitespace_and_subqueries_do_not_hide_a_call(mem: Any, driver: Any, query: str) -> None:
    with pytest.raises(InvalidInput, match="refused"):
        mem.cypher(query)
    _untouched(driver)


@pytest.mark.neo4j
@pytest.mark.parametrize("query", WRITE_FORMS)
def test_every_write_form_is_refused_in_a_read(mem: Any, driver: Any, query: str) -> None:
    with pytest.raises(InvalidInput, match="--write"):
        mem.cypher(query)
    _untouched(driver)


@pytest.mark.neo4j
def test_the_launcher_refuses_file_urls_even_when_admin_is_allowed(mem: Any) -> None:
    """dbms.security.allow_csv_import_from_file_urls=false and every address blocked for LOAD CSV
    on the local server (scripts/neo4j-launcher)."""
    with pytest.raises(StoreError, match="allow_csv_import_from_file_urls"):
        mem.cypher("LOAD CSV FROM 'file:///etc/passwd' AS row RETURN row LIMIT 1", allow_admin=True)
    port = URI.rsplit(":", 1)[1]  # nor fetch from the network (the server's own Bolt port, here)
    with pytest.raises(StoreError, match="blocked"):
        mem.cypher(f"LOAD CSV FROM 'http://127.0.0.1:{port}/' AS row RETURN row LIMIT 1", allow_admin=True)


@pytest.mark.neo4j
def test_reads_and_parameters_still_work(mem: Any) -> None:
    keys, rows = mem.cypher("MATCH (m:Memory {user_id: $u}) RETURN m.text AS text", {"u": "u1"})
    assert keys == ["text"] and rows == [["The probe must not delete this."]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.neo4j
@pytest.mark.anyio
async def test_the_async_twin_refuses_the_same(clean: Any) -> None:
    from extractors import GazetteerExtractor
    from ripple import AsyncMemory, RippleSettings
    from ripple.embedding import HashEmbedder

    settings = RippleSettings(store=URI, neo4j_password=PASSWORD)
    async with AsyncMemory(settings=settings, embedder=HashEmbedder(16), extractor=GazetteerExtractor({})) as m:
        with pytest.raises(InvalidInput, match="refused"):
            await m.cypher("SHOW USERS")
        keys, _ = await m.cypher("SHOW USERS", allow_admin=True)
        assert "user" in keys


@pytest.mark.neo4j
def test_cli_flags(clean: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIPPLE_NEO4J_PASSWORD", PASSWORD)
    code, out, err = _cli(["--store", URI, "cypher", "SHOW USERS"], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "--allow-admin" in err
    code, out, _ = _cli(["--store", URI, "cypher", "--allow-admin", "SHOW USERS YIELD user RETURN user"], capsys)
    assert code == 0 and "neo4j" in out
    code, _, err = _cli(["--store", URI, "cypher", "CALL db.labels()"], capsys)
    assert code == 2 and "--allow-procedures" in err
    code, _, _ = _cli(["--store", URI, "cypher", "--allow-procedures", "CALL db.labels()"], capsys)
    assert code == 0
