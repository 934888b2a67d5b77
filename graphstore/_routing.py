"""Which shard serves a user: a stable hash, and the routing table every process shares.

Pure data and functions, no I/O (the sharded store reads and writes the table).

The hash is rendezvous hashing (highest random weight, Thaler and Ravishankar 1998) over the
shard names of the *ring*: a user goes to the shard whose ``blake2b(name, user)`` is largest.
It needs no table, is the same in every process and Python version, and when a shard joins
the ring only the users it now wins (about 1/(N+1) of them) change owner.

The table (one JSON document, see :mod:`graphstore.sharded`) holds what the hash cannot know:

* ``ring``: the shards the hash spreads users over (a configured shard outside it serves
  nobody until ``ripple shards add`` puts it in);
* ``pins``: users served by another shard than their hash owner because someone moved them there;
* ``parked``: users a ring change left where they were (``ripple shards rebalance`` moves them
  to their new hash owner; it never touches pins);
* ``moves``: moves under way (``copying``: the source serves the user and its writes wait;
  ``switched``: the target serves it, the copy on the source is still to be deleted);
* ``ring_next``: a ring change under way (writes of the users whose owner changes wait).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from ripple.errors import StoreError

__all__ = [
    "DIRECTORY_USER",
    "DIRECTORY_KEY",
    "COPYING",
    "SWITCHED",
    "Move",
    "Routing",
    "rendezvous",
]

#: the reserved user id under which every shard keeps a copy of the routing table (as a document);
#: NUL-prefixed, so no user id that ripple's API accepts from a person or an agent collides with it
DIRECTORY_USER = "\x00ripple"
DIRECTORY_KEY = "shards/routing"
COPYING, SWITCHED = "copying", "switched"
_FORMAT = 1


def _weight(name: str, user_id: str) -> int:
    data = f"{name}\x1f{user_id}".encode("utf-8", "surrogatepass")  # (a lone surrogate still hashes)
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def rendezvous(user_id: str, ring: Sequence[str]) -> str:
    """The shard of ``ring`` that wins ``user_id`` (ties, astronomically rare, go to the first name)."""
    return max(ring, key=lambda name: _weight(name, user_id))


@dataclass(frozen=True, slots=True)
class Move:
    """A move of one user under way (see the module docstring for the states)."""

    user_id: str
    source: str
    target: str
    state: str
    started_at: float
    digest: str | None = None  # fingerprint of what was copied, kept once switched (to check the source is unchanged)
    owner: str = ""  # the run that copies now: a resumed move takes over, and only the owner may switch


@dataclass(frozen=True, slots=True)
class Routing:
    """The routing table at one serial (the primary directory document's version)."""

    ring: tuple[str, ...]
    ring_next: tuple[str, ...] | None = None
    pins: Mapping[str, str] = field(default_factory=dict)
    parked: Mapping[str, str] = field(default_factory=dict)
    moves: Mapping[str, Move] = field(default_factory=dict)
    serial: int = 0

    # -- reading ------------------------------------------------------------------------------------
    def home(self, user_id: str) -> str:
        """The shard that serves the user now (reads and writes)."""
        return self.pins.get(user_id) or self.parked.get(user_id) or rendezvous(user_id, self.ring)

    def write_hold(self, user_id: str) -> str | None:
        """Why the user's writes must wait now, or None."""
        move = self.moves.get(user_id)
        if move is not None and move.state == COPYING:
            return f"user {user_id!r} is being moved from shard {move.source} to {move.target}"
        if self.ring_next is not None and user_id not in self.pins and user_id not in self.parked:
            if rendezvous(user_id, self.ring) != rendezvous(user_id, self.ring_next):
                return f"the shard ring is changing and user {user_id!r} changes shard"
        return None

    def names(self) -> set[str]:
        """Every shard name the table mentions."""
        out = set(self.ring) | set(self.ring_next or ()) | set(self.pins.values()) | set(self.parked.values())
        for m in self.moves.values():
            out.update((m.source, m.target))
        return out

    # -- changes (each returns a new table; the store writes it with compare-and-set) ------------------
    def start_move(self, user_id: str, target: str, at: float, owner: str) -> "Routing":
        move = Move(user_id, self.home(user_id), target, COPYING, at, owner=owner)
        return replace(self, moves={**self.moves, user_id: move})

    def take_over_move(self, user_id: str, owner: str) -> "Routing":
        return replace(self, moves={**self.moves, user_id: replace(self.moves[user_id], owner=owner)})

    def switch_move(self, user_id: str, digest: str) -> "Routing":
        """The target serves the user from now on (pinned there unless the hash already sends it there)."""
        move = self.moves[user_id]
        pins = {u: s for u, s in self.pins.items() if u != user_id}
        parked = {u: s for u, s in self.parked.items() if u != user_id}
        if rendezvous(user_id, self.ring) != move.target or self.ring_next is not None:
            pins[user_id] = move.target
        return replace(self, pins=pins, parked=parked, moves={**self.moves, user_id: replace(move, state=SWITCHED, digest=digest)})

    def end_move(self, user_id: str) -> "Routing":
        return replace(self, moves={u: m for u, m in self.moves.items() if u != user_id})

    def start_ring_change(self, ring: Sequence[str]) -> "Routing":
        return replace(self, ring_next=tuple(ring))

    def finish_ring_change(self, stay: Mapping[str, str]) -> "Routing":
        """Adopt ``ring_next``; ``stay`` parks the users found where the new ring would not look for them."""
        assert self.ring_next is not None
        ring = self.ring_next
        agree = lambda u, s: rendezvous(u, ring) == s  # noqa: E731 - a pin the hash agrees with is dropped
        pins = {u: s for u, s in self.pins.items() if not agree(u, s)}
        parked = {u: s for u, s in {**self.parked, **stay}.items() if not agree(u, s)}
        return replace(self, ring=ring, ring_next=None, pins=pins, parked=parked)

    # -- the stored form ----------------------------------------------------------------------------
    def to_json(self, serial: int) -> str:
        return json.dumps({
            "format": _FORMAT, "serial": serial, "ring": list(self.ring),
            "ring_next": None if self.ring_next is None else list(self.ring_next),
            "pins": dict(sorted(self.pins.items())), "parked": dict(sorted(self.parked.items())),
            "moves": {u: {"source": m.source, "target": m.target, "state": m.state, "started_at": m.started_at,
                          "digest": m.digest, "owner": m.owner} for u, m in sorted(self.moves.items())},
        }, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> "Routing":
        try:
            raw: dict[str, Any] = json.loads(text)
            if raw.get("format") != _FORMAT:
                raise ValueError(f"format {raw.get('format')!r}, this ripple reads format {_FORMAT}")
            ring_next = raw.get("ring_next")
            return cls(
                ring=tuple(str(n) for n in raw["ring"]),
                ring_next=None if ring_next is None else tuple(str(n) for n in ring_next),
                pins={str(u): str(s) for u, s in raw.get("pins", {}).items()},
                parked={str(u): str(s) for u, s in raw.get("parked", {}).items()},
                moves={str(u): Move(str(u), str(m["source"]), str(m["target"]), str(m["state"]),
                                    float(m["started_at"]), m.get("digest"), str(m.get("owner", "")))
                       for u, m in raw.get("moves", {}).items()},
                serial=int(raw["serial"]),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise StoreError(f"the shard routing table is damaged ({exc}); restore it from another shard's copy") from exc
