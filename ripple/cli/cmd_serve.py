"""``ripple serve``: the HTTP API over one AsyncMemory, models loaded once at start-up.

``--workers N`` runs N such processes on one port (uvicorn's supervisor starts them and restarts
one that dies): a recall is CPU-bound Python under one interpreter lock, so one process serves
about one core's worth of recalls however many clients wait (RELIABILITY.md, "Under load").
Each worker opens the same store: SQLite takes several processes (their caches stay coherent),
and Neo4j is a server.  The models load once per worker."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING, Any

from ripple.settings import RippleSettings
from ripple.server.settings import ServerSettings, check_bind

if TYPE_CHECKING:
    from ripple import AsyncMemory

WORKER_HEALTHCHECK_S = 60  # seconds a `--workers` worker may take to answer uvicorn's supervisor (see _serve_workers)


def register(p: argparse.ArgumentParser) -> None:
    ServerSettings.register_flags(p, workers=True)
    p.add_argument("--no-warm", action="store_true", help="report ready before loading the models")
    p.add_argument("--warm-user", action="append", default=[], metavar="USER",
                   help="load this user's vectors (and, on Neo4j, walk edges) before reporting ready, so that"
                        " its first recalls do not load them (repeatable)")


def run(args: argparse.Namespace, settings: RippleSettings) -> int:
    listen = ServerSettings.from_flags(args)
    check_bind(listen.host, listen.token)  # before anything heavy loads
    from ripple.server import require_extra

    require_extra(("fastapi", "uvicorn"), "server", "ripple serve")
    if listen.workers > 1:
        return _serve_workers(settings, listen, args)
    asyncio.run(_serve(settings, listen, args))
    return 0


def _serve_workers(settings: RippleSettings, listen: ServerSettings, args: argparse.Namespace) -> int:
    """``listen.workers`` server processes on one socket, each with its own memory on the one store."""
    import inspect
    import math
    import os

    import uvicorn

    from ripple.server.app import WORKER_SPEC, worker_spec
    from ripple.server.run import configure_logging

    configure_logging(args.log_level)
    asyncio.run(_reachable(settings))  # a bad store is one line here, not N workers failing to start
    os.environ[WORKER_SPEC] = worker_spec(settings, token=listen.token, max_body_bytes=listen.max_body_bytes,
                                          warm=not args.no_warm, warm_users=args.warm_user)
    # uvicorn's supervisor kills and restarts a worker that does not answer its ping within 5 s by default;
    # a worker loading its models on a busy machine can miss that, and was restarted again and again
    # (4 pids for 2 workers, none ready after 300 s, in the --workers 2 test under load)
    extra: dict[str, Any] = ({"timeout_worker_healthcheck": WORKER_HEALTHCHECK_S}
             if "timeout_worker_healthcheck" in inspect.signature(uvicorn.run).parameters else {})
    uvicorn.run("ripple.server.app:worker_app", factory=True, host=listen.host, port=listen.port,
                workers=listen.workers, log_level=args.log_level, lifespan="on", server_header=False,
                timeout_graceful_shutdown=math.ceil(listen.graceful_timeout), log_config=None, **extra)
    return 0


async def _reachable(settings: RippleSettings) -> None:
    await (await _opened(settings)).aclose()


async def _opened(settings: RippleSettings) -> AsyncMemory:
    """A memory on the configured store, asked once: an unreachable store is a one-line error now,
    not a server (or N worker processes) that never gets ready."""
    from ripple import AsyncMemory

    memory = AsyncMemory(settings=settings)
    try:
        await memory.stats()
    except BaseException:
        await memory.aclose()
        raise
    return memory


async def _serve(settings: RippleSettings, listen: ServerSettings, args: argparse.Namespace) -> None:
    from ripple.server.app import create_app
    from ripple.server.run import configure_logging, serve_asgi

    configure_logging(args.log_level)
    memory = await _opened(settings)
    app = create_app(memory, token=listen.token, max_body_bytes=listen.max_body_bytes, warm=not args.no_warm,
                     warm_users=args.warm_user, close=True)
    await serve_asgi(app, listen, log_level=args.log_level)
