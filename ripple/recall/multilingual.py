"""The multilingual route: memories in a CJK script searched with a multilingual model.

Why: the default embedder (all-MiniLM-L6-v2) is English-only.  On the Chinese
development set its dense route finds the evidence turn in the top 10 for
22% of the questions, multilingual-e5-small for 73% (and for English
questions asked over Chinese memories, 50% against 19%).  e5 encodes ~10x
slower than MiniLM, so it does not replace it: the write path gives only the
memories whose text is in a CJK script a second vector, e5's
(:attr:`graphstore.records.StoredMemory.multilingual`), kept in a vector space
of its own, and recall searches that space with the query's e5 vector when
the user has any such memory.  A user who never wrote CJK text pays one cheap
store probe per recall (answered with the user check:
:meth:`graphstore.GraphStore.get_user_state`) and
no encoding; English memories never get the second vector, so English recall
is exactly what it was.

In the seed stage (:mod:`ripple.recall.seed`) the route is one more score:
its cosines join the first stage beside the dense route, and the seed score
adds them (min-max normalised) with the weight ``SeedConfig.multilingual``
times the share of the pool the route scored.  A question in a non-CJK script
takes the route only when it scored most of the pool (a Chinese user asking in
English); a bilingual user's English question is read by the main model.  The
memories the route scores keep ``SeedConfig.main_share_cjk`` of the main
embedder's dense and MaxSim weights, and a CJK query's words weigh
``SeedConfig.lexical_multilingual`` (both 1.0 by default: chosen
leave-one-conversation-out, see benchmarks/RESULTS.md).
"""

from __future__ import annotations

from typing import Any, Generator

from graphstore.requests import HasMultilingual, NearestMultilingual

from .._requests import EncodeMultilingualQuery, Request
from .query import QueryInput

__all__ = ["multilingual_route", "CJK_LANGUAGES"]

#: query languages (``extractors.text.detect_language``) written in a CJK script
CJK_LANGUAGES = ("zh", "ja", "ko")


def multilingual_route(q: QueryInput, pool: int, statuses: tuple[str, ...]) -> Generator[Request, Any, dict[str, float]]:
    """The ``pool`` memories nearest to the query in the multilingual space, as id -> cosine;
    empty (and nothing encoded) when the route is off or the user has no memory in a CJK script."""
    if not q.multilingual:
        return {}
    has = q.user_multilingual if q.user_multilingual is not None else (yield HasMultilingual(q.user_id))
    if not has:
        return {}
    vector = yield EncodeMultilingualQuery(q.text)
    return dict((yield NearestMultilingual(q.user_id, vector, pool, statuses)))
