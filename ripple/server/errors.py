"""The wire form of ripple's errors: one table from the :mod:`ripple.errors` tree to HTTP.

Every error response of the HTTP API (and of the MCP server's HTTP transport)
has the body ``{"error": {"code": "...", "message": "..."}}``: a stable,
machine-readable ``code`` and a one-line ``message``, never a traceback.  The
same table runs backwards in the client (:func:`error_from_wire`), so a
``ripple recall --server`` answers with the same one-line error as a local one.

This module imports no web framework: the client side uses it without FastAPI.
"""

from __future__ import annotations

import json
from typing import Any

from ripple import errors as E

__all__ = ["WIRE", "status_and_code", "error_body", "error_from_wire", "one_line", "HTTP_CODES"]

# Most specific class first: the first ``isinstance`` match wins.
WIRE: tuple[tuple[type[E.RippleError], int, str], ...] = (
    (E.LimitExceeded, 413, "limit_exceeded"),
    (E.InvalidInput, 422, "invalid_input"),
    (E.MemoryNotFound, 404, "memory_not_found"),
    (E.UnknownUser, 404, "unknown_user"),
    (E.NotFound, 404, "not_found"),
    (E.StoreUnavailable, 503, "store_unavailable"),
    (E.SchemaError, 500, "schema_error"),
    (E.StoreDamaged, 500, "store_damaged"),
    (E.StoreError, 502, "store_error"),
    (E.ModelNotInstalled, 500, "model_not_installed"),
    (E.ExtractionError, 422, "extraction_error"),
    (E.VersionConflict, 409, "version_conflict"),
    (E.StepMismatch, 409, "step_mismatch"),
    (E.Conflict, 409, "conflict"),
    (E.PermissionDenied, 403, "permission_denied"),
    (E.ConfigError, 500, "config_error"),
    (E.RippleError, 500, "ripple_error"),
)

# Errors that come from HTTP itself rather than from ripple.
HTTP_CODES: dict[int, str] = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    411: "length_required",
    413: "request_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "too_many_requests",
    500: "internal_error",
    503: "not_ready",
}


def one_line(text: object, limit: int = 500) -> str:
    """A message on one line, cut to ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def status_and_code(exc: E.RippleError) -> tuple[int, str]:
    """The HTTP status and wire code of a ripple error."""
    for cls, status, code in WIRE:
        if isinstance(exc, cls):
            return status, code
    return 500, "ripple_error"  # pragma: no cover - RippleError is the last row


def error_body(code: str, message: str) -> bytes:
    """The JSON body of an error response."""
    return json.dumps({"error": {"code": code, "message": one_line(message)}}, ensure_ascii=False).encode("utf-8")


def error_from_wire(status: int, body: Any) -> E.RippleError:
    """The ripple error a server's error response stands for (client side).

    Unknown codes become a plain :class:`~ripple.RippleError`; a 5xx without a
    ripple code is a :class:`~ripple.StoreError`-free ``RippleError`` too, so
    callers can always catch ``RippleError``.
    """
    err = body.get("error", {}) if isinstance(body, dict) else {}
    code = str(err.get("code", HTTP_CODES.get(status, "error")))
    message = str(err.get("message", f"HTTP {status}"))
    for cls, _status, wire in WIRE:
        if wire == code:
            return cls(message)
    if code in ("invalid_request", "request_too_large", "bad_request"):
        return E.InvalidInput(message)
    return E.RippleError(f"{message} ({code}, HTTP {status})")
