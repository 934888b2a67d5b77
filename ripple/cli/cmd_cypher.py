"""``ripple cypher``: run a Cypher query against the configured Neo4j store.

Reads by default (a read transaction, so a ``neo4j://`` cluster URI sends it to
a follower and a query that writes is refused); ``--write`` runs it in a write
transaction.  Procedures need ``--allow-procedures``, and administration or
schema commands, ``dbms.*`` procedures and ``LOAD CSV`` need ``--allow-admin``:
Neo4j's ``EXPLAIN`` plan of the query decides (see :mod:`graphstore.cypher_policy`).  Parameters come from ``--param key=value``, the value parsed as
JSON when it is JSON (``n=3``, ``ids=["a","b"]``) and taken as a string
otherwise (``user=u1``).
"""

from __future__ import annotations

import argparse
import base64
import json
from typing import Any

from ripple.errors import ConfigError, StoreError
from ripple.settings import RippleSettings

from ._format import table, width
from ._store import open_memory

_CELL = 60  # display columns of a table cell before it is clipped


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", help="the Cypher query")
    p.add_argument("--param", "-p", action="append", default=[], metavar="KEY=VALUE",
                   help="a query parameter $KEY (VALUE is JSON if it parses, else a string); repeatable")
    p.add_argument("--write", action="store_true", help="run in a write transaction (default: read)")
    p.add_argument("--allow-procedures", action="store_true", help="allow CALL of procedures (refused by default)")
    p.add_argument("--allow-admin", action="store_true",
                   help="allow administration and schema commands (SHOW, users, databases, indexes, dbms.*)"
                        " and LOAD CSV (refused by default)")
    p.add_argument("--json", action="store_true", help="one JSON object per row")


def _params(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--param wants KEY=VALUE, got {pair!r}")
        try:
            out[key.strip()] = json.loads(raw)
        except ValueError:
            out[key.strip()] = raw
    return out


def _json_default(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    return str(value)


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=_json_default)
    text = " ".join(text.split())
    if width(text) <= _CELL:
        return text
    out, used = [], 0
    for ch in text:
        used += width(ch)
        if used > _CELL - 1:
            break
        out.append(ch)
    return "".join(out) + "…"


def run(args: argparse.Namespace, settings: RippleSettings) -> int:
    params = _params(args.param)
    with open_memory(settings) as mem:
        try:
            keys, rows = mem.cypher(args.query, params, write=args.write, allow_procedures=args.allow_procedures,
                                    allow_admin=args.allow_admin)
        except StoreError as exc:
            if not args.write and "read transaction" in str(exc):
                raise StoreError(f"{exc} (pass --write to run it in a write transaction)") from exc
            raise
    if args.json:
        for row in rows:
            print(json.dumps(dict(zip(keys, row)), ensure_ascii=False, default=_json_default))
    elif keys:
        print(table(keys, [[_cell(v) for v in row] for row in rows]))
        print(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    else:
        print("(no rows)")
    return 0
