"""``python -m benchmarks supersession``: does a newer statement of a fact replace the older one, and only then?

Each item of the labelled set (``benchmarks/data/supersession/``) is written
into a fresh store through the public API, and the final state is compared
with the label: which memories are active, superseded or invalidated, and
which SUPERSEDES / RETRACTS edges join them.  Two ways of writing:

* ``sequential``: ``Memory.add`` one turn at a time, in the listed order (for
  the out-of-order class that order is not the order of the event times);
* ``batch``: one ``Memory.add_many`` of the whole item in every order of its
  turns (the out-of-order class only, unless ``--batch-all``): a history
  written in any order must end in the same state.

Scores, per class and language and pooled:

* **recall** — of the expected SUPERSEDES pairs ``(newer, older)``, the share
  where the older memory is superseded by the newer one or by a memory that
  the label says supersedes it transitively (in the chain A, B, C an edge
  C -> A counts for the pair B -> A only when B -> A itself is missing and
  C -> A is implied: it is in the transitive closure);
* **precision** — of the SUPERSEDES edges ripple wrote between an item's
  memories, the share in the transitive closure of the expected pairs;
* **exact** — the share of items whose every memory ends in the expected status;
* **conflicts** — candidate conflicts ripple recorded for review instead of
  superseding (``Memory.conflicts``, when the API has it): on expected pairs
  ("flagged") and on pairs that should stay apart ("false flags").

A wrong supersession hides a true fact, so precision matters more than recall.

``--cost`` measures what supersession costs the write path instead: the LoCoMo
dev conversations (2,073 chat turns) are ingested with ``add_many`` with
supersession on and off, alternating (ABAB..., ``--rounds`` times), and the
report gives turns/s of each run and the ratio of the medians (a ratio on one
busy machine, not an absolute speed), with the supersessions and conflicts the
chat produced (real conversations rarely restate a fact with a new value: most
of those would be false).  ``--dataset synthetic`` measures the same on the templated synthetic store
(one user, ``--size`` memories in ``add_many`` chunks of 512; with ``--embedder hash-384 --extractor
gazetteer --no-dedup`` as the scale runs), where nearly every earlier turn of a template is the same
statement with another value: the worst case for the pair tests.  Each run gives wall and CPU seconds
(``time.process_time``) and the load average.
``--chat`` writes each chat development set (the Chinese chat set ``zh/zh-chat-dev.json``, the Chinese
user-assistant chats ``zh/zh-chat-assistant.json`` and the LoCoMo dev conversations) as real chat: every
turn of a conversation through one ``add_many`` of its user (an assistant's turns with ``metadata["role"]``,
as ``ripple.agent`` writes them), default settings, and reports per conversation the SUPERSEDES edges and the open conflicts
(``Memory.conflicts``), each with the two texts: real chat rarely restates a fact with a new value,
so what a rule change adds there is mostly false, and is read one by one.
Results go to ``benchmarks/results/supersession/<label>.json`` (every item's
outcome) and ``<label>.md`` (the tables).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import shlex
import tempfile
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Sequence

from benchmarks.datasets import PROJECT_ROOT, default_data_dir

__all__ = ["SPLITS", "SEALED", "CHAT_SETS", "selected", "Item", "Turn", "Outcome", "ChatCount", "load_items", "ingest",
           "score", "summarise", "markdown", "chat_counts", "register", "run"]

USER = "u"
MODES = ("sequential", "batch")
#: The splits of the labelled set: ``dev`` (the rules were written against it), ``dev2`` (written after
#: them, in phrasings they did not know; developed against once its errors were read), ``heldout``
#: (scored, never tuned on; its misses were read, so it is in sample now), ``heldout2`` (written
#: later without reading the rules, to measure whether rule changes generalise; scored since),
#: ``heldout3`` to ``heldout25`` (each written the same way once the split before it had been scored, a
#: fresh out-of-sample check; ``heldout4`` to ``heldout25`` were unscored when they were committed),
#: and ``train1`` (training data for a learned pair judge, written without reading the rules; not sealed).
SPLITS = ("dev", "dev2", "heldout", "heldout2", "heldout3", "heldout4", "heldout5", "heldout6", "heldout7", "heldout8",
          "heldout9", "heldout10", "heldout11", "heldout12", "heldout13", "heldout14", "heldout15",
          "heldout16", "heldout17", "heldout18", "heldout19", "heldout20", "heldout21", "heldout22", "heldout23",
          "heldout24", "heldout25", "train1")
#: Splits that ``--split all`` leaves out: a held-out split is scored only by its name, so that the
#: routine before/after runs of development (``--split all --show-errors``) never show its items.
SEALED = ("heldout2", "heldout3", "heldout4", "heldout5", "heldout6", "heldout7", "heldout8", "heldout9",
          "heldout10", "heldout11", "heldout12", "heldout13", "heldout14", "heldout15", "heldout16",
          "heldout17", "heldout18", "heldout19", "heldout20", "heldout21", "heldout22",
          "heldout23", "heldout24", "heldout25")


@dataclass(frozen=True, slots=True)
class Turn:
    text: str
    at: datetime
    session: str


@dataclass(frozen=True, slots=True)
class Item:
    """One labelled item: turns in write order and the expected final state."""

    id: str
    lang: str
    cls: str
    split: str
    turns: tuple[Turn, ...]
    status: tuple[str, ...]
    supersedes: tuple[tuple[int, int], ...]
    retracts: tuple[tuple[int, int], ...]


@dataclass(slots=True)
class Outcome:
    """What one ingest of an item ended in, in turn indices of the item."""

    item: str
    mode: str
    order: list[int]  # the order the turns were written in
    ids: list[str | None]  # memory id of each turn (a repeat maps to the memory it reinforced)
    status: list[str | None]
    supersedes: list[tuple[int, int]] = field(default_factory=list)
    retracts: list[tuple[int, int]] = field(default_factory=list)
    conflicts: list[tuple[int, int]] = field(default_factory=list)
    notes: list[Any] = field(default_factory=list)  # metadata["ripple"] of each turn's memory


def load_items(path: Path) -> list[Item]:
    """The labelled items of ``path`` (``supersession-dev.json``)."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    out = []
    for it in raw["items"]:
        turns = tuple(Turn(t["text"], datetime.fromisoformat(t["at"].replace("Z", "+00:00")), t["session"])
                      for t in it["turns"])
        exp = it["expect"]
        out.append(Item(it["id"], it["lang"], it["class"], it["split"], turns, tuple(exp["status"]),
                        tuple((a, b) for a, b in exp["supersedes"]), tuple((a, b) for a, b in exp["retracts"])))
    return out


def _split_names(value: str) -> str:
    """``--split``: ``all``, or one split or several, comma-separated."""
    unknown = [x for x in value.split(",") if x not in SPLITS] if value != "all" else []
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown split {', '.join(unknown)} (expected all or some of {', '.join(SPLITS)})")
    return value


def selected(split: str, wanted: str) -> bool:
    """Whether an item of ``split`` is scored by ``--split wanted`` (``all``: every split but the sealed ones;
    several splits: comma-separated)."""
    return split in wanted.split(",") or (wanted == "all" and split not in SEALED)


def _payload(item: Item, n: int) -> dict[str, Any]:
    t = item.turns[n]
    return {"text": t.text, "user_id": USER, "session_id": t.session, "at": t.at}


def ingest(mem: Any, item: Item, mode: str, order: Sequence[int]) -> Outcome:
    """Write ``item`` into ``mem`` (an empty store) in ``order`` and read back the final state."""
    ids: list[str | None] = [None] * len(item.turns)
    if mode == "sequential":
        for n in order:
            got = mem.add(item.turns[n].text, user_id=USER, session_id=item.turns[n].session, at=item.turns[n].at)
            ids[n] = got[0].id if got else None
    else:
        got = mem.add_many([_payload(item, n) for n in order])
        if len(got) == len(order):
            for n, m in zip(order, got):
                ids[n] = m.id
        else:  # a content-free turn was dropped: match the rest by text
            by_text = {m.text: m.id for m in got}
            for n in order:
                ids[n] = by_text.get(item.turns[n].text)
    index: dict[str, int] = {}
    for n, mid in enumerate(ids):
        if mid is not None:
            index.setdefault(mid, n)
    records = {m.id: m for m in mem.get_all(user_id=USER)} if index else {}
    out = Outcome(item.id, mode, list(order), ids, [records[m].status if m in records else None for m in ids],
                  notes=[records[m].metadata.get("ripple") if m in records else None for m in ids])
    for row in (mem.export(user_id=USER) if index else ()):
        if row["type"] != "edge" or row["src"] not in index or row["dst"] not in index:
            continue
        pair = (index[row["src"]], index[row["dst"]])
        if row["edge"] == "SUPERSEDES":
            out.supersedes.append(pair)
        elif row["edge"] == "RETRACTS":
            out.retracts.append(pair)
    listing = getattr(mem, "conflicts", None)
    if listing is not None and index:
        for c in listing(user_id=USER):
            if c.new.id in index and c.old.id in index:
                out.conflicts.append((index[c.new.id], index[c.old.id]))
    out.supersedes.sort()
    out.retracts.sort()
    out.conflicts.sort()
    return out


def closure(pairs: Iterable[tuple[int, int]]) -> set[tuple[int, int]]:
    """The transitive closure of ``(newer, older)`` pairs."""
    out = set(pairs)
    while True:
        more = {(a, d) for a, b in out for c, d in out if b == c} - out
        if not more:
            return out
        out |= more


def found(implied: set[tuple[int, int]], predicted: set[tuple[int, int]], old: int) -> bool:
    """Whether an expected supersession of turn ``old`` was made: an edge into it that the expected chain
    implies (in a chain A, B, C an edge C -> A counts for B -> A)."""
    return any((a, old) in implied for a, b in predicted if b == old)


def score(item: Item, out: Outcome) -> dict[str, int]:
    """Counts for one outcome (see the module docstring)."""
    implied = closure(item.supersedes)
    predicted = set(out.supersedes)
    hits = sum(1 for _, old in item.supersedes if found(implied, predicted, old))
    expected_retracts = set(item.retracts)
    exact = all(got == want for got, want in zip(out.status, item.status)) and set(out.retracts) == expected_retracts
    flagged = {p for p in out.conflicts if p in implied}
    return {
        "expected": len(item.supersedes), "hits": hits, "predicted": len(predicted),
        "correct": len(predicted & implied), "exact": int(exact),
        "retracts_expected": len(expected_retracts), "retracts_hit": len(set(out.retracts) & expected_retracts),
        "flagged": len({old for _, old in flagged if not any(b == old for _, b in predicted)}),
        "false_flags": len(set(out.conflicts) - implied),
    }


_COUNTS = ("items", "exact", "expected", "hits", "predicted", "correct", "retracts_expected", "retracts_hit",
           "flagged", "false_flags")


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, dict[str, int]]]:
    """``{group: {"en"|"zh"|"all": counts}}`` over ``rows``; groups are classes, ``<class>/batch`` and ``pooled``
    (pooled: the sequential ingests of every class)."""
    out: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(lambda: dict.fromkeys(_COUNTS, 0)))
    for r in rows:
        groups = [r["class"]] if r["mode"] == "sequential" else [f"{r['class']}/batch"]
        if r["mode"] == "sequential":
            groups.append("pooled")
        for g in groups:
            for lang in (r["lang"], "all"):
                acc = out[g][lang]
                acc["items"] += 1
                for k in _COUNTS[1:]:
                    acc[k] += r["score"][k]
    return {g: dict(v) for g, v in out.items()}


def _ratio(num: int, den: int) -> str:
    return f"{num / den:.3f}" if den else "–"


def markdown(summary: dict[str, dict[str, dict[str, int]]], classes: Sequence[str]) -> str:
    """The per-class table and the pooled one."""
    lines = ["| class | lang | items | exact | recall | precision | false sup. | conflicts (flagged / false) |",
             "|---|---|---|---|---|---|---|---|"]
    order = [c for c in classes if c in summary] + [f"{c}/batch" for c in classes if f"{c}/batch" in summary]
    for g in [*order, "pooled"]:
        if g not in summary:
            continue
        for lang in ("en", "zh", "all"):
            s = summary[g].get(lang)
            if not s:
                continue
            name = f"**{g}**" if g == "pooled" else g
            lines.append(
                f"| {name} | {lang} | {s['items']} | {_ratio(s['exact'], s['items'])} | "
                f"{_ratio(s['hits'], s['expected'])} ({s['hits']}/{s['expected']}) | "
                f"{_ratio(s['correct'], s['predicted'])} ({s['correct']}/{s['predicted']}) | "
                f"{s['predicted'] - s['correct']} | {s['flagged']} / {s['false_flags']} |"
            )
    return "\n".join(lines)


def _orders(item: Item, mode: str) -> list[list[int]]:
    listed = list(range(len(item.turns)))
    if mode == "sequential":
        return [listed]
    return [list(p) for p in itertools.permutations(listed)]


# --------------------------------------------------------------------------- command


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, default=None,
                        help="the labelled set (default: <data dir>/supersession/supersession-dev.json)")
    parser.add_argument("--split", type=_split_names, default="dev",
                        help="dev: developed against; dev2: written later, phrasings the rules did not know; "
                             "heldout: scored once; heldout2 to heldout25: written later without reading the "
                             "rules, each scored only by name; train1: training data for a learned pair judge; "
                             "all: every split but " + ", ".join(SEALED) + "; several: comma-separated")
    parser.add_argument("--lang", choices=("en", "zh", "all"), default="all")
    parser.add_argument("--classes", default="", help="comma-separated classes to run (default: all)")
    parser.add_argument("--batch-all", action="store_true",
                        help="also write every item (not only the out-of-order class) with add_many in every order")
    parser.add_argument("--label", default=None, help="result file name (default: <split>)")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "benchmarks" / "results" / "supersession")
    parser.add_argument("--show-errors", action="store_true", help="print the items that ended in a wrong state")
    parser.add_argument("--cost", action="store_true",
                        help="measure ingest throughput with supersession on and off on the LoCoMo dev turns instead")
    parser.add_argument("--rounds", type=int, default=2, help="--cost: runs per setting, alternating")
    parser.add_argument("--dataset", choices=("locomo", "synthetic"), default="locomo",
                        help="--cost: the LoCoMo dev chat, or the synthetic templated store (one user)")
    parser.add_argument("--size", type=int, default=2000, help="--cost --dataset synthetic: memories")
    parser.add_argument("--embedder", default=None, help="--cost: embedder name, e.g. hash-384 (default: the model)")
    parser.add_argument("--extractor", choices=("gazetteer",), default=None,
                        help="--cost --dataset synthetic: match the generator's names instead of parsing (spaCy/jieba)")
    parser.add_argument("--no-dedup", action="store_true", help="--cost: repeats not merged (as the scale runs)")
    parser.add_argument("--pair-judge", default="off",
                        help="the learned pair judge: off (the default write path: the rules alone), on (the shipped "
                             "weights), or a weights file (a fold of `python -m benchmarks pair-judge loso --save-dir`)")
    parser.add_argument("--pair-judge-min", type=float, default=None,
                        help="the threshold for English pairs (default: LifecycleConfig's)")
    parser.add_argument("--pair-judge-min-zh", type=float, default=None,
                        help="the threshold for Chinese pairs (default: LifecycleConfig's)")
    parser.add_argument("--chat", action="store_true",
                        help="write the chat development sets (zh-chat-dev, zh-chat-assistant, LoCoMo dev) and count SUPERSEDES edges "
                             "and conflicts per conversation instead")


def _lifecycle(args: argparse.Namespace, **fields: Any) -> Any:
    """The write path's settings for ``--pair-judge`` (a weights file is loaded once, for the whole process)."""
    from ripple import LifecycleConfig

    if args.pair_judge not in ("on", "off"):
        _use_weights(str(args.pair_judge))
    for field in ("pair_judge_min", "pair_judge_min_zh"):
        if getattr(args, field) is not None:
            fields[field] = getattr(args, field)
    return LifecycleConfig(pair_judge=args.pair_judge != "off", **fields)


@functools.cache
def _use_weights(path: str) -> None:
    from ripple._pairjudge import use_weights

    use_weights(path)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    if args.cost:
        return run_cost(args, argv)
    if args.chat:
        return run_chat(args, argv)
    from ripple import Memory
    from ripple.embedding import default_embedder
    from extractors import default_extractor

    from benchmarks.run import git_info, machine_info

    path = args.data or default_data_dir() / "supersession" / "supersession-dev.json"
    items = load_items(path)
    raw_classes = json.loads(Path(path).read_text(encoding="utf-8"))["classes"]
    wanted = {c for c in args.classes.split(",") if c}
    items = [it for it in items if selected(it.split, args.split)
             and (args.lang == "all" or it.lang == args.lang) and (not wanted or it.cls in wanted)]
    embedder, extractor = default_embedder(), default_extractor()
    extractor.extract_many(["warm up", "预热"])
    lifecycle = _lifecycle(args)
    rows: list[dict[str, Any]] = []
    t0, c0 = time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory(prefix="ripple-supersession-") as tmp:
        for n, item in enumerate(items):
            modes = ["sequential"] + (["batch"] if args.batch_all or item.cls == "out_of_order" else [])
            for mode in modes:
                for k, order in enumerate(_orders(item, mode)):
                    with Memory(path=f"{tmp}/{n}-{mode}-{k}", embedder=embedder, extractor=extractor,
                                lifecycle=lifecycle) as mem:
                        out = ingest(mem, item, mode, order)
                    rows.append({"item": item.id, "lang": item.lang, "class": item.cls, "split": item.split,
                                 "mode": mode, "outcome": asdict(out), "score": score(item, out)})
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    load = os.getloadavg()[0]
    splits = sorted({r["split"] for r in rows}) + (["all"] if len({r["split"] for r in rows}) > 1 else [])
    summary = {sp: summarise([r for r in rows if sp in ("all", r["split"])]) for sp in splits}
    table = "\n\n".join(f"Split `{sp}`:\n\n{markdown(summary[sp], raw_classes)}" for sp in splits)
    label = args.label or args.split
    args.out.mkdir(parents=True, exist_ok=True)
    header = {"type": "header", "data": str(path), "split": args.split, "lang": args.lang, "items": len(items),
              "pair_judge": args.pair_judge, "pair_judge_min": args.pair_judge_min,
              "pair_judge_min_zh": args.pair_judge_min_zh,
              "ingests": len(rows), "seconds": round(elapsed, 1),
              "cpu_seconds": round(cpu, 1), "load": round(load, 1), "git": git_info(), "machine": machine_info(),
              "command": "python -m benchmarks " + shlex.join(argv), "time": datetime.now().isoformat(timespec="seconds")}
    (args.out / f"{label}.json").write_text(
        json.dumps({"header": header, "summary": summary, "rows": rows}, ensure_ascii=False, indent=1) + "\n",
        encoding="utf-8")
    (args.out / f"{label}.md").write_text(
        f"Supersession, split `{args.split}` ({len(items)} items, {len(rows)} ingests; "
        f"commit {str(header['git'].get('commit'))[:10]}):\n\n{table}\n", encoding="utf-8")
    print(table)
    print(f"\n{len(items)} items, {len(rows)} ingests in {elapsed:.1f} s (CPU {cpu:.1f} s of this process, "
          f"load {load:.1f}) -> {args.out / (label + '.json')}")
    if args.show_errors:
        by_id = {it.id: it for it in items}
        for r in rows:
            s = r["score"]
            if s["exact"] and s["predicted"] == s["correct"]:
                continue
            it, o = by_id[r["item"]], r["outcome"]
            print(f"\n{it.id} [{it.cls}, {r['mode']} {o['order']}] expected {list(it.status)} "
                  f"{list(it.supersedes)}; got {o['status']} {o['supersedes']} retracts {o['retracts']} "
                  f"conflicts {o['conflicts']}")
            for t, note in zip(it.turns, o["notes"]):
                print(f"   {t.text}" + (f"   <- {json.dumps(note, ensure_ascii=False)}" if note else ""))
    return 0


# --------------------------------------------------------------------------- write-path cost


def run_cost(args: argparse.Namespace, argv: list[str]) -> int:
    """Ingest throughput with supersession on and off, alternating on one machine (see the module docstring).

    Each run reports wall seconds and the CPU seconds of this process (``time.process_time``: on a
    shared machine the wall clock measures the other jobs too) and the load average after it."""
    import statistics

    from ripple import Memory
    from ripple.embedding import default_embedder
    from extractors import default_extractor

    from benchmarks.datasets import iter_doc_chunks, load_locomo, synthetic
    from benchmarks.run import git_info, machine_info

    if args.dataset == "synthetic":
        data = synthetic(args.size, n_users=1, n_queries=1)
        chunk = 512  # as the scale runs (benchmarks/methods.py)
    else:
        data = load_locomo(default_data_dir() / "locomo" / "locomo-dev.json")
        chunk = 0  # one add_many per conversation
    docs = list(data.docs)  # in conversation order
    embedder = default_embedder(args.embedder) if args.embedder else default_embedder()
    if args.extractor == "gazetteer":
        from extractors import GazetteerExtractor

        if not data.known_entities:
            raise SystemExit("--extractor gazetteer needs --dataset synthetic (a dataset that lists its names)")
        extractor: Any = GazetteerExtractor(data.known_entities)
    else:
        extractor = default_extractor()
    extractor.extract_many(["warm up", "预热"])
    embedder.encode(["warm up"])
    if args.pair_judge != "off":  # loaded before the clock starts, as the embedder and the extractor are
        from ripple._pairjudge import judge_pairs, reads

        _lifecycle(args)  # (a weights file becomes the process's judge)
        judge_pairs([("warm up", "warm up again")] + ([("预热", "再预热")] if reads("预热") else []))
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ripple-supersession-cost-") as tmp:
        for r in range(args.rounds):
            for on in (True, False) if r % 2 == 0 else (False, True):
                lifecycle = _lifecycle(args, supersede=on, dedup=not args.no_dedup)
                with Memory(path=f"{tmp}/{r}-{on}", embedder=embedder, extractor=extractor,
                            lifecycle=lifecycle) as mem:
                    t0, c0 = time.perf_counter(), time.process_time()
                    for user in sorted({d.user_id for d in docs}):
                        mine = [d for d in docs if d.user_id == user]
                        for batch in iter_doc_chunks(mine, chunk) if chunk else [mine]:
                            mem.add_many([{"text": d.text, "user_id": d.user_id, "session_id": d.session_id,
                                           "at": d.at} for d in batch])
                    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
                    load = os.getloadavg()[0]
                    counts = {"supersedes": 0, "conflicts": 0}
                    for user in sorted({d.user_id for d in docs}):
                        st = mem.stats(user_id=user)
                        counts["supersedes"] += st.get("edges_supersedes", 0)
                        counts["conflicts"] += len(mem.conflicts(user_id=user))
                runs.append({"supersede": on, "round": r, "turns": len(docs), "seconds": round(seconds, 2),
                             "cpu_seconds": round(cpu, 2), "turns_per_s": round(len(docs) / seconds, 1),
                             "turns_per_cpu_s": round(len(docs) / cpu, 1), "load": round(load, 1), **counts})
                print(f"round {r} supersede={'on' if on else 'off'}: {len(docs)} turns in {seconds:.1f} s "
                      f"({len(docs) / seconds:.1f}/s), CPU {cpu:.1f} s ({len(docs) / cpu:.1f}/s), load {load:.1f}, "
                      f"{counts['supersedes']} supersedes, {counts['conflicts']} conflicts")
    rate = {on: statistics.median(x["turns_per_s"] for x in runs if x["supersede"] == on) for on in (True, False)}
    cpu_rate = {on: statistics.median(x["turns_per_cpu_s"] for x in runs if x["supersede"] == on) for on in (True, False)}
    ratio, cpu_ratio = rate[True] / rate[False], cpu_rate[True] / cpu_rate[False]
    header = {"type": "header", "dataset": args.dataset, "turns": len(docs), "rounds": args.rounds,
              "pair_judge": args.pair_judge,
              "embedder": args.embedder or "default", "extractor": args.extractor or "default",
              "dedup": not args.no_dedup, "git": git_info(), "machine": machine_info(),
              "command": "python -m benchmarks " + shlex.join(argv), "time": datetime.now().isoformat(timespec="seconds")}
    label = args.label or "cost"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{label}.json").write_text(json.dumps({"header": header, "runs": runs, "ratio": round(ratio, 3),
                                                        "cpu_ratio": round(cpu_ratio, 3)}, indent=1) + "\n",
                                            encoding="utf-8")
    print(f"median turns/s: on {rate[True]:.1f}, off {rate[False]:.1f}; on/off = {ratio:.3f}; per CPU second: "
          f"on {cpu_rate[True]:.1f}, off {cpu_rate[False]:.1f}; on/off = {cpu_ratio:.3f} -> {args.out / (label + '.json')}")
    return 0


# --------------------------------------------------------------------------- real chat


#: The chat development sets ``--chat`` writes (LoCoMo format, under the data directory).
CHAT_SETS = ("zh/zh-chat-dev.json", "zh/zh-chat-assistant.json", "locomo/locomo-dev.json")


#: The speakers of the chat sets who are an assistant, not a person (``zh-chat-assistant``'s and ``zh-conv-2``'s
#: "助手"): their turns are written as ``ripple.agent`` writes an assistant's, with ``metadata["role"]``.
ASSISTANT_SPEAKERS = frozenset({"助手", "assistant"})


@dataclass(frozen=True, slots=True)
class ChatCount:
    """What one conversation's chat wrote besides its memories: SUPERSEDES edges and open conflicts,
    each as ``(older text, newer text)`` so that a new one can be read."""

    conversation: str
    turns: int
    supersedes: tuple[tuple[str, str], ...]
    conflicts: tuple[tuple[str, str], ...]


def chat_counts(mem: Any, turns: Sequence[dict[str, Any]]) -> list[ChatCount]:
    """Write ``turns`` (``add_many`` payloads with ``user_id``, in conversation order) into ``mem``,
    one ``add_many`` per user as a chat client would batch a conversation, and count per user."""
    users = list(dict.fromkeys(t["user_id"] for t in turns))
    out = []
    for user in users:
        mine = [t for t in turns if t["user_id"] == user]
        mem.add_many(mine)
        texts = {m.id: m.text for m in mem.get_all(user_id=user)}
        edges = tuple((texts.get(r["dst"], r["dst"]), texts.get(r["src"], r["src"])) for r in mem.export(user_id=user)
                      if r["type"] == "edge" and r["edge"] == "SUPERSEDES")
        conflicts = tuple((c.old.text, c.new.text) for c in mem.conflicts(user_id=user))
        out.append(ChatCount(user, len(mine), edges, conflicts))
    return out


def run_chat(args: argparse.Namespace, argv: list[str]) -> int:
    """``--chat``: the chat development sets written with default settings (see the module docstring)."""
    from ripple import Memory
    from ripple._lifecycle import AGENT_ROLE

    from benchmarks.datasets import load_locomo
    from benchmarks.run import git_info, machine_info

    results: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="ripple-supersession-chat-") as tmp:
        for n, name in enumerate(CHAT_SETS):
            data = load_locomo(default_data_dir() / name)
            turns = [{"text": d.text, "user_id": d.user_id, "session_id": d.session_id, "at": d.at,
                      **({"metadata": {"role": AGENT_ROLE}} if d.speaker in ASSISTANT_SPEAKERS else {})}
                     for d in data.docs]
            c0 = time.process_time()
            with Memory(path=f"{tmp}/{n}", lifecycle=_lifecycle(args)) as mem:
                counts = chat_counts(mem, turns)
            cpu = time.process_time() - c0
            results[name] = [asdict(c) for c in counts]
            print(f"\n{name}: {len(turns)} turns, CPU {cpu:.1f} s (load {os.getloadavg()[0]:.1f})")
            print("| conversation | turns | SUPERSEDES | conflicts |\n|---|---|---|---|")
            for c in counts:
                print(f"| {c.conversation} | {c.turns} | {len(c.supersedes)} | {len(c.conflicts)} |")
            print(f"| **all** | {len(turns)} | {sum(len(c.supersedes) for c in counts)} | "
                  f"{sum(len(c.conflicts) for c in counts)} |")
            for c in counts:
                for what, pairs in (("supersedes", c.supersedes), ("conflict", c.conflicts)):
                    for old, new in pairs:
                        print(f"  {c.conversation} {what}: {old!r}\n      -> {new!r}")
    header = {"type": "header", "sets": list(CHAT_SETS), "pair_judge": args.pair_judge, "git": git_info(),
              "machine": machine_info(),
              "command": "python -m benchmarks " + shlex.join(argv), "time": datetime.now().isoformat(timespec="seconds")}
    label = args.label or "chat"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{label}.json").write_text(json.dumps({"header": header, "sets": results}, ensure_ascii=False,
                                                       indent=1) + "\n", encoding="utf-8")
    print(f"-> {args.out / (label + '.json')}")
    return 0
