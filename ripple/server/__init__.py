"""ripple's servers: the HTTP API (``ripple serve``), the MCP server (``ripple mcp``) and their client.

``create_app`` (the FastAPI app) needs the ``server`` extra
(``pip install 'ripple-memory[server]'``) and is imported on first use, so
that the client side (:mod:`ripple.server.client`, used by
``ripple recall --server``) loads neither FastAPI nor any model.
"""

from __future__ import annotations

from typing import Any

__all__ = ["create_app", "require_extra"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from .app import create_app

        return create_app
    raise AttributeError(f"module 'ripple.server' has no attribute {name!r}")


def require_extra(modules: tuple[str, ...], extra: str, what: str) -> None:
    """Raise a one-line ConfigError naming the extra to install when a module is missing."""
    import importlib.util

    from ripple.errors import ConfigError

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(f"{what} needs {', '.join(missing)}: pip install 'ripple-memory[{extra}]'")
