"""add_many on a server store prepares batch n+1 while batch n is written (ripple._ahead).

The overlap must change nothing but the time: the same final store (memories,
statuses, supersessions, edges, entities) as batch after batch, on SQLite (the
overlap forced on) and on Neo4j (where it is the default), English and Chinese;
a batch that fails leaves the batches before it written and nothing of itself
or after it.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator, Sequence

import pytest

from ripple import AsyncMemory, Memory, RippleSettings
from ripple._ahead import PreparedBatches
from ripple.errors import ExtractionError, StoreError
from tests.graphstore.test_neo4j import driver  # noqa: F401  (fixture, used by the neo4j parameter)

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=timezone.utc)
CHUNK = 3  # items per write batch in these tests (ripple._memory._CHUNK), so that 17 items make 6 batches

# Supersession, retraction, correction and a repeat each across a batch boundary (and one inside a
# batch), sessions that continue from one batch into the next, and a contentless turn.
TEXTS = [
    ("Our budget for the office move is 50,000 CNY.", "s1"),
    ("I booked the movers for the second week of July.", "s1"),
    ("My sister Ada is visiting from Lagos next week.", "s1"),
    ("The budget is now 60k.", "s2"),
    ("Let's plan a weekend trip to Lisbon in May.", "s2"),
    ("I live in Berlin with my partner Sam.", "s2"),
    ("Never mind, drop the Lisbon plan.", "s2"),
    ("I live in Berlin with my partner Sam.", "s3"),
    ("The design review with Northwind is on Monday.", "s3"),
    ("No, I meant Tuesday.", "s3"),
    ("项目预算是五万。", "s4"),
    ("我叫李雷。", "s4"),
    ("预算加到六万了。", "s4"),
    ("我想这个周末去爬山。", "s5"),
    ("算了，不要了。", "s5"),
    ("我叫张伟，我在北京工作。", "s5"),
    ("好的", "s5"),
]


def items(texts: Sequence[tuple[str, str]] = TEXTS, user: str = "u1") -> list[dict[str, Any]]:
    return [{"text": t, "user_id": user, "session_id": s, "at": T0 + timedelta(hours=n)}
            for n, (t, s) in enumerate(texts)]


class Recording:
    """An extractor that notes the threads it runs in and fails on one text."""

    def __init__(self, inner: Any, fail_on: str | None = None) -> None:
        self.inner = inner
        self.fail_on = fail_on
        self.threads: list[str] = []

    def extract_many(self, texts: Sequence[str]) -> Any:
        self.threads.append(threading.current_thread().name)
        if self.fail_on is not None and self.fail_on in texts:
            raise RuntimeError("extractor failed")
        return self.inner.extract_many(texts)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def clock() -> float:
    return (T0 + timedelta(days=30)).timestamp()


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("ripple._memory._CHUNK", CHUNK)


@pytest.fixture(params=["sqlite", pytest.param("neo4j", marks=[pytest.mark.neo4j, pytest.mark.slow])])
def open_memory(request: pytest.FixtureRequest, tmp_path: Path, embedder: Any, small_batches: None) -> Iterator[Any]:
    """A function that opens an empty store of the parameter's backend (Neo4j: wiped) with ``extractor``."""
    opened: list[Memory] = []
    if request.param == "sqlite":
        def open_sqlite(extractor: Any, ahead: bool) -> Memory:
            m = Memory(path=str(tmp_path / f"store{len(opened)}"), embedder=embedder, extractor=extractor,
                       clock=clock)
            m._prepare_ahead = ahead  # (SQLite's default is serial: the overlap is forced on to test it)
            opened.append(m)
            return m

        yield open_sqlite
    else:
        from tests.graphstore.test_neo4j import PASSWORD, URI, wipe

        drv = request.getfixturevalue("driver")

        def open_neo4j(extractor: Any, ahead: bool) -> Memory:
            wipe(drv)
            m = Memory(store=URI, settings=RippleSettings(neo4j_password=PASSWORD), embedder=embedder,
                       extractor=extractor, clock=clock)
            assert m._prepare_ahead, "a server store prepares ahead by default"
            m._prepare_ahead = ahead
            opened.append(m)
            return m

        yield open_neo4j
        wipe(drv)
    for m in opened:
        m.close()


def snapshot(mem: Memory, user: str = "u1") -> list[str]:
    """The user's whole graph with memory ids replaced by (text, event time): ids are minted per run."""
    return named(list(mem.export(user_id=user)))


def named(records: list[dict[str, Any]]) -> list[str]:
    """Exported records as sorted JSON lines, each memory id replaced by its text and event time."""
    names = {r["id"]: f"<{r['text']}@{r['at']}>" for r in records if r["type"] == "memory"}
    out = []
    for r in records:
        text = json.dumps(r, ensure_ascii=False, sort_keys=True)
        for mid, name in names.items():
            text = text.replace(mid, name)
        out.append(text)
    return sorted(out)


def test_prepared_ahead_gives_the_serial_store(open_memory: Any, extractor: Any) -> None:
    serial_ex, ahead_ex = Recording(extractor), Recording(extractor)
    serial = open_memory(serial_ex, False)
    serial_out = [(m.text, m.status, m.kind) for m in serial.add_many(items())]
    want = snapshot(serial)
    ahead = open_memory(ahead_ex, True)
    assert [(m.text, m.status, m.kind) for m in ahead.add_many(items())] == serial_out
    assert snapshot(ahead) == want
    # the overlap did happen (batches after the first were extracted in the worker), and only with it
    assert "ripple-prepare" not in {t.split("_")[0] for t in serial_ex.threads}
    assert {t.split("_")[0] for t in ahead_ex.threads} >= {"ripple-prepare"}
    # what the texts are there for: each kind of lifecycle decision is in the compared store
    statuses = {json.loads(r)["text"]: json.loads(r)["status"] for r in want if json.loads(r)["type"] == "memory"}
    assert statuses["Our budget for the office move is 50,000 CNY."] == "superseded"
    assert statuses["Let's plan a weekend trip to Lisbon in May."] == "invalidated"
    assert statuses["项目预算是五万。"] == "superseded"
    assert statuses["我想这个周末去爬山。"] == "invalidated"
    assert sum(1 for r in want if json.loads(r).get("text") == "I live in Berlin with my partner Sam.") == 1
    assert any(json.loads(r).get("edge") == "NEXT" for r in want)


def test_a_batch_that_fails_to_prepare_leaves_the_batches_before_it(open_memory: Any, extractor: Any) -> None:
    bad = TEXTS[8][0]  # the third batch (items 6-8)
    serial = open_memory(Recording(extractor, fail_on=bad), False)
    with pytest.raises(ExtractionError, match="extractor failed"):
        serial.add_many(items())
    want = snapshot(serial)
    ahead = open_memory(Recording(extractor, fail_on=bad), True)
    with pytest.raises(ExtractionError, match="extractor failed"):
        ahead.add_many(items())
    got = snapshot(ahead)
    assert got == want
    stored = {json.loads(r)["text"] for r in got if json.loads(r)["type"] == "memory"}
    assert stored == {t for t, _ in TEXTS[:6]}  # batches 1 and 2, nothing of 3 or after
    assert not [t for t in threading.enumerate() if t.name.startswith("ripple-prepare")]


class FailingWrites:
    """A sync store whose ``n``-th write fails (the others go to the wrapped store)."""

    def __init__(self, store: Any, n: int) -> None:
        self._store, self._n, self.uri = store, n, store.uri

    def write(self, batch: Any, replace_mentions_of: Any = ()) -> Any:
        self._n -= 1
        if self._n == 0:
            raise StoreError("write failed")
        return self._store.write(batch, replace_mentions_of=replace_mentions_of)

    def __getattr__(self, name: str) -> Any:
        if name == "in_process":  # (a server-like store: add_many prepares ahead)
            raise AttributeError(name)
        return getattr(self._store, name)


def test_a_failed_write_stops_the_batches_after_it(tmp_path: Path, embedder: Any, small_batches: None) -> None:
    from graphstore import open_store

    inner = open_store(str(tmp_path / "s"))
    slow = Recording(_Slow())
    with Memory(store=FailingWrites(inner, 3), embedder=embedder, extractor=slow, clock=clock) as mem:  # type: ignore[arg-type]
        assert mem._prepare_ahead
        with pytest.raises(StoreError, match="write failed"):
            mem.add_many(items())
        stored = {m.text for m in mem.get_all(user_id="u1")}
    inner.close()
    assert stored == {t for t, _ in TEXTS[:6]}
    assert not [t for t in threading.enumerate() if t.name.startswith("ripple-prepare")]
    assert len(slow.threads) <= 4  # batches 1-3, and at most the one being prepared ahead (of 6)


class _Slow:
    """The default extractor, a little slow, so that a batch is still being prepared when a write fails."""

    def __init__(self) -> None:
        from extractors import default_extractor

        self.inner = default_extractor()

    def extract_many(self, texts: Sequence[str]) -> Any:
        time.sleep(0.05)
        return self.inner.extract_many(texts)


def test_async_add_many_prepares_ahead_too(tmp_path: Path, embedder: Any, extractor: Any, small_batches: None) -> None:
    import anyio

    async def run(ahead: bool) -> tuple[list[str], Recording]:
        rec = Recording(extractor)
        async with AsyncMemory(path=str(tmp_path / f"a{ahead}"), embedder=embedder, extractor=rec, clock=clock) as m:
            m._prepare_ahead = ahead
            await m.add_many(items())
            records = [r async for r in m.export(user_id="u1")]
        return named(records), rec

    (serial, _), (ahead, rec) = anyio.run(run, False), anyio.run(run, True)
    assert ahead == serial
    assert "ripple-prepare" in {t.split("_")[0] for t in rec.threads}


# -- the mechanism alone (no models) ----------------------------------------------------------------


def _fake_prepare(log: list[str], fail_on: int | None = None) -> Any:
    def prepare(chunk: Sequence[Any]) -> list[Any]:
        log.append(f"start {chunk[0]}")
        time.sleep(0.01)
        if chunk[0] == fail_on:
            raise ValueError(f"batch {chunk[0]}")
        log.append(f"done {chunk[0]}")
        return list(chunk)

    return prepare


def test_batches_come_in_order_at_most_one_ahead() -> None:
    log: list[str] = []
    got = []
    with PreparedBatches(([n] for n in range(5)), _fake_prepare(log), overlap=True) as batches:
        for prepare in batches:
            got.append(prepare())
            log.append(f"write {got[-1][0]}")
            time.sleep(0.3)  # the write: the next batch is prepared meanwhile
            log.append(f"written {got[-1][0]}")
    assert got == [[n] for n in range(5)]
    for n in range(4):  # batch n+1 is prepared during batch n's write, batch n+2 only after that write began
        assert log.index(f"done {n + 1}") < log.index(f"written {n}")
        if n + 2 < 5:
            assert log.index(f"write {n}") < log.index(f"start {n + 2}")


def test_a_failed_preparation_raises_at_its_turn() -> None:
    log: list[str] = []
    written = []
    with pytest.raises(ValueError, match="batch 2"):
        with PreparedBatches(([n] for n in range(5)), _fake_prepare(log, fail_on=2), overlap=True) as batches:
            for prepare in batches:
                written.append(prepare()[0])
    assert written == [0, 1]
    assert "start 4" not in log  # nothing prepared past the batch after the failed one


def test_one_batch_and_serial_stores_use_no_thread() -> None:
    names: list[str] = []

    def prepare(chunk: Sequence[Any]) -> list[Any]:
        names.append(threading.current_thread().name)
        return list(chunk)

    with PreparedBatches([[1]], prepare, overlap=True) as one:
        assert [p() for p in one] == [[1]]
    with PreparedBatches([[1], [2]], prepare, overlap=False) as serial:
        assert [p() for p in serial] == [[1], [2]]
    assert names == [threading.current_thread().name] * 3


class _Bar:
    """A progress bar that records, at each update, how many batches the store has written."""

    def __init__(self, written: list[int]) -> None:
        self.written = written
        self.seen: list[tuple[int, int]] = []
        self.closed = False

    def update(self, n: int) -> None:
        self.seen.append((n, len(self.written)))

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize("overlap", [False, True])
def test_progress_counts_written_batches_not_prepared_ones(overlap: bool) -> None:
    """With the next batch prepared ahead, the bar still moves only once a batch is written."""
    written: list[int] = []
    bar = _Bar(written)
    chunks = [[f"t{i}-{j}" for j in range(size)] for i, size in enumerate((3, 3, 2))]
    batches = PreparedBatches(chunks, lambda chunk: list(chunk), overlap=overlap, progress=bar)
    with batches:
        for prepare in batches:
            written.append(len(prepare()))
    assert bar.seen == [(3, 1), (3, 2), (2, 3)]
    assert bar.closed
