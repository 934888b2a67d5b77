"""Two plain ASGI middlewares shared by the HTTP API and the MCP server's HTTP transport.

* :class:`BearerAuth`: ``Authorization: Bearer <token>`` on every path but the
  open ones (health checks, the API schema), compared in constant time.
* :class:`BodyLimit`: a request body larger than the limit gets 413, whether it
  announces its length (refused before it is read) or arrives chunked (refused
  when the count passes the limit).

They are ASGI rather than framework middleware so that one implementation
guards both apps, and so that streamed responses pass through untouched.
"""

from __future__ import annotations

import secrets
from typing import Any, Awaitable, Callable, Iterable, MutableMapping

from starlette.exceptions import HTTPException

from .errors import error_body

__all__ = ["BearerAuth", "BodyLimit", "BodyTooLarge", "send_error"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def send_error(send: Send, status: int, code: str, message: str,
                     headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    """Send a complete JSON error response."""
    body = error_body(code, message)
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    *headers],
    })
    await send({"type": "http.response.body", "body": body})


class BearerAuth:
    """Require ``Authorization: Bearer <token>`` on every HTTP request outside ``open_paths``."""

    def __init__(self, app: ASGIApp, token: str, *, open_paths: Iterable[str] = ()) -> None:
        if not token:
            raise ValueError("BearerAuth needs a non-empty token")
        self.app = app
        self._token = token.encode("utf-8")
        self._open = tuple(open_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path", "").startswith(self._open):
            await self.app(scope, receive, send)
            return
        given = b""
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                scheme, _, credential = value.partition(b" ")
                if scheme.lower() == b"bearer":
                    given = credential.strip()
                break
        if not given or not secrets.compare_digest(given, self._token):
            await send_error(send, 401, "unauthorized",
                             "missing bearer token" if not given else "wrong bearer token",
                             [(b"www-authenticate", b'Bearer realm="ripple"')])
            return
        await self.app(scope, receive, send)


class BodyTooLarge(HTTPException):
    """Raised from ``receive`` when a chunked body passes the limit (frameworks map it to 413)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body is larger than {limit} bytes")


class BodyLimit:
    """Answer 413 to request bodies larger than ``max_bytes``."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await send_error(send, 400, "bad_request", "content-length is not a number")
                    return
                if declared > self.max_bytes:
                    await send_error(send, 413, "request_too_large",
                                     f"request body of {declared} bytes is larger than {self.max_bytes} bytes")
                    return
        seen = 0
        started = False

        async def counted_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except BodyTooLarge as exc:
            if started:
                raise
            await send_error(send, 413, "request_too_large", str(exc.detail))
