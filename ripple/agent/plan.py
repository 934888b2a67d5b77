"""Agent operations written once, as generators of requests to the public memory API.

The agent layer is a client of :class:`ripple.Memory` / :class:`ripple.AsyncMemory`.
Each operation with I/O (add a turn, assemble a context, run a summary job)
is a generator that yields :class:`Req` ("call ``mem.recall(...)``") and
receives the answer; :func:`drive` runs it with plain calls, :func:`adrive`
with ``await`` (the pattern of httpx's ``Auth.auth_flow``).  An exception
raised by a call is thrown into the generator, so an operation can catch a
:class:`ripple.VersionConflict` and retry, in both worlds alike.

:class:`Bound` exposes a component's plan-returning methods as ordinary
methods of one driver: called through a sync session they return values,
through an async session they return awaitables.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, TypeVar, cast

__all__ = ["Req", "Plan", "drive", "adrive", "Bound", "update_document"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Req:
    """A call of a public memory method: ``getattr(mem, method)(*args, **kwargs)``."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


Plan = Generator[Req, Any, T]


def drive(mem: Any, plan: Plan[T]) -> T:
    """Run a plan against a sync memory."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            req = plan.send(value) if error is None else plan.throw(error)
        except StopIteration as stop:
            return stop.value
        try:
            value, error = getattr(mem, req.method)(*req.args, **req.kwargs), None
        except Exception as exc:  # noqa: BLE001 - handed to the plan, which decides
            value, error = None, exc


async def adrive(mem: Any, plan: Plan[T]) -> T:
    """Run a plan against an async memory (the same plan as :func:`drive`)."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            req = plan.send(value) if error is None else plan.throw(error)
        except StopIteration as stop:
            return stop.value
        try:
            result = getattr(mem, req.method)(*req.args, **req.kwargs)
            value, error = (await result if inspect.isawaitable(result) else result), None
        except Exception as exc:  # noqa: BLE001
            value, error = None, exc


class Bound:
    """A component whose methods return plans, bound to one driver.

    ``Bound(pins_core, run)``: ``bound.add("...")`` is ``run(pins_core.add("..."))``
    when ``pins_core.add`` returns a generator; other attributes pass through.
    """

    def __init__(self, core: Any, run: Callable[[Plan[Any]], Any]) -> None:
        self._core = core
        self._run = run

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._core, name)
        if not callable(attr) or name.startswith("_"):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            out = attr(*args, **kwargs)
            return self._run(cast(Plan[Any], out)) if inspect.isgenerator(out) else out

        call.__name__ = name
        call.__doc__ = attr.__doc__
        return call

    def __repr__(self) -> str:
        return f"Bound({self._core!r})"



def update_document(user_id: str, key: str, mutate: Callable[[Any], tuple[Any, T]], *, default: Any,
                    retries: int = 16, on_retry: Callable[[], None] | None = None) -> Plan[T]:
    """Read-modify-write a document with compare-and-set: ``mutate(value) -> (new value, result)``.

    ``mutate`` gets a copy of the stored value (``default`` when there is none) and may raise to
    refuse (nothing is written).  When another writer got in first, it runs again on the new value.
    """
    import copy

    from ..errors import VersionConflict

    for _ in range(retries):
        doc = yield Req("get_document", (), {"user_id": user_id, "key": key})
        value = copy.deepcopy(default if doc is None else doc.value)
        new, result = mutate(value)
        try:
            yield Req("put_document", (), {"user_id": user_id, "key": key, "value": new,
                                           "expected_version": 0 if doc is None else doc.version})
            return result
        except VersionConflict:
            if on_retry is not None:
                on_retry()
    raise VersionConflict(f"document {key!r} kept changing under {retries} attempts; try again")
