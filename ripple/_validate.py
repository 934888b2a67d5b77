"""Checks on what enters a public call: one-line :class:`~ripple.InvalidInput` errors, nothing written.

Two layers.  The *field checks* here (``text``, ``identifier``, ``json_tree``,
``timestamp``, ``utc``) judge one value and raise :class:`~ripple.InvalidInput`
or, past a :class:`~ripple.Limits` size, :class:`~ripple.LimitExceeded`; the
pydantic models of :mod:`ripple.models` call them from their validators (so an
``add`` and an import judge a text the same way), and the *call checks*
(``items``, ``user``, ``query``, ...) validate a whole call's arguments and turn
a pydantic error back into the ripple error it carries.

Everything a store cannot hold is refused here rather than failing inside
it: lone surrogates (an emoji cut in half; UTF-8 cannot encode them),
non-finite numbers, datetimes that overflow in UTC, JSON nested deeper than a
decoder can recurse.
"""

from __future__ import annotations

import itertools
import json
import math
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from pydantic import ValidationError

from .errors import InvalidInput, LimitExceeded
from .limits import Limits, exceeded
from .recall.recipes import MODES

if TYPE_CHECKING:
    from .models import AddItem

__all__ = ["items", "item", "user", "query", "memory_id", "session", "limit", "when", "from_validation",
           "text", "identifier", "json_tree", "json_value", "short", "timestamp", "utc", "unicode", "MIN_TIMESTAMP", "MAX_TIMESTAMP",
           "DEFAULT_LIMITS", "MAX_LIMIT", "json_record", "relevance_floor"]

DEFAULT_LIMITS = Limits()
#: Event times ripple stores: every instant whose UTC date lies in years 1..9999 (what ``datetime`` holds).
MIN_TIMESTAMP = datetime(1, 1, 1, tzinfo=timezone.utc).timestamp()
MAX_TIMESTAMP = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc).timestamp()
#: Largest ``limit=`` of a listing (SQLite and Neo4j take 64-bit integers; this leaves room).
MAX_LIMIT = 2**31 - 1


# -------------------------------------------------------------------------------------------- field checks


def unicode(value: str, what: str) -> str:
    """``value`` if UTF-8 can encode it; a lone surrogate (an emoji cut in half) is refused."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        ch = value[exc.start]
        why = (f"an undecodable byte {ord(ch) - 0xDC00:#04x}: was the input not UTF-8?" if "\udc80" <= ch <= "\udcff"
               else "not valid Unicode: was an emoji cut in half?")
        raise InvalidInput(f"{what} has a lone surrogate {ch!r} at character {exc.start} ({why})") from None
    return value


def text(value: Any, limits: Limits, what: str = "text") -> str:
    """A memory's text: a non-blank string of valid Unicode within ``limits.text_chars``."""
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string, not {type(value).__name__}")
    if len(value) > limits.text_chars:
        raise exceeded("text_chars", f"{what} length in characters", len(value), limits.text_chars)
    if not value.strip():
        raise InvalidInput(f"{what} is empty")
    return unicode(value, what)


def identifier(value: Any, what: str, limit: str, limits: Limits) -> str:
    """An id (user, session, agent, memory): a non-blank string of valid Unicode within its limit."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{what} must be a non-empty string")
    maximum = getattr(limits, limit)
    if len(value) > maximum:
        raise exceeded(limit, f"{what} length in characters", len(value), maximum)
    return unicode(value, what)


def short(value: Any, what: str, maximum: int) -> str:
    """A short label (kind, entity name, predicate): a string of valid Unicode of at most ``maximum``."""
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string, not {type(value).__name__}")
    if len(value) > maximum:
        raise InvalidInput(f"{what} has {len(value):,} characters, more than {maximum:,}")
    return unicode(value, what)


def json_tree(value: Any, what: str, limits: Limits) -> None:
    """Metadata ripple can store: a JSON object within ``limits.metadata_depth`` and ``metadata_bytes``."""
    if not isinstance(value, dict):
        raise InvalidInput(f"{what} must be a JSON object (a dict), not {type(value).__name__}")
    json_value(value, what, max_depth=limits.metadata_depth, max_bytes=limits.metadata_bytes,
               depth_limit="metadata_depth", bytes_limit="metadata_bytes")


def json_value(value: Any, what: str, *, max_depth: int, max_bytes: int, depth_limit: str | None = None,
               bytes_limit: str | None = None) -> str:
    """A JSON value ripple can store, encoded: str keys, finite numbers, valid Unicode, within a depth and size.

    The walk is iterative (a value nested 1,000 deep is refused, not a
    ``RecursionError``) and stops as soon as the strings seen pass the byte
    limit (50 MB of metadata is refused without encoding it).  ``depth_limit``
    and ``bytes_limit`` name the :class:`~ripple.Limits` fields the error
    names (none: a fixed cap).
    """
    def over(limit: str | None, quantity: str, got: int, maximum: int) -> LimitExceeded:
        if limit is not None:
            return exceeded(limit, f"{what} {quantity}", got, maximum)
        return LimitExceeded(f"{what} {quantity} is {got:,}, over the limit of {maximum:,}", value=got, maximum=maximum)

    stack: list[tuple[Any, int]] = [(value, 1)]
    floor = 0  # a lower bound of the encoded size, in bytes
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (dict, list)):
            if depth > max_depth:
                raise over(depth_limit, "nesting depth", depth, max_depth)
            floor += 2
            if isinstance(v, dict):
                for k, x in v.items():
                    if not isinstance(k, str):
                        raise InvalidInput(f"{what} keys must be strings, not {type(k).__name__} ({k!r})")
                    floor += len(k) + 3
                    unicode(k, f"{what} key")
                    stack.append((x, depth + 1))
            else:
                stack.extend((x, depth + 1) for x in v)
        elif isinstance(v, str):
            floor += len(v) + 2
            if floor <= max_bytes:  # (past the limit: refused below, without encoding it)
                unicode(v, f"{what} value")
        elif v is None or isinstance(v, (bool, int)):
            floor += 1
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise InvalidInput(f"{what} holds {v!r}; JSON numbers must be finite")
            floor += 1
        else:
            raise InvalidInput(f"{what} holds a {type(v).__name__}; only JSON values are stored"
                               " (dict with str keys, list, str, int, float, bool, None)")
        if floor > max_bytes:
            raise over(bytes_limit, "size in bytes (at least)", floor, max_bytes)
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError as exc:  # e.g. an int of more than 4,300 digits
        raise InvalidInput(f"{what} cannot be encoded as JSON: {exc}") from None
    size = len(encoded.encode("utf-8"))
    if size > max_bytes:
        raise over(bytes_limit, "size in bytes", size, max_bytes)
    return encoded


def timestamp(value: Any, what: str) -> float:
    """A stored time (POSIX seconds): a finite number whose UTC date is in years 1..9999."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput(f"{what} must be a number of seconds, not {type(value).__name__}")
    try:
        seconds = float(value)
    except OverflowError:
        seconds = math.inf
    if not MIN_TIMESTAMP <= seconds <= MAX_TIMESTAMP:  # (NaN fails both comparisons)
        raise InvalidInput(f"{what} is {value!r}, outside years 1..9999 (POSIX seconds)")
    return seconds


def utc(value: datetime, what: str) -> datetime:
    """A datetime in UTC (naive ones are taken as UTC), refused when it leaves years 1..9999 in UTC."""
    if not isinstance(value, datetime):
        raise InvalidInput(f"{what} must be a datetime, not {type(value).__name__}")
    try:
        out = value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)
        out.timestamp()
    except (OverflowError, ValueError, OSError) as exc:
        raise InvalidInput(f"{what} {value.isoformat()} is outside years 1..9999 in UTC ({exc})") from None
    return out


def json_record(raw: Any) -> Mapping[str, Any]:
    """A record given as a mapping, or as one JSON line (``str`` or UTF-8 ``bytes``) holding an object
    (a line of ``add --file`` or of an export being imported)."""
    if isinstance(raw, (bytes, bytearray)):
        try:
            raw = bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"not UTF-8 (byte {raw[exc.start]:#04x} at {exc.start})") from None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise InvalidInput(f"not JSON ({str(exc)[:120]})") from None
    if not isinstance(raw, Mapping):
        raise InvalidInput(f"a record must be a JSON object, not {type(raw).__name__}")
    return raw


# -------------------------------------------------------------------------------------------- call checks


def from_validation(exc: ValidationError, where: str = "") -> InvalidInput:
    """The ripple error a pydantic error stands for, in one line, prefixed with ``where``.

    A field check's own error (``ctx.error``) keeps its class, so a limit is
    still a :class:`~ripple.LimitExceeded`; pydantic's own wording is used
    for type errors ("Input should be a valid string").
    """
    err = exc.errors()[0]
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, InvalidInput):  # a field check's message names the field itself
        loc, msg = "", str(cause)
    else:
        loc, msg = ".".join(str(x) for x in err.get("loc", ())), str(err.get("msg", "invalid"))
    msg = msg.removeprefix("Value error, ")
    prefix = ": ".join(p for p in (where, loc) if p)
    line = f"{prefix}: {msg}" if prefix else msg
    if isinstance(cause, LimitExceeded):
        return LimitExceeded(line, limit=cause.limit, value=cause.value, maximum=cause.maximum)
    return InvalidInput(line)


def item(raw: "Mapping[str, Any] | AddItem", limits: Limits, where: str) -> "AddItem":
    """One validated item of ``add_many`` (an :class:`AddItem` is checked again, against ``limits``)."""
    from .models import AddItem

    if not isinstance(raw, (Mapping, AddItem)):
        raise InvalidInput(f"{where or 'an item'} must be a mapping with text and user_id, not {type(raw).__name__}")
    try:
        return AddItem.model_validate(raw if isinstance(raw, AddItem) else dict(raw), context={"limits": limits})
    except ValidationError as exc:
        raise from_validation(exc, where) from None


def items(raw: "Iterable[Mapping[str, Any] | AddItem]", limits: Limits = DEFAULT_LIMITS) -> "list[AddItem]":
    """Validated items of ``add_many`` (all of them, before anything is written)."""
    if isinstance(raw, (str, bytes, Mapping)) or not isinstance(raw, Iterable):
        raise InvalidInput(f"items must be a list (or iterable) of mappings, not {type(raw).__name__}")
    given = list(itertools.islice(raw, limits.batch_items + 1))  # (an endless iterable is refused too)
    if len(given) > limits.batch_items:
        raise exceeded("batch_items", "items in one add_many call (at least)", len(given), limits.batch_items)
    # A single item's error needs no "item 0: " (``ripple add ""`` says "text is empty").
    return [item(r, limits, f"item {n}" if len(given) > 1 else "") for n, r in enumerate(given)]


def user(user_id: Any, limits: Limits = DEFAULT_LIMITS) -> str:
    return identifier(user_id, "user_id", "user_id_chars", limits)


def memory_id(value: Any, limits: Limits = DEFAULT_LIMITS) -> str:
    return identifier(value, "memory_id", "memory_id_chars", limits)


def session(value: Any, limits: Limits = DEFAULT_LIMITS) -> str | None:
    return None if value is None else identifier(value, "session_id", "session_id_chars", limits)


def limit(value: Any) -> int | None:
    """A listing's ``limit=``: None (all) or an integer 0..2**31-1."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_LIMIT:
        raise InvalidInput(f"limit must be None or an integer between 0 and {MAX_LIMIT:,}, not {value!r}")
    return value


def when(value: Any, what: str) -> datetime | None:
    """An optional datetime argument (``now=``), in UTC."""
    return None if value is None else utc(value, what)


def relevance_floor(value: Any) -> float:
    """``min_relevance``: None (no floor) or a number in [0, 1]."""
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        raise InvalidInput(f"min_relevance must be None or a number between 0 and 1, not {value!r}")
    return float(value)


def query(text_: Any, k: Any, mode: Any, limits: Limits = DEFAULT_LIMITS) -> None:
    if not isinstance(text_, str) or not text_.strip():
        raise InvalidInput("query must be a non-empty string")
    if len(text_) > limits.query_chars:
        raise exceeded("query_chars", "query length in characters", len(text_), limits.query_chars)
    unicode(text_, "query")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise InvalidInput(f"k must be an integer between 1 and {limits.k}, not {k!r}")
    if k > limits.k:
        raise exceeded("k", "k", k, limits.k)
    if not isinstance(mode, str) or mode not in MODES:
        raise InvalidInput(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
