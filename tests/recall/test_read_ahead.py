"""The kept candidates' records read beside the spreading (a server store): the same recall, fewer reads after.

A server store answers a read on its own core, so the plan starts reading the records of the seeds the
merge will most likely keep before it spreads (``ReadAhead``), and after the merge reads only the kept
ones that read did not bring.  These tests turn the read-ahead on for an in-process store (whose driver
leaves it off) and hold it to the plain path: the same hits, scores and paths, whatever the guess.
"""

from __future__ import annotations

from typing import Any

import pytest

from graphstore.requests import GetMemories
from ripple import Memory
from ripple.recall import pipeline
from tests.test_api import _add_two_hop

QUESTIONS = ["When is the deadline for the Northwind work?", "printer dealer", "Who is visiting from Lagos?"]


def _key(res: Any) -> list[tuple[str, float, str, list[str]]]:
    return [(h.memory.id, h.score, h.via, [s.target for s in h.path]) for h in res.hits]


def _spy_reads(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The ids of every GetMemories the store answers (ahead or after the merge)."""
    reads: list[list[str]] = []
    call = GetMemories.call

    def spy(self: GetMemories, store: Any) -> Any:
        reads.append(list(self.memory_ids))
        return call(self, store)

    monkeypatch.setattr(GetMemories, "call", spy)
    return reads


@pytest.mark.parametrize("guess", ["all", "half", "none"])
def test_records_read_ahead_give_the_plain_recall(monkeypatch: pytest.MonkeyPatch, embedder, extractor,
                                                  guess: str) -> None:
    with Memory(store="memory://", embedder=embedder, extractor=extractor) as mem:
        _add_two_hop(mem)
        plain = {q: _key(mem.recall(q, user_id="u1", k=5, touch=False)) for q in QUESTIONS}
        reads = _spy_reads(monkeypatch)
        likely = pipeline._likely_kept
        if guess == "half":  # a guess that misses some of the kept ones: they are read after the merge
            monkeypatch.setattr(pipeline, "_likely_kept", lambda *a: likely(*a)[::2])
        elif guess == "none":
            monkeypatch.setattr(pipeline, "_likely_kept", lambda *a: ["m_not_there"])
        monkeypatch.setattr(mem._runtime, "_call_beside", lambda request: request.call(mem.store))
        for q in QUESTIONS:
            reads.clear()
            assert _key(mem.recall(q, user_id="u1", k=5, touch=False)) == plain[q], (guess, q)
            ahead, *after = reads
            assert len(after) <= 1
            kept_later = after[0] if after else []
            assert not set(kept_later) & set(ahead)  # nothing read twice
            if guess == "all":
                assert len(ahead) >= 10 and not after  # the store is small: every seed is read ahead
            else:
                assert kept_later  # the kept ones the guess missed


def test_an_in_process_store_reads_once_after_the_merge(monkeypatch: pytest.MonkeyPatch, embedder, extractor) -> None:
    """Without a read beside (an in-process store) the plan reads the kept records once, as before."""
    with Memory(store="memory://", embedder=embedder, extractor=extractor) as mem:
        _add_two_hop(mem)
        reads = _spy_reads(monkeypatch)
        res = mem.recall(QUESTIONS[0], user_id="u1", k=5, touch=False)
        assert len(reads) == 1 and {h.memory.id for h in res.hits} <= set(reads[0])


@pytest.mark.parametrize("local", [True, False])
def test_no_read_beside_a_walk_done_in_process(monkeypatch: pytest.MonkeyPatch, embedder, extractor, local: bool) -> None:
    """A store whose walks are answered in process (``SupportsLocalWalks``: a Neo4j store's near graph) gets
    no read beside the spreading: the plan reads the kept records once after the merge, and the recall is
    the same; a store whose walks wait on it gets the read beside."""
    from graphstore import SupportsLocalWalks

    with Memory(store="memory://", embedder=embedder, extractor=extractor) as mem:
        _add_two_hop(mem)
        plain = _key(mem.recall(QUESTIONS[0], user_id="u1", k=5, touch=False))
        asked: list[str] = []

        def walks_locally(user_id: str) -> bool:
            asked.append(user_id)
            return local

        monkeypatch.setattr(mem.store, "walks_locally", walks_locally, raising=False)
        assert isinstance(mem.store, SupportsLocalWalks)
        monkeypatch.setattr(mem._runtime, "_call_beside", lambda request: request.call(mem.store))
        started: list[Any] = []
        read_ahead = mem._runtime.read_ahead
        monkeypatch.setattr(mem._runtime, "read_ahead", lambda request: started.append(request) or read_ahead(request))
        reads = _spy_reads(monkeypatch)
        assert _key(mem.recall(QUESTIONS[0], user_id="u1", k=5, touch=False)) == plain
        assert asked == ["u1"] and len(reads) == 1  # (the small store's kept records: all ahead, or all after)
        assert len(started) == (0 if local else 1)
