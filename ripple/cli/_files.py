"""Files the commands read and write, with one-line :class:`~ripple.InvalidInput` errors.

A missing file, a folder where a file was meant, a file that is not UTF-8 or
a line that is not a JSON object is a mistake of the command line, not a
crash: the command says which file (and line) in one line and exits 2.
"""

from __future__ import annotations

import sys
from typing import IO, Any, BinaryIO, Iterator

from ripple.errors import InvalidInput

__all__ = ["open_input", "open_output", "json_objects"]


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def open_input(path: str) -> BinaryIO:
    """``path`` opened for reading bytes (``-``: stdin)."""
    if path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {_why(exc)}") from None


def open_output(path: str) -> IO[str]:
    """``path`` opened for writing UTF-8 text (``-``: stdout)."""
    if path == "-":
        return sys.stdout
    try:
        return open(path, "w", encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"cannot write {path}: {_why(exc)}") from None


def json_objects(stream: BinaryIO, name: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` of each non-blank JSON line; the first bad line raises, naming it."""
    from ripple._validate import json_record

    for n, raw in enumerate(stream, start=1):
        if not raw.strip():
            continue
        try:
            yield n, dict(json_record(raw))
        except InvalidInput as exc:
            raise InvalidInput(f"{name}:{n}: {exc}") from None
