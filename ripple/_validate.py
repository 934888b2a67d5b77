"""Checks on what enters a public call: one-line :class:`~ripple.InvalidInput` errors, nothing written."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from pydantic import ValidationError

from .errors import InvalidInput
from .models import AddItem
from .recall.recipes import MODES

__all__ = ["items", "user", "query", "memory_id", "first_error", "MAX_K", "MAX_QUERY_CHARS"]

MAX_K = 1000
MAX_QUERY_CHARS = 10_000


def first_error(exc: ValidationError) -> str:
    """The first of pydantic's errors, in one line."""
    err = exc.errors()[0]
    loc = ".".join(str(x) for x in err.get("loc", ()))
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    return f"{loc}: {msg}" if loc and not msg.startswith(loc) else msg


def items(raw: Iterable[Mapping[str, Any] | AddItem]) -> list[AddItem]:
    """Validated items of ``add_many`` (all of them, before anything is written)."""
    given = list(raw)
    out: list[AddItem] = []
    for n, r in enumerate(given):
        where = f"item {n}: " if len(given) > 1 else ""
        if isinstance(r, AddItem):
            out.append(r)
            continue
        if not isinstance(r, Mapping):
            raise InvalidInput(f"{where}an item must be a mapping with text and user_id, not {type(r).__name__}")
        try:
            out.append(AddItem.model_validate(dict(r)))
        except ValidationError as exc:
            raise InvalidInput(f"{where}{first_error(exc)}") from exc
    return out


def user(user_id: Any) -> str:
    if not isinstance(user_id, str) or not user_id.strip():
        raise InvalidInput("user_id must be a non-empty string")
    return user_id


def memory_id(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidInput("memory_id must be a non-empty string")
    return value


def relevance_floor(value: Any) -> float:
    """``min_relevance``: None (no floor) or a number in [0, 1]."""
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        raise InvalidInput(f"min_relevance must be None or a number between 0 and 1, not {value!r}")
    return float(value)


def query(text: Any, k: Any, mode: Any) -> None:
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("query must be a non-empty string")
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidInput(f"query is longer than {MAX_QUERY_CHARS:,} characters")
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
        raise InvalidInput(f"k must be an integer between 1 and {MAX_K}")
    if mode not in MODES:
        raise InvalidInput(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
