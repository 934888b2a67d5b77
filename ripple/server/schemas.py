"""Request bodies of the HTTP API, derived from ripple's public models.

Responses are ripple's own models (:class:`ripple.MemoryRecord`,
:class:`ripple.RecallResult`), so the OpenAPI schema and the Python API can
never disagree.  Request bodies reuse :class:`ripple.models.AddItem`'s fields
without ``user_id``: the user is the URL's (``/v1/users/{user_id}/...``), so a
body cannot name another user.  Values are validated by ripple itself at the
call (one place, one set of messages), which answers ``invalid_input``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from ripple.models import AddItem

__all__ = ["AddBody", "AddManyBody", "RecallBody", "UpdateBody", "ForgetBody", "PinBody", "ResolveBody", "Health"]

_FORBID = ConfigDict(extra="forbid")

AddBody: type[BaseModel] = create_model(  # type: ignore[call-overload]
    "AddBody",
    __config__=_FORBID,
    __doc__="One memory to add for the URL's user (the fields of ripple.models.AddItem but user_id).",
    **{name: (field.annotation, field) for name, field in AddItem.model_fields.items() if name != "user_id"},
)


class AddManyBody(BaseModel):
    """Many memories for the URL's user, stored in atomic batches of up to 256."""

    model_config = _FORBID
    items: list[AddBody] = Field(description="validated together: one bad item and nothing is stored")


class RecallBody(BaseModel):
    """A recall for the URL's user."""

    model_config = _FORBID
    query: str
    k: int = Field(10, description="number of memories, 1-1000")
    mode: str = Field("ripple", description="ripple | flat | bm25 | hybrid | ppr")
    explain: bool = Field(False, description="keep each hit's path and the per-stage trace in the answer")
    include_history: bool | None = Field(
        None, description="put every version of a hit next to it, oldest first; unset: only when the query asks how"
                          " something changed (MergeConfig.history_cue)")
    touch: bool = Field(True, description="count the hits as used (keeps them in the hot forgetting tier)")


class UpdateBody(BaseModel):
    """Fields to change; a new text is re-extracted and re-embedded."""

    model_config = _FORBID
    text: str | None = None
    metadata: dict[str, Any] | None = None
    importance: float | None = None
    at: datetime | None = None


class ForgetBody(BaseModel):
    """Invalidate the user's best recall hit for ``query``."""

    model_config = _FORBID
    query: str


class PinBody(BaseModel):
    model_config = _FORBID
    pinned: bool = True


class ResolveBody(BaseModel):
    """Settle an open conflict between two of the URL's user's memories (either order of ids)."""

    model_config = _FORBID
    new_id: str
    old_id: str
    supersedes: bool = Field(description="true: the later one supersedes the earlier; false: both stay true")


class Health(BaseModel):
    """Liveness or readiness of the server."""

    status: str = Field(description="alive | ready | starting | failed | stopping")
    version: str
    in_flight_writes: int = Field(0, description="write requests running now (shutdown waits for them)")
    pid: int | None = Field(None, description="the server process that answered (one of several with --workers)")
    error: dict[str, str] | None = None

