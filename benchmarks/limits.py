"""``python -m benchmarks limits``: the two oversized writes of issue 18, timed.

1. **Huge metadata.** One LoCoMo conversation's turns are stored for a user and
   its questions recalled (p50/p95, ``touch=False``); then one memory that
   mentions the conversation's speakers is added with a single metadata string
   of ``--metadata-mb`` MB, and the same questions are recalled again.  Before
   the limits this write was accepted and every recall of the user fetched the
   50 MB row whenever that memory was a candidate; with them it is refused
   (:class:`ripple.LimitExceeded`) before anything is written.
2. **Huge text.** A ``--text-chars`` character text made of HotpotQA passages
   (Wikipedia paragraphs: dense in names) is added for a fresh user: seconds,
   entities created, MENTIONS edges, and what ``metadata["ripple"]`` records.

Real models (MiniLM, spaCy) on a temporary embedded store; the result is
written to ``benchmarks/results/limits/<label>.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.datasets import PROJECT_ROOT, default_data_dir, load_locomo

OUT = PROJECT_ROOT / "benchmarks" / "results" / "limits"


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--label", required=True, help="name of the result file (e.g. before, after)")
    p.add_argument("--metadata-mb", type=float, default=50.0, help="size of the huge metadata (default 50 MB)")
    p.add_argument("--text-chars", type=int, default=100_000, help="length of the huge text (default 100k)")
    p.add_argument("--queries", type=int, default=30, help="questions recalled per pass (default 30)")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _recall_ms(mem: Any, user: str, questions: list[str]) -> dict[str, float]:
    times = []
    for q in questions:
        t0 = time.perf_counter()
        mem.recall(q, user_id=user, k=10, touch=False)
        times.append((time.perf_counter() - t0) * 1000.0)
    return {"p50_ms": round(statistics.median(times), 1), "p95_ms": round(_pct(times, 0.95), 1)}


def _attempt(fn: Any) -> dict[str, Any]:
    from ripple import RippleError

    t0 = time.perf_counter()
    try:
        out = fn()
        return {"outcome": "stored", "seconds": round(time.perf_counter() - t0, 2), "value": out}
    except RippleError as exc:
        return {"outcome": f"refused: {type(exc).__name__}: {exc}", "seconds": round(time.perf_counter() - t0, 3)}


def _long_text(chars: int) -> str:
    corpus = json.loads((default_data_dir() / "multihop" / "hotpotqa_train_corpus.json").read_text(encoding="utf-8"))
    parts: list[str] = []
    size = 0
    for title in sorted(corpus):
        para = "".join(corpus[title]).strip()
        parts.append(para)
        size += len(para) + 1
        if size >= chars:
            break
    return "\n".join(parts)[:chars]


def run(args: argparse.Namespace, argv: list[str]) -> int:
    from ripple import Memory

    data = load_locomo(default_data_dir() / "locomo" / "locomo-dev.json")
    user = data.docs[0].user_id
    docs = [d for d in data.docs if d.user_id == user]
    questions = [q.text for q in data.queries if q.user_id == user][: args.queries]
    result: dict[str, Any] = {"label": args.label, "command": "python -m benchmarks " + " ".join(argv),
                              "when": time.strftime("%Y-%m-%d %H:%M:%S"), "conversation": user,
                              "memories": len(docs), "queries": len(questions)}
    with tempfile.TemporaryDirectory() as tmp, Memory(path=tmp) as mem:
        mem.add_many([{"text": d.text, "user_id": user, "session_id": d.session_id, "at": d.at} for d in docs])
        _recall_ms(mem, user, questions[:3])  # warm the models and the vector index
        before = _recall_ms(mem, user, questions)
        speakers = sorted({d.speaker for d in docs if d.speaker})[:2]
        blob = "x" * int(args.metadata_mb * 1_000_000)
        text = f"{' and '.join(speakers)} talked about the support group, painting, camping and their plans."
        added = _attempt(lambda: len(mem.add(text, user_id=user, session_id="huge", metadata={"blob": blob})))
        added.pop("value", None)
        after = _recall_ms(mem, user, questions)
        result["metadata"] = {"mb": args.metadata_mb, "add": added, "recall_before": before, "recall_after": after,
                              "slowdown": round(after["p50_ms"] / max(before["p50_ms"], 1e-9), 1)}
        del blob

        long_text = _long_text(args.text_chars)
        got = _attempt(lambda: mem.add(long_text, user_id="long", session_id="s1"))
        stored = got.pop("value", None)
        info: dict[str, Any] = {"chars": len(long_text), **got}
        if stored:
            stats = mem.stats(user_id="long")
            info.update(entities=stats.get("entities"), mentions=stats.get("edges_mentions"),
                        related=stats.get("edges_related"), ripple_metadata=stored[0].metadata.get("ripple"))
        result["long_text"] = info
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{args.label}.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0
