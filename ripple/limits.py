"""Size limits on what one call may write or ask: documented, configurable, checked before any write.

Without them one caller could hurt every other call of the same user or the
same process: in the probes of issue 18, 50 MB of metadata on one memory made
the user's recalls fetch 50 MB whenever that memory was a candidate, and one
100,000-character text became 3,932 entities (the write took minutes, most of
it resolving those entities against each other).  Each limit is a field of
:class:`Limits`, part of :class:`ripple.RippleSettings`, so it is set like any
other setting::

    RIPPLE_LIMITS__TEXT_CHARS=20000 ripple add ...          # environment
    Memory(settings=RippleSettings(limits=Limits(text_chars=20_000)))

A call past a limit raises :class:`ripple.LimitExceeded` (an
:class:`~ripple.InvalidInput`) whose message names the limit, the value, and
the setting that raises it; nothing is written.  One limit does not refuse: a
text with more distinct entities than ``entities_per_memory`` is stored with
its most-mentioned entities only, and the memory's ``metadata["ripple"]``
says so (``entities_capped``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .errors import LimitExceeded

__all__ = ["Limits", "MAX_METADATA_DEPTH", "exceeded"]

#: Deepest metadata any setting may allow: JSON encoders and decoders recurse once per level, and
#: a few hundred levels exhaust Python's stack (the probe's 1,000 raised RecursionError).
MAX_METADATA_DEPTH = 100


class Limits(BaseModel):
    """What one call may write or ask (see the module docstring); every field is a setting.

    The defaults leave room for any conversational use (a chat turn, a
    document chunk of a few pages, tags and provenance in metadata) and stop
    what only a bug or an attack sends.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    text_chars: int = Field(100_000, ge=1, description="characters of one memory's text")
    query_chars: int = Field(10_000, ge=1, description="characters of one recall query")
    k: int = Field(1_000, ge=1, description="most hits one recall may ask for")
    metadata_bytes: int = Field(65_536, ge=2, description="size of one memory's metadata as UTF-8 JSON")
    metadata_depth: int = Field(32, ge=1, le=MAX_METADATA_DEPTH,
                                description="nesting of one memory's metadata ({} and [] levels)")
    user_id_chars: int = Field(256, ge=1, description="characters of a user id")
    session_id_chars: int = Field(256, ge=1, description="characters of a session id")
    agent_id_chars: int = Field(256, ge=1, description="characters of an agent id")
    memory_id_chars: int = Field(128, ge=26, description="characters of a memory id (ripple's own have 26)")
    entities_per_memory: int = Field(256, ge=1,
                                     description="distinct entities one text may add (the most mentioned are kept)")
    batch_items: int = Field(10_000, ge=1,
                             description="items of one add_many call (all validated before the first write)")
    import_batch: int = Field(1_000, ge=1, description="records per transaction of an import")


def exceeded(limit: str, what: str, value: int, maximum: int) -> LimitExceeded:
    """The error of a value past a limit: names the limit, the value, and the setting to change."""
    return LimitExceeded(
        f"{what} is {value:,}, over the limit of {maximum:,} (setting limits.{limit},"
        f" env RIPPLE_LIMITS__{limit.upper()})",
        limit=limit, value=value, maximum=maximum,
    )
