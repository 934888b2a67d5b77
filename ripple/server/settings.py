"""Settings of ripple's servers: flags, then ``RIPPLE_SERVER_*`` variables, then defaults.

Kept apart from :class:`ripple.RippleSettings` (which says where memories live
and which models read them): these say how a server listens.  No web framework
is imported here, so the bind check runs before anything heavy loads.
"""

from __future__ import annotations

import argparse
import ipaddress
import re
from typing import Any

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ripple.errors import ConfigError

__all__ = ["ServerSettings", "is_loopback", "check_bind", "DEFAULT_MAX_BODY"]

DEFAULT_MAX_BODY = 4 * 1024 * 1024  # a full add_many batch of chat turns fits; a runaway upload does not


class ServerSettings(BaseSettings):
    """How ``ripple serve`` and ``ripple mcp --transport http`` listen.

    ``RIPPLE_SERVER_TOKEN`` (or ``--token``) switches bearer-token auth on; a
    server refuses to listen beyond the loopback interface without one.
    """

    model_config = SettingsConfigDict(env_prefix="RIPPLE_SERVER_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = Field(8420, ge=0, le=65535)
    token: str | None = Field(None, description="bearer token clients must send; none = no auth (loopback only)")
    max_body_bytes: int = Field(DEFAULT_MAX_BODY, ge=1024, description="largest request body accepted (413 above)")
    graceful_timeout: float = Field(30.0, ge=0, description="seconds to let in-flight requests finish on shutdown")
    workers: int = Field(1, ge=1, le=64, description="server processes sharing the port and the store (ripple serve)")

    @field_validator("token")
    @classmethod
    def _token(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"[A-Za-z0-9\-._~+/]+=*", v):
            raise ValueError("a bearer token is letters, digits and -._~+/ (RFC 6750), e.g. from `openssl rand -hex 32`")
        return v or None

    @staticmethod
    def register_flags(p: argparse.ArgumentParser, *, port: int = 8420, workers: bool = False) -> None:
        """The listening flags; each overrides its ``RIPPLE_SERVER_*`` variable."""
        p.add_argument("--host", help="address to listen on (default 127.0.0.1; others need a token)")
        p.add_argument("--port", type=int, help=f"port (default {port}; 0 = any free port)")
        p.add_argument("--token", help="bearer token clients must send (default: $RIPPLE_SERVER_TOKEN; none = no auth)")
        p.add_argument("--max-body-bytes", type=int, help=f"largest request body (default {DEFAULT_MAX_BODY})")
        p.add_argument("--graceful-timeout", type=float, help="seconds for in-flight requests at shutdown (default 30)")
        if workers:
            p.add_argument("--workers", type=int, help="server processes on one port and one store (default 1; a recall"
                                                       " is CPU-bound Python, so one process serves one core's worth)")
        p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])

    @classmethod
    def from_flags(cls, args: argparse.Namespace, *, port: int = 8420) -> "ServerSettings":
        """Settings from parsed flags over the environment; a bad value is a one-line ConfigError."""
        from pydantic import ValidationError

        names = ("host", "port", "token", "max_body_bytes", "graceful_timeout", "workers")
        given: dict[str, Any] = {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}
        try:
            made = cls(**given)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise ConfigError(f"{'.'.join(str(x) for x in err['loc'])}: {err['msg']}") from None
        if "port" not in made.model_fields_set:  # neither a flag nor $RIPPLE_SERVER_PORT: this command's default
            made = made.model_copy(update={"port": port})
        return made


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (127.0.0.0/8, ::1, localhost)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a hostname or a wildcard: may be reachable from elsewhere


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond the loopback interface without a token (raises ConfigError)."""
    if not token and not is_loopback(host):
        raise ConfigError(
            f"refusing to listen on {host} without a token: set RIPPLE_SERVER_TOKEN or --token, "
            "or listen on 127.0.0.1"
        )
