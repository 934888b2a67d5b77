"""Systems under test, each behind ``index(dataset)`` and ``recall(query, k)``.

A method is anything that satisfies :class:`Method`.  Optional extras that the
runner reads when present (all outside the timed region):

* ``config() -> dict``: parameters to record in the result header;
* ``store_bytes() -> int | None``: size of the method's store on disk;
* ``indexed_count() -> int``: how many documents were actually stored;
* ``last_explain``: per-query diagnostics of the last ``recall`` (e.g. scores);
* ``prepare()``: load models and caches before ``index`` is timed;
* ``close()``: release resources.

:data:`METHODS` maps a method name used on the command line to a factory.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import sys
import tempfile
import time
from typing import TYPE_CHECKING, Any, Callable, Protocol, runtime_checkable

from benchmarks.datasets import Dataset, Query, iter_doc_chunks

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Method", "BM25Method", "RippleMethod", "METHODS", "make_method"]


def _store_label(store: str | None) -> str:
    """How a method's name says where its store is: "" (a temporary embedded store), "@neo4j" (a server:
    ``bolt://``, ``neo4j+s://``...), "@memory" (``memory://``) or "@sqlite" (an embedded store at a path or
    ``sqlite:///tmp/x``): two runs on two backends must not share a results file name."""
    if not store:
        return ""
    scheme = store.split("://", 1)[0].lower() if "://" in store else "sqlite"
    return "@neo4j" if scheme.startswith(("bolt", "neo4j")) else "@memory" if scheme == "memory" else "@sqlite"


@runtime_checkable
class Method(Protocol):
    """A retrieval system under test."""

    name: str

    def index(self, dataset: Dataset) -> None:
        """Store every document of ``dataset``."""
        ...

    def recall(self, query: Query, k: int) -> list[str]:
        """Up to ``k`` document ids of ``query.user_id``, best first."""
        ...


# --------------------------------------------------------------------------- BM25


class _UserIndex:
    """One user's BM25 index: document ids, vocabulary and the bm25s retriever."""

    __slots__ = ("doc_ids", "token_ids", "vocab", "retriever")

    def __init__(self) -> None:
        self.doc_ids: list[str] = []
        self.token_ids: list[list[int]] = []
        self.vocab: dict[str, int] = {}
        self.retriever: Any = None


class BM25Method:
    """Plain BM25 over each user's documents (bm25s, Lucene variant).

    Tokens come from ripple's own CJK-aware :func:`extractors.text.lexical_tokens`
    (stop words dropped, light English stemming, jieba for Chinese), so the
    baseline and ripple's lexical seed see the same terms.  Each user gets a
    separate index: a query is answered from its user's documents only, and
    IDF statistics are per user.  Documents that share no term with the query
    are not returned (the list can be shorter than ``k``); ties are broken by
    insertion order.
    """

    def __init__(
        self, *, k1: float = 1.5, b: float = 0.75, variant: str = "lucene", stem: bool = True, name: str = "bm25"
    ) -> None:
        self.name = name
        self.stem = stem
        self.k1 = k1
        self.b = b
        self.variant = variant
        self._users: dict[str, _UserIndex] = {}
        self.last_explain: dict[str, Any] | None = None

    def config(self) -> dict[str, Any]:
        return {
            "method": "bm25",
            "library": "bm25s",
            "k1": self.k1,
            "b": self.b,
            "variant": self.variant,
            "tokenizer": "extractors.text.lexical_tokens",
            "stem": self.stem,
            "scope": "per-user index",
        }

    def prepare(self) -> None:
        """Import bm25s and load jieba's dictionary before indexing is timed."""
        import bm25s  # noqa: F401

        from extractors.text import lexical_tokens

        lexical_tokens("warm up 北京大学")

    def index(self, dataset: Dataset) -> None:
        import bm25s

        from extractors.text import lexical_tokens

        users: dict[str, _UserIndex] = {}
        for chunk in iter_doc_chunks(dataset.docs):
            for doc in chunk:
                ui = users.get(doc.user_id)
                if ui is None:
                    ui = users[doc.user_id] = _UserIndex()
                vocab = ui.vocab
                # setdefault returns the stored int, so equal tokens share one int object
                ui.token_ids.append([vocab.setdefault(t, len(vocab)) for t in lexical_tokens(doc.text, stem=self.stem)])
                ui.doc_ids.append(doc.id)
        for ui in users.values():
            ret = bm25s.BM25(k1=self.k1, b=self.b, method=self.variant)
            ret.index((ui.token_ids, ui.vocab), show_progress=False)
            ui.retriever = ret
            ui.token_ids = []  # the retriever keeps its own sparse matrix
        self._users = users

    def indexed_count(self) -> int:
        return sum(len(u.doc_ids) for u in self._users.values())

    def recall(self, query: Query, k: int) -> list[str]:
        import numpy as np

        from extractors.text import lexical_tokens

        ui = self._users.get(query.user_id)
        self.last_explain = None
        if ui is None or k <= 0:
            return []
        ret = ui.retriever
        ids = [ret.vocab_dict[t] for t in lexical_tokens(query.text, stem=self.stem) if t in ret.vocab_dict]
        if not ids:
            return []
        scores: np.ndarray = ret.get_scores_from_ids(ids)
        top = _top_k(scores, k)
        self.last_explain = {"scores": [round(float(scores[i]), 4) for i in top]}
        return [ui.doc_ids[i] for i in top]


def _top_k(scores: "np.ndarray", k: int) -> list[int]:
    """Indices of the ``k`` best positive scores, best first, ties by index."""
    import numpy as np

    pos = np.flatnonzero(scores > 0)
    if pos.size > k:
        # argpartition finds a candidate set; widen it to every index tied with the k-th score
        kth = np.partition(scores[pos], pos.size - k)[pos.size - k]
        pos = pos[scores[pos] >= kth]
    order = np.lexsort((pos, -scores[pos]))
    return pos[order][:k].tolist()


# --------------------------------------------------------------------------- ripple


class RippleMethod:
    """ripple's own recall through its public API (``ripple.Memory``).

    ``mode`` is passed to ``Memory.recall`` (a recipe name: "ripple", "flat",
    "bm25", "hybrid", "ppr").  ``recipe`` names an ablation of
    :data:`ripple.recall.recipes.ABLATIONS` to run as the client's own plan,
    and ``config_overrides`` is a nested dict merged onto that plan (e.g.
    ``{"seed": {"late": 0.5}}``).  The
    store lives in a temporary folder removed by :meth:`close`.  Recalls do not
    ``touch`` memories, so queries cannot influence each other.  Turns that
    ripple judges contentless are not stored; they simply cannot be recalled.
    Everything that touches the ripple API is in this class, so it is the one
    place to adapt when the API moves.
    """

    def __init__(
        self,
        mode: str = "ripple",
        config_overrides: dict[str, Any] | None = None,
        *,
        name: str | None = None,
        chunk_size: int = 2_048,
        progress: bool = True,
        store: str | None = None,
        embedder: str | None = None,
        lifecycle: dict[str, Any] | None = None,
        extractor: str | None = None,
        recipe: str | None = None,
        reuse: bool = False,
    ) -> None:
        if extractor not in (None, "gazetteer"):
            raise ValueError(f"unknown extractor {extractor!r}; known: gazetteer (default: spaCy/jieba)")
        self.mode = mode
        self.extractor = extractor  # "gazetteer": match the dataset's known names instead of parsing
        self.lifecycle = dict(lifecycle or {})  # LifecycleConfig fields (the write path: its own store)
        self.overrides = dict(config_overrides or {})
        self.recipe = recipe
        self.store = store  # a bolt:// or neo4j:// URI; None = a temporary embedded store
        # a server store that already holds this dataset (from an earlier run) is used as it is
        self.reuse = reuse
        self.embedder = embedder  # e.g. "hash-384" for model-free scale runs; None = the default model
        suffix = _store_label(store) + (f"+{embedder}" if embedder else "") + (f"+{extractor}" if extractor else "")
        self.name = (name or mode) + suffix
        self.chunk_size = chunk_size
        self.progress = progress
        self._mem: Any = None
        self._dir: str | None = None
        self._ingest_s: float | None = None
        self._stored = 0
        self._recall_config: Any = None
        self._known_entities: dict[str, str] = {}
        # Recall happens at each user's "present": the time of their latest memory, not today.  A
        # conversation recorded in 2023 and queried from 2026 would make every memory three years
        # old, which hides what time decay and the forgetting tiers do to the ranking.
        self._user_now: dict[str, float] = {}
        self._query_now: float | None = None
        self.last_explain: dict[str, Any] | None = None

    def config(self) -> dict[str, Any]:
        cfg: dict[str, Any] = {"method": "ripple", "mode": self.mode, "recipe": self.recipe, "overrides": self.overrides,
                               "lifecycle": self.lifecycle, "extractor": self.extractor or "default"}
        if self._recall_config is not None:
            cfg["recall_config"] = self._recall_config.model_dump(mode="json")
        return cfg

    def prepare(self) -> None:
        """Load the embedder and extractor (cached per process) on a scratch store, untimed."""
        from ripple import Memory

        scratch = tempfile.mkdtemp(prefix="ripple-bench-warmup-")
        try:
            mem = Memory(path=scratch, config=self._build_config())
            try:
                mem.add("Dana runs procurement at Northwind in Berlin.", user_id="warmup", session_id="s")
                mem.recall("Who runs procurement?", user_id="warmup", k=1, mode=self.mode, touch=False)
            finally:
                mem.close()
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _build_config(self) -> Any:
        from ripple import RecallConfig
        from ripple.recall.recipes import ABLATIONS

        base = ABLATIONS[self.recipe] if self.recipe else RecallConfig()
        if not self.overrides:
            return base
        return RecallConfig.model_validate(_deep_merge(base.model_dump(), self.overrides))

    def index(self, dataset: Dataset) -> None:
        from ripple import Memory

        self.close()
        self._recall_config = self._build_config()
        if self.extractor == "gazetteer":
            if not dataset.known_entities:
                raise ValueError(f"--extractor gazetteer needs a dataset that lists its names (synthetic);"
                                 f" {dataset.name} does not")
            self._known_entities = dataset.known_entities
        key = (dataset.name, dataset.n_docs, id(dataset), self.store or "", self.embedder or "",
               self.extractor or "", json.dumps(self.lifecycle, sort_keys=True))
        shared = _SHARED_STORES.get(key)
        if shared is not None:  # same data, same write path: only the recall plan differs
            self._dir, self._stored, self._ingest_s, self._user_now = shared
            self._mem = self._open(self._dir)
            return
        self._dir = self.store or tempfile.mkdtemp(prefix=f"ripple-bench-{dataset.name}-")
        self._mem = self._open(self._dir)
        if self.store and self.reuse and self._reuse(dataset):
            _SHARED_STORES[key] = (self._dir, self._stored, self._ingest_s, self._user_now)
            return
        if self.store:  # a server: start from an empty graph for this dataset's users
            for user in sorted({d.user_id for d in dataset.docs}):
                self._mem.delete_all(user_id=user)
        t0 = time.perf_counter()
        self._ingest(dataset)
        self._ingest_s = time.perf_counter() - t0
        _SHARED_STORES[key] = (self._dir, self._stored, self._ingest_s, self._user_now)

    def _reuse(self, dataset: Dataset) -> bool:
        """Take the server's copy of the dataset if every user of it has memories there (no ingest)."""
        users = sorted({d.user_id for d in dataset.docs})
        counts = [self._mem.stats(user_id=u)["memories"] for u in users]
        if not all(counts):
            return False
        self._stored, self._ingest_s = sum(counts), None
        self._user_now = {}
        for d in dataset.docs:
            if d.at is not None:
                t = d.at.timestamp()
                if t > self._user_now.get(d.user_id, float("-inf")):
                    self._user_now[d.user_id] = t
        return True

    def warm(self, dataset: Dataset) -> None:
        """Each user's vectors loaded where the store keeps them in process (``Memory.warm``), untimed: the
        timed recalls are the steady state (the first recall after a start is a separate figure)."""
        if self._mem is not None:
            for user in sorted({d.user_id for d in dataset.docs}):
                self._mem.warm(user_id=user)

    def ingest_seconds(self) -> float | None:
        """Seconds the (possibly shared) store took to ingest the dataset."""
        return self._ingest_s

    def _open(self, where: str) -> Any:
        from ripple import Memory, RippleSettings

        from ripple import LifecycleConfig

        kwargs: dict[str, Any] = {"config": self._recall_config, "lifecycle": LifecycleConfig(**self.lifecycle),
                                  "clock": self._clock}
        if self.embedder:
            kwargs["embedder"] = self.embedder
        if self.extractor == "gazetteer":
            from extractors import GazetteerExtractor

            kwargs["extractor"] = GazetteerExtractor(self._known_entities)
        if self.store:
            return Memory(store=where, settings=RippleSettings(), **kwargs)
        return Memory(path=where, **kwargs)

    def _ingest(self, dataset: Dataset) -> None:
        from tqdm import tqdm

        stored = 0
        self._user_now = {}
        with tqdm(total=dataset.n_docs, unit="doc", desc=f"ingest {dataset.name}/{self.name}",
                  disable=not self.progress, file=sys.stderr) as bar:
            for chunk in iter_doc_chunks(dataset.docs, self.chunk_size):
                out = self._mem.add_many(
                    [
                        {
                            "text": d.text,
                            "user_id": d.user_id,
                            "session_id": d.session_id,
                            "at": d.at,
                            "metadata": {"doc_id": d.id},
                        }
                        for d in chunk
                    ]
                )
                stored += len(out)
                for d in chunk:
                    if d.at is not None:
                        t = d.at.timestamp()
                        if t > self._user_now.get(d.user_id, float("-inf")):
                            self._user_now[d.user_id] = t
                bar.update(len(chunk))
        self._stored = stored

    def indexed_count(self) -> int:
        return self._stored

    def _clock(self) -> float:
        return time.time() if self._query_now is None else self._query_now

    def recall(self, query: Query, k: int) -> list[str]:
        self._query_now = self._user_now.get(query.user_id)
        try:
            res = self._mem.recall(query.text, user_id=query.user_id, k=k, mode=self.mode, touch=False)
        finally:
            self._query_now = None
        if not res.user_known:  # every turn of this user was contentless
            self.last_explain = None
            return []
        self.last_explain = {"scores": [round(h.score, 5) for h in res.hits], "via": [h.via for h in res.hits],
                             # per-stage milliseconds: which stage a slow query spent its time in
                             "stages_ms": {s.name: round(s.ms, 3) for s in res.trace.stages}}
        return [h.memory.metadata["doc_id"] for h in res.hits]

    def store_bytes(self) -> int | None:
        if not self._dir or self.store:
            return None
        total = 0
        for root, _dirs, files in os.walk(self._dir):
            for f in files:
                try:
                    total += os.path.getsize(os.path.join(root, f))
                except OSError:
                    pass
        return total

    def close(self) -> None:
        if self._mem is not None:
            self._mem.close()
            self._mem = None
        self._dir = None


#: Ingested stores shared by the ripple-family methods of one run, keyed by dataset:
#: ingest once, recall with every mode and ablation (removed at exit).
_SHARED_STORES: dict[tuple[str, ...], tuple[str, int, float, dict[str, float]]] = {}


@atexit.register
def _remove_shared_stores() -> None:
    for folder, *_ in _SHARED_STORES.values():
        if "://" not in folder:  # never touch a server's data here
            shutil.rmtree(folder, ignore_errors=True)
    _SHARED_STORES.clear()


def _deep_merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``update`` merged in, recursing into nested dicts."""
    out = dict(base)
    for key, val in update.items():
        if isinstance(val, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], val)
        else:
            out[key] = val
    return out


# --------------------------------------------------------------------------- registry

METHODS: dict[str, Callable[[], Method]] = {
    "bm25": BM25Method,
    # the same without the light English stemmer (closer to a textbook BM25 baseline)
    "bm25-nostem": lambda: BM25Method(stem=False, name="bm25-nostem"),
    "ripple": lambda: RippleMethod("ripple"),
    "flat": lambda: RippleMethod("flat"),
    "ripple-bm25": lambda: RippleMethod("bm25", name="ripple-bm25"),
    "hybrid": lambda: RippleMethod("hybrid"),
    "ppr": lambda: RippleMethod("ppr"),
    # ablations (ripple.recall.recipes.ABLATIONS): each switches one part of the default plan off
    **{f"ripple-{name}": (lambda name=name: RippleMethod("ripple", name=f"ripple-{name}", recipe=name))
       for name in ("nospread", "nosession", "noentity", "nodamping", "nolate", "timedecay", "nospeaker",
                    "notitle", "nowhen", "notimeanswer", "nolength", "rerank", "sessionppr", "samelex")},
    # the memory lifecycle (issue #5) off: no dedup, supersede, retraction or correction on the write path,
    # no confidence or forgetting tiers in the merge
    "ripple-nolifecycle": lambda: RippleMethod(
        "ripple", name="ripple-nolifecycle", recipe="nolifecycle",
        lifecycle={"dedup": False, "supersede": False, "retractions": False, "corrections": False},
    ),
}


def make_method(name: str, *, store: str | None = None, embedder: str | None = None, dedup: bool = True,
                extractor: str | None = None, reuse: bool = False) -> Method:
    """A fresh method instance from :data:`METHODS`; ``store``/``embedder``/``dedup``/``extractor`` apply to
    ripple's methods (without dedup, the method's name gets ``+nodedup``)."""
    try:
        factory = METHODS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; known: {', '.join(METHODS)}") from None
    method = factory()
    if isinstance(method, RippleMethod) and (store or embedder or extractor or not dedup):
        lifecycle = method.lifecycle if dedup else {**method.lifecycle, "dedup": False}
        method = RippleMethod(method.mode, method.overrides, name=method.name + ("" if dedup else "+nodedup"),
                              store=store, embedder=embedder, lifecycle=lifecycle, extractor=extractor,
                              recipe=method.recipe, reuse=reuse)
    return method
