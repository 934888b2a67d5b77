"""An int8 copy of a transformer for one-text forward passes (a recall's query).

Why: a recall encodes its query before anything else can start, so the
encoder's time is on every recall's critical path (with all-MiniLM-L6-v2 on
the 2-core benchmark machine, 8-10 ms of a 100k-memory recall's ~16 ms flat
search and ~30 ms ripple recall).  A short query is a handful of tokens, so
its forward pass is bound by reading the weights, not by arithmetic; int8
weights and int8 matrix products (torch's dynamic quantisation, fbgemm's VNNI
kernels on x86) run it ~3x faster than the bf16 trace (1.7 against 5.6 ms for
the transformer of a 10-token question, one thread).

Plain dynamic quantisation moves MiniLM's vectors too much (sentence-vector
cosine to fp32 down to .97 on LoCoMo's questions): BERT's activations have a
few channels far larger than the rest, and one int8 scale per activation
tensor wastes its range on them.  SmoothQuant (Xiao et al., 2023) moves that
range into the weights: each linear layer's input channel ``j`` is divided by
``s_j = max|X_j|^a / max|W_j|^(1-a)`` and the weight's column ``j`` multiplied
by it, which leaves the product unchanged in exact arithmetic and evens out
the activations before they are quantised.  The channel maxima ``max|X_j|``
come from a few dozen calibration sentences run through the model here
(English and Chinese chat, plain statements, questions, numbers and names:
:data:`CALIBRATION`).  With ``a`` = .75 the cosine of the query's sentence
vector to fp32 is .996 on average (min .985) over 300 LoCoMo questions, its
token vectors .995; ``a`` = .5 / .65 / .8 / .9 gave .967 / .994 / .996 / .994.

Only the query side uses this copy: stored memories keep the model's own
precision (:class:`ripple.embedding.SentenceTransformerEmbedder`), and the
copy is checked against the model before it is used.
"""

from __future__ import annotations

import copy
import warnings
from typing import TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:
    import torch

__all__ = ["ALPHA", "CALIBRATION", "int8_copy"]

ALPHA = 0.75
"""SmoothQuant's migration strength (see the module docstring for the others measured)."""

CALIBRATION: tuple[str, ...] = (
    "I moved to Chengdu last spring and I love the food there.",
    "Can you remind me when the dentist appointment is?",
    "The budget for the offsite is 15,000 euros.",
    "We went camping with the kids at the lake last weekend.",
    "What did Caroline say about the adoption agency?",
    "My sister just started her new job at a bank in Toronto.",
    "The deploy failed because the database migration timed out.",
    "How long has Melanie been practising pottery?",
    "Thanks! That sounds amazing, I'd love to see the photos.",
    "The Atlas go-live is May 2, and the review is at 10:30 on Thursday.",
    "Remember that I am allergic to peanuts.",
    "Did you finish reading that book about the history of Rome?",
    "yes",
    "ok see you tomorrow at 9",
    "Our team switched from Jira to Linear in March and it has been much smoother.",
    "Who owns the billing service now that Max has left?",
    "I've been painting a lot lately, mostly landscapes and sunsets.",
    "anything I should know before my trip?",
    "Headcount went up to 14 after the second round of hiring.",
    "What is the capital of Peru?",
    "我们下周三下午两点开会，记得带上报告。",
    "他昨天刚从北京出差回来，累坏了。",
    "这个项目的预算是五万块。",
    "我女儿今年上小学二年级了。",
    "你上次说的那家火锅店叫什么名字？",
    "例会改成周五下午两点了。",
    "I work at Initech as a data engineer, mostly on the ingestion pipelines.",
    "When did we decide to push the launch to June 20?",
)


def int8_copy(module: "torch.nn.Module", run: Callable[["torch.nn.Module", str], Any],
              texts: Sequence[str] = CALIBRATION, alpha: float = ALPHA) -> "torch.nn.Module":
    """A SmoothQuant-scaled, dynamically int8-quantised copy of ``module`` (which is not changed).

    ``run(module, text)`` runs one text through a module (the calibration);
    every ``torch.nn.Linear`` of the copy is smoothed and quantised with one
    int8 scale per output channel.  Raises whatever torch raises where its
    quantised engine is missing (the caller keeps the model as it is).
    """
    import torch
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    model = copy.deepcopy(module).float().eval()
    peaks = _input_peaks(model, run, texts)
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, torch.nn.Linear) and child in peaks:
                weight_peak = child.weight.detach().abs().amax(0).clamp(min=1e-5)
                scale = (peaks[child].clamp(min=1e-5) ** alpha / weight_peak ** (1.0 - alpha)).clamp(min=1e-5)
                child.weight.data.mul_(scale)
                wrap = _per_token if child.in_features > child.out_features else _smoothed
                setattr(parent, name, wrap(child, 1.0 / scale))
    with warnings.catch_warnings():  # (torch announces the move of this API to torchao on every call)
        warnings.simplefilter("ignore")
        return quantize_dynamic(model, {torch.nn.Linear: per_channel_dynamic_qconfig})


def _input_peaks(model: "torch.nn.Module", run: Callable[["torch.nn.Module", str], Any],
                 texts: Sequence[str]) -> "dict[torch.nn.Module, torch.Tensor]":
    """Per linear layer, the largest absolute value each input channel takes on ``texts``."""
    import torch

    peaks: dict[torch.nn.Module, torch.Tensor] = {}

    def record(layer: torch.nn.Module, inputs: tuple[torch.Tensor, ...], _output: torch.Tensor) -> None:
        x = inputs[0].detach().abs().reshape(-1, inputs[0].shape[-1]).amax(0)
        peaks[layer] = torch.maximum(peaks[layer], x) if layer in peaks else x

    hooks = [m.register_forward_hook(record) for m in model.modules() if isinstance(m, torch.nn.Linear)]
    try:
        with torch.no_grad():
            for text in texts:
                run(model, text)
    finally:
        for hook in hooks:
            hook.remove()
    return peaks


def _per_token(layer: "torch.nn.Linear", inverse: "torch.Tensor") -> "torch.nn.Module":
    import torch

    weight = layer.weight.detach()
    weight_scale = weight.abs().amax(1).clamp(min=1e-8) / 127.0
    bias = layer.bias.detach().clone() if layer.bias is not None else torch.zeros(layer.out_features)

    class PerToken(torch.nn.Module):
        """``layer(x / s)`` with int8 weights (a scale per output channel) and each token's row of ``x``
        quantised with its own scale (``torch._int_mm``: int8 products summed in int32)."""

        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("inverse", inverse.detach().clone())
            self.register_buffer("weight", torch.round(weight / weight_scale[:, None]).to(torch.int8).t().contiguous())
            self.register_buffer("weight_scale", weight_scale)
            self.register_buffer("bias", bias)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            rows = (x * self.inverse).reshape(-1, x.shape[-1])
            scale = rows.abs().amax(1, keepdim=True).clamp(min=1e-8) / 127.0
            products = torch._int_mm(torch.round(rows / scale).to(torch.int8), self.weight)
            y = products.to(torch.float32) * scale * self.weight_scale + self.bias
            return y.reshape(x.shape[:-1] + (y.shape[-1],))

    return PerToken()


def _smoothed(layer: "torch.nn.Linear", inverse: "torch.Tensor") -> "torch.nn.Module":
    import torch

    class Smoothed(torch.nn.Module):
        """``layer(x / s)``: the layer's weight columns were multiplied by ``s``."""

        def __init__(self) -> None:
            super().__init__()
            self.layer = layer
            self.register_buffer("inverse", inverse.detach().clone())

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.layer(x * self.inverse)

    return Smoothed()
