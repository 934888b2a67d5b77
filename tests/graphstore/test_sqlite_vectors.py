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


def test_an_index_from_one_matrix_is_the_index_from_rows() -> None:
    """``from_matrix`` (the near cache's bulk load) builds what ``from_rows`` builds: rows, statuses,
    counts, searches (masked or not), and later upserts; a repeated id replaces its earlier row."""
    rng = np.random.default_rng(3)
    m = rng.standard_normal((50, 8)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    ids = [f"m_{j:02d}" for j in range(50)]
    statuses = ["active" if j % 3 else "superseded" for j in range(50)]
    bulk = VectorIndex.from_matrix(ids, m, statuses)
    rows = VectorIndex.from_rows([(i, v.tobytes(), s) for i, v, s in zip(ids, m, statuses)])
    assert bulk is not None and rows is not None
    assert list(bulk.rows()) == list(rows.rows()) and bulk.counts == rows.counts
    for statuses_wanted in (None, {"active"}):
        assert bulk.search(m[:5], 7, statuses=statuses_wanted) == rows.search(m[:5], 7, statuses=statuses_wanted)
    for index in (bulk, rows):
        index.upsert([("m_00", m[1].tobytes(), "active"), ("m_new", m[2].tobytes(), "active")])
    assert list(bulk.rows()) == list(rows.rows()) and bulk.search(m[:3], 5) == rows.search(m[:3], 5)
    again = VectorIndex.from_matrix(["a", "b", "a"], m[:3], ["active"] * 3)
    assert again is not None and len(again) == 2 and again.search([m[2]], 1)[0][0][0] == "a"
    assert VectorIndex.from_matrix([], m[:0], []) is None
    with pytest.raises(StoreError):
        VectorIndex.from_matrix(ids[:3], m[:2], ["active"] * 3)


def test_warm_builds_a_users_indexes_before_its_first_search(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The embedded store's ``warm`` (SupportsWarm) builds the vector indexes its first search would;
    through the async adapter too; an unknown user builds nothing."""
    import anyio

    from graphstore import SupportsWarm, as_async
    from graphstore.sqlite import SQLiteStore
    from graphstore.testing import make_entity, make_memory
    from graphstore.records import WriteBatch

    rng = np.random.default_rng(4)
    m = _unit(rng, 6, 8)
    store = SQLiteStore(str(tmp_path / "s"))
    try:
        store.write(WriteBatch(memories=[make_memory(f"m_{j}", user="u1", vec=m[j]) for j in range(5)],
                               entities=[make_entity("e_1", key="k1", vec=m[5])]))
        assert isinstance(store, SupportsWarm)
        store._vectors.clear()
        store._entity_vectors.clear()
        store.warm("nobody")
        assert "nobody" not in store._vectors
        anyio.run(as_async(store).warm, "u1")
        assert "u1" in store._vectors and "u1" in store._entity_vectors
        assert store.nearest_memories("u1", m[2], 1)[0][0] == "m_2"
    finally:
        store.close()
