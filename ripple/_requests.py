"""What the engine's plans yield: store requests, and CPU work they ask of the driver.

Every operation (recall, ingest, lifecycle, the API's reads and writes) is an
I/O-free generator of :data:`Request` values (the pattern of httpx's
``Auth.auth_flow``).  A :class:`~graphstore.requests.StoreRequest` is answered
by the store; a :class:`LocalRequest` (encode these texts, score these pairs
with a cross-encoder) by the driver's :class:`~ripple._runtime.Runtime`, which
the async driver runs in a worker thread so that the event loop never waits
for a model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generator, Generic, Sequence, TypeVar, Union, cast

from graphstore.requests import StoreRequest

if TYPE_CHECKING:
    import numpy as np

    from ._ingest import Prepared
    from ._runtime import Runtime
    from .models import AddItem
    from .recall.config import RecallConfig
    from .recall.query import QueryInput, QueryVectors
    from ._supersede import JudgeCase

__all__ = ["LocalRequest", "Prepare", "PrepareQuery", "EncodesBeside", "CollectQueryVectors", "ReadAhead", "CollectAhead", "EncodeQuery",
           "EncodeMultilingualQuery", "Embed", "ClauseVectors", "JudgePairs",
           "VectorDim", "CrossEncode",
           "Frames", "Speakers", "Judge", "Request", "Op"]

R = TypeVar("R")
T = TypeVar("T")


class LocalRequest(Generic[R]):
    """CPU work a plan asks of the driver rather than the store."""

    __slots__ = ()
    #: A question about the runtime's state that neither loads a model nor waits: the async driver answers it
    #: on the event loop, not in a worker thread (a thread hop would cost more than the answer).
    instant: ClassVar[bool] = False

    def run(self, runtime: "Runtime") -> R:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Prepare(LocalRequest["list[Prepared]"]):
    """Extract and embed validated items (the write path's CPU stage)."""

    items: "Sequence[AddItem]"

    def run(self, runtime: "Runtime") -> "list[Prepared]":
        return runtime.prepare(self.items)


@dataclass(frozen=True, slots=True)
class PrepareQuery(LocalRequest["QueryInput"]):
    """Tokens, language, entities and (now or beside the plan) vectors of a query."""

    query: str
    user_id: str
    k: int
    mode: str
    config: "RecallConfig"

    def run(self, runtime: "Runtime") -> "QueryInput":
        return runtime.query_input(self.query, self.user_id, self.k, self.mode, self.config)


@dataclass(frozen=True, slots=True)
class EncodesBeside(LocalRequest[bool]):
    """Whether :class:`PrepareQuery` would start the query's vectors in a worker thread with the models it
    needs already loaded (a server store, after the process's first query): a recall then prepares its
    query before its first read, so that the read runs while the query is encoded, and an unknown user's
    recall still loads no model."""

    config: "RecallConfig"
    instant: ClassVar[bool] = True

    def run(self, runtime: "Runtime") -> bool:
        return runtime.encodes_beside(self.config)


@dataclass(frozen=True, slots=True)
class CollectQueryVectors(LocalRequest["QueryVectors"]):
    """Wait for the query's vectors that a worker thread has been computing."""

    pending: Any  # a concurrent.futures.Future of QueryVectors

    def run(self, runtime: "Runtime") -> "QueryVectors":
        return runtime.collect_query_vectors(self.pending)


@dataclass(frozen=True, slots=True)
class ReadAhead(LocalRequest[Any]):
    """Start a store read beside the plan: a server store answers it on its own core while the plan
    goes on (the spreading read), and the plan collects it later (:class:`CollectAhead`).  ``None``
    where reads are not overlapped (an in-process store reads holding the GIL: the plan then reads what
    it needs when it needs it)."""

    request: "StoreRequest[Any]"

    def run(self, runtime: "Runtime") -> Any:
        return runtime.read_ahead(self.request)


@dataclass(frozen=True, slots=True)
class CollectAhead(LocalRequest[Any]):
    """Wait for a read :class:`ReadAhead` started; its answer, or ``None`` where the read could not be
    started (the plan reads itself)."""

    pending: Any  # a concurrent.futures.Future of the request's answer

    def run(self, runtime: "Runtime") -> Any:
        return runtime.collect_ahead(self.pending)


@dataclass(frozen=True, slots=True)
class EncodeQuery(LocalRequest["np.ndarray"]):
    """The sentence vector of a text encoded as a query (the query without its too common words:
    :attr:`ripple.recall.config.SeedConfig.dense_skip_common`)."""

    text: str

    def run(self, runtime: "Runtime") -> "np.ndarray":
        return runtime.query_encoder().encode_one(self.text)[0]


@dataclass(frozen=True, slots=True)
class EncodeMultilingualQuery(LocalRequest["np.ndarray"]):
    """The query's vector from the multilingual route's model (e5's ``query:`` side)."""

    query: str

    def run(self, runtime: "Runtime") -> "np.ndarray":
        return runtime.multilingual_query(self.query)


@dataclass(frozen=True, slots=True)
class Embed(LocalRequest["np.ndarray"]):
    """Sentence vectors of texts (entity names on ingest)."""

    texts: Sequence[str]

    def run(self, runtime: "Runtime") -> "np.ndarray":
        return runtime.encode(self.texts)


@dataclass(frozen=True, slots=True)
class ClauseVectors(LocalRequest[list["np.ndarray"]]):
    """Sentence vectors of masked clauses the write path grades (recent ones cached: see
    :meth:`ripple._runtime.Runtime.clause_vectors`)."""

    texts: Sequence[str]

    def run(self, runtime: "Runtime") -> list["np.ndarray"]:
        return runtime.clause_vectors(self.texts)


@dataclass(frozen=True, slots=True)
class JudgePairs(LocalRequest[list[float]]):
    """The pair judge's probability that each ``(older, newer)`` text pair is a supersession (see
    :mod:`ripple._pairjudge`)."""

    pairs: Sequence[tuple[str, str]]

    def run(self, runtime: "Runtime") -> list[float]:
        return runtime.judge_pairs(self.pairs)


@dataclass(frozen=True, slots=True)
class VectorDim(LocalRequest[int]):
    """The embedder's dimension: what every stored vector must have (an import checks its blobs)."""

    def run(self, runtime: "Runtime") -> int:
        return int(runtime.embedder.dim)


@dataclass(frozen=True, slots=True)
class CrossEncode(LocalRequest[list[float]]):
    """Cross-encoder scores of (query, text) pairs (the cross-encoder reranker)."""

    model: str | None
    pairs: Sequence[tuple[str, str]]

    def run(self, runtime: "Runtime") -> list[float]:
        return runtime.cross_encode(self.model, self.pairs)


@dataclass(frozen=True, slots=True)
class Frames(LocalRequest[list[tuple[Any, Any]]]):
    """``(statement frames, speaker)`` of texts the write path compares, each frame prepared for
    comparison (a :class:`ripple._supersede.FrameView`; see :mod:`ripple._supersede`); ``comparable``:
    none for a text none of whose frames can replace or be replaced (see
    :meth:`ripple._runtime.Runtime.frames`)."""

    texts: Sequence[str]
    comparable: bool = False

    def run(self, runtime: "Runtime") -> list[tuple[Any, Any]]:
        return runtime.frames(self.texts, self.comparable)


@dataclass(frozen=True, slots=True)
class Speakers(LocalRequest[list[Any]]):
    """The speaker of each text the write path may compare, as :class:`Frames` gives it, without its
    frames (see :meth:`ripple._runtime.Runtime.speakers`)."""

    texts: Sequence[str]

    def run(self, runtime: "Runtime") -> list[Any]:
        return runtime.speakers(self.texts)


@dataclass(frozen=True, slots=True)
class Judge(LocalRequest[list[str]]):
    """The configured judge's answers for medium-confidence supersessions (``LifecycleConfig.judge``):
    one of 'supersedes', 'conflict', 'unrelated' per case, checked."""

    judge: Any  # Callable[[Sequence[JudgeCase]], Sequence[str]]
    cases: "Sequence[JudgeCase]"

    def run(self, runtime: "Runtime") -> list[str]:
        from .errors import ConfigError

        answers = [str(a) for a in self.judge(self.cases)]
        if len(answers) != len(self.cases) or any(a not in ("supersedes", "conflict", "unrelated") for a in answers):
            raise ConfigError("the judge must answer 'supersedes', 'conflict' or 'unrelated' for each case, in order")
        return answers


Request = Union[StoreRequest[Any], LocalRequest[Any]]
#: An operation: a generator of requests that returns ``T``.
Op = Generator[Request, Any, T]
