"""``create_app``: ripple's HTTP API, a FastAPI app over one :class:`ripple.AsyncMemory`.

One process holds one ``AsyncMemory``: the models load once, at start-up, and
every request after that pays only for its own work.  Layout:

* ``/health/live`` and ``/health/ready``: open (no token); ready turns 200 once
  the store answered and the embedder and extractor are warm.
* ``/v1/users/{user_id}/...``: everything else (memories, recall, open conflicts
  and their resolution, export, stats).  The user is always the URL's:
  bodies cannot name one, and a memory id that belongs to another user is
  answered exactly like an id that does not exist (404 ``memory_not_found``),
  so one user's requests can neither read, change nor probe another's memories.
* Errors: ``{"error": {"code", "message"}}`` (see :mod:`ripple.server.errors`);
  a traceback goes to the server log only.

Writes run shielded from cancellation and are counted; on shutdown the app
waits for the running ones to finish before the memory is closed (uvicorn
stops accepting connections first, then waits for in-flight requests).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Iterable, Mapping, Sequence

import anyio
from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response, StreamingResponse
from fastapi.security import HTTPBearer
from pydantic import BaseModel, TypeAdapter
from starlette.exceptions import HTTPException

import ripple
from ripple import AsyncMemory, RippleSettings
from ripple.errors import MemoryNotFound, RippleError
from ripple.models import MemoryConflict, MemoryRecord, RecallResult

from .asgi import BearerAuth, BodyLimit
from .errors import HTTP_CODES, error_body, one_line, status_and_code
from .schemas import AddBody, AddManyBody, ForgetBody, Health, PinBody, RecallBody, ResolveBody, UpdateBody
from .settings import DEFAULT_MAX_BODY
from .warm import warm_up, warm_users

__all__ = ["create_app", "worker_app", "OPEN_PATHS", "WORKER_SPEC"]

#: The environment variable through which ``ripple serve --workers N`` tells each worker process
#: what to serve (uvicorn starts the workers and calls :func:`worker_app` in each).
WORKER_SPEC = "RIPPLE_SERVE_WORKER_SPEC"

log = logging.getLogger("ripple.server")

OPEN_PATHS = ("/health/", "/docs", "/openapi.json", "/redoc")
_MEMORIES = TypeAdapter(list[MemoryRecord])
_COUNTS = TypeAdapter(dict[str, int])
_CONFLICTS = TypeAdapter(list[MemoryConflict])
_EXPORT_LINES_PER_CHUNK = 256


def _json(body: BaseModel | Any, status: int = 200, adapter: TypeAdapter[Any] | None = None) -> Response:
    """A JSON response serialised once by pydantic (FastAPI would validate the model again)."""
    raw = adapter.dump_json(body) if adapter is not None else body.model_dump_json().encode()
    return Response(raw, status_code=status, media_type="application/json")


def _error(status: int, code: str, message: str, headers: Mapping[str, str] | None = None) -> Response:
    return Response(error_body(code, message), status_code=status, media_type="application/json", headers=headers)


class _Writes:
    """In-flight writes: each runs shielded from cancellation; shutdown waits until none is left."""

    def __init__(self) -> None:
        self.running = 0
        self._idle = asyncio.Event()
        self._idle.set()

    @asynccontextmanager
    async def guard(self) -> AsyncIterator[None]:
        self.running += 1
        self._idle.clear()
        try:
            with anyio.CancelScope(shield=True):
                yield
        finally:
            self.running -= 1
            if self.running == 0:
                self._idle.set()

    async def drained(self) -> None:
        await self._idle.wait()


@dataclass
class _State:
    memory: AsyncMemory | None
    settings: RippleSettings | None
    warm: bool
    warm_users: tuple[str, ...] = ()
    status: str = "starting"
    error: dict[str, str] | None = None
    writes: _Writes = field(default_factory=_Writes)

    @property
    def mem(self) -> AsyncMemory:
        assert self.memory is not None
        return self.memory


def create_app(
    source: AsyncMemory | RippleSettings | None = None,
    *,
    token: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY,
    warm: bool = True,
    warm_users: Sequence[str] = (),
    close: bool | None = None,
) -> FastAPI:
    """The HTTP API over one memory.

    Parameters
    ----------
    source:
        An open :class:`ripple.AsyncMemory` (the caller closes it), or
        :class:`ripple.RippleSettings` (the app opens the memory at start-up and
        closes it at shutdown); ``None`` reads the settings from the environment.
    token:
        Bearer token every ``/v1`` request must carry; ``None`` switches auth off
        (then listen on the loopback interface only: see :func:`check_bind`).
    max_body_bytes:
        Larger request bodies are answered 413 ``request_too_large``.
    warm:
        Load the models before reporting ready (the default); ``False`` lets the
        first request load them.
    warm_users:
        Users whose vectors (and, on Neo4j, walk edges) are loaded before reporting ready
        (:meth:`ripple.AsyncMemory.warm`), so that their first recalls do not load them.
    close:
        Close the memory at shutdown, after the in-flight writes finished
        (default: only a memory the app opened itself).
    """
    owned = not isinstance(source, AsyncMemory)
    close = owned if close is None else close
    state = _State(memory=None if owned else source,  # type: ignore[arg-type]
                   settings=source if isinstance(source, RippleSettings) else None, warm=warm,
                   warm_users=tuple(warm_users))

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if state.memory is None:
            state.memory = AsyncMemory(settings=state.settings or RippleSettings())
        starting = asyncio.create_task(_start(state))
        try:
            yield
        finally:
            state.status = "stopping"
            starting.cancel()
            await state.writes.drained()
            if close:
                await state.mem.aclose()
            log.info("ripple: stopped (in-flight writes finished)")

    app = FastAPI(
        title="ripple", version=ripple.__version__, lifespan=lifespan,
        description="Graph-based associative memory for AI agents: the HTTP API over one ripple.AsyncMemory.",
    )
    app.state.ripple = state
    _install_error_handlers(app)
    app.include_router(_health_router(state))
    app.include_router(_api_router(state))
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    if token:
        app.add_middleware(BearerAuth, token=token, open_paths=OPEN_PATHS)  # outermost: no body read before auth
    return app


def worker_spec(settings: RippleSettings, *, token: str | None, max_body_bytes: int, warm: bool,
                warm_users: Sequence[str] = ()) -> str:
    """What one worker of ``ripple serve --workers N`` serves, as the JSON :func:`worker_app` reads."""
    return json.dumps({"settings": settings.model_dump(mode="json"), "token": token,
                       "max_body_bytes": max_body_bytes, "warm": warm, "warm_users": list(warm_users)})


def worker_app() -> FastAPI:
    """The app of one ``ripple serve --workers N`` process: uvicorn imports and calls this in each
    worker.  Each opens its own memory on the one store (the embedded store's caches stay coherent
    across processes; a Neo4j store is shared anyway) and loads the models once."""
    raw = os.environ.get(WORKER_SPEC)
    if not raw:
        raise RuntimeError(f"{WORKER_SPEC} is not set: worker_app() is started by `ripple serve --workers N`")
    spec = json.loads(raw)
    return create_app(RippleSettings.model_validate(spec["settings"]), token=spec["token"],
                      max_body_bytes=int(spec["max_body_bytes"]), warm=bool(spec["warm"]),
                      warm_users=spec.get("warm_users", ()), close=True)


async def _start(state: _State) -> None:
    try:
        if state.warm:
            await warm_up(state.mem)
        await warm_users(state.mem, state.warm_users)
        state.status = "ready"
        log.info("ripple: ready")
    except Exception as exc:  # noqa: BLE001 - the server stays up and says why it is not ready
        if isinstance(exc, RippleError):
            code, message = status_and_code(exc)[1], one_line(exc)
        else:
            code, message = "internal_error", "unexpected error at start-up (details in the server log)"
        state.status, state.error = "failed", {"code": code, "message": message}
        log.error("ripple: not ready: %s (%s)", one_line(exc), code, exc_info=not isinstance(exc, RippleError))


# -- errors ---------------------------------------------------------------------------------------
def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RippleError)
    async def ripple_error(_request: Request, exc: RippleError) -> Response:
        status, code = status_and_code(exc)
        if status >= 500:
            log.error("ripple error %s: %s", code, one_line(exc), exc_info=exc)
        return _error(status, code, str(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_request: Request, exc: RequestValidationError) -> Response:
        errors = exc.errors()
        first = errors[0] if errors else {}
        loc = ".".join(str(x) for x in first.get("loc", ()) if x != "body")
        msg = str(first.get("msg", "invalid request"))
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return _error(422, "invalid_request", f"{loc}: {msg}{more}" if loc else f"{msg}{more}")

    @app.exception_handler(HTTPException)
    async def http_error(_request: Request, exc: HTTPException) -> Response:
        code = HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
        return _error(exc.status_code, code, str(exc.detail), headers=exc.headers)

    @app.exception_handler(Exception)
    async def unexpected(_request: Request, exc: Exception) -> Response:
        incident = uuid.uuid4().hex[:12]
        log.error("unexpected error, incident %s", incident, exc_info=exc)
        return _error(500, "internal_error", f"internal error (incident {incident}; details in the server log)")


# -- routes ---------------------------------------------------------------------------------------
def _health_router(state: _State) -> APIRouter:
    router = APIRouter(prefix="/health", tags=["health"])

    def health(status: str) -> Health:
        return Health(status=status, version=ripple.__version__, in_flight_writes=state.writes.running,
                      error=state.error, pid=os.getpid())

    @router.get("/live", response_model=Health, summary="the process is up")
    async def live() -> Response:
        return _json(health("alive"))

    @router.get("/ready", response_model=Health, summary="200 once the store answered and the models are warm",
                responses={503: {"model": Health}})
    async def ready() -> Response:
        return _json(health(state.status), 200 if state.status == "ready" else 503)

    return router


def _api_router(state: _State) -> APIRouter:
    async def require_ready() -> None:
        if state.status != "ready":
            reason = f": {state.error['message']}" if state.error else ""
            raise HTTPException(503, f"the server is not ready ({state.status}){reason}", headers={"Retry-After": "1"})

    # HTTPBearer(auto_error=False) only documents the scheme in OpenAPI; BearerAuth enforces it.
    router = APIRouter(prefix="/v1/users/{user_id}", tags=["memories"],
                       dependencies=[Depends(require_ready), Depends(HTTPBearer(auto_error=False))])

    async def owned(user_id: str, memory_id: str) -> MemoryRecord:
        """The memory if it is this user's; otherwise the same 404 as an id that does not exist."""
        missing = MemoryNotFound(f"no memory with id {memory_id!r} for user {user_id!r}")
        try:
            found = await state.mem.get(memory_id)
        except MemoryNotFound:
            raise missing from None
        if found.user_id != user_id:
            raise missing
        return found

    def items(user_id: str, bodies: Iterable[BaseModel]) -> list[dict[str, Any]]:
        return [{**b.model_dump(exclude_unset=True), "user_id": user_id} for b in bodies]

    @router.post("/memories", status_code=201, response_model=list[MemoryRecord],
                 summary="add one memory (empty list: nothing to remember, e.g. 'ok thanks')")
    async def add(user_id: str, body: AddBody) -> Response:
        async with state.writes.guard():
            stored = await state.mem.add_many(items(user_id, [body]))
        return _json(stored, 201, _MEMORIES)

    @router.post("/memories/batch", status_code=201, response_model=list[MemoryRecord],
                 summary="add many memories (atomic batches of up to 256)")
    async def add_many(user_id: str, body: AddManyBody) -> Response:
        async with state.writes.guard():
            stored = await state.mem.add_many(items(user_id, body.items))
        return _json(stored, 201, _MEMORIES)

    @router.get("/memories", response_model=list[MemoryRecord], summary="the user's memories in event-time order")
    async def get_all(user_id: str, session_id: str | None = None, limit: int | None = None) -> Response:
        return _json(await state.mem.get_all(user_id=user_id, session_id=session_id, limit=limit), 200, _MEMORIES)

    @router.get("/memories/{memory_id}", response_model=MemoryRecord, summary="one memory")
    async def get(user_id: str, memory_id: str) -> Response:
        return _json(await owned(user_id, memory_id))

    @router.patch("/memories/{memory_id}", response_model=MemoryRecord, summary="change a memory in place")
    async def update(user_id: str, memory_id: str, body: UpdateBody) -> Response:
        async with state.writes.guard():
            await owned(user_id, memory_id)
            changed = await state.mem.update(memory_id, **body.model_dump(exclude_unset=True))
        return _json(changed)

    @router.delete("/memories/{memory_id}", status_code=204, summary="delete a memory with its edges")
    async def delete(user_id: str, memory_id: str) -> Response:
        async with state.writes.guard():
            await owned(user_id, memory_id)
            await state.mem.delete(memory_id)
        return Response(status_code=204)

    @router.get("/memories/{memory_id}/history", response_model=list[MemoryRecord],
                summary="every version of a memory, oldest first")
    async def history(user_id: str, memory_id: str) -> Response:
        await owned(user_id, memory_id)
        versions = [m for m in await state.mem.history(memory_id) if m.user_id == user_id]
        return _json(versions, 200, _MEMORIES)

    @router.post("/memories/{memory_id}/forget", response_model=MemoryRecord,
                 summary="invalidate a memory (never recalled again; exportable until deleted)")
    async def forget(user_id: str, memory_id: str) -> Response:
        async with state.writes.guard():
            await owned(user_id, memory_id)
            return _json(await state.mem.forget(memory_id))

    @router.post("/memories/{memory_id}/pin", response_model=MemoryRecord,
                 summary="keep a memory at full weight in every forgetting tier (or stop)")
    async def pin(user_id: str, memory_id: str, body: PinBody) -> Response:
        async with state.writes.guard():
            await owned(user_id, memory_id)
            return _json(await state.mem.pin(memory_id, body.pinned))

    @router.post("/forget", response_model=MemoryRecord, summary="invalidate the user's best recall hit for a query")
    async def forget_query(user_id: str, body: ForgetBody) -> Response:
        async with state.writes.guard():
            return _json(await state.mem.forget(query=body.query, user_id=user_id))

    @router.post("/recall", response_model=RecallResult,
                 summary="the memories most related to a query; explain=true keeps paths and stage trace")
    async def recall(user_id: str, body: RecallBody) -> Response:
        result = await state.mem.recall(body.query, user_id=user_id, k=body.k, mode=body.mode, touch=body.touch,
                                        include_history=body.include_history)
        if not body.explain:
            result = result.model_copy(update={
                "hits": tuple(h.model_copy(update={"path": ()}) for h in result.hits),
                "trace": result.trace.model_copy(update={"stages": ()}),
            })
        return _json(result)

    @router.get("/conflicts", response_model=list[MemoryConflict],
                summary="open conflicts: two active memories that may state one thing with different values")
    async def conflicts(user_id: str) -> Response:
        return _json(await state.mem.conflicts(user_id=user_id), 200, _CONFLICTS)

    @router.post("/conflicts/resolve", status_code=204,
                 summary="settle a conflict: the later statement supersedes the earlier one, or both stand")
    async def resolve_conflict(user_id: str, body: ResolveBody) -> Response:
        async with state.writes.guard():
            await owned(user_id, body.new_id)
            await owned(user_id, body.old_id)
            await state.mem.resolve_conflict(body.new_id, body.old_id, supersedes=body.supersedes)
        return Response(status_code=204)

    @router.get("/export", summary="every node and edge of the user, streamed as JSON lines",
                response_class=StreamingResponse,
                responses={200: {"content": {"application/x-ndjson": {}}}})
    async def export(user_id: str) -> StreamingResponse:
        rows: Any = state.mem.export(user_id=user_id)
        if asyncio.iscoroutine(rows):  # AsyncMemory.export gathers the rows, then we stream them
            rows = await rows
        return StreamingResponse(_ndjson(rows), media_type="application/x-ndjson")

    @router.delete("", response_model=dict[str, int], summary="delete every memory, entity and edge of the user")
    async def delete_all(user_id: str) -> Response:
        async with state.writes.guard():
            return _json(await state.mem.delete_all(user_id=user_id), 200, _COUNTS)

    @router.get("/stats", response_model=dict[str, int], summary="counts of the user's memories, entities, edges")
    async def stats(user_id: str) -> Response:
        return _json(await state.mem.stats(user_id=user_id), 200, _COUNTS)

    @router.post("/maintain", response_model=dict[str, int], summary="how many memories are in each forgetting tier")
    async def maintain(user_id: str) -> Response:
        return _json(await state.mem.maintain(user_id=user_id), 200, _COUNTS)

    return router


async def _ndjson(rows: Any) -> AsyncIterator[bytes]:
    """JSON lines in chunks; works for a list and for an async iterator of rows."""
    chunk: list[str] = []

    async def each() -> AsyncIterator[Any]:
        if hasattr(rows, "__aiter__"):
            async for row in rows:
                yield row
        else:
            for row in rows:
                yield row

    async for row in each():
        chunk.append(json.dumps(row, ensure_ascii=False))
        if len(chunk) >= _EXPORT_LINES_PER_CHUNK:
            yield ("\n".join(chunk) + "\n").encode("utf-8")
            chunk = []
    if chunk:
        yield ("\n".join(chunk) + "\n").encode("utf-8")
