"""``ripple mcp``: serve one user's memory to MCP clients, on stdio or streamable HTTP."""

from __future__ import annotations

import argparse
import asyncio

from ripple.settings import RippleSettings
from ripple.server.settings import ServerSettings, check_bind

_PORT = 8421


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--user", "-u", default=None, help="whose memory this server serves (default: $RIPPLE_USER or 'default')")
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                   help="stdio (a desktop or IDE client starts this command) or streamable HTTP at /mcp")
    ServerSettings.register_flags(p, port=_PORT)


def run(args: argparse.Namespace, settings: RippleSettings) -> int:
    import os

    from ripple.server import require_extra

    user = args.user or os.environ.get("RIPPLE_USER") or "default"
    listen = ServerSettings.from_flags(args, port=_PORT)
    if args.transport == "http":
        check_bind(listen.host, listen.token)
    require_extra(("mcp",) + (("uvicorn",) if args.transport == "http" else ()), "mcp", "ripple mcp")
    asyncio.run(_serve(settings, listen, args, user))
    return 0


async def _serve(settings: RippleSettings, listen: ServerSettings, args: argparse.Namespace, user: str) -> None:
    from ripple import AsyncMemory
    from ripple.server.warm import warm_up
    from ripple.server.mcp import http_app, serve_stdio
    from ripple.server.run import configure_logging, serve_asgi

    configure_logging(args.log_level)  # stderr: on stdio, stdout is the protocol
    async with AsyncMemory(settings=settings) as memory:
        await warm_up(memory)  # store reachable, models loaded: the first tool call is as fast as the rest
        if args.transport == "stdio":
            await serve_stdio(memory, user_id=user)
        else:
            app = http_app(memory, user_id=user, token=listen.token, max_body_bytes=listen.max_body_bytes)
            await serve_asgi(app, listen, log_level=args.log_level)
