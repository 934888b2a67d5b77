"""Benchmark harness for ripple: datasets, methods, raw runs, metrics and reports.

The harness follows the ann-benchmarks pattern (see ``STYLE.md`` section 10):

* :mod:`benchmarks.datasets` loads a :class:`~benchmarks.datasets.Dataset`
  (documents + queries with gold document ids);
* :mod:`benchmarks.methods` wraps each system under test behind two calls,
  ``index(dataset)`` and ``recall(query, k) -> ranked ids``;
* :mod:`benchmarks.run` stores the *raw* per-query rankings and latencies as
  JSONL, one file per (dataset, method), with a header row describing the run;
* :mod:`benchmarks.metrics` is a registry of metric functions computed from
  those raw rankings, so a new metric never needs a rerun;
* :mod:`benchmarks.report` and :mod:`benchmarks.plot` only read result files.

Command line: ``python -m benchmarks run ...`` and ``python -m benchmarks report ...``.
"""

from __future__ import annotations
