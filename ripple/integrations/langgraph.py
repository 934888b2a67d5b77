"""A LangGraph store (``langgraph.store.base.BaseStore``) backed by ripple.

``pip install 'ripple-memory[langgraph]'``, then::

    from langgraph.graph import StateGraph
    from ripple import Memory
    from ripple.integrations.langgraph import RippleStore

    graph = builder.compile(store=RippleStore(Memory(path="./mem")), checkpointer=...)

Inside a node, ``runtime.store.put((user_id,), "tea", {"text": "I drink Longjing."})``
stores a ripple memory, and ``runtime.store.search((user_id,), query="what tea?")``
runs ripple's associative recall, so a second thread (a new conversation)
recalls what the first one stored.

Namespaces map onto ripple's scopes: ``(user_id, agent_id, session_id, ...)``.
The first label is the ripple user and the isolation boundary; the second and
third, when present, become the memory's ``agent_id`` and ``session_id``; the
whole namespace and the key are kept with the memory, so ``get``/``put``/
``delete`` are exact and ``search`` matches namespace prefixes.

What is ripple's, not a key-value store's (and documented here rather than hidden):

* A put is remembered as text: the value's ``index`` fields (or ``text``,
  ``content``, ``memory``, ``data``, else the value as JSON) are what recall
  searches; the value itself is kept verbatim and returned by get and search.
  ripple indexes every memory, so ``index=False`` is accepted and changes nothing.
* Recall follows ripple's lifecycle: a put that states a new value of a fact
  ("the budget is now 60k") supersedes the older memory, and a retraction
  invalidates one; ``search(query=...)`` leaves those out, while ``get`` of
  their keys still returns them until they are deleted.
* A put whose text repeats an existing memory reinforces that memory rather
  than adding a copy; its key then names that memory too (delete removes the key).
* A value with nothing to remember ("ok thanks") is refused with
  :class:`ripple.InvalidInput`, because ripple would store nothing for it.
* Memories stored by other means (the Python API, ``ripple serve``) appear as
  items of the namespace ``(user_id,)`` with their memory id as key and
  ``{"text", "kind"}`` as value.
* ``get``, listing searches and ``list_namespaces`` read the user's memories
  (``list_namespaces`` every user's), so they cost time in proportion to the
  memories; recall-backed search costs what a recall costs.
* No TTL (``supports_ttl`` is False).

The two drivers (``batch`` over :class:`ripple.Memory`, ``abatch`` over
:class:`ripple.AsyncMemory`) run the same operation generators, which yield the
memory calls they need; the two memory classes share their method names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Generator, Iterable, Mapping, Union

from ripple import AsyncMemory, Memory
from ripple.errors import ConfigError, InvalidInput, UnknownUser
from ripple.models import MemoryRecord

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("ripple.integrations.langgraph needs langgraph: pip install 'ripple-memory[langgraph]'") from exc

__all__ = ["RippleStore"]

META = "langgraph"  # the metadata key under which a memory keeps its store entries
TEXT_FIELDS = ("text", "content", "memory", "data")
_OVERFETCH = 4  # recall this many times limit+offset, then keep the hits inside the namespace prefix
_MAX_K = 1000


@dataclass(frozen=True, slots=True)
class _Call:
    """A request to the memory: ``getattr(memory, method)(*args, **kwargs)``, sync or awaited."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    unknown_is_empty: bool = False  # an UnknownUser answer means "no memories": [] or None


@dataclass(slots=True)
class _Batch:
    """State shared by the ops of one batch: users' memories read once until a write."""

    listing: dict[str, list[MemoryRecord]] = field(default_factory=dict)


_Op = Generator[_Call, Any, Any]


class RippleStore(BaseStore):
    """LangGraph's ``BaseStore`` over a ripple memory.

    Parameters
    ----------
    memory:
        A :class:`ripple.Memory` (``batch`` for ``graph.invoke``; ``abatch`` runs
        it in a worker thread) or a :class:`ripple.AsyncMemory` (``abatch`` for
        ``graph.ainvoke``).  The caller closes it.
    text_fields:
        Value fields whose text is remembered when a put names no ``index``.
    """

    supports_ttl = False

    def __init__(self, memory: Union[Memory, AsyncMemory], *, text_fields: Iterable[str] = TEXT_FIELDS) -> None:
        if not isinstance(memory, (Memory, AsyncMemory)):
            raise ConfigError(f"RippleStore needs a ripple.Memory or ripple.AsyncMemory, not {type(memory).__name__}")
        self.memory = memory
        self.text_fields = tuple(text_fields)

    # -- drivers: the same plan, answered with plain calls or awaited ----------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        if not isinstance(self.memory, Memory):
            raise ConfigError("a RippleStore over an AsyncMemory answers abatch only (use graph.ainvoke), "
                              "or give it a ripple.Memory")
        plan = self._plan(ops)
        try:
            call = next(plan)
            while True:
                call = plan.send(_answer_sync(self.memory, call))
        except StopIteration as stop:
            return stop.value

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        if isinstance(self.memory, Memory):
            import anyio

            ops = list(ops)
            return await anyio.to_thread.run_sync(self.batch, ops)
        plan = self._plan(ops)
        try:
            call = next(plan)
            while True:
                call = plan.send(await _answer_async(self.memory, call))
        except StopIteration as stop:
            return stop.value

    # -- operations (I/O-free generators) -------------------------------------------------------------
    def _plan(self, ops: Iterable[Op]) -> _Op:
        """Every op of a batch in order; returns their results."""
        ctx = _Batch()
        out: list[Result] = []
        for op in ops:
            out.append((yield from self._op(op, ctx)))
        return out

    def _op(self, op: Op, ctx: _Batch) -> _Op:
        if isinstance(op, GetOp):
            return self._get(op, ctx)
        if isinstance(op, PutOp):
            return self._put(op, ctx)
        if isinstance(op, SearchOp):
            return self._search(op, ctx)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op, ctx)
        raise InvalidInput(f"unknown store operation {type(op).__name__}")

    def _memories(self, user: str, ctx: _Batch) -> _Op:
        if user not in ctx.listing:
            ctx.listing[user] = yield _Call("get_all", kwargs={"user_id": user}, unknown_is_empty=True)
        return ctx.listing[user]

    def _find(self, ns: tuple[str, ...], key: str, ctx: _Batch) -> _Op:
        """The memory holding (ns, key) and that entry, or (None, None)."""
        for m in (yield from self._memories(_user(ns), ctx)):
            for entry in _entries(m):
                if tuple(entry["ns"]) == ns and entry["key"] == key:
                    return m, entry
        if len(ns) == 1:  # a memory stored by other means: its id is its key in (user_id,)
            for m in ctx.listing.get(ns[0], ()):
                if m.id == key and not _entries(m):
                    return m, None
        return None, None

    def _get(self, op: GetOp, ctx: _Batch) -> _Op:
        ns = _namespace(op.namespace)
        m, entry = yield from self._find(ns, str(op.key), ctx)
        if m is None:
            return None
        return _item(m, entry, ns, str(op.key))

    def _put(self, op: PutOp, ctx: _Batch) -> _Op:
        ns = _namespace(op.namespace)
        key = str(op.key)
        m, entry = yield from self._find(ns, key, ctx)
        user = ns[0]
        now = datetime.now(timezone.utc).isoformat()
        if op.value is None:  # delete
            if m is not None:
                ctx.listing.pop(user, None)
                rest = [e for e in _entries(m) if e is not entry]
                if rest:
                    yield _Call("update", (m.id,), {"metadata": _with_entries(m, rest)})
                else:
                    yield _Call("delete", (m.id,))
            return None
        value = _json_value(op.value)
        text = self._text(value, op.index)
        new_entry = {"ns": list(ns), "key": key, "value": value,
                     "created_at": entry["created_at"] if entry else now, "updated_at": now}
        ctx.listing.pop(user, None)
        if m is not None:
            others = [e for e in _entries(m) if e is not entry]
            if not others or m.text == text:  # the key's own memory: change it in place
                yield _Call("update", (m.id,), {"metadata": _with_entries(m, [*others, new_entry]),
                                                **({} if m.text == text else {"text": text})})
                return None
            yield _Call("update", (m.id,), {"metadata": _with_entries(m, others)})  # the key moves to a new memory
        item: dict[str, Any] = {"text": text, "user_id": user, "metadata": {META: [new_entry]}}
        if len(ns) > 1:
            item["agent_id"] = ns[1]
        if len(ns) > 2:
            item["session_id"] = ns[2]
        stored = yield _Call("add_many", ([item],))
        if not stored:
            raise InvalidInput(f"nothing to remember in the value of {key!r}: ripple stores no small talk ({text[:60]!r})")
        got = stored[0]
        if not any(e.get("key") == key and tuple(e.get("ns", ())) == ns for e in _entries(got)):
            # a repeat of an existing memory reinforced it: the key names that memory too
            yield _Call("update", (got.id,), {"metadata": _with_entries(got, [*_entries(got), new_entry])})
        return None

    def _search(self, op: SearchOp, ctx: _Batch) -> _Op:
        prefix = tuple(op.namespace_prefix)
        if op.query:
            if not prefix:
                raise InvalidInput("search with a query needs the user in the namespace prefix: (user_id, ...)")
            k = min(_MAX_K, max(1, (op.offset + op.limit) * _OVERFETCH))
            result = yield _Call("recall", (op.query,), {"user_id": _user(prefix), "k": k}, unknown_is_empty=True)
            scored = [(h.memory, h.score) for h in (result.hits if result else ())]
        else:
            users = [prefix[0]] if prefix else (yield _Call("users"))
            scored = []
            for user in users:
                scored += [(m, None) for m in (yield from self._memories(user, ctx))]
        found: list[SearchItem] = []
        for m, score in scored:
            for ns, key, value, created, updated in _items_of(m):
                if ns[: len(prefix)] == prefix and _matches(value, op.filter):
                    found.append(SearchItem(ns, key, value, created, updated, score=score))
        if not op.query:
            found.sort(key=lambda i: i.updated_at, reverse=True)
        return found[op.offset: op.offset + op.limit]

    def _list_namespaces(self, op: ListNamespacesOp, ctx: _Batch) -> _Op:
        spaces: set[tuple[str, ...]] = set()
        for user in (yield _Call("users")):
            for m in (yield from self._memories(user, ctx)):
                for ns, *_ in _items_of(m):
                    if all(_condition(ns, c) for c in op.match_conditions or ()):
                        spaces.add(ns[: op.max_depth] if op.max_depth is not None else ns)
        return sorted(spaces)[op.offset: op.offset + op.limit]

    def _text(self, value: dict[str, Any], index: Any) -> str:
        fields = index if isinstance(index, list) else None
        if fields:
            parts = [_text_of(_path(value, f)) for f in fields]
            text = "\n".join(p for p in parts if p)
        else:
            text = next((value[f] for f in self.text_fields if isinstance(value.get(f), str) and value[f].strip()), "")
            text = text or json.dumps(value, ensure_ascii=False)
        if not text.strip():
            raise InvalidInput(f"the indexed fields {fields} of the value hold no text")
        return text


# -- drivers' one step ---------------------------------------------------------------------------------
def _answer_sync(mem: Memory, call: _Call) -> Any:
    try:
        return getattr(mem, call.method)(*call.args, **call.kwargs)
    except UnknownUser:
        if call.unknown_is_empty:
            return [] if call.method == "get_all" else None
        raise


async def _answer_async(mem: AsyncMemory, call: _Call) -> Any:
    try:
        return await getattr(mem, call.method)(*call.args, **call.kwargs)
    except UnknownUser:
        if call.unknown_is_empty:
            return [] if call.method == "get_all" else None
        raise


# -- plain helpers ----------------------------------------------------------------------------------------
def _namespace(ns: Iterable[str]) -> tuple[str, ...]:
    ns = tuple(ns)
    if not ns:
        raise InvalidNamespaceError("a ripple namespace starts with the user id: (user_id, [agent_id, [session_id]])")
    return ns


def _user(ns: tuple[str, ...]) -> str:
    return _namespace(ns)[0]


def _entries(m: MemoryRecord) -> list[dict[str, Any]]:
    got = m.metadata.get(META)
    return [e for e in got if isinstance(e, dict) and "key" in e and "ns" in e] if isinstance(got, list) else []


def _with_entries(m: MemoryRecord, entries: list[dict[str, Any]]) -> dict[str, Any]:
    meta = {k: v for k, v in m.metadata.items() if k != META}
    if entries:
        meta[META] = entries
    return meta


def _items_of(m: MemoryRecord) -> list[tuple[tuple[str, ...], str, dict[str, Any], datetime, datetime]]:
    """The store items a memory holds: its entries, or itself in (user_id,) when stored by other means."""
    entries = _entries(m)
    if entries:
        return [(tuple(e["ns"]), e["key"], e["value"], _when(e.get("created_at"), m.created_at),
                 _when(e.get("updated_at"), m.created_at)) for e in entries]
    if m.status != "active":
        return []  # a forgotten or superseded memory that no key names is not an item
    return [((m.user_id,), m.id, {"text": m.text, "kind": m.kind}, m.created_at, m.created_at)]


def _item(m: MemoryRecord, entry: dict[str, Any] | None, ns: tuple[str, ...], key: str) -> Item:
    if entry is None:
        return Item(value={"text": m.text, "kind": m.kind}, key=key, namespace=ns,
                    created_at=m.created_at, updated_at=m.created_at)
    return Item(value=entry["value"], key=key, namespace=ns, created_at=_when(entry.get("created_at"), m.created_at),
                updated_at=_when(entry.get("updated_at"), m.created_at))


def _when(iso: Any, default: datetime) -> datetime:
    try:
        return datetime.fromisoformat(iso) if isinstance(iso, str) else default
    except ValueError:
        return default


def _json_value(value: Mapping[str, Any]) -> dict[str, Any]:
    try:
        copied: dict[str, Any] = json.loads(json.dumps(dict(value), ensure_ascii=False, allow_nan=False))
        return copied
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"a store value must be JSON-serialisable: {exc}") from exc


def _path(value: Any, path: str) -> Any:
    """A dotted field path (``"a.b"``; ``"$"`` is the whole value)."""
    if path == "$":
        return value
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _text_of(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a is not None and a > b,
    "$gte": lambda a, b: a is not None and a >= b,
    "$lt": lambda a, b: a is not None and a < b,
    "$lte": lambda a, b: a is not None and a <= b,
}


def _matches(value: dict[str, Any], conditions: dict[str, Any] | None) -> bool:
    """LangGraph's filter: exact values, or ``{"$gt": x}``-style comparisons, on dotted fields."""
    for path, want in (conditions or {}).items():
        have = _path(value, path)
        if isinstance(want, dict) and want and all(k in _COMPARE for k in want):
            try:
                if not all(_COMPARE[k](have, v) for k, v in want.items()):
                    return False
            except TypeError:
                return False
        elif have != want:
            return False
    return True


def _condition(ns: tuple[str, ...], cond: MatchCondition) -> bool:
    path = tuple(cond.path)
    if len(path) > len(ns):
        return False
    part = ns[: len(path)] if cond.match_type == "prefix" else ns[len(ns) - len(path):]
    return all(p == "*" or p == n for p, n in zip(path, part))
