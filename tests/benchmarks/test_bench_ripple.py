"""RippleMethod against the real ripple API (real models: marked slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.datasets import synthetic
from benchmarks.methods import RippleMethod, _deep_merge


def test_deep_merge() -> None:
    base = {"seed": {"pool": 200, "late": 0.9}, "spread": {"hops": 2}, "limit": 10}
    out = _deep_merge(base, {"spread": {"hops": 1}, "limit": 5})
    assert out == {"seed": {"pool": 200, "late": 0.9}, "spread": {"hops": 1}, "limit": 5}
    assert base["spread"]["hops"] == 2  # input untouched


@pytest.mark.slow
def test_ripple_method_end_to_end(tmp_path: Path) -> None:
    from ripple import ModelNotInstalled

    from benchmarks.run import run_one
    from tests.conftest import need

    ds = synthetic(80, n_users=2, seed=5, n_queries=4)  # one chain per 40-turn user
    try:
        RippleMethod("flat").prepare()
    except ModelNotInstalled as exc:
        need(str(exc))
    for name in ("ripple",):  # ingest runs at ~15 docs/s on CPU: one mode keeps this test short
        path = run_one(ds, name, k=10, out_dir=tmp_path, progress=False)
        lines = [json.loads(x) for x in path.read_text().splitlines()]
        header, rows = lines[0], lines[1:]
        assert header["method"] == name and header["config"]["mode"] == name
        assert 70 <= header["n_indexed"] <= 80  # a few contentless turns ("ok") may be skipped
        assert header["store_bytes"] and header["store_bytes"] > 0
        assert header["ripple_version"]
        assert len(rows) == 2
        for r in rows:
            assert 0 < len(r["ranked"]) <= 10
            assert all(x.startswith(r["user_id"] + ":") for x in r["ranked"])


@pytest.mark.slow
def test_ripple_method_overrides_reach_the_config() -> None:
    from ripple import ModelNotInstalled

    from tests.conftest import need

    m = RippleMethod("ripple", {"seed": {"late": 0.5}}, recipe="nodamping")
    data = synthetic(20, n_users=1, seed=0, n_queries=1)
    try:
        m.index(data)
    except ModelNotInstalled as exc:
        need(str(exc))
    try:
        cfg = m.config()["recall_config"]
        assert cfg["seed"]["late"] == 0.5 and cfg["spread"]["channels"][1]["hub_damping"] == 0.0
        assert m._dir and Path(m._dir).is_dir()
        d = m._dir
        again = RippleMethod("ripple", name="ripple-nospread", recipe="nospread")
        again.index(data)
        assert again._dir == d, "methods of one run share the ingested store"
        again.close()
    finally:
        m.close()
    assert Path(d).exists()
    from benchmarks.methods import _remove_shared_stores

    _remove_shared_stores()
    assert not Path(d).exists()


def test_recall_happens_at_each_users_present() -> None:
    """Recall runs at the time of the user's latest memory, so ages (tiers, time decay) are the data's own."""
    from datetime import datetime, timezone

    from benchmarks.datasets import Dataset, Doc, Query

    def at(day: int) -> datetime:
        return datetime(2023, 1, day, tzinfo=timezone.utc)

    docs = [Doc("a1", "Dana runs procurement at Northwind.", "a", "s1", at(2)),
            Doc("a2", "Dana moved to Berlin.", "a", "s1", at(20)),
            Doc("b1", "Bo plays chess on Sundays.", "b", "s1", at(5))]
    data = Dataset("tiny", docs, [Query("qa", "Where is Dana?", "a", ("a2",), "x"),
                                  Query("qb", "What does Bo play?", "b", ("b1",), "x")])
    m = RippleMethod("ripple", embedder="hash-384", extractor=None)
    seen: list[float] = []
    try:
        m.index(data)
        import dataclasses

        clock = m._mem._runtime.clock
        spy = lambda: seen.append(clock()) or clock()  # noqa: E731
        m._mem._runtime.clock = spy
        m._mem._ctx = dataclasses.replace(m._mem._ctx, clock=spy)
        assert m.recall(data.queries[0], 2) and m.recall(data.queries[1], 2)
    finally:
        m.close()
    assert set(seen) == {at(20).timestamp(), at(5).timestamp()}
    assert m._query_now is None  # outside a recall the clock is real time again
