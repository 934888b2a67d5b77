"""The supersession write path made cheaper without changing a decision: each fast path is checked
against the plain definition it replaces (a batch's earlier candidates; the marker scans of a text, in
English and Chinese).  The decisions themselves: tests/test_supersede.py and tests/test_lifecycle.py."""

from __future__ import annotations

import itertools
import random
from bisect import bisect_left
from typing import Any

import numpy as np
import pytest

from extractors.frames import _CHANGE_EN, _CHANGE_ZH, _SAME_EN, _SAME_ZH, _STRONG_EN, _STRONG_ZH, _marker_spans
from ripple import LifecycleConfig
from ripple._lifecycle import _earlier_candidates


def _earlier_by_scan(i: int, live: list[int], position: dict[int, int], cosines: Any, shared: set[str],
                     mentioned_by: dict[str, list[int]], cfg: LifecycleConfig) -> list[int]:
    """The definition: scan every earlier live item, the nearest first (ties in batch order)."""
    here = position[i]
    earlier = [j for j in live if position[j] < here]
    near = sorted((j for j in earlier if cosines[position[j]] >= cfg.candidate_cosine),
                  key=lambda j: -float(cosines[position[j]]))[: cfg.candidates]
    picked = set(near)
    for entity in shared:
        items = mentioned_by.get(entity, [])
        before = bisect_left(items, here, key=position.__getitem__)
        picked.update(items[max(0, before - cfg.per_entity): before])
    return [j for j in earlier if j in picked]


@pytest.mark.parametrize("seed", range(5))
def test_earlier_candidates_are_the_scan_s_with_ties_in_batch_order(seed: int) -> None:
    rng = random.Random(seed)
    cfg = LifecycleConfig(candidates=rng.choice([0, 1, 3, 8]), per_entity=rng.choice([0, 2, 4]))
    order = list(range(60))
    rng.shuffle(order)  # batch positions are event-time order, not item indices
    position = {i: n for n, i in enumerate(order)}
    live = [j for j in order if rng.random() > 0.2]
    live_at = np.array([position[j] for j in live], dtype=np.int64)
    mentioned_by: dict[str, list[int]] = {}
    for j in live:
        for e in rng.sample("abcde", rng.randint(0, 2)):
            mentioned_by.setdefault(e, []).append(j)
    for i in live:
        # cosines on a coarse grid: many ties, and some exactly at the threshold
        cosines = np.array([rng.choice([0.1, 0.3, 0.5, 0.5, 0.7, 0.9]) for _ in order], dtype=np.float32)
        shared = set(rng.sample("abcde", rng.randint(0, 3)))
        fast = _earlier_candidates(i, live, live_at, position, cosines, shared, mentioned_by, cfg)
        assert fast == _earlier_by_scan(i, live, position, cosines, shared, mentioned_by, cfg)


def _marker_spans_by_scan(message: str, sentences: list[tuple[int, int]], lang: str) -> list[tuple[int, int, bool]]:
    """The definition: every scan made, whatever the first one found."""
    same = _SAME_ZH if lang == "zh" else _SAME_EN
    quiet = [(x, y) for x, y in sentences if same.search(message, x, y)]
    hard = {m.start() for m in (_STRONG_ZH if lang == "zh" else _STRONG_EN).finditer(message)}
    return [(m.start(), m.end(), m.start() in hard) for m in (_CHANGE_ZH if lang == "zh" else _CHANGE_EN).finditer(message)
            if not any(x <= m.start() < y for x, y in quiet)]


@pytest.mark.parametrize(("text", "lang"), [
    ("The venue is still the Marriott. We moved the reception to the garden.", "en"),
    ("It got moved to Friday, my bad, I meant Thursday.", "en"),
    ("Thanks for the photos!", "en"),
    ("The budget is now 60k as of today.", "en"),
    ("例会改成周五下午两点了。时间没变，还是三楼。", "zh"),
    ("我们周末去爬山吧", "zh"),
])
def test_marker_spans_are_those_of_every_scan(text: str, lang: str) -> None:
    sentences = [(0, len(text))]
    assert _marker_spans(text, sentences, lang) == _marker_spans_by_scan(text, sentences, lang)


class _CountingEmbedder:
    """A model-free embedder (hashed n-grams) that records every text it was asked to encode."""

    def __init__(self) -> None:
        from ripple.embedding import HashEmbedder

        self._inner = HashEmbedder(64)
        self.dim, self.name = self._inner.dim, "counting-hash-64"
        self.asked: list[str] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.asked += texts
        return self._inner.encode(texts)


def test_clause_vectors_are_the_embedder_s_and_each_clause_is_encoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The masked clauses of template-generated text repeat across pairs and batches: the runtime gives
    the model's own vector of each, encoding a clause once while it is among the recent ones."""
    from ripple import RippleSettings
    from ripple import _runtime

    counting = _CountingEmbedder()
    runtime = _runtime.Runtime(RippleSettings(), embedder=counting)
    first = ["I'm flying to PLACE next week for a conference", "例会改成DATE", "The budget is now AMOUNT"]
    got = runtime.clause_vectors(first)
    assert np.array_equal(np.vstack(got), counting._inner.encode(first))
    again = ["例会改成DATE", "预算涨到AMOUNT了", "I'm flying to PLACE next week for a conference", "例会改成DATE"]
    got = runtime.clause_vectors(again)
    assert np.array_equal(np.vstack(got), counting._inner.encode(again))
    assert counting.asked == [*first, "预算涨到AMOUNT了"]  # repeats, in a call and across calls: encoded once
    monkeypatch.setattr(_runtime, "RECENT_CLAUSES", 2)  # bounded: the least recently used go first
    runtime.clause_vectors(["The venue is NAME"])  # kept: it and the one used last before it ("例会改成DATE")
    counting.asked.clear()
    runtime.clause_vectors(["The venue is NAME", "例会改成DATE", "预算涨到AMOUNT了", "The budget is now AMOUNT"])
    assert counting.asked == ["预算涨到AMOUNT了", "The budget is now AMOUNT"]


@pytest.mark.parametrize(("text", "lang"), [
    ("We pushed the Atlas go-live to May 9. I also speak Portuguese.", "en"),
    ("I went to the support group yesterday, his name is Kyle and it costs 20 dollars.", "en"),
    ("The budget isn't 60k, it's 50k. Ticket INC-4411 is due Friday.", "en"),
    ("例会改成周五下午两点了，我也会说葡萄牙语。", "zh"),
    ("他的预算是五万，我们上周花了三千。", "zh"),
])
def test_frame_view_flags_are_the_clause_tests_they_stand_for(text: str, lang: str, extractor: Any) -> None:
    """What a view reads once per frame (can it be replaced, can it replace, has it a slot that can be
    a new value) is what the per-pair tests read; a pair whose new frame has no such slot matches
    nothing, as the full comparison says."""
    from extractors.frames import frames_of
    from ripple._supersede import can_be_replaced, can_replace, match, promising, view

    views = [view(f) for f in frames_of(extractor.extract(text))]
    assert views
    for v in views:
        assert v.replaceable == can_be_replaced(v)
        assert v.replacing == (promising(v.frame) and can_replace(v))
        assert v.changeable == any(s.free and not s.ident for s in v.values)
    for old, new in itertools.product(views, views):
        if not new.changeable:
            assert match(old, new) is None


class _Switching:
    """The default extractor, or (``plain``) the same without its entities: the same text parsed two ways."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.plain = inner, False

    def extract_many(self, texts: list[str]) -> list[Any]:
        import dataclasses

        return [dataclasses.replace(e, entities=()) if self.plain else e for e in self.inner.extract_many(texts)]


def _frame_readings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts whose frames are read from now on (each call of :func:`extractors.frames.frames_of`)."""
    import extractors.frames as frames_module

    read: list[str] = []
    plain_frames_of = frames_module.frames_of

    def counting(ex: Any, **kw: Any) -> Any:
        read.append(ex.text)
        return plain_frames_of(ex, **kw)

    monkeypatch.setattr(frames_module, "frames_of", counting)
    return read


def test_frames_of_a_text_written_again_are_read_once_while_its_parse_is_the_same(
        monkeypatch: pytest.MonkeyPatch, extractor: Any) -> None:
    """A text written again (a chat's "same as usual", a template's sentence) keeps the frames read of
    it, in a batch and across batches, as long as it is parsed the same; parsed otherwise, its frames
    are read again, from the new parse."""
    import extractors.frames as frames_module
    from ripple import RippleSettings
    from ripple._runtime import Runtime
    from ripple.embedding import HashEmbedder
    from ripple.models import AddItem

    plain_frames_of = frames_module.frames_of
    read = _frame_readings(monkeypatch)
    texts = ["Maya took over the billing service from Max.", "张伟接手了计费服务，预算涨到六万了。"]
    switching = _Switching(extractor)
    runtime = Runtime(RippleSettings(), embedder=HashEmbedder(64), extractor=switching)
    runtime.prepare([AddItem(text=t, user_id="u") for t in texts])
    first = runtime.frames([texts[0], texts[1], texts[0]])  # a text twice in one call: read once
    assert read == texts
    runtime.prepare([AddItem(text=t, user_id="u") for t in [*texts, *texts]])  # written again, parsed the same
    again = runtime.frames(texts)
    assert read == texts and [again[0], again[1]] == [first[0], first[1]]
    for (views, _), ex in zip(again, extractor.extract_many(texts)):
        assert [v.frame for v in views] == list(plain_frames_of(ex))
    switching.plain = True  # the same texts parsed otherwise (no entities): read again, from that parse
    runtime.prepare([AddItem(text=t, user_id="u") for t in texts])
    other = runtime.frames(texts)
    assert read == [*texts, *texts]
    for (views, _), ex in zip(other, switching.extract_many(texts)):
        assert [v.frame for v in views] == list(plain_frames_of(ex))
    assert [v.frame for v in other[0][0]] != [v.frame for v in first[0][0]]


class _Counting:
    """The default extractor, counting the texts it parses."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.parsed: list[str] = []

    def extract_many(self, texts: list[str]) -> list[Any]:
        self.parsed.extend(texts)
        return list(self.inner.extract_many(texts))


def test_an_older_memory_met_again_as_a_candidate_is_not_parsed_again(
        monkeypatch: pytest.MonkeyPatch, extractor: Any) -> None:
    """The candidates of a new memory are older memories written any time before; their parses are kept
    for many more texts than their frames (:data:`ripple._runtime.KEPT_PARSES`), so one whose frames
    were dropped is read again from its kept parse, not parsed again (a 2,048-memory batch into a 20k
    store parsed 2,071 older texts besides its own when the two were kept alike).  Dropped from both,
    it is parsed again, with the same frames."""
    import ripple._runtime as runtime_module
    from ripple import RippleSettings
    from ripple._runtime import Runtime
    from ripple.embedding import HashEmbedder
    from ripple.models import AddItem

    old = ["Our budget for the offsite is 15,000 euros.", "例会在周三上午十点。"]
    later = [f"Note {n}: the sync is at {n} pm." for n in range(1, 7)]
    monkeypatch.setattr(runtime_module, "RECENT_FRAMES", 2)
    for kept, parsed_again in ((64, []), (4, old)):
        monkeypatch.setattr(runtime_module, "KEPT_PARSES", kept)
        counting = _Counting(extractor)
        runtime = Runtime(RippleSettings(), embedder=HashEmbedder(64), extractor=counting)
        runtime.prepare([AddItem(text=t, user_id="u") for t in old])
        first = runtime.frames(old)
        runtime.prepare([AddItem(text=t, user_id="u") for t in later])
        runtime.frames(later)  # the old texts' frames are no longer among the recent ones
        counting.parsed.clear()
        again = runtime.frames(old)
        assert counting.parsed == parsed_again
        assert [[v.frame for v in views] for views, _ in again] == [[v.frame for v in views] for views, _ in first]
        assert all(views for views, _ in again)


_PAIRS = [  # (old, new, the pair test ends once two values are known changed, the verdict's level)
    ("Renou Pekand just got promoted at Powath Health.", "Lashirian Gigom just got promoted at Kroudis Media.", True, None),
    ("The team dinner is at Luigi's on Friday.", "The team dinner moved to Nando's on Saturday.", True, None),
    # a date or time the old clause has no counterpart for says when: one value changed
    ("I work at Initech.", "Starting Monday I work at Globex.", False, "high"),
    ("张伟的预算是五万", "李娜的预算是八万", True, None),
    ("我在腾讯工作", "从下周一起我在阿里巴巴工作", False, "high"),
    ("预算是五万", "预算涨到六万了", False, "high"),
]


def _views(text: str, extractor: Any) -> list[Any]:
    from extractors.frames import frames_of
    from ripple._supersede import view

    return [view(f) for f in frames_of(extractor.extract(text))]


@pytest.mark.parametrize(("old", "new", "ends", "level"), _PAIRS)
def test_a_pair_test_ends_at_the_second_changed_value(old: str, new: str, ends: bool, level: str | None,
                                                      extractor: Any) -> None:
    """Two slots of the new clause with values the old one lacks are two statements ("X just got
    promoted at Y", both names new): the pair test stops there; a date the old clause has no
    counterpart for is not a second change ("Starting Monday", "从下周一起")."""
    from ripple._supersede import _as_words, _same_by_new_slot, match

    ((o,), (n,)) = _views(old, extractor), _views(new, extractor)
    assert (_same_by_new_slot(o, n, [_as_words(s, o) for s in n.values]) is None) == ends
    v = match(o, n)
    assert (v and v.level) == level


_CORPUS = [
    "Renou Pekand just got promoted at Powath Health.", "Lashirian Gigom just got promoted at Kroudis Media.",
    "The team dinner is at Luigi's on Friday.", "The team dinner moved to Nando's on Saturday.",
    "The team dinner moved to Nando's on Friday.",
    "I work at Initech.", "Starting Monday I work at Globex.", "The Atlas go-live is May 2.",
    "We pushed the Atlas go-live to May 9.", "Our budget for the offsite is 15,000 euros.",
    "The budget is now 60k, and the deadline moved to June 20.", "Tom's phone number is 555-0142 and he is 34.",
    "The sync moves to 11:00 on Thursdays from next week.", "Actually make it 12 seats, not 8.",
    "Release v2.3 ships on May 2.", "Release v2.4 ships on May 9 in Berlin.", "Tom moved to Lisbon, Tom's team is 12 now.",
    "张伟的预算是五万", "李娜的预算是八万", "张伟的预算涨到八万了", "我在腾讯工作", "从下周一起我在阿里巴巴工作", "例会在周三上午十点，三楼会议室",
    "例会改到周五下午两点，五楼", "预算涨到六万了", "我们的预算是五万，已经花了四千", "我已经搬去成都了", "我住在武汉",
    "版本V2发布日期是五月二号", "版本V3发布日期改到五月九号，在北京",
]


def test_the_pair_test_s_end_is_the_whole_slot_matrix_s_verdict(extractor: Any) -> None:
    """The definition: with the whole same-value matrix, :func:`_value_change` finds no single changed
    slot wherever the pair test stopped early; where it did not stop, the matrix is the whole one."""
    from ripple._supersede import _as_words, _same_by_new_slot, _same_value, _value_change

    views = [v for text in _CORPUS for v in _views(text, extractor)]
    ended = 0
    for old, new in itertools.product(views, views):
        new_words = [_as_words(s, old) for s in new.values]
        old_words = [_as_words(s, new) for s in old.values]
        same = [[_same_value(a, b) for b in new.values] for a in old.values]
        by_new = _same_by_new_slot(old, new, new_words)
        if by_new is None:
            ended += 1
            for marked in (False, True):
                assert _value_change(old, new, marked, old_words, new_words, same)[:2] == (None, None)
        else:
            assert by_new == [list(column) for column in zip(*same)] or not old.values
    assert ended


_SAID = [  # (text, none of its frames can replace or be replaced)
    ("Mel: The team budget is 50k.", False),
    ("Jon: The team budget is 40k.", False),
    ("Mel: I went to the budget meeting yesterday.", True),  # an event
    ("Jon: Have you seen the budget for May?", True),  # a question: no frame
    ("Mel: 例会改成周五下午两点了。", False),
]


def test_an_older_text_is_read_into_frames_only_when_it_can_be_compared(
        monkeypatch: pytest.MonkeyPatch, extractor: Any) -> None:
    """The write path reads the speakers of its older candidates first (:meth:`Runtime.speakers`: the
    speaker :meth:`Runtime.frames` gives, read of the parse alone), and asks their frames with
    ``comparable``: none for a text none of whose frames can replace or be replaced, which is not read
    again while its parse is the same; any other text gets all its frames, as without it."""
    import ripple._runtime as runtime_module
    from ripple import RippleSettings
    from ripple._runtime import Runtime, inert
    from ripple.embedding import HashEmbedder
    from ripple.models import AddItem

    read = _frame_readings(monkeypatch)
    monkeypatch.setattr(runtime_module, "RECENT_FRAMES", 0)  # no frames kept: every reading shows
    texts = [t for t, _ in _SAID]
    switching = _Switching(extractor)
    runtime = Runtime(RippleSettings(), embedder=HashEmbedder(64), extractor=switching)
    runtime.prepare([AddItem(text=t, user_id="u") for t in texts])
    speakers = runtime.speakers(texts)
    assert read == [] and speakers == ["mel", "jon", "mel", "jon", "mel"]
    full = runtime.frames(texts)
    assert [s for _, s in full] == speakers and [inert(views) for views, _ in full] == [x for _, x in _SAID]
    read.clear()
    comparable = runtime.frames(texts, comparable=True)
    assert [([v.frame for v in views], s) for views, s in comparable] == [
        ([] if inert(views) else [v.frame for v in views], s) for views, s in full]
    assert read == [t for t, x in _SAID if not x]  # the inert ones known so: not read again
    switching.plain = True  # parsed otherwise: what was known of the other parse no longer holds
    runtime.prepare([AddItem(text=t, user_id="u") for t in texts])
    read.clear()
    runtime.frames(texts, comparable=True)
    assert read == texts


def test_a_statement_replaces_its_speaker_s_own_older_one_without_reading_the_others(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any, extractor: Any) -> None:
    """Decided as before the speakers were read first: the new value replaces its speaker's statement
    and leaves the other speaker's; the other speaker's statement and the inert texts, candidates all,
    are not read into frames as older texts (only the new text is, and its own speaker's statement)."""
    import ripple._runtime as runtime_module
    from ripple import Memory
    from ripple.embedding import HashEmbedder

    read = _frame_readings(monkeypatch)
    monkeypatch.setattr(runtime_module, "RECENT_FRAMES", 0)
    mem = Memory(path=str(tmp_path / "store"), embedder=HashEmbedder(384), extractor=extractor)
    try:
        old = mem.add_many([{"text": t, "user_id": "u", "session_id": "s"} for t, _ in _SAID[:4]])
        read.clear()
        (new,) = mem.add("Mel: The team budget is now 60k.", user_id="u", session_id="s")
        assert read == ["Mel: The team budget is now 60k.", _SAID[0][0]]
        status = {m.id: m.status for m in (mem.get(o.id) for o in old)}
        assert status[old[0].id] == "superseded" and status[old[1].id] == "active"
        assert new.metadata["ripple"]["supersedes"][0]["memory"] == old[0].id
    finally:
        mem.close()
