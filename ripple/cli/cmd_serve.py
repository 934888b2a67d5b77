"""``ripple serve``: the HTTP API over one AsyncMemory, models loaded once at start-up."""

from __future__ import annotations

import argparse
import asyncio

from ripple.settings import RippleSettings
from ripple.server.settings import ServerSettings, check_bind


def register(p: argparse.ArgumentParser) -> None:
    ServerSettings.register_flags(p)
    p.add_argument("--no-warm", action="store_true", help="report ready before loading the models")


def run(args: argparse.Namespace, settings: RippleSettings) -> int:
    listen = ServerSettings.from_flags(args)
    check_bind(listen.host, listen.token)  # before anything heavy loads
    from ripple.server import require_extra

    require_extra(("fastapi", "uvicorn"), "server", "ripple serve")
    asyncio.run(_serve(settings, listen, args))
    return 0


async def _serve(settings: RippleSettings, listen: ServerSettings, args: argparse.Namespace) -> None:
    from ripple import AsyncMemory
    from ripple.server.app import create_app
    from ripple.server.run import configure_logging, serve_asgi

    configure_logging(args.log_level)
    memory = AsyncMemory(settings=settings)
    try:
        await memory.stats()  # an unreachable store is a one-line error now, not a server that never gets ready
    except BaseException:
        await memory.aclose()
        raise
    app = create_app(memory, token=listen.token, max_body_bytes=listen.max_body_bytes, warm=not args.no_warm,
                     close=True)
    await serve_asgi(app, listen, log_level=args.log_level)
