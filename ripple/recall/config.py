"""Recall configuration as data: one frozen model per stage, and the whole plan.

Every stage can be switched off or swapped by changing data, never code:
the seed method, the spreading channels (each with its own settings and
weight), the merge priors and the reranker.  Named recipes
(:mod:`ripple.recall.recipes`) are pre-built plans: the default, the
baselines (``flat``, ``bm25``, ``hybrid``, ``ppr``) and the ablations.  Build
variants with ``model_copy(update=...)`` (configs are frozen, so a shared
recipe cannot be changed by accident).  Enum values and channel names are
stable strings: they are written into saved configs and benchmark results.

A channel's settings are a :class:`ChannelConfig` subclass registered with
its channel (:func:`ripple.recall.channels.register_channel`); a config read
from JSON finds the right class by the ``name`` field.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny, field_validator

from extractors.labels import NAMED_LABELS, NOISY_NAMED_LABELS

__all__ = [
    "SeedMethod",
    "SeedConfig",
    "ChannelConfig",
    "SessionChannelConfig",
    "EntityChannelConfig",
    "PPRChannelConfig",
    "SpreadConfig",
    "TierConfig",
    "MergeConfig",
    "RerankMethod",
    "RerankConfig",
    "RelevanceConfig",
    "RecallConfig",
]


#: What a channel's source spreads (:attr:`ChannelConfig.source_strength` says what each means).
SourceStrength = Literal["rank", "relevance", "sure", "floor", "first", "relative", "lead"]


class _Config(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SeedMethod(str, Enum):
    """How the first stage scores the user's memories."""

    #: BM25 + dense cosine select a pool, token MaxSim scores it; the seeds then spread (ripple's own)
    FUSED = "fused"
    #: dense cosine top-k only (the ``flat`` baseline); the ranking is final
    DENSE = "dense"
    #: BM25 only (the ``bm25`` baseline); the ranking is final
    LEXICAL = "lexical"
    #: reciprocal rank fusion of the dense and BM25 rankings (the ``hybrid`` baseline); the ranking is final
    RRF = "rrf"


class SeedConfig(_Config):
    """Stage 1: score the user's memories against the query.

    With the ``fused`` method a cheap first stage (BM25 + dense cosine,
    min-max normalised and summed with ``first_stage_lexical`` /
    ``1 - first_stage_lexical``) selects a pool; token-level late interaction
    (MaxSim) then scores the pool, and the seed score is the weighted sum of
    the three normalised routes.  The other methods are the baselines: their
    ranking is final (nothing spreads from it).

    The dense and MaxSim weights follow each memory's length.  MaxSim takes,
    for every query word, the best match among the memory's tokens: precise
    over a chat turn of ~15 content tokens, indiscriminate over a passage of
    60-100, where some token matches almost any query word.  A sentence
    vector is the reverse: noisy for a short turn ("That's awesome, Mel!"),
    reliable for a passage.  So short memories lean on MaxSim and long ones on
    the sentence vector (``late_length_*``, ``dense_length_*``).  On the
    development data this lifted LoCoMo R@10 (.789 -> .805) and HotpotQA
    R@10 (.905 -> .950) together; a per-dataset weight cannot do both.
    """

    method: SeedMethod = SeedMethod.FUSED
    pool: int = Field(200, ge=1, description="candidates kept by the first stage")
    first_stage_lexical: float = Field(0.4, ge=0, le=1)
    lexical: float = Field(0.1, ge=0)
    dense: float = Field(0.3, ge=0)
    late: float = Field(0.9, ge=0, description="MaxSim weight; 0 skips token vectors")
    late_length_pivot: int | None = Field(
        32, ge=1,
        description="a memory with n > pivot content tokens keeps (pivot/n)**late_length_power of the MaxSim weight"
                    " and gives the rest to the dense route (None: every memory keeps all of it)",
    )
    late_length_power: float = Field(0.5, ge=0)
    # Both on, chosen leave-one-conversation-out (benchmarks/RESULTS.md, "Too common words in the query"):
    # on the four LoCoMo development conversations R@5 / R@10 .709 / .798 -> .725 / .818 (LOO .818), multi-hop
    # .553 -> .568 (with the dense probe as the mean of the other token vectors; .726 / .820 when the text was
    # encoded again); MaxSim alone .806, the dense route alone .806. Chinese R@10 .788 -> .787; MuSiQue and
    # HotpotQA unchanged (no query word is that common there).
    late_skip_common: bool = Field(
        True,
        description="MaxSim leaves out the query words the lexical route ignores as too common (in more than"
                    " max_df_ratio of the user's memories): in a chat every turn starts with its speaker's name,"
                    " so a question's 'Melanie' matches every turn fully and says nothing the speaker prior does"
                    " not (needs an embedder that tells which word each token vector is: the default does)",
    )
    dense_skip_common: bool = Field(
        True,
        description="the dense route searches again with the query's vector without the words the lexical route"
                    " ignores as too common: the mean of its other token vectors (the text encoded again without"
                    " them when the words behind the rows are unknown); one more vector search, only for a query"
                    " that has such a word (see late_skip_common)",
    )
    common_min_df: int = Field(
        50, ge=1,
        description="a word is too common for late_skip_common / dense_skip_common only when it is also in more than"
                    " this many memories: in a small store a share says little (3 of 4 turns naming Melanie do not"
                    " make her name noise), as for the entity channel's min_hub_degree",
    )
    dense_length_pivot: int | None = Field(
        24, ge=1,
        description="a memory with n < pivot content tokens gets (n/pivot)**dense_length_power of the dense weight"
                    " (None: every memory gets all of it)",
    )
    dense_length_power: float = Field(1.0, ge=0)
    lexical_cjk: float = Field(
        1.0, ge=0, description="lexical weight for Chinese/Japanese/Korean queries (the default embedder is English)"
    )
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    rrf_k: int = Field(60, ge=1, description="rank offset of the rrf method")
    max_df_ratio: float = Field(0.5, gt=0, le=1, description="query terms in more docs than this share are ignored")
    max_df: int | None = Field(
        1000, ge=1,
        description="query terms in more memories than this are ignored by the lexical route: in a large store a"
                    " common word's postings cost far more to read than its low IDF adds (None: no cap; on 100k"
                    " synthetic memories a cap of 2000 kept R@10 and cut Neo4j p50 from 177 to 114 ms, and 1000"
                    " raised R@10 .4875 -> .4975 and cut the embedded first stage's p95 by ~2 ms)",
    )
    query_entities: float = Field(0.0, ge=0, description="activation given to entities named in the query")
    # Chosen leave-one-conversation-out on the Chinese set and probe (benchmarks/RESULTS.md, "The automatic
    # multilingual route"): 2.4 with the lexical and main-embedder weights unchanged (1.0, 1.0) was best pooled
    # and chosen in 2 of 3 folds, among 0.6 / 1.2 / 2.4 x lexical 0.1 / 1.0 x main share 0 / 1.
    multilingual: float = Field(
        2.4, ge=0,
        description="weight of the multilingual route (memories in a CJK script searched with e5; see"
                    " ripple.recall.multilingual) in the seed score; 0 leaves the route out of recall",
    )
    main_share_cjk: float = Field(
        1.0, ge=0, le=1,
        description="share of the main embedder's dense and MaxSim weights kept for memories the multilingual route"
                    " scores (memories in a CJK script: the default embedder is English-only)",
    )
    lexical_multilingual: float = Field(
        1.0, ge=0,
        description="lexical weight of a CJK query when the multilingual route runs (lexical_cjk stands in for a"
                    " model that reads the language when it does not)",
    )


class ChannelConfig(_Config):
    """Settings every spreading channel has; a channel adds its own in a subclass.

    ``weight`` multiplies the channel's activation in the merge (0 leaves the
    channel out).  The channel spreads from the ``sources`` strongest seeds
    that score at least ``source_min`` of the best seed.
    """

    name: str
    weight: float = Field(1.0, ge=0)
    sources: int = Field(20, ge=0, description="strongest seeds the channel spreads from")
    source_min: float = Field(
        0.6, ge=0, le=1, description="only seeds scoring at least this share of the best seed spread"
    )
    frontier_cap: int = Field(400, ge=1, description="strongest nodes kept per hop")
    threshold: float = Field(1e-4, ge=0, description="activation below this stops spreading")
    source_strength: SourceStrength = Field(
        "rank",
        description="what a source spreads: rank = its score / the best seed's (the best always spreads 1);"
                    " relevance = its calibrated relevance (ripple.recall.relevance: how likely it holds an"
                    " answer at all); sure = both multiplied; floor = rank, but only from seeds whose relevance"
                    " reaches RelevanceConfig.floor; first = the best seed 1, the others sure; relative = rank x"
                    " relevance / the largest relevance among the sources (the query-wide part of the calibration"
                    " cancels); lead = rank x min(1, relevance / the best seed's)",
    )

    #: registered config classes by channel name (filled by ripple.recall.channels.register_channel)
    registry: ClassVar[dict[str, type["ChannelConfig"]]] = {}


class SessionChannelConfig(ChannelConfig):
    """The *session* channel: neighbouring turns of the same conversation over NEXT edges.

    A turn's neighbours carry what it leaves implicit ("Yes, twice!" answers
    the turn before); the strongest path wins (max, not sum), decaying with
    each turn away.
    """

    name: Literal["session"] = "session"
    weight: float = Field(0.45, ge=0)
    sources: int = Field(5, ge=0)
    # A seed spreads its rank-normalised score times its calibrated relevance relative to the most relevant
    # source's: seeds are told apart by their own evidence (five near-equal seeds of which only some hold what
    # the query asks no longer all push their neighbours up by .45), and the query-wide part of the calibration
    # (is anything relevant at all?) cancels, so a lone best seed spreads 1 in a store too small for the
    # calibrator to be sure (benchmarks/RESULTS.md, "Recall generalisation (issue 17)").
    source_strength: SourceStrength = "relative"
    weights: tuple[float, ...] = Field((1.0, 0.5, 0.25), description="activation kept 1, 2, 3 turns away")


class EntityChannelConfig(ChannelConfig):
    """The *entity* channel: memory -> entity -> memory (and entity -> entity over RELATED when
    ``hops > 2``), dividing what leaves an entity by its degree (hub damping) so that an entity
    mentioned everywhere carries almost nothing.  Activation never flows back into the channel's
    own sources: the strongest seeds must not reinforce each other and push the first-hop answer
    out of the top."""

    name: Literal["entity"] = "entity"
    hops: int = Field(2, ge=0, description="edge traversals (2 = memory->entity->memory)")
    hop_decay: float = Field(0.5, gt=0, le=1)
    hub_damping: float = Field(1.0, ge=0, description="exponent of the degree divisor; 0 turns damping off")
    aggregate: str = Field("sum", pattern="^(max|sum)$", description="sum over bridges, or the strongest one")
    degree_offset: int = Field(0, ge=0, description="subtracted from an entity's degree before damping")
    max_degree: int | None = Field(200, ge=1, description="entities above this degree are not walked")
    max_degree_ratio: float = Field(0.2, gt=0, le=1, description="... nor those mentioned by more than this share")
    min_hub_degree: int = Field(50, ge=2, description="the share cut-off never goes below this degree")
    labels: tuple[str, ...] | None = Field(
        tuple(sorted(NAMED_LABELS - NOISY_NAMED_LABELS)),
        description="entity labels that carry activation (None = all but DATE); by default named entities and"
                    " proper nouns, not noun phrases: 'the year', 'a country' bridge unrelated memories",
    )
    scale: str = Field(
        "raw", pattern="^(peak|raw)$",
        description="raw: activation as it arrives, so a bridge through an entity of degree d carries 1/d and"
                    " hubs next to nothing; peak: divided by the strongest, so the best bridge always gets the weight",
    )


class PPRChannelConfig(ChannelConfig):
    """Personalised PageRank (HippoRAG-style) over the seeds' two-hop neighbourhood (MENTIONS and
    NEXT), with networkx; measured below the activation channels on every dataset (the ``ppr``
    baseline and the ``sessionppr`` ablation keep it comparable)."""

    name: Literal["ppr"] = "ppr"
    source_min: float = Field(0.0, ge=0, le=1)
    alpha: float = Field(0.85, gt=0, lt=1)


class SpreadConfig(_Config):
    """Stage 2: spread activation from the strongest seeds through the graph, channel by channel.

    Each channel is a registered plug-in (:mod:`ripple.recall.channels`) with
    its own settings; an empty tuple turns spreading off.  A memory's
    activation is the weighted sum over channels, and its ``via`` is the
    channel that gave it the most.
    """

    channels: tuple[SerializeAsAny[ChannelConfig], ...] = (SessionChannelConfig(), EntityChannelConfig())

    @field_validator("channels", mode="before")
    @classmethod
    def _registered(cls, value: Any) -> Any:
        """Channel settings read from JSON: each dict becomes the config class of its channel's name."""
        if not isinstance(value, (list, tuple)):
            return value
        out = []
        for item in value:
            if isinstance(item, dict):
                name = item.get("name")
                kind = ChannelConfig.registry.get(str(name))
                if kind is None:
                    raise ValueError(f"unknown recall channel {name!r}; registered: {', '.join(ChannelConfig.registry)}")
                item = kind.model_validate(item)
            out.append(item)
        names = [c.name for c in out if isinstance(c, ChannelConfig)]
        if len(names) != len(set(names)):
            raise ValueError(f"a channel appears twice in {names}")
        return tuple(out)

    def channel(self, name: str) -> ChannelConfig | None:
        """The settings of the named channel, if it is in the plan."""
        return next((c for c in self.channels if c.name == name), None)


for _kind in (SessionChannelConfig, EntityChannelConfig, PPRChannelConfig):
    ChannelConfig.registry[_kind.model_fields["name"].default] = _kind


class TierConfig(_Config):
    """Forgetting tiers: how much an unused memory's score is kept as it ages.

    A memory's *last activity* is the latest of when it happened, when it was
    last said again and when a recall last returned it.  Pinned memories and
    frequently used ones (``frequent_uses`` recalls and repetitions) stay at
    full weight; otherwise the tier follows the days since the last activity:

    ======  =====================  ================
    tier    days since activity    weight
    ======  =====================  ================
    hot     up to ``hot_days``     1
    warm    up to ``warm_days``    ``warm_weight``
    cold    up to ``cold_days``    ``cold_weight``
    frozen  older                  ``frozen_weight``
    ======  =====================  ================

    Cold and frozen memories are not surfaced proactively.  Invalidated
    memories are never recalled, whatever their tier.  By default cold and
    frozen weigh the same (.9): demoting frozen memories further cost recall
    on LoCoMo (see the comment on ``cold_weight``); set ``frozen_weight``
    lower for a store where old memories really are stale.
    """

    enabled: bool = True
    hot_days: float = Field(7.0, ge=0)
    warm_days: float = Field(30.0, ge=0)
    cold_days: float = Field(90.0, ge=0)
    warm_weight: float = Field(1.0, ge=0, le=1)
    # Measured on LoCoMo dev with recall at the conversation's own present (memories 0-6 months old):
    # the old .8 / .6 cost R@10 .820 -> .734; any frozen weight below cold cost .004-.02 (.9/.88 .816,
    # .9/.85 .801); a mild, equal .9 kept .820 and lifted R@5 .706 -> .713.  Old evidence is asked for
    # as often as new, so age may break near-ties but not bury a relevant memory.
    cold_weight: float = Field(0.9, ge=0, le=1)
    frozen_weight: float = Field(0.9, ge=0, le=1)
    frequent_uses: int = Field(3, ge=1, description="recalls + repetitions that keep a memory hot")


class MergeConfig(_Config):
    """Stage 3: add the channels' weighted activation to the normalised seed score, then apply the
    priors read from each candidate's record: time, importance, confidence, the forgetting tier,
    and two priors on what the query is about (the speaker it names, the title it names).  A prior
    whose weight is 0 is not applied; the baselines set them all to 0."""

    time_weight: float = Field(0.0, ge=0, le=1, description="share of the score given to recency")
    half_life_days: float = Field(30.0, gt=0)
    recency_cue_weight: float = Field(0.3, ge=0, le=1, description="time weight when the query asks for recency")
    importance_weight: float = Field(0.0, ge=0, le=1)
    confidence_weight: float = Field(
        0.1, ge=0, le=1,
        description="share of the score scaled by the memory's confidence: a hedge (confidence .5) loses 5%;"
                    " on LoCoMo, where 'I think' is mostly a figure of speech, .3 cost .009 R@5 and .1 cost .004",
    )
    speaker_weight: float = Field(
        0.4, ge=0,
        description="bonus share for turns said by the speaker the query names ('What does Melanie do?'); 0 turns"
                    " it off. On LoCoMo dev it lifted R@5 .683 -> .712 and multi-hop R@10 .473 -> .491 at .3",
    )
    speaker_aliases: bool = Field(
        True,
        description="the speaker prior also knows a speaker named the way friends do: 小雨 / 晓雨 for 林晓雨, 浩子 for"
                    " 陈浩, Mel for Melanie (extractors.speaker.named_speakers); False: the name as stored only",
    )
    title_weight: float = Field(
        0.5, ge=0,
        description="bonus share for titled documents ('Philip Carlo\\n...') whose title the query names; 0 turns"
                    " it off. It lifted HotpotQA R@5 .810 -> .870 and MuSiQue .645 -> .672 (flat from .3 to 2);"
                    " chat turns have no title line and are untouched",
    )
    title_link_weight: float = Field(
        0.9, ge=0, le=1,
        description="a titled document named by one of the strongest candidates ('Intrepid Wind Farm ... located in"
                    " ... Iowa' names the page 'Iowa\\n...') scores at least this share of the naming one's score (the link a"
                    " multi-hop question follows; ripple.recall.merge.title_links); 0 turns it off. It lifted HotpotQA R@5"
                    " .870 -> .950 and MuSiQue .668 -> .698; chat turns have no title line and are untouched",
    )
    title_link_sources: int = Field(3, ge=0, description="the best candidates whose texts are read for titles they name")
    title_link_fan_damping: float = Field(
        0.5, ge=0,
        description="a candidate naming n candidates' pages passes each of them its share divided by n ** this (a page"
                    " naming many pages says little about one of them, as hub damping says for entities); 0 turns it"
                    " off. Exponents 0 / .5 / 1 gave MuSiQue R@5 .698 / .711 / .705 and HotpotQA .950 / .955 / .940",
    )
    when_weight: float = Field(
        0.3, ge=0,
        description="bonus share for memories that happened, or name a time, within a time the query names ('in"
                    " June', 'on 13 October 2023', '2023年7月'); relative times in memories ('last month') are read"
                    " against their own date at ingest (extractors.timeexpr); 0 turns it off",
    )
    time_answer_weight: float = Field(
        0.3, ge=0,
        description="bonus share for memories that name a time when the query asks for one ('When is the deadline?',"
                    " '哪天'); 0 turns it off",
    )
    # Chosen with .5 and 0 leave-one-conversation-out (benchmarks/RESULTS.md, "Turns that only ask"): .5 and 1 rank
    # the six development conversations identically; 1 because such a turn was never evidence (0 of 652).
    question_weight: float = Field(
        1.0, ge=0, le=1,
        description="share of the score a turn loses when its message only asks a question ('店名想好了吗', 'Did you"
                    " go back to Rome?'): the answer is its neighbour, reached through it by the session channel"
                    " before this prior (ripple.recall.merge.question_factors); 1: it ranks below every turn that"
                    " says something; 0 turns it off",
    )
    history_cue: bool = Field(
        True,
        description="a query that asks how something changed ('originally', 'how much more', '原本…后来', '从最初…到"
                    "最后') recalls as include_history=True does when the caller leaves include_history unset: the"
                    " values later statements replaced are its evidence (ripple.recall.query.asks_about_change)",
    )
    tiers: TierConfig = TierConfig()
    include_statuses: tuple[str, ...] = ("active",)

    def has_priors(self) -> bool:
        """True when any prior read from the records changes a score."""
        return bool(self.time_weight or self.recency_cue_weight or self.importance_weight or self.confidence_weight
                    or self.speaker_weight or self.title_weight or self.when_weight
                    or self.time_answer_weight or self.question_weight or self.tiers.enabled)


class RelevanceConfig(_Config):
    """The logistic model of a hit's calibrated relevance (see :mod:`ripple.recall.relevance`):
    ``sigmoid(bias + sum(weight * input))`` over the hit's MaxSim, dense cosine and word
    coverage, the query's known shares and best candidate signals, and its script.

    Fitted by ``python -m benchmarks calibrate --dataset locomo,zh`` on the development
    conversations (LoCoMo's four and the three Chinese ones: own questions' evidence against the
    hits of the same questions asked of another user, and off-topic questions), with an L2 penalty on
    the standardised inputs chosen by leave-one-conversation-out log loss (3e-6 on seven
    conversations: held-out log loss .126 since a name a question uses for one of the user's speakers
    counts as known, "晓雨" or "Lin Xiaoyu" for 林晓雨; .166 before); ``floor`` keeps 98% of the answerable questions
    answered there (the smallest keep rate whose leave-one-conversation-out figures meet issue 17's targets: a
    floor fitted to keep 97% kept 95.6% of a conversation it had not seen) (benchmarks/RESULTS.md, "Calibrated relevance", "A third Chinese conversation" and
    "Friends' names are known names", have the leave-one-conversation-out figures).  The signals' scale belongs to the
    embedder: these values are for the default (all-MiniLM-L6-v2, with the multilingual route's e5
    for memories in a CJK script) and uncalibrated for any other.
    """

    late: float = -0.511
    dense: float = -0.916
    coverage: float = 3.456
    multilingual: float = 53.560
    known: float = 1.153
    names_known: float = 4.684
    top_late: float = 0.589
    top_dense: float = 12.019
    top_coverage: float = 4.482
    cjk: float = -22.654
    top_multilingual: float = 76.654
    multilingual_route: float = -95.929
    bias: float = -10.697
    floor: float = Field(
        0.392, ge=0.0, le=1.0,
        description="the calibrated floor: a hit below it is probably unrelated (keeps 98% of the development"
                    " conversations' answerable questions answered: the keep rate whose leave-one-conversation-out"
                    " figures meet issue 17's targets, benchmarks.calibrate.choose_keep)",
    )


class RerankMethod(str, Enum):
    NONE = "none"
    MAXSIM = "maxsim"
    CROSS_ENCODER = "cross_encoder"


class RerankConfig(_Config):
    """Stage 4: reorder the top candidates and trim to ``k``."""

    method: RerankMethod = RerankMethod.NONE
    top_n: int = Field(50, ge=1)
    weight: float = Field(0.5, ge=0, le=1, description="share of the reranker score in the final score")
    model: str | None = Field(None, description="CrossEncoder model name or path")


class RecallConfig(_Config):
    """The whole recall plan."""

    seed: SeedConfig = SeedConfig()
    spread: SpreadConfig = SpreadConfig()
    merge: MergeConfig = MergeConfig()
    rerank: RerankConfig = RerankConfig()
    relevance: RelevanceConfig = RelevanceConfig()
