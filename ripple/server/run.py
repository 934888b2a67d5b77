"""Run an ASGI app under uvicorn with graceful shutdown, as ``ripple serve`` and ``ripple mcp`` do.

SIGTERM or Ctrl-C: uvicorn stops accepting connections, lets in-flight
requests finish (up to ``graceful_timeout`` seconds), then runs the app's
shutdown, which waits for running writes and closes the memory.
"""

from __future__ import annotations

import logging
import math
import signal
import sys
from typing import Any

from .settings import ServerSettings

__all__ = ["serve_asgi", "configure_logging"]


def configure_logging(level: str) -> None:
    """One-line log records on stderr (stdout may be a protocol stream, as with MCP over stdio)."""
    logging.basicConfig(stream=sys.stderr, level=level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


async def serve_asgi(app: Any, settings: ServerSettings, *, log_level: str = "info") -> None:
    """Serve ``app`` until SIGTERM/SIGINT, then shut down gracefully."""
    import uvicorn

    config = uvicorn.Config(
        app, host=settings.host, port=settings.port, log_level=log_level, lifespan="on",
        timeout_graceful_shutdown=math.ceil(settings.graceful_timeout), server_header=False,
        log_config=None,  # keep configure_logging's one-line records
    )
    server = uvicorn.Server(config)
    # uvicorn re-raises the signal it shut down on once it is done; a no-op handler here
    # makes a graceful SIGTERM end the command with status 0 instead of killing it.
    handled = (signal.SIGTERM, signal.SIGINT)
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in handled}
    try:
        await server.serve()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
