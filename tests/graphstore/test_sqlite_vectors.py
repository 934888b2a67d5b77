"""The SQLite store's in-memory vector cache keeps its status counts in step with its rows."""

from __future__ import annotations

import numpy as np

from graphstore.sqlite import _apply_rows, _VectorCache


def test_status_counts_follow_updates_and_appends() -> None:
    vec = np.ones(4, dtype=np.float32).tobytes()
    cache = _VectorCache(["a", "b"], {"a": 0, "b": 1}, np.ones((2, 4), dtype=np.float32), ["active", "active"])
    assert cache.only({"active"})
    cache.set_status(1, "superseded")
    assert not cache.only({"active"}) and cache.only({"active", "superseded"})
    _apply_rows(cache, [("c", vec, "invalidated"), ("b", vec, "active")])
    assert cache.ids == ["a", "b", "c"] and cache.matrix.shape == (3, 4)
    assert cache.counts == {"active": 2, "superseded": 0, "invalidated": 1}
    assert not cache.only({"active"})
    cache.set_status(2, "active")
    assert cache.only({"active"})
