"""The embedded store's vector index: status counts, in-place growth, and a float16 scan that
returns exactly what the float32 scan returns."""

from __future__ import annotations

import numpy as np
import pytest

from graphstore import vectors
from graphstore.vectors import VectorIndex
from ripple.errors import StoreError


def _unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    m = rng.standard_normal((n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _rows(m: np.ndarray, prefix: str = "m", status: str = "active") -> list[tuple[str, bytes, str]]:
    return [(f"{prefix}{i}", v.tobytes(), status) for i, v in enumerate(m)]


def test_status_counts_follow_updates_and_appends() -> None:
    vec = np.ones(4, dtype=np.float32).tobytes()
    index = VectorIndex.from_rows([("a", vec, "active"), ("b", vec, "active")])
    assert index is not None and index.only({"active"})
    index.set_status("b", "superseded")
    assert not index.only({"active"}) and index.only({"active", "superseded"})
    index.upsert([("c", vec, "invalidated"), ("b", vec, "active")])
    assert index.ids == ["a", "b", "c"] and index.matrix.shape == (3, 4)
    assert index.counts == {"active": 2, "superseded": 0, "invalidated": 1}
    assert not index.only({"active"})
    index.set_status("c", "active")
    index.set_status("unknown", "active")  # ignored
    assert index.only({"active"})


def test_appends_grow_in_place_and_keep_every_row() -> None:
    rng = np.random.default_rng(1)
    m = _unit(rng, 1000, 8)
    index = VectorIndex(8)
    for start in range(0, 1000, 37):  # many small batches through several doublings
        index.upsert(_rows(m)[start : start + 37])
    assert len(index) == 1000 and index.ids == [f"m{i}" for i in range(1000)]
    np.testing.assert_array_equal(index.matrix, m)
    best = index.search([m[123]], 1)[0]
    assert best[0][0] == "m123" and best[0][1] == pytest.approx(1.0, abs=1e-6)


def test_statuses_mask_rows_out_of_the_search() -> None:
    rng = np.random.default_rng(2)
    m = _unit(rng, 50, 8)
    index = VectorIndex.from_rows(_rows(m))
    assert index is not None
    index.set_status("m7", "superseded")
    found = [rid for rid, _ in index.search([m[7]], 50, statuses={"active"})[0]]
    assert "m7" not in found and len(found) == 49
    assert index.search([m[7]], 1, statuses={"active", "superseded"})[0][0][0] == "m7"
    assert index.search([m[7]], 5, statuses={"forgotten"})[0] == []


@pytest.mark.parametrize("masked", [False, True])
def test_float16_scan_returns_the_exact_top_k(masked: bool) -> None:
    rng = np.random.default_rng(3)
    m = _unit(rng, 20_000, 64)
    index = VectorIndex.from_rows(_rows(m))
    assert index is not None
    if masked:
        for i in range(0, 20_000, 3):
            index.set_status(f"m{i}", "superseded")
    # queries near stored rows (a clear winner) and random ones (a flat score distribution)
    queries = [*(_unit(rng, 1, 64)[0] * 0.3 + m[i] for i in range(0, 20_000, 997)), *_unit(rng, 20, 64)]
    for q in queries:
        exact = index.search([q], 50, statuses={"active"}, exact=True)[0]
        half = index.search([q], 50, statuses={"active"}, exact=False)[0]
        assert [r for r, _ in half] == [r for r, _ in exact]
        np.testing.assert_allclose([s for _, s in half], [s for _, s in exact], rtol=1e-6)
    # rows appended after the float16 copy exists are found by it too
    extra = _unit(rng, 5, 64)
    index.upsert(_rows(extra, prefix="x"))
    assert index.search([extra[4]], 1, exact=False)[0][0][0] == "x4"


def test_the_float16_scan_is_the_default_for_large_indexes(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(4)
    m = _unit(rng, 300, 16)
    index = VectorIndex.from_rows(_rows(m))
    assert index is not None
    index.search([m[0]], 5)
    assert index._half is None  # small: float32 only
    monkeypatch.setattr(vectors, "HALF_PRECISION_MIN_ROWS", 100)
    assert index.search([m[0]], 5)[0][0][0] == "m0"
    assert index._half is not None and index._half.shape[1] == 16


def test_a_batch_of_queries_scans_in_float32_at_any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many queries at once (the write path's candidate search) share one float32 scan, also above
    HALF_PRECISION_MIN_ROWS, and get what each would get alone; a scan too large for one score matrix
    is made some queries at a time with the same answers."""
    rng = np.random.default_rng(5)
    m = _unit(rng, 300, 16)
    index = VectorIndex.from_rows(_rows(m))
    assert index is not None
    for i in range(0, 300, 7):
        index.set_status(f"m{i}", "superseded")
    queries = list(_unit(rng, vectors.BATCH_EXACT_MIN_QUERIES, 16))
    alone = [index.search([q], 5, statuses={"active"}, exact=True)[0] for q in queries]

    def same(hits: list[list[tuple[str, float]]]) -> bool:  # (a matrix product may round the last bit otherwise)
        return all([r for r, _ in h] == [r for r, _ in a] and np.allclose([s for _, s in h], [s for _, s in a], rtol=1e-6)
                   for h, a in zip(hits, alone, strict=True))

    monkeypatch.setattr(vectors, "HALF_PRECISION_MIN_ROWS", 100)
    assert same(index.search(queries, 5, statuses={"active"}))
    assert index._half is None  # the float16 copy was never built: no float16 scan
    monkeypatch.setattr(vectors, "EXACT_SCAN_SCORES", 2 * 300)  # two queries a scan
    assert same(index.search(queries, 5, statuses={"active"}))
    index.search(queries[:1], 5, statuses={"active"})  # one query: the float16 scan
    assert index._half is not None


def test_a_vector_of_another_dimension_is_a_clear_error() -> None:
    index = VectorIndex.from_rows([("a", np.ones(4, dtype=np.float32).tobytes(), "active")])
    assert index is not None
    with pytest.raises(StoreError, match="3 dimensions, the stored vectors have 4"):
        index.search([np.ones(3)], 1)
    with pytest.raises(StoreError, match="has 5 dimensions"):
        index.upsert([("b", np.ones(5, dtype=np.float32).tobytes(), "active")])
