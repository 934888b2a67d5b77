"""The steps a sharded store's plans yield (no I/O here): a call to one shard, calls to several at
once, a pause.  :class:`graphstore.sharded.ShardedStore` and its async twin answer them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Generator, Sequence, TypeVar

from .protocol import AsyncGraphStore, GraphStore
from .records import EdgeRecord, EntityRecord, StoredMemory
from .requests import StoreRequest

__all__ = ["Call", "Fan", "Sleep", "Step", "Plan", "ExportAll", "first_error", "done"]

T = TypeVar("T")
Record = StoredMemory | EntityRecord | EdgeRecord


@dataclass(frozen=True, slots=True)
class Call:
    """Answer ``request`` with shard ``shard``; the driver sends back the answer (or throws its error in)."""

    shard: str
    request: StoreRequest[Any]


@dataclass(frozen=True, slots=True)
class Fan:
    """Several calls at once; the driver sends back their answers in order, an error in place of an answer."""

    calls: tuple[Call, ...]


@dataclass(frozen=True, slots=True)
class Sleep:
    seconds: float


Step = Call | Fan | Sleep
Plan = Generator[Step, Any, T]


@dataclass(frozen=True, slots=True)
class ExportAll(StoreRequest[list[Record]]):
    """A user's whole export as a list (a sync store's iterator or an async store's async iterator, collected)."""

    user_id: str
    method: ClassVar[str] = "export"

    def call(self, store: GraphStore) -> list[Record]:
        return list(store.export(self.user_id))

    async def acall(self, store: AsyncGraphStore) -> list[Record]:
        return [r async for r in store.export(self.user_id)]


def first_error(answers: Sequence[Any]) -> None:
    """Raise the first error among a fan-out's answers."""
    for a in answers:
        if isinstance(a, BaseException):
            raise a


def done(value: T) -> Plan[T]:
    """A plan that is already answered (for a conditional ``yield from``)."""
    return value
    yield  # pragma: no cover - makes this a generator
