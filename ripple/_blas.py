"""One BLAS thread while ripple's own numpy work runs.

Why: recall mixes two thread pools on the same cores: torch's OpenMP threads
(the encoder, the float16 vector scan) and numpy's OpenBLAS threads (MaxSim,
exact rescoring).  Each pool's idle threads keep spinning for a while after
their call, so the next call of the *other* pool finds its cores busy.  On the
2-core benchmark machine a 100k-memory float16 scan took 2.7 ms after a sleep
and 6.5 ms (p95 11.5) right after a small numpy matrix product; limiting
OpenBLAS to one thread during recall cut recall p50 from 41-43 to 33-35 ms
(same results).  The matrices ripple multiplies with numpy are small (a few
hundred rows), so one BLAS thread loses nothing.

The limit is process-wide (OpenBLAS has one thread count), so it is counted:
the first of several concurrent recalls sets it, the last one restores the
caller's setting.  A limit set from the main thread holds in every thread; with
OpenBLAS 0.3.31 a limit set from another thread did not take effect (it read
back 2), so recalls driven from worker threads may keep the contention:
nothing breaks, they are just not faster.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

__all__ = ["one_blas_thread"]

_lock = threading.Lock()
_depth = 0
_limiter: Any = None
_controller: Any = None


def _limit() -> Any:
    global _controller
    if _controller is None:
        import numpy  # noqa: F401  (loads its BLAS, so that the controller sees it)
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()  # ~1 ms: inspects the loaded libraries once
    return _controller.limit(limits=1, user_api="blas")


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with numpy's BLAS on one thread, then restore what was set before."""
    global _depth, _limiter
    with _lock:
        if _depth == 0:
            _limiter = _limit()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _limiter is not None:
                _limiter.restore_original_limits()
                _limiter = None
