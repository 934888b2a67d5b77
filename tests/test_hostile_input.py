"""Hostile input through the public API and the command line, generated (issue 18, item 3).

A state machine drives :class:`ripple.Memory` with a mix of good and bad arguments (texts, ids,
metadata, times, limits, ``k``, modes; lone surrogates, NaN, year-1 datetimes in far time zones,
JSON nested past the limit, wrong types, other users' ids) and checks after every step that

* nothing but a :class:`ripple.RippleError` escaped, with a one-line message;
* a call that raised changed nothing anywhere (no half-written batch);
* every user other than the one a call was for is untouched (their export is unchanged);
* every user's stats agree with their export, and their edges join their own nodes.

Most examples use a hashing embedder and a gazetteer (fast); a few run the real models (MiniLM,
spaCy), whose tokenizers raised ``TypeError`` on a lone surrogate before.  The command line gets
the same treatment through ``main()`` in this process; ``AsyncMemory`` a short run of its own.
"""

from __future__ import annotations

import shutil
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

import anyio
import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, initialize, invariant, multiple, rule

from extractors import GazetteerExtractor
from ripple import AsyncMemory, Limits, Memory, RippleError, RippleSettings
from ripple.cli.__main__ import main
from ripple.embedding import HashEmbedder
from tests.conftest import need

NAMES = {"Dana Whitfield": "PERSON", "Northwind": "ORG", "Acme Corp": "ORG", "张伟": "PERSON", "阿里巴巴": "ORG"}
LIMITS = Limits(text_chars=400, query_chars=200, k=50, metadata_bytes=2_000, metadata_depth=6, user_id_chars=24,
                session_id_chars=24, agent_id_chars=24, memory_id_chars=40, batch_items=20, import_batch=3)
USERS = ["u1", "u2", "张伟"]
SURROGATES = ["\ud83d", "\ude00", "\udcff", "\udc80"]

# -- strategies: good values mixed with every kind of bad one ---------------------------------------------


def mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``good`` three times in four: a call with several arguments must often be valid as a whole.

    (``one_of(good, good, good, bad)`` would not do: ``one_of`` drops repeated branches.)"""
    return st.integers(0, 3).flatmap(lambda i: bad if i == 0 else good)


_good_text = st.sampled_from([
    "Dana Whitfield runs procurement at Northwind.", "Acme Corp signed with Northwind on Friday.",
    "我叫张伟，在阿里巴巴工作。", "The budget is now 60k.", "Never mind, drop the Lisbon plan.", "ok thanks",
    "张伟和 Dana Whitfield 周五见面。",
])


def _with_surrogate(base: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.builds(lambda b, s, i: b[:i] + s + b[i:], base, st.sampled_from(SURROGATES), st.integers(0, 20))


texts = st.one_of(
    _good_text, st.text(max_size=40), _with_surrogate(_good_text), st.just(""), st.just(" \n\t "),
    st.just("x" * (LIMITS.text_chars + 1)), st.integers(), st.none(), st.binary(max_size=6),
)
_bad_users = st.one_of(_with_surrogate(st.just("u1")), st.just(""), st.just("u" * (LIMITS.user_id_chars + 1)),
                       st.integers(), st.none())
users = mostly(st.sampled_from(USERS), _bad_users)
sessions = st.one_of(st.none(), st.sampled_from(["s1", "s2", "会话"]), _with_surrogate(st.just("s")),
                     st.just("s" * 30), st.integers())


def _nested(depth: int, leaf: Any) -> Any:
    out = leaf
    for _ in range(depth):
        out = {"a": out}
    return out


_leaf = st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
                  _with_surrogate(st.just("v")), st.none(), st.booleans(), st.just((1, 2)), st.just(b"raw"),
                  st.builds(lambda: 10**5000))  # (an int JSON cannot print: over 4,300 digits)
_json = st.recursive(_leaf, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                   st.dictionaries(st.text(max_size=5), inner, max_size=3)),
                     max_leaves=8)
metadatas = st.one_of(
    st.none(), st.just({}), st.dictionaries(st.text(max_size=6), _json, max_size=3),
    st.builds(_nested, st.integers(1, 1200), _leaf), st.just({"blob": "x" * (LIMITS.metadata_bytes + 1)}),
    st.just({1: "int key"}), st.just({"\udc00": 1}), st.just([1, 2]), st.just("not a dict"),
)
_zones = st.sampled_from([None, timezone.utc, timezone(timedelta(hours=14)), timezone(timedelta(hours=-12))])
times = st.one_of(st.none(), st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59),
                                          timezones=_zones),
                  st.just(datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5)))), st.integers(), st.text(max_size=5))
ks = st.one_of(st.integers(1, 10), st.integers(-3, 10**22), st.floats(), st.none(), st.just(True), st.text(max_size=3))
limits_ = st.one_of(st.none(), st.integers(0, 5), st.integers(-5, 10**25), st.text(max_size=3), st.floats())
modes = st.one_of(st.sampled_from(["ripple", "flat", "bm25", "hybrid", "ppr"]), st.sampled_from(["magic", "", "FLAT"]),
                  st.none(), st.integers())
importances = st.one_of(st.none(), st.floats(0, 1), st.floats(), st.integers(-2, 2), st.text(max_size=2))
kinds = st.one_of(st.none(), st.sampled_from(["fact", "todo", "message"]), st.just("k" * 100), st.integers())
foreign_ids = st.one_of(st.just("m_missing"), _with_surrogate(st.just("m_")), st.just("m" * 200), st.just(""),
                        st.integers(), st.none())


def _item(text: Any, user: Any, session: Any, metadata: Any, at: Any, importance: Any, kind: Any) -> dict[str, Any]:
    item: dict[str, Any] = {"text": text, "user_id": user}
    for key, value in (("session_id", session), ("metadata", metadata), ("at", at), ("importance", importance),
                       ("kind", kind)):
        if value is not None:
            item[key] = value
    return item


good_items = st.builds(_item, _good_text, st.sampled_from(USERS), st.sampled_from([None, "s1", "s2"]),
                      st.sampled_from([None, {"source": "chat", "tags": ["a", "中"]}]),
                      st.one_of(st.none(), st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1))),
                      st.none(), st.none())
# (a valid item as often as a hostile one: the store must fill up for the checks to bite)
items = st.one_of(good_items, st.builds(_item, texts, users, sessions, metadatas, times, importances, kinds))


# -- the machine ---------------------------------------------------------------------------------------------

def _flat_memory(path: Path, real: bool = False) -> Memory:
    settings_ = RippleSettings(limits=LIMITS)
    if real:
        from extractors import default_extractor
        from ripple.embedding import default_embedder
        from ripple.errors import ModelNotInstalled

        try:
            return Memory(path=str(path), embedder=default_embedder(), extractor=default_extractor(),
                          settings=settings_)
        except ModelNotInstalled as exc:
            need(str(exc))
    return Memory(path=str(path), embedder=HashEmbedder(32), extractor=GazetteerExtractor(NAMES), settings=settings_)


class HostileCalls(RuleBasedStateMachine):
    """Random public calls, good and bad, on one embedded store (see the module docstring)."""

    real = False
    memories = Bundle("memories")

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="ripple-hostile-")
        self.mem = _flat_memory(Path(self.dir), self.real)

    def teardown(self) -> None:
        stored = self.mem.stats()["memories"]
        event(f"memories at the end: {'0' if not stored else '1-3' if stored <= 3 else '4+'}")
        self.mem.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @initialize(target=memories)
    def seed(self) -> Any:
        """Every user starts with a few memories, so reads and updates have something to find."""
        stored = self.mem.add_many([
            {"text": text, "user_id": user, "session_id": "s1"}
            for user in USERS for text in ("Dana Whitfield runs procurement at Northwind.", "张伟在阿里巴巴工作。")
        ])
        return multiple(*(m.id for m in stored))

    # -- the contract, checked around every call ---------------------------------------------------------
    def _snapshot(self) -> dict[str, list[dict[str, Any]]]:
        return {u: list(self.mem.export(user_id=u)) for u in self.mem.users()}

    def _call(self, fn: Callable[[], Any], *, for_users: set[Any]) -> Any:
        before = self._snapshot()
        try:
            out = fn()
        except RippleError as exc:
            event(f"raised {type(exc).__name__}")
            assert str(exc) and "\n" not in str(exc)
            assert self._snapshot() == before, f"a call that raised {type(exc).__name__} changed the store"
            return None
        event("answered")
        after = self._snapshot()
        for user in set(before) | set(after):
            if user not in for_users:
                assert after.get(user) == before.get(user), f"a call for {for_users} changed user {user!r}"
        return out

    def _owner(self, memory_id: Any) -> set[Any]:
        try:
            return {self.mem.get(memory_id).user_id}
        except RippleError:
            return set()

    @invariant()
    def stats_agree_with_exports_and_edges_join_own_nodes(self) -> None:
        for user in self.mem.users():
            records = list(self.mem.export(user_id=user))
            stats = self.mem.stats(user_id=user)
            by_type = {t: [r for r in records if r["type"] == t] for t in ("memory", "entity", "edge")}
            assert stats["memories"] == len(by_type["memory"]) and stats["entities"] == len(by_type["entity"])
            assert sum(v for k, v in stats.items() if k.startswith("edges_")) == len(by_type["edge"])
            nodes = {r["id"] for r in by_type["memory"] + by_type["entity"]}
            assert all(r["user_id"] == user for r in records)
            assert all(e["src"] in nodes and e["dst"] in nodes for e in by_type["edge"]), "an edge leaves the user"

    # -- writes ----------------------------------------------------------------------------------------
    @rule(target=memories, item=items)
    def add(self, item: dict[str, Any]) -> Any:
        out = self._call(lambda: self.mem.add(**item), for_users={item.get("user_id")})
        return out[0].id if out else "m_none"

    @rule(target=memories, item=good_items)
    def add_a_good_one(self, item: dict[str, Any]) -> Any:
        return self.add(item)

    @rule(batch=st.lists(items, min_size=0, max_size=4))
    def add_many(self, batch: list[dict[str, Any]]) -> None:
        self._call(lambda: self.mem.add_many(batch), for_users={i.get("user_id") for i in batch})

    @rule(memory_id=mostly(memories, foreign_ids),
          text=mostly(st.one_of(st.none(), _good_text), texts), metadata=mostly(st.none(), metadatas),
          importance=mostly(st.none(), importances), at=mostly(st.none(), times))
    def update(self, memory_id: Any, text: Any, metadata: Any, importance: Any, at: Any) -> None:
        self._call(lambda: self.mem.update(memory_id, text=text, metadata=metadata, importance=importance, at=at),
                   for_users=self._owner(memory_id))

    @rule(memory_id=mostly(consumes(memories), foreign_ids))
    def delete(self, memory_id: Any) -> None:
        self._call(lambda: self.mem.delete(memory_id), for_users=self._owner(memory_id))

    @rule(memory_id=mostly(memories, foreign_ids), pinned=st.one_of(st.booleans(), st.integers(0, 1)))
    def pin(self, memory_id: Any, pinned: Any) -> None:
        self._call(lambda: self.mem.pin(memory_id, pinned), for_users=self._owner(memory_id))

    @rule(query=mostly(_good_text, texts), user=users)
    def forget_by_query(self, query: Any, user: Any) -> None:
        self._call(lambda: self.mem.forget(query=query, user_id=user), for_users={user})

    @rule(source=st.sampled_from(USERS), importer=users, mangle=st.sampled_from(["none", "surrogate", "at", "edge",
                                                                               "vector", "foreign-id", "json"]))
    def import_records(self, source: str, importer: Any, mangle: str) -> None:
        records: list[Any] = [dict(r) for r in self.mem.export(user_id=source)] if source in self.mem.users() else []
        if records and mangle != "none":
            first = records[0]
            records.append({
                "surrogate": lambda: dict(first, text="bad \ud83d"),
                "at": lambda: dict(first, at=float("inf")),
                "edge": lambda: {"type": "edge", "src": first.get("id", "x"), "edge": "OWNS", "dst": "m_zz",
                                 "user_id": source, "weight": 1.0},
                "vector": lambda: dict(first, embedding="AAAA"),
                "foreign-id": lambda: dict(first, user_id=importer, id=self._someone_elses_id(importer)),
                "json": lambda: "[1, 2]",
            }[mangle]())
        self._call(lambda: self.mem.import_records(records, user_id=importer), for_users={importer})

    def _someone_elses_id(self, user: Any) -> str:
        for other in self.mem.users():
            if other != user:
                mems = [r for r in self.mem.export(user_id=other) if r["type"] == "memory"]
                if mems:
                    return str(mems[0]["id"])
        return "m_missing"

    @rule(user=users)
    def delete_all(self, user: Any) -> None:
        self._call(lambda: self.mem.delete_all(user_id=user), for_users={user})

    # -- reads (recall counts its hits as used: only the caller's user may change) ----------------------
    @rule(query=mostly(_good_text, texts), user=users, k=mostly(st.integers(1, 10), ks),
          mode=mostly(st.sampled_from(["ripple", "flat", "bm25", "hybrid", "ppr"]), modes), touch=st.booleans(),
          history=st.booleans())
    def recall(self, query: Any, user: Any, k: Any, mode: Any, touch: bool, history: bool) -> None:
        self._call(lambda: self.mem.recall(query, user_id=user, k=k, mode=mode, touch=touch, include_history=history),
                   for_users={user})

    @rule(user=users, session=mostly(st.sampled_from([None, "s1"]), sessions), limit=mostly(st.none(), limits_))
    def get_all(self, user: Any, session: Any, limit: Any) -> None:
        self._call(lambda: self.mem.get_all(user_id=user, session_id=session, limit=limit), for_users=set())

    @rule(memory_id=mostly(memories, foreign_ids))
    def reads_by_id(self, memory_id: Any) -> None:
        self._call(lambda: (self.mem.get(memory_id), self.mem.history(memory_id)), for_users=set())

    @rule(user=users, now=mostly(st.none(), times))
    def maintain_and_facts(self, user: Any, now: Any) -> None:
        self._call(lambda: (self.mem.maintain(user_id=user, now=now), self.mem.facts(user_id=user)), for_users=set())

    @rule(user=users, key=st.one_of(st.just("k"), _with_surrogate(st.just("k")), st.just("")), value=_json,
          version=st.one_of(st.none(), st.integers(-1, 3)))
    def documents(self, user: Any, key: Any, value: Any, version: Any) -> None:
        self._call(lambda: self.mem.put_document(user_id=user, key=key, value=value, expected_version=version),
                   for_users={user})


class HostileCallsWithTheRealModels(HostileCalls):
    """The same, with MiniLM and spaCy (their tokenizers raised TypeError on a lone surrogate)."""

    real = True


TestHostileCalls = HostileCalls.TestCase
TestHostileCalls.settings = settings(max_examples=50, stateful_step_count=15, deadline=None, derandomize=True,
                                     database=None, suppress_health_check=list(HealthCheck))
TestHostileCallsWithTheRealModels = HostileCallsWithTheRealModels.TestCase
TestHostileCallsWithTheRealModels.settings = settings(max_examples=4, stateful_step_count=8, deadline=None,
                                                      derandomize=True, database=None,
                                                      suppress_health_check=list(HealthCheck))
TestHostileCallsWithTheRealModels.pytestmark = [pytest.mark.slow]


# -- the async twin ----------------------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(item=items, query=texts, k=ks, mode=modes)
def test_the_async_twin_raises_only_ripple_errors(tmp_path_factory: pytest.TempPathFactory, item: dict[str, Any],
                                                  query: Any, k: Any, mode: Any) -> None:
    path = tmp_path_factory.mktemp("async")

    async def run() -> None:
        async with AsyncMemory(path=str(path), embedder=HashEmbedder(32), extractor=GazetteerExtractor(NAMES),
                               settings=RippleSettings(limits=LIMITS)) as amem:
            await amem.add("Dana Whitfield runs Northwind.", user_id="bystander")
            before = [r async for r in amem.export(user_id="bystander")]
            for call in (lambda: amem.add_many([item]), lambda: amem.recall(query, user_id=item.get("user_id"), k=k,
                                                                            mode=mode)):
                try:
                    await call()
                except RippleError as exc:
                    assert "\n" not in str(exc)
            if item.get("user_id") != "bystander":
                assert [r async for r in amem.export(user_id="bystander")] == before

    anyio.run(run)


# -- the command line ----------------------------------------------------------------------------------------------

_arg_text = mostly(_good_text, st.one_of(_with_surrogate(_good_text), st.just(""), st.text(max_size=12),
                                         st.just("x" * (LIMITS.text_chars + 1))))
_arg_user = mostly(st.sampled_from(USERS), st.one_of(_with_surrogate(st.just("u")), st.just(""), st.just("u" * 40)))
_arg_meta = mostly(st.just('{"source": "cli"}'), st.sampled_from(
    ["[1]", "{bad", '{"a":' * 50 + "1" + "}" * 50, '{"x": NaN}', '{"k": "\\ud83d"}']))
_arg_at = mostly(st.just("2026-05-01T10:00:00"), st.sampled_from(
    ["0001-01-01T00:00:00+05:00", "soon", "9999-12-31T23:00:00-05:00"]))
_arg_num = mostly(st.integers(1, 12).map(str), st.sampled_from(["0", "-3", str(10**20), "x"]))
argvs = st.one_of(
    st.builds(lambda t, u, m, a: ["add", t, "--user", u, "--metadata", m, "--at", a], _arg_text, _arg_user,
              _arg_meta, _arg_at),
    st.builds(lambda t, u: ["add", t, "--user", u], _arg_text, _arg_user),
    st.builds(lambda t, u, k, m: ["recall", t, "--user", u, "-k", k, "--mode", m], _arg_text, _arg_user, _arg_num,
              st.sampled_from(["ripple", "flat", "magic"])),
    st.builds(lambda u: ["stats", "--user", u], _arg_user),
    st.builds(lambda u: ["maintain", "--user", u], _arg_user),
    st.builds(lambda t, u: ["forget", "--query", t, "--user", u], _arg_text, _arg_user),
    st.builds(lambda u: ["export", "--user", u], _arg_user),
)


@pytest.fixture(scope="module")
def cli_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    store = str(tmp_path_factory.mktemp("cli") / "store")
    with _flat_memory(Path(store)) as mem:
        for user in ["bystander", *USERS]:
            mem.add("Dana Whitfield runs procurement at Northwind.", user_id=user)
    return store


@settings(max_examples=60, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(argv=argvs)
def test_the_command_line_exits_0_or_2_with_one_line(cli_store: str, argv: list[str],
                                                      capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIPPLE_EMBEDDER", "hash-32")
    for name, value in LIMITS.model_dump().items():
        monkeypatch.setenv(f"RIPPLE_LIMITS__{name.upper()}", str(value))
    with _flat_memory(Path(cli_store)) as mem:
        bystander = list(mem.export(user_id="bystander"))
    capsys.readouterr()
    try:
        code = main(["--store", cli_store, *argv])
    except SystemExit as exit_:  # argparse refusing the command line itself
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    event(f"{argv[0]}: exit {code}")
    assert code in (0, 2), (argv, code, err)
    if code == 2 and err.startswith("ripple: error: "):
        assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    with _flat_memory(Path(cli_store)) as mem:
        assert list(mem.export(user_id="bystander")) == bystander
        for user in mem.users():  # every user's stats agree with their export
            records = list(mem.export(user_id=user))
            assert mem.stats(user_id=user)["memories"] == sum(r["type"] == "memory" for r in records)

