"""Where an expected supersession is lost: ``python -m benchmarks.supersession_stages --split heldout2``.

Each item is written as ``python -m benchmarks supersession`` writes it (``Memory.add``, one turn at a
time), with the write path's stages watched (no decision is changed): which older texts reached the
candidate text test of a new one (:func:`ripple._supersede.worth_parsing`), which clause pairs
:func:`ripple._supersede.match` compared and at which of its tests it returned None, and how the
verdicts were graded.  For every expected pair ``(newer, older)`` that did not end in a SUPERSEDES
edge, the furthest stage the pair reached names what failed:

* ``a`` candidate finding: the older memory never became a candidate, or failed the text test;
* ``b`` alignment: a candidate whose frames did not align (qualifiers, anchor, attributes, names);
* ``c`` value: the new text has no value frame, or no single comparable value changed;
* ``d`` judged and rejected: a one-clause test, another subject, running vs limit, or graded
  medium / low by the masked-clause cosine (which reason is printed);
* ``e`` other (extraction, correction routing, order).

The stages read the rules' line structure (``match``'s returns), so this is a diagnostic, not a test.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter, defaultdict
from typing import Any

from benchmarks.datasets import default_data_dir
from benchmarks.supersession import closure, found, ingest, load_items, selected

#: match()'s `return None` comments (by the text after `return None`), mapped to a stage.
_STAGE = [
    ("no value of a kind the old clause has", "c", "no value of the old clause's kind"),
    ("(an event, an addition", "d", "one-clause test (event/addition/possessor)"),
    ("no slot that can hold the new value", "c", "no slot can hold the new value"),
    ("is measured against", "d", "running amount vs limit"),
    ('"my sister" is not "I"', "d", "another subject"),
    ("two values changed", "c", "two values changed"),
    ("The Lisbon office", "b", "another name"),
    ("qualifiers differ on both sides", "b", "qualifiers differ"),
    ("the old value is still talked about", "d", "old value restated, no marker"),
    ("each says something the other does not", "b", "each side says more, no marker"),
]


def _return_lines() -> dict[int, tuple[str, str]]:
    """Line number of each `return None` in match() -> (stage, label)."""
    import inspect

    from ripple import _supersede

    src, first = inspect.getsourcelines(_supersede.match)
    out: dict[int, tuple[str, str]] = {}
    prev = ""
    for n, line in enumerate(src):
        if "return None" in line:
            label = next(((s, lab) for key, s, lab in _STAGE if key in line), None)
            if label is None:
                if "multi_valued" in prev:
                    label = ("d", "a many-valued attribute")
                elif "not marked" in prev:
                    label = ("b", "different fact attributes, no marker")
                elif "vo is None" in prev:
                    label = ("c", "no single comparable value changed")
                else:  # (no shared phrase, nominal or person: the anchor tests)
                    label = ("b", "no anchor shared")
            out[first + n] = label
        if line.strip():
            prev = line
    return out


class _Watched:
    """A store whose ``add`` keeps the write path's log of each call, so that :func:`ingest` writes
    the item exactly as the benchmark does while the stages of every turn are kept (in write order)."""

    def __init__(self, mem: Any, log: dict[str, Any]) -> None:
        self._mem, self._log = mem, log
        self.events: list[dict[str, list[Any]]] = []

    def add(self, *args: Any, **kwargs: Any) -> Any:
        self._log.clear()
        self._log.update(tested=[], promising_news=[], pairs=[], graded=[])
        got = self._mem.add(*args, **kwargs)
        self.events.append({key: list(val) for key, val in self._log.items()})
        return got

    def __getattr__(self, name: str) -> Any:
        return getattr(self._mem, name)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", default="heldout2")
    ap.add_argument("--lang", default="all")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)

    from ripple import Memory, _lifecycle
    from ripple.embedding import default_embedder
    from extractors import default_extractor

    lines = _return_lines()
    items = [it for it in load_items(default_data_dir() / "supersession" / "supersession-dev.json")
             if selected(it.split, args.split) and args.lang in ("all", it.lang)]
    embedder, extractor = default_embedder(), default_extractor()

    log: dict[str, Any] = {}
    real_match, real_worth, real_grade = _lifecycle.match, _lifecycle.worth_parsing, _lifecycle.grade

    def worth(frames: Any, ex: Any, terms: Any) -> Any:
        test = real_worth(frames, ex, terms)

        def traced(text: str, theirs: Any) -> bool:
            ok = test(text, theirs)
            log["tested"].append((text, ok))
            return ok

        log["promising_news"].append(True)
        return traced

    def match(old: Any, new: Any, **kw: Any) -> Any:
        got: list[int] = []
        detail: list[Any] = []

        def tracer(frame: Any, event: str, arg: Any) -> Any:
            if frame.f_code is real_match.__code__ and event == "return":
                got.append(frame.f_lineno)
                loc = frame.f_locals
                detail.append({k: sorted(loc[k]) if isinstance(loc.get(k), (set, frozenset)) else loc.get(k)
                               for k in ("left_out", "only_new", "only_old", "nominal") if k in loc})
            return tracer if frame.f_code is real_match.__code__ else None

        sys.settrace(tracer)
        try:
            v = real_match(old, new, **kw)
        finally:
            sys.settrace(None)
        log["pairs"].append((old.frame.clause, new.frame.clause, v, got[-1] if got else None, detail[-1] if detail else None))
        return v

    def grade(v: Any, dense: float, **kw: Any) -> Any:
        level, reasons = real_grade(v, dense, **kw)
        log["graded"].append((v.old_clause, v.new_clause, level, v.level, round(dense, 2), reasons))
        return level, reasons

    counts: Counter[tuple[str, str]] = Counter()
    labels: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    hits = Counter[str]()
    _lifecycle.match, _lifecycle.worth_parsing, _lifecycle.grade = match, worth, grade  # type: ignore[assignment]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for n, item in enumerate(items):
                if not item.supersedes:
                    continue
                with Memory(path=f"{tmp}/{n}", embedder=embedder, extractor=extractor) as mem:
                    watched = _Watched(mem, log)
                    out = ingest(watched, item, "sequential", list(range(len(item.turns))))
                implied, predicted = closure(item.supersedes), set(out.supersedes)
                for newer, older in item.supersedes:
                    hits["expected", item.lang] += 1  # type: ignore[index]
                    if found(implied, predicted, older):
                        hits["hit", item.lang] += 1  # type: ignore[index]
                        continue
                    # in the write order, a pair (newer, older) is decided when the later-written one arrives
                    later, earlier = (newer, older) if newer > older else (older, newer)
                    conflicted = (newer, older) in out.conflicts or (older, newer) in out.conflicts
                    stage, label = _stage(watched.events[later], item.turns[later].text, item.turns[earlier].text,
                                          lines, conflicted, args.verbose)
                    counts[stage, item.lang] += 1
                    labels[stage, item.lang][label.split(" [")[0]] += 1
                    if args.verbose:
                        print(f"{item.id} [{item.cls}] {stage}: {label}\n   old: {item.turns[older].text}\n"
                              f"   new: {item.turns[newer].text}")
    finally:
        _lifecycle.match, _lifecycle.worth_parsing, _lifecycle.grade = real_match, real_worth, real_grade
    print(f"\nsplit {args.split}: expected / found: " + ", ".join(
        f"{lang} {hits['hit', lang]}/{hits['expected', lang]}" for lang in ("en", "zh")))  # type: ignore[index]
    print("| stage | en | zh | what (en + zh) |\n|---|---|---|---|")
    for stage in "abcde":
        what = labels[stage, "en"] + labels[stage, "zh"]
        print(f"| {stage} | {counts[stage, 'en']} | {counts[stage, 'zh']} | "
              + "; ".join(f"{k} {v}" for k, v in what.most_common()) + " |")
    return 0


def _stage(ev: dict[str, Any], me: str, other: str, lines: dict[int, tuple[str, str]], conflicted: bool,
           verbose: bool) -> tuple[str, str]:
    if conflicted:
        return "d", "recorded as a conflict (medium)"
    graded = [g for g in ev["graded"] if (g[0] in other and g[1] in me) or (g[0] in me and g[1] in other)]
    if graded:
        g = max(graded, key=lambda g: {"high": 2, "medium": 1, "low": 0}[g[2]])
        if g[2] == "low":
            return "d", f"graded low (masked cosine < medium)"
        if g[2] == "medium":
            return "d", f"graded medium, conflicts off? ({g[3]})"
        return "e", "graded high but not applied"
    pairs = [p for p in ev["pairs"] if (p[0] in other and p[1] in me) or (p[0] in me and p[1] in other)]
    if pairs:
        best = max(pairs, key=lambda p: p[3] or 0)
        stage, label = lines.get(best[3] or -1, ("e", f"match returned at line {best[3]}"))
        return stage, label + (f" [{best[0]!r} / {best[1]!r} {best[4]}]" if verbose else "")
    if not ev["promising_news"] and not ev["tested"]:
        return "c", "the new text has no value frame (or nothing to compare)"
    tested = [ok for text, ok in ev["tested"] if text == other]
    if not tested:
        if ev["promising_news"]:
            return "a", "not a candidate (no near vector, shared entity or fact key)"
        return "c", "the new text has no value frame"
    if not any(tested):
        return "a", "failed the candidate text test (no word in common / no value of the group)"
    return "d", "no clause pair passed the one-clause tests (event/addition/possessor) or no old frame"


if __name__ == "__main__":
    raise SystemExit(main())
