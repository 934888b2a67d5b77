"""Extraction throughput on synthetic chat turns: ``python -m extractors.bench [-n 2000]``.

The write path extracts every stored turn, so texts/s bounds ingestion speed.
The corpus is :func:`extractors.testing.sample_turns` (LoCoMo-style
"Speaker: message" turns, nothing downloaded).  Model loading and warm-up are
excluded; each language is timed ``--repeat`` times and the median and best
runs are printed, because a shared machine makes single runs noisy.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from .base import Extractor
from .jieba_zh import JiebaExtractor
from .spacy_en import SpacyExtractor
from .testing import sample_turns


def measure(extractor: Extractor, texts: list[str], repeat: int = 3) -> list[float]:
    """texts/s of ``extractor.extract_many(texts)`` for each of ``repeat`` runs (after one warm-up)."""
    extractor.extract_many(texts[:100])
    rates: list[float] = []
    for _ in range(repeat):
        t = time.perf_counter()
        extractor.extract_many(texts)
        rates.append(len(texts) / (time.perf_counter() - t))
    return rates


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=2000, help="turns per language (default 2000)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--contentless-share", type=float, default=0.0, help="share of 'ok thanks' turns")
    args = ap.parse_args(argv)
    print(f"cpus={os.cpu_count()} load={os.getloadavg()[0]:.2f} n={args.n}")
    for lang, ex in (("en", SpacyExtractor(batch_size=args.batch_size)), ("zh", JiebaExtractor())):
        texts = sample_turns(args.n, lang, seed=1, contentless_share=args.contentless_share)
        chars = sum(map(len, texts)) / len(texts)
        rates = measure(ex, texts, args.repeat)
        print(
            f"{lang}: median {statistics.median(rates):7.0f} texts/s  best {max(rates):7.0f}  "
            f"({chars:.0f} chars/turn, runs: {', '.join(f'{r:.0f}' for r in rates)})"
        )


if __name__ == "__main__":
    main()
