"""The near cache's bookkeeping without a server (graphstore.nearcache): revisions, own writes,
the byte budget, admission and token vectors."""

from __future__ import annotations

import numpy as np

from graphstore.nearcache import NearCache, index_bytes
from graphstore.vectors import VectorIndex


def rows(prefix: str, n: int, dim: int = 4) -> list[tuple[str, bytes, str]]:
    rng = np.random.default_rng(len(prefix) + n)
    v = rng.standard_normal((n, dim)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return [(f"{prefix}{i}", v[i].tobytes(), "active") for i in range(n)]


def test_a_part_is_served_only_at_its_revision() -> None:
    near = NearCache(10**6)
    index = VectorIndex.from_rows(rows("m", 5))
    near.put_part("u", ("e", 3), "Memory", index)
    assert near.part("u", ("e", 3), "Memory") == (True, index)
    assert near.part("u", ("e", 3), "Entity") == (False, None)  # (not loaded yet)
    assert near.part("u", ("e", 4), "Memory") == (False, None)  # another revision: dropped
    assert near.users() == [] and near.nbytes == 0


def test_own_writes_advance_an_entry_one_revision_at_a_time() -> None:
    near = NearCache(10**6)
    near.put_part("u", ("e", 1), "Memory", VectorIndex.from_rows(rows("m", 3)))
    near.wrote_memories("u", ("e", 2), rows("n", 2))
    found, index = near.part("u", ("e", 2), "Memory")
    assert found and index is not None and len(index) == 5
    near.changed_status("u", ("e", 3), ["n0"], "superseded")
    assert near.part("u", ("e", 3), "Memory")[0]
    near.wrote_memories("u", ("e", 5), rows("x", 1))  # a revision skipped: another client wrote
    assert near.users() == []


def test_the_budget_drops_token_vectors_first_then_admits_by_use() -> None:
    a, b = VectorIndex.from_rows(rows("a", 40)), VectorIndex.from_rows(rows("b", 40))
    size = index_bytes(a)
    near = NearCache(size + size // 2)
    for _ in range(3):
        near.used("a")
    assert near.admit("a", size)
    near.put_part("a", ("e", 1), "Memory", a)
    near.put_tokens("a", ("e", 1), {f"a{i}": b"\0" * 64 for i in range(40)})
    assert near.nbytes <= near.budget and near.tokens("a", ["a0", "a39"])  # (some kept, the oldest out)
    near.used("b")
    assert not near.admit("b", size)  # used less than "a": "a" stays
    for _ in range(3):
        near.used("b")
    assert near.admit("b", size)
    near.put_part("b", ("e", 7), "Memory", b)
    assert near.users() == ["b"] and near.tokens("a", ["a39"]) == {} and near.nbytes <= near.budget


def test_a_user_is_loaded_at_a_steady_revision() -> None:
    near = NearCache(10**6)
    assert not near.steady("u", ("e", 1))
    assert near.steady("u", ("e", 1))
    assert not near.steady("u", ("e", 2))
    near.wrote_memories("u", ("e", 3), [])  # this process's write keeps it steady
    assert near.steady("u", ("e", 3))
