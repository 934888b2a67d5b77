"""``--server URL`` for commands that can send their request to a running ``ripple serve``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ripple.server.client import RemoteMemory


def add_server_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--server", help="URL of a running `ripple serve` (default: $RIPPLE_SERVER); loads no model here")
    p.add_argument("--token", help="the server's bearer token (default: $RIPPLE_SERVER_TOKEN)")


def remote(args: argparse.Namespace) -> "RemoteMemory | None":
    """A client of the server the flags or the environment name; None to work locally."""
    from ripple.server.client import ClientSettings, RemoteMemory

    given = {k: v for k, v in (("server", args.server), ("server_token", args.token)) if v}
    conf = ClientSettings(**given)
    return RemoteMemory(conf.server, token=conf.server_token) if conf.server else None
