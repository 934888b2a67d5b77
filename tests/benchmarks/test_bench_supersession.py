"""The supersession benchmark's loader and scoring (no models): the labelled set is well-formed, and
the scores count what the module docstring says."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone

import pytest

from benchmarks.datasets import PROJECT_ROOT
from benchmarks.supersession import SEALED, SPLITS, Item, Outcome, Turn, closure, load_items, score, selected, summarise

DATA = PROJECT_ROOT / "benchmarks" / "data" / "supersession" / "supersession-dev.json"


def test_the_labelled_set_is_well_formed() -> None:
    items = load_items(DATA)
    assert len(items) >= 150 and len({i.id for i in items}) == len(items)
    langs = Counter(i.lang for i in items)
    assert langs["en"] == langs["zh"] >= 75
    for it in items:
        n = len(it.turns)
        assert len(it.status) == n and it.split in SPLITS
        for a, b in (*it.supersedes, *it.retracts):
            assert 0 <= a < n and 0 <= b < n and a != b
        for a, b in it.supersedes:  # the newer one supersedes, by event time
            assert it.turns[a].at > it.turns[b].at, it.id
        olds = {b for _, b in it.supersedes}
        assert all((s == "superseded") == (k in olds) for k, s in enumerate(it.status) if s != "invalidated"), it.id
    first = [i for i in items if i.split in ("dev", "heldout")]  # the first set's 70/30 split
    held = Counter(i.split for i in first)["heldout"] / len(first)
    assert 0.25 <= held <= 0.35
    second = Counter((i.lang, i.cls) for i in items if i.split == "dev2")
    assert sum(second.values()) >= 80 and {c for _, c in second} == {i.cls for i in first}


def test_the_second_held_out_split_covers_every_class_in_both_languages_and_is_left_out_of_all() -> None:
    items = load_items(DATA)
    fresh = [i for i in items if i.split == "heldout2"]
    langs = Counter(i.lang for i in fresh)
    assert langs["en"] >= 70 and langs["zh"] >= 70
    classes = {i.cls for i in items if i.split == "dev"}
    for lang in ("en", "zh"):
        assert {i.cls for i in fresh if i.lang == lang} == classes, lang
    assert all(i.id.split("-")[1].startswith("3") for i in fresh)  # ids en-3p01...: no clash with the older splits
    assert "heldout2" in SPLITS and "heldout2" in SEALED
    assert selected("heldout2", "heldout2") and not selected("heldout2", "all")
    assert selected("dev2", "all") and selected("heldout", "all") and not selected("dev", "heldout")


@pytest.mark.parametrize("split, code, older", [("heldout3", "4", "heldout2"), ("heldout4", "5", "heldout3"),
                                                   ("heldout5", "7", "heldout4"), ("heldout6", "8", "heldout5"),
                                                   ("heldout7", "9", "heldout6"), ("heldout8", "H", "heldout7"),
                                                   ("heldout9", "K", "heldout8"), ("heldout10", "M", "heldout9"),
                                                   ("heldout11", "N", "heldout10"), ("heldout12", "P", "heldout11"),
                                                   ("heldout13", "Q", "heldout12"), ("heldout14", "R", "heldout13"),
                                                   ("heldout15", "S", "heldout14"), ("heldout16", "V", "heldout15"),
                                                   ("heldout17", "W", "heldout16"),
                                                   ("heldout18", "X", "heldout17"),
                                                   ("heldout19", "Y", "heldout18"),
                                                   ("heldout20", "Z", "heldout19"),
                                                   ("heldout21", "J", "heldout20"),
                                                   ("heldout22", "L", "heldout21"),
                                                   ("heldout23", "T", "heldout22"),
                                                   ("heldout24", "U", "heldout23"),
                                                   ("heldout25", "G", "heldout24")])
def test_a_later_held_out_split_is_as_broad_has_its_own_ids_and_is_left_out_of_all(split: str, code: str,
                                                                                    older: str) -> None:
    items = load_items(DATA)
    fresh = [i for i in items if i.split == split]
    langs = Counter(i.lang for i in fresh)
    assert langs["en"] == langs["zh"] >= 60
    classes = {i.cls for i in items if i.split == "dev"}
    for lang in ("en", "zh"):
        assert {i.cls for i in fresh if i.lang == lang} == classes, lang
    assert all(i.id.split("-")[1].startswith(code) for i in fresh)  # en-4p01, en-5p01...: no clash with older splits
    assert all(i.split == split for i in items if i.id.split("-")[1].startswith(code))
    assert split in SPLITS and split in SEALED
    assert selected(split, split) and not selected(split, "all") and not selected(split, older)


def test_the_training_split_is_balanced_has_its_own_ids_and_is_not_sealed() -> None:
    items = load_items(DATA)
    train = [i for i in items if i.split == "train1"]
    langs = Counter(i.lang for i in train)
    assert langs["en"] == langs["zh"] >= 100
    classes = {i.cls for i in items if i.split == "dev"}
    for lang in ("en", "zh"):
        assert {i.cls for i in train if i.lang == lang} == classes, lang
    assert all(i.id.split("-")[1].startswith("t") for i in train)  # en-tp01, zh-tq03...: no clash with the others
    assert all(i.split == "train1" for i in items if i.id.split("-")[1].startswith("t"))
    assert "train1" in SPLITS and "train1" not in SEALED and selected("train1", "all")


def _item(n: int, supersedes: tuple[tuple[int, int], ...]) -> Item:
    at = datetime(2026, 1, 1, tzinfo=timezone.utc)
    status = tuple("superseded" if k in {b for _, b in supersedes} else "active" for k in range(n))
    return Item("t", "en", "update", "dev", tuple(Turn(f"t{k}", at, "s") for k in range(n)), status, supersedes, ())


def test_a_chain_edge_that_skips_a_step_is_correct_but_recalls_only_the_step_it_implies() -> None:
    assert closure([(1, 0), (2, 1)]) == {(1, 0), (2, 1), (2, 0)}
    chain = _item(3, ((1, 0), (2, 1)))
    out = Outcome("t", "sequential", [0, 1, 2], ["a", "b", "c"], ["superseded", "active", "active"],
                  supersedes=[(2, 0)])
    s = score(chain, out)
    assert (s["predicted"], s["correct"], s["expected"], s["hits"], s["exact"]) == (1, 1, 2, 1, 0)


def test_a_wrong_supersession_costs_precision_and_a_conflict_on_a_missed_pair_is_flagged() -> None:
    pair = _item(2, ())
    wrong = Outcome("t", "sequential", [0, 1], ["a", "b"], ["superseded", "active"], supersedes=[(1, 0)],
                    conflicts=[(1, 0)])
    s = score(pair, wrong)
    assert (s["predicted"], s["correct"], s["exact"], s["false_flags"]) == (1, 0, 0, 1)
    update = _item(2, ((1, 0),))
    missed = Outcome("t", "sequential", [0, 1], ["a", "b"], ["active", "active"], conflicts=[(1, 0)])
    s = score(update, missed)
    assert (s["hits"], s["flagged"], s["false_flags"]) == (0, 1, 0)
    rows = [{"class": "update", "lang": "en", "mode": "sequential", "score": s}]
    assert summarise(rows)["pooled"]["all"]["flagged"] == 1


def test_chat_counts_supersessions_and_conflicts_per_conversation(tmp_path, embedder, extractor) -> None:
    """``--chat``'s counting on a tiny inline chat: one conversation states a change (one SUPERSEDES
    edge), one a budget and another budget said without a marker (one conflict to review), one
    nothing that changes (zero of both); each is counted for its own conversation, with its texts."""
    from datetime import timedelta

    from ripple import Memory

    from benchmarks.supersession import chat_counts

    t0 = datetime(2026, 3, 2, 9, tzinfo=timezone.utc)
    chat = {
        "moves": ["Ana: I live in Boston.", "Ana: We moved to Chicago last month, I live in Chicago now."],
        "budgets": ["Bo: Our budget is 50,000 CNY.", "Bo: The budget for the team dinner is 800 CNY."],
        "quiet": ["Cy: 我今天去公园散步了。", "Cy: 天气很好，心情不错。"],
    }
    turns = [{"text": text, "user_id": user, "session_id": f"{user}-{n}", "at": t0 + timedelta(days=n)}
             for user, texts in chat.items() for n, text in enumerate(texts)]
    with Memory(path=str(tmp_path / "chat"), embedder=embedder, extractor=extractor) as mem:
        counts = {c.conversation: c for c in chat_counts(mem, turns)}
    assert list(counts) == list(chat) and all(c.turns == 2 for c in counts.values())
    assert counts["moves"].supersedes == ((chat["moves"][0], chat["moves"][1]),) and counts["moves"].conflicts == ()
    assert counts["budgets"].supersedes == () and counts["budgets"].conflicts == ((chat["budgets"][0], chat["budgets"][1]),)
    assert counts["quiet"].supersedes == () == counts["quiet"].conflicts
