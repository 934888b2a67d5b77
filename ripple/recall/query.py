"""What a recall plan knows about its query before it starts, and the query's own signals.

The driver computes everything CPU-bound about the query (tokens, vectors,
language, named entities) before the plan runs, or, for a server store, while
the plan already reads the lexical route (see :class:`QueryInput.pending`).
"""

from __future__ import annotations

import re
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .config import RecallConfig, SeedMethod

if TYPE_CHECKING:
    import numpy as np

__all__ = ["QueryInput", "QueryVectors", "DenseSearch", "dense_search", "pool_size", "needs_vectors",
           "has_recency_cue", "asks_about_change"]

_RECENCY_CUES = re.compile(
    r"\b(latest|recent(ly)?|newest|last (time|week|month)|most recent|currently|these days|nowadays|now)\b"
    r"|最近|最新|上次|现在|目前|如今",
    re.IGNORECASE,
)

# A query that names its own time ("the latest project in July 2023", "2023年7月最新的") asks what was
# latest *then*; weighting by age from today would favour the wrong memories.
_ANCHORED_TIME = re.compile(
    r"\b(1[89]\d\d|2\d\d\d)\b|\b(january|february|march|april|may|june|july|august|september|october|"
    r"november|december|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\b(?!\s*(?:i|we|you|he|she|they)\b)"
    r"|\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}|\d+\s*[年月]|[一二三四五六七八九十]+月",
    re.IGNORECASE,
)


def has_recency_cue(text: str) -> bool:
    """True when a query asks about recency ("latest", "recently", "最近") relative to now, not to a
    time it names itself ("the latest project in July 2023")."""
    return _RECENCY_CUES.search(text) is not None and _ANCHORED_TIME.search(text) is None


# A question about how something changed ("What was the budget originally?", "How much did the rent go up?",
# "原本定在哪天，后来挪到了哪天", "从最初报价到最后敲定一共降了多少") asks for the values a later statement replaced:
# the superseded memories are its evidence.  Words that ask about an earlier state or the change itself.
_CHANGE_CUES = re.compile(
    r"\b(originally|initially|at first|in the beginning|used to|previously|formerly|changed?|changes|changing"
    r"|increased?|decreased?|(go|goes|going|went|gone) (up|down)|grew|dropped|rose|fell|how (much|many) (more|less|fewer))\b"
    r"|原本|原来|原先|本来|最初|最开始|一开始|起初|起先|当初|后来|变化|变成|改成|改到|挪到|换成|推迟到|提前到"
    r"|从.{1,15}?到|降了|涨了|增加|减少|多出|多了多少|少了多少",
    re.IGNORECASE,
)


def asks_about_change(text: str) -> bool:
    """True when a query asks how something changed or what it was before ("originally", "后来", "从最初报价到
    最后敲定"): recall then includes the memories later statements superseded (see ``MergeConfig.history_cue``)."""
    return _CHANGE_CUES.search(text) is not None


@dataclass(slots=True)
class QueryInput:
    """Everything CPU-bound about the query, computed by the driver beforehand."""

    text: str
    user_id: str
    k: int
    mode: str  # the recipe name the caller asked for (reported in the result)
    now: float
    terms: list[str]
    vector: "np.ndarray | None"
    tokens: "np.ndarray | None"
    token_dim: int
    entity_keys: list[str]
    language: str = "en"
    names: list[str] = field(default_factory=list)  # lexical tokens of the names the query asks about
    # the lexical token of the word each row of ``tokens`` belongs to ("" for none), when the embedder tells
    # (SentenceTransformerEmbedder.token_words) and the plan uses it (SeedConfig.late_skip_common); else None
    token_terms: tuple[str, ...] | None = None
    # The query's vectors while the driver is still computing them (an opaque handle): the plan
    # runs the lexical route meanwhile and collects them with a CollectQueryVectors request,
    # which answers with a QueryVectors.
    pending: Any = None
    encode_ms: float = 0.0  # time the driver spent encoding the query before the plan (0: none, or beside it)
    load_ms: float = 0.0  # time the driver spent loading the embedding model for this query (the first one only)
    multilingual: bool = False  # whether the multilingual route is on (ripple.recall.multilingual)
    # whether the user has memories in the multilingual space, when the caller already read it with the
    # user check (graphstore.records.UserState); None: the multilingual route asks the store
    user_multilingual: bool | None = None


@dataclass(frozen=True, slots=True)
class DenseSearch:
    """The nearest-memory search a plan will make once it has the query vector."""

    pool: int
    statuses: tuple[str, ...]


@dataclass(slots=True)
class QueryVectors:
    """The query's vectors, and the hits of the plan's dense search when the driver could already
    run it beside the encoder (``search`` says which search that was)."""

    vector: "np.ndarray"
    tokens: "np.ndarray"
    search: DenseSearch | None = None
    hits: list[tuple[str, float]] | None = None
    # an async store's search, running on the event loop until the driver collects it into ``hits``
    hits_later: "Future[list[tuple[str, float]]] | None" = None


def pool_size(config: RecallConfig, k: int) -> int:
    """Candidates each first-stage route keeps (the dense search, the lexical top, the fused pool)."""
    return max(config.seed.pool, k)


def needs_vectors(config: RecallConfig) -> bool:
    """True when the plan uses the query's vectors (every seed method but BM25 alone)."""
    return config.seed.method != SeedMethod.LEXICAL


def dense_search(k: int, config: RecallConfig) -> DenseSearch | None:
    """The nearest-memory search the plan makes, or ``None`` when it makes none.

    A driver that encodes the query in a worker thread may run this search
    there as soon as the vector exists: it then overlaps the lexical route
    instead of following it (the plan checks that the search is the same).
    """
    if not needs_vectors(config):
        return None
    return DenseSearch(pool_size(config, k), tuple(config.merge.include_statuses))
