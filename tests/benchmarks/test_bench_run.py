"""The harness's timing loop: what it measures and what it leaves out."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

from benchmarks import methods as bench_methods
from benchmarks.datasets import synthetic
from benchmarks.run import run_one


class _FreezeProbe:
    """A method that records, per timed recall, how many objects the collector had frozen."""

    name = "probe"

    def __init__(self) -> None:
        self.frozen: list[int] = []
        self.ballast: list[dict[str, int]] = []

    def index(self, dataset: object) -> None:
        self.ballast = [{"i": i} for i in range(5000)]  # long-lived objects, like a loaded dataset

    def recall(self, query: object, k: int) -> list[str]:
        self.frozen.append(gc.get_freeze_count())
        return []


@pytest.mark.parametrize("freeze", [True, False])
def test_timed_queries_run_with_the_earlier_objects_frozen_out_of_the_collector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, freeze: bool
) -> None:
    probe = _FreezeProbe()
    monkeypatch.setitem(bench_methods.METHODS, "probe", lambda: probe)
    ds = synthetic(40, n_users=1, seed=1, n_queries=3)
    before = gc.get_freeze_count()
    path = run_one(ds, "probe", k=5, out_dir=tmp_path, progress=False, warmup=1, gc_freeze=freeze)
    header = json.loads(path.read_text().splitlines()[0])
    assert header["gc_frozen"] is freeze
    timed = probe.frozen[1:]  # the first recall is the untimed warm-up
    assert len(timed) == header["n_queries"] > 0
    if freeze:
        assert probe.frozen[0] == before  # warm-up runs before the freeze
        assert all(n >= len(probe.ballast) for n in timed)
    else:
        assert all(n == before for n in probe.frozen)
    assert gc.get_freeze_count() == before  # unfrozen afterwards


@pytest.mark.parametrize("store,label", [
    (None, "ripple"), ("bolt://127.0.0.1:7687", "ripple@neo4j"), ("neo4j+s://db.example", "ripple@neo4j"),
    ("sqlite:///tmp/x", "ripple@sqlite"), ("/tmp/x", "ripple@sqlite"), ("memory://", "ripple@memory"),
])
def test_a_method_name_says_which_backend_its_store_is(store: str | None, label: str) -> None:
    """An embedded store at a path was once labelled '@neo4j', and its results file named so."""
    from benchmarks.methods import RippleMethod

    assert RippleMethod(mode="ripple", store=store).name == label


class _WarmProbe(_FreezeProbe):
    """A method that records its warm-up and the recalls before and after it."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def warm(self, dataset: object) -> None:
        self.calls.append("warm")

    def recall(self, query: object, k: int) -> list[str]:
        self.calls.append("recall")
        return []


@pytest.mark.parametrize("cold", [False, True])
def test_users_are_warmed_before_the_timed_recalls_unless_cold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 cold: bool) -> None:
    """Timed recalls are the steady state (the store's users warmed first, untimed); ``--cold`` times
    the first recalls after a start: no warm-up at all."""
    probe = _WarmProbe()
    monkeypatch.setitem(bench_methods.METHODS, "probe", lambda: probe)
    ds = synthetic(40, n_users=1, seed=1, n_queries=3)
    path = run_one(ds, "probe", k=5, out_dir=tmp_path, progress=False, warmup=0 if cold else 1, cold=cold)
    header = json.loads(path.read_text().splitlines()[0])
    n = header["n_queries"]
    if cold:
        assert probe.calls == ["recall"] * n and header["warm_s"] is None
    else:
        assert probe.calls == ["warm"] + ["recall"] * (n + 1) and header["warm_s"] >= 0
