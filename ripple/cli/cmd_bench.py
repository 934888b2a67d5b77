"""``ripple bench``: a thin alias of ``python -m benchmarks``."""

from __future__ import annotations

import argparse

from ripple.settings import RippleSettings


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("rest", nargs=argparse.REMAINDER, help="arguments for python -m benchmarks")


def run(args: argparse.Namespace, settings: RippleSettings) -> int:
    from benchmarks.__main__ import main

    return int(main(args.rest) or 0)
