"""A small synchronous client of ``ripple serve``, on the standard library only.

Used by ``ripple recall --server URL`` (or ``$RIPPLE_SERVER``): the request
goes to a running server, so the command loads no model and no torch, and
starts in a fraction of a second.  Answers are ripple's own models; error
responses become the same :mod:`ripple.errors` classes a local call raises.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from itertools import groupby
from typing import Any, Iterable, Mapping

from pydantic import Field, TypeAdapter
from pydantic_settings import BaseSettings, SettingsConfigDict

from ripple.errors import InvalidInput, RippleError, StoreUnavailable
from ripple.models import MemoryRecord, RecallResult

from .errors import error_from_wire

__all__ = ["ClientSettings", "RemoteMemory"]

_MEMORIES = TypeAdapter(list[MemoryRecord])


class ClientSettings(BaseSettings):
    """Where a client finds the server: ``RIPPLE_SERVER`` (URL) and ``RIPPLE_SERVER_TOKEN``."""

    model_config = SettingsConfigDict(env_prefix="RIPPLE_", extra="ignore")

    server: str | None = Field(None, description="URL of a running `ripple serve`, e.g. http://127.0.0.1:8420")
    server_token: str | None = None


class RemoteMemory:
    """The methods of :class:`ripple.Memory` that the CLI uses, answered by a server.

    Parameters
    ----------
    url:
        The server's base URL (``http://127.0.0.1:8420``).
    token:
        Bearer token, if the server has one.
    """

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 120.0) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise InvalidInput(f"server URL must be http(s)://host:port, not {url!r}")
        self.url = url.rstrip("/")
        self._token = token
        self._timeout = timeout

    # -- the API -------------------------------------------------------------------------------------
    def recall(self, query: str, *, user_id: str, k: int = 10, mode: str = "ripple", touch: bool = True,
               include_history: bool | None = None, explain: bool = True) -> RecallResult:
        body = {"query": query, "k": k, "mode": mode, "touch": touch, "include_history": include_history,
                "explain": explain}
        return RecallResult.model_validate(self._call("POST", self._user(user_id, "recall"), body))

    def add_many(self, items: Iterable[Mapping[str, Any]]) -> list[MemoryRecord]:
        """Store items; consecutive items of one user go in one request."""
        out: list[MemoryRecord] = []
        for user_id, group in groupby(items, key=lambda item: item.get("user_id")):
            if not isinstance(user_id, str) or not user_id.strip():
                raise InvalidInput("every item needs a non-empty user_id")
            batch = [{k: v for k, v in item.items() if k != "user_id"} for item in group]
            out.extend(_MEMORIES.validate_python(
                self._call("POST", self._user(user_id, "memories/batch"), {"items": batch})))
        return out

    def get_all(self, *, user_id: str, session_id: str | None = None, limit: int | None = None) -> list[MemoryRecord]:
        query = {k: v for k, v in (("session_id", session_id), ("limit", limit)) if v is not None}
        path = self._user(user_id, "memories") + (f"?{urllib.parse.urlencode(query)}" if query else "")
        return _MEMORIES.validate_python(self._call("GET", path))

    # -- transport -----------------------------------------------------------------------------------
    @staticmethod
    def _user(user_id: str, rest: str) -> str:
        if not isinstance(user_id, str) or not user_id.strip():
            raise InvalidInput("user_id must be a non-empty string")
        return f"/v1/users/{urllib.parse.quote(user_id, safe='')}/{rest}"

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body, ensure_ascii=False, default=str).encode("utf-8")
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self._token:
            request.add_header("Authorization", f"Bearer {self._token}")
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                payload = json.loads(raw)
            except ValueError:
                payload = None
            raise error_from_wire(exc.code, payload) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise StoreUnavailable(f"cannot reach the ripple server at {self.url}: {reason}") from None
        try:
            return json.loads(raw) if raw else None
        except ValueError as exc:
            raise RippleError(f"the server at {self.url} answered something that is not JSON") from exc
