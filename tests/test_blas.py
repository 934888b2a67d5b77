"""Recall keeps numpy's BLAS on one thread and gives the caller's setting back."""

from __future__ import annotations

import threading

import numpy  # noqa: F401  (loads the BLAS these tests watch)
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from ripple._blas import one_blas_thread


def _blas_threads() -> set[int]:
    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


@pytest.fixture
def two_blas_threads(monkeypatch):
    # ripple inspects the loaded BLAS libraries once, at its first limit; a library loaded after that (scipy's
    # own OpenBLAS, say) is not limited. Earlier tests in this process may have made that first limit before
    # such a library came in (which ones ran first depends on the order, and on the xdist worker), so ripple
    # looks again here, at the libraries loaded now, as a process that imported them before recalling would.
    monkeypatch.setattr("ripple._blas._controller", None)
    if not _blas_threads():
        pytest.fail("numpy is not linked against a BLAS threadpoolctl can see")
    with threadpool_limits(2, user_api="blas"):
        yield


def test_one_thread_inside_the_callers_setting_after(two_blas_threads) -> None:
    assert _blas_threads() == {2}
    with one_blas_thread():
        assert _blas_threads() == {1}
        with one_blas_thread():  # nested (a recall inside a recall's callback)
            assert _blas_threads() == {1}
        assert _blas_threads() == {1}
    assert _blas_threads() == {2}


def test_overlapping_recalls_restore_once_the_last_one_ends(monkeypatch) -> None:
    """Two threads enter and leave in crossed order: one limit, restored only when the last leaves."""
    import ripple._blas as blas

    events: list[str] = []

    class Limiter:
        def restore_original_limits(self) -> None:
            events.append("restore")

    monkeypatch.setattr(blas, "_limit", lambda: events.append("limit") or Limiter())
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        with one_blas_thread():
            first_in.set()
            second_in.wait(5)
        events.append("first out")
        first_out.set()

    def second() -> None:
        first_in.wait(5)
        with one_blas_thread():
            second_in.set()
            first_out.wait(5)
        events.append("second out")

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert events == ["limit", "first out", "restore", "second out"]


def test_recall_runs_with_one_blas_thread(two_blas_threads, tmp_path, extractor) -> None:
    from ripple import Memory
    from ripple.embedding import HashEmbedder

    class Watching(HashEmbedder):
        during: list[set[int]] = []

        def encode_with_tokens(self, texts):  # type: ignore[no-untyped-def]
            if len(texts) == 1 and texts[0].startswith("Where"):
                Watching.during.append(_blas_threads())
            return super().encode_with_tokens(texts)

    with Memory(path=str(tmp_path / "s"), embedder=Watching(), extractor=extractor) as mem:
        mem.add("Dana moved to Berlin last spring.", user_id="u")
        assert mem.recall("Where does Dana live?", user_id="u", k=1).hits
    assert Watching.during == [{1}]
    assert _blas_threads() == {2}
