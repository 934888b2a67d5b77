"""The embedded store's in-memory vector index: one user's rows, searched by brute force.

Why brute force: it is exact, needs no index to build or tune, and one
matrix-vector product over a user's vectors is fast enough at the sizes one
person's memory reaches (50k rows ~4 ms).  What grows with size is memory
bandwidth: at a million 384-d rows a float32 scan reads 1.5 GB per query
(~75-125 ms on 2 cores).  Above :data:`HALF_PRECISION_MIN_ROWS` rows the index
also keeps a float16 copy, scans that with ``torch.mv`` (half the bytes: ~34 ms
at 1M) to pick a candidate pool, and rescores the pool exactly in float32.  A
float16 dot product of unit vectors is off by ~1e-4 at most, so a pool a few
times larger than ``k`` holds the exact top ``k`` (a test checks the two paths
agree).  That is for one query (a recall): a search of many at once (the write path's candidate
search, a batch of new memories) scans in float32 whatever the size, one matrix product reading the
rows once for all of them (at 100k rows 2.5 ms CPU per query against 8.6-18.9 for the float16 scan).

Rows grow in place: appends go into spare capacity that doubles when full, so
a batch written to a loaded index costs its own size, not the index's.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Iterable, Sequence

from ripple.errors import StoreError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["VectorIndex", "HALF_PRECISION_MIN_ROWS"]

HALF_PRECISION_MIN_ROWS = 50_000
"""Indexes with at least this many rows are scanned in float16 and rescored in float32."""

#: Searches of at least this many query vectors scan in float32 whatever the size (see :meth:`VectorIndex.search`).
BATCH_EXACT_MIN_QUERIES = 8
#: Scores one float32 scan holds at most (64 MB): a batch over a large index is scanned some queries at a time.
EXACT_SCAN_SCORES = 1 << 24

_MIN_POOL = 256  # the float16 scan keeps max(4 k, k + 256) candidates for exact rescoring


class VectorIndex:
    """Unit-normalised float32 rows with an id and a status each, searched by inner product.

    ``statuses`` lets a search skip rows (say superseded memories) without
    rebuilding anything: each row carries a small status code and the search
    masks the scores.  Row order is insertion order and never changes.
    """

    __slots__ = ("ids", "index", "_buf", "_half", "_codes", "_code_of", "_names", "counts", "_n")

    def __init__(self, dim: int, capacity: int = 0) -> None:
        import numpy as np

        self.ids: list[str] = []
        self.index: dict[str, int] = {}
        self._buf = np.empty((max(capacity, 16), dim), dtype=np.float32)
        self._half: np.ndarray | None = None  # float16 twin of _buf, kept once the index is large
        self._codes = np.empty(self._buf.shape[0], dtype=np.int16)
        self._code_of: dict[str, int] = {}
        self._names: list[str] = []
        # rows per status, kept in step: a search asks whether any row must be masked at all
        self.counts: Counter[str] = Counter()
        self._n = 0

    @classmethod
    def from_rows(cls, rows: Sequence[tuple[str, bytes, str]]) -> "VectorIndex | None":
        """An index over ``(id, float32 vector bytes, status)`` rows; ``None`` when there are none."""
        import numpy as np

        if not rows:
            return None
        first = np.frombuffer(rows[0][1], dtype=np.float32)
        index = cls(first.shape[0], capacity=len(rows))
        index.upsert(rows)
        return index

    @classmethod
    def from_matrix(cls, ids: Sequence[str], matrix: "np.ndarray", statuses: Sequence[str]) -> "VectorIndex | None":
        """An index over ``ids`` whose vectors are the rows of ``matrix`` (float32), as :meth:`from_rows`
        builds it but without a conversion per row (a near cache loading a 100k-memory user); ``None``
        when there are none."""
        import numpy as np

        n = len(ids)
        if n == 0:
            return None
        m = np.ascontiguousarray(matrix, dtype=np.float32)
        if m.ndim != 2 or m.shape[0] != n or len(statuses) != n:
            raise StoreError(f"{n} ids, {len(statuses)} statuses and vectors of shape {m.shape} do not match")
        if len(set(ids)) != n:  # (a repeated id replaces its earlier row, as upsert does)
            return cls.from_rows([(i, m[row].tobytes(), s) for row, (i, s) in enumerate(zip(ids, statuses))])
        index = cls(m.shape[1], capacity=n)
        index._buf[:n] = m
        index.ids = list(ids)
        index.index = {i: row for row, i in enumerate(index.ids)}
        index._codes[:n] = [index._code(s) for s in statuses]
        index.counts.update(statuses)
        index._n = n
        return index

    def __len__(self) -> int:
        return self._n

    @property
    def dim(self) -> int:
        return int(self._buf.shape[1])

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays, spare capacity included, and of the float16 copy a search of this many
        rows keeps (counted before the first search makes it)."""
        half = self._buf.shape[0] * self.dim * 2 if self._half is not None or self._n >= HALF_PRECISION_MIN_ROWS else 0
        return int(self._buf.nbytes + self._codes.nbytes + half)

    @property
    def matrix(self) -> "np.ndarray":
        """The live float32 rows (a view; do not keep it across writes)."""
        return self._buf[: self._n]

    def _code(self, status: str) -> int:
        code = self._code_of.get(status)
        if code is None:
            code = self._code_of[status] = len(self._names)
            self._names.append(status)
        return code

    def _grow(self, need: int) -> None:
        import numpy as np

        cap = self._buf.shape[0]
        if need <= cap:
            return
        cap = max(need, 2 * cap)
        buf = np.empty((cap, self.dim), dtype=np.float32)
        buf[: self._n] = self._buf[: self._n]
        self._buf = buf
        codes = np.empty(cap, dtype=np.int16)
        codes[: self._n] = self._codes[: self._n]
        self._codes = codes
        if self._half is not None:
            half = np.empty((cap, self.dim), dtype=np.float16)
            half[: self._n] = self._half[: self._n]
            self._half = half

    def upsert(self, rows: Iterable[tuple[str, bytes, str]]) -> None:
        """Replace the vector and status of known ids, append the others."""
        import numpy as np

        rows = list(rows)
        self._grow(self._n + len(rows))
        for rid, blob, status in rows:
            vec = np.frombuffer(blob, dtype=np.float32)
            if vec.shape[0] != self.dim:
                raise StoreError(f"vector of {rid!r} has {vec.shape[0]} dimensions, the index has {self.dim}")
            row = self.index.get(rid)
            if row is None:
                row = self.index[rid] = self._n
                self.ids.append(rid)
                self._n += 1
            else:
                self.counts[self._names[self._codes[row]]] -= 1
            self._buf[row] = vec
            if self._half is not None:
                self._half[row] = vec
            self._codes[row] = self._code(status)
            self.counts[status] += 1

    def set_status(self, rid: str, status: str) -> None:
        """Change the status of a known row (unknown ids are ignored)."""
        row = self.index.get(rid)
        if row is None:
            return
        self.counts[self._names[self._codes[row]]] -= 1
        self._codes[row] = self._code(status)
        self.counts[status] += 1

    def rows(self) -> Iterable[tuple[str, str]]:
        """``(id, status)`` of every row, in row order."""
        return ((rid, self._names[self._codes[i]]) for i, rid in enumerate(self.ids))

    def only(self, allowed: set[str]) -> bool:
        """Whether every row has one of the ``allowed`` statuses (no mask needed)."""
        return all(n == 0 or s in allowed for s, n in self.counts.items())

    def _mask(self, allowed: set[str] | None) -> "np.ndarray | None":
        import numpy as np

        if allowed is None or self.only(allowed):
            return None
        codes = [c for s, c in self._code_of.items() if s in allowed]
        return np.isin(self._codes[: self._n], codes)

    def checked(self, vector: object) -> "np.ndarray":
        """``vector`` as float32, or a clear error when its dimension is not the index's."""
        import numpy as np

        vec = np.asarray(vector, dtype=np.float32).reshape(-1)
        if vec.shape[0] != self.dim:
            raise StoreError(
                f"query vector has {vec.shape[0]} dimensions, the stored vectors have {self.dim}"
                " (was the store written with another embedder?)"
            )
        return vec

    def search(
        self, queries: Sequence[object], k: int, *, statuses: set[str] | None = None, exact: bool | None = None
    ) -> list[list[tuple[str, float]]]:
        """Per query vector, the ``k`` rows of highest inner product as ``(id, score)``, best first.

        Rows whose status is not in ``statuses`` never count (``None``: all
        rows).  ``exact`` forces (``True``) or forbids (``False``) the float32
        scan; by default it is used below :data:`HALF_PRECISION_MIN_ROWS` rows.
        """
        qs = [self.checked(q) for q in queries]
        if k <= 0 or not self._n or not qs:
            return [[] for _ in qs]
        mask = self._mask(statuses)
        if exact is None:
            # many queries at once (the write path's candidate search: a batch of new memories) share one
            # float32 matrix product, which reads the rows once for all of them; the float16 scan reads them
            # once per query (measured 2.5 vs 8.6-18.9 ms CPU per query at 100k rows, 256 queries)
            exact = self._n < HALF_PRECISION_MIN_ROWS or len(qs) >= BATCH_EXACT_MIN_QUERIES
        if not exact:
            half = self._half_scan()
            if half is not None:
                return [self._search_half(half, q, k, mask) for q in qs]
        return self._search_exact(qs, k, mask)

    def _search_exact(self, qs: list["np.ndarray"], k: int, mask: "np.ndarray | None") -> list[list[tuple[str, float]]]:
        """The float32 scan, :data:`EXACT_SCAN_SCORES` scores at a time (a write batch of 256 new memories
        over 50k rows is one scan, as it always was; over 1M rows, sixteen)."""
        step = max(1, EXACT_SCAN_SCORES // self._n)
        return [hits for n in range(0, len(qs), step) for hits in self._scan_exact(qs[n:n + step], k, mask)]

    def _scan_exact(self, qs: list["np.ndarray"], k: int, mask: "np.ndarray | None") -> list[list[tuple[str, float]]]:
        import numpy as np

        scores = np.vstack(qs) @ self.matrix.T
        if mask is not None:
            scores[:, ~mask] = -np.inf
        return [self._best(row, np.arange(self._n), k) for row in scores]

    def _best(self, scores: "np.ndarray", rows: "np.ndarray", k: int) -> list[tuple[str, float]]:
        """The ``k`` best of ``scores`` (for ``rows``), best first; -inf never counts."""
        import numpy as np

        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(self.ids[int(rows[i])], float(scores[i])) for i in top if np.isfinite(scores[i])]

    def _half_scan(self) -> "object | None":
        """The float16 rows as a torch tensor (built on first use), or ``None`` without torch."""
        try:
            import torch
        except ImportError:  # torch comes with sentence-transformers; without it, scan in float32
            return None
        import numpy as np

        if self._half is None:
            self._half = np.empty(self._buf.shape, dtype=np.float16)
            self._half[: self._n] = self._buf[: self._n]
        return torch.from_numpy(self._half[: self._n])

    def _search_half(self, half: object, q: "np.ndarray", k: int, mask: "np.ndarray | None") -> list[tuple[str, float]]:
        import numpy as np
        import torch

        approx = torch.mv(half, torch.from_numpy(q.astype(np.float16)))
        if mask is not None:
            approx.masked_fill_(torch.from_numpy(~mask), float("-inf"))
        pool = min(self._n, max(4 * k, k + _MIN_POOL))
        rows = torch.topk(approx, pool, sorted=False).indices.numpy()
        if mask is not None:
            rows = rows[mask[rows]]
        if not len(rows):
            return []
        exact = self._buf[rows] @ q
        return self._best(exact, rows, k)
