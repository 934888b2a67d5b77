"""Shared test helpers: a conformance suite for any extractor and a synthetic chat corpus.

Every extractor (spaCy, jieba, the multilingual dispatcher, a future LLM one)
must honour the same shape contract, because the write path relies on it
blindly: one result per text in order, spans that point into the text, keys
that are exactly :func:`~extractors.normalize.entity_key` of the name, triples
between entities of the same text, lifecycle signals in range (confidence in
(0, 1], a retraction hint only on a retraction), deterministic output.  Subclass
:class:`ExtractorConformance` and override the ``extractor`` fixture to run the
suite on a new extractor.

This module imports pytest; it is never imported by ``extractors`` itself.
"""

from __future__ import annotations

import random
from typing import Sequence

import pytest

from .base import Extraction, Extractor
from .normalize import entity_key
from .triggers import KINDS

__all__ = ["ExtractorConformance", "sample_turns", "CONFORMANCE_TEXTS"]

CONFORMANCE_TEXTS: tuple[str, ...] = (
    "Dana Whitfield runs procurement at Northwind.",
    "Caroline: I went to a LGBTQ support group yesterday",
    "my name is dana and i work at northwind in seattle",
    "ok",
    "Thanks!! 🙏",
    "",
    "   ",
    "张伟在北京的阿里巴巴工作。",
    "Melanie：我叫李娜，我喜欢画画。",
    "我在 Northwind 工作, my budget is 50k.",
    "Check https://example.com/a:b?x=1 and email dana@northwind.com — then call Bob at 10:30.",
    "Line one about Paris.\n\nLine two about the Louvre.\tTabbed   spaces.",
    "The Northwind's Q3 budget (≈ $50k) was approved by the CFO; Dana's team starts Monday!",
    "🎉🎉🎉",
    "こんにちは、東京に住んでいます。",
    "Ｆｕｌｌｗｉｄｔｈ Ｔｅｘｔ from Ｔｏｋｙｏ",
    "Never mind, drop the plan. I think the budget is now 60k.",
    "不对，预算加到六万了，可能周五截止。",
)


class ExtractorConformance:
    """Shape invariants every :class:`~extractors.base.Extractor` must satisfy.

    Not collected by itself (no ``Test`` prefix); subclass it in a test module::

        class TestMine(ExtractorConformance):
            @pytest.fixture
            def extractor(self):
                return MyExtractor()
    """

    texts: Sequence[str] = CONFORMANCE_TEXTS

    @pytest.fixture
    def extractor(self) -> Extractor:
        raise NotImplementedError("override the `extractor` fixture")

    @pytest.fixture
    def results(self, extractor: Extractor) -> list[Extraction]:
        return extractor.extract_many(list(self.texts))

    def test_implements_protocol(self, extractor: Extractor) -> None:
        assert isinstance(extractor, Extractor)

    def test_empty_batch(self, extractor: Extractor) -> None:
        assert extractor.extract_many([]) == []

    def test_one_result_per_text_in_order(self, results: list[Extraction]) -> None:
        assert len(results) == len(self.texts)
        assert [r.text for r in results] == list(self.texts)
        assert all(isinstance(r, Extraction) for r in results)

    def test_spans_point_into_text(self, results: list[Extraction]) -> None:
        for r in results:
            for e in r.entities:
                if e.start >= 0:
                    assert 0 <= e.start < e.end <= len(r.text), (r.text, e)
                    assert r.text[e.start : e.end] == e.name, (r.text, e)
                else:
                    assert e.end == -1, e

    def test_keys_are_normalised_names(self, results: list[Extraction]) -> None:
        for r in results:
            for e in r.entities:
                assert e.key, e
                assert e.key == entity_key(e.name), e
                assert e.label and e.label == e.label.upper(), e

    def test_entity_keys_unique_per_text(self, results: list[Extraction]) -> None:
        for r in results:
            keys = [e.key for e in r.entities]
            assert len(keys) == len(set(keys)), (r.text, keys)

    def test_triples_join_entities_of_the_text(self, results: list[Extraction]) -> None:
        for r in results:
            keys = {e.key for e in r.entities}
            for t in r.triples:
                assert t.subject in keys and t.object in keys, (r.text, t, keys)
                assert t.subject != t.object, t
                assert t.predicate and t.predicate == t.predicate.strip(), t
                assert t.weight > 0

    def test_fields_well_formed(self, results: list[Extraction]) -> None:
        for r in results:
            assert r.kind in KINDS, r.kind
            assert isinstance(r.language, str) and r.language
            for f in r.facts:
                assert f.attribute and f.value and f.subject, f
                assert f.value == f.value.strip(), f
                assert f.attribute == f.attribute.strip() and " " not in f.attribute, f
                assert 0.0 < f.confidence <= 1.0, f

    def test_lifecycle_signals_well_formed(self, results: list[Extraction]) -> None:
        """confidence in (0, 1]; retract_hint set only on a retraction; flags are real bools."""
        for r in results:
            assert isinstance(r.confidence, float) and 0.0 < r.confidence <= 1.0, r
            assert isinstance(r.retracts, bool) and isinstance(r.corrects, bool), r
            assert isinstance(r.retract_hint, str), r
            assert r.retracts or not r.retract_hint, r
            assert r.retract_hint == r.retract_hint.strip(), r

    def test_contentless_turns_flagged(self, results: list[Extraction]) -> None:
        by_text = {r.text: r for r in results}
        for t in ("ok", "Thanks!! 🙏", "", "   ", "🎉🎉🎉"):
            assert by_text[t].contentless, t
        assert not by_text["Dana Whitfield runs procurement at Northwind."].contentless

    def test_chinese_text_is_handled(self, extractor: Extractor) -> None:
        [r] = extractor.extract_many(["张伟在北京的阿里巴巴工作。"])
        assert r.language == "zh"
        assert not r.contentless

    def test_stable_output(self, extractor: Extractor, results: list[Extraction]) -> None:
        assert extractor.extract_many(list(self.texts)) == results

    def test_batch_independent(self, extractor: Extractor, results: list[Extraction]) -> None:
        """A text's result must not depend on the other texts of its batch."""
        singles = [extractor.extract_many([t])[0] for t in self.texts]
        assert singles == results


# --------------------------------------------------------------------------- synthetic corpus

_EN_NAMES = ["Caroline", "Melanie", "Dana", "Jon", "Gina", "Evan", "Sam", "Priya", "Marcus", "Lena", "Tom", "Aiko"]
_EN_PLACES = ["Seattle", "Paris", "Boston", "the lake", "Tokyo", "the beach", "Denver", "my parents' place", "Chicago"]
_EN_ORGS = ["Northwind", "Acme", "Google", "the hospital", "the library", "Contoso", "the museum", "a startup"]
_EN_THINGS = [
    "a pottery class", "the support group", "my new painting", "a camping trip", "the charity run", "my dog Max",
    "a poetry book", "the adoption agency", "grad school", "the school play", "a violin lesson", "the budget review",
    "a road trip", "my sister's wedding", "the farmers market", "a yoga retreat", "the new project", "a jazz concert",
]
_EN_TIMES = ["yesterday", "last week", "last weekend", "this morning", "two days ago", "on Friday", "in May", "recently"]
_EN_FEEL = ["it was amazing", "I loved it", "it was hard but worth it", "the kids had a blast", "I felt so proud",
            "it reminded me of my childhood", "I learned a lot", "we laughed the whole time"]
_EN_TEMPLATES = [
    "{n}: I went to {thing} {time} and {feel}.",
    "{n}: Hey {m}! I just got back from {place}, {feel}.",
    "{n}: {m} and I visited {place} {time} to see {thing}.",
    "{n}: I've been thinking about {thing} a lot since {time}.",
    "{n}: Did you ever finish {thing}? I remember you talked about it {time}.",
    "{n}: I work at {org} now, and my manager {m} is really supportive.",
    "{n}: That sounds wonderful, {m}! How did {thing} go?",
    "{n}: We decided to skip {thing} and drive to {place} instead.",
    "{n}: My budget for {thing} is about {k}k, so I need to plan carefully.",
    "{n}: I signed up for {thing} at {org} {time}.",
    "{n}: Remind me to call {m} about {thing} before Friday.",
    "{m} recommended {thing} to me when we met in {place}.",
    "I prefer {thing} over {thing2}, honestly.",
    "{n}: ok thanks!",
]

_ZH_NAMES = ["张伟", "李娜", "王芳", "刘洋", "陈静", "杨磊", "赵敏", "周杰", "吴昊", "孙丽"]
_ZH_PLACES = ["北京", "上海", "杭州", "深圳", "成都", "西湖", "长城", "南京", "广州", "苏州"]
_ZH_ORGS = ["阿里巴巴", "腾讯", "华为", "百度", "字节跳动", "清华大学", "北京大学", "小米", "京东"]
_ZH_THINGS = ["陶艺课", "读书会", "马拉松", "音乐会", "新项目", "瑜伽课", "画展", "露营", "钢琴课", "婚礼", "预算会议"]
_ZH_TIMES = ["昨天", "上周", "上个月", "今天早上", "前天", "周末", "去年"]
_ZH_TEMPLATES = [
    "{n}：我{time}去{place}参加了{thing}，感觉很棒。",
    "{n}：{m}在{org}工作，她很喜欢{thing}。",
    "{n}：我们决定下个月去{place}旅游。",
    "{n}：我叫{n}，我住在{place}，在{org}上班。",
    "{n}：提醒我明天给{m}打电话，讨论{thing}的事情。",
    "{m}{time}在{place}见到了{n}，他们一起去了{thing}。",
    "{n}：我的预算是{k}万，想报名{thing}。",
    "{n}：好的，谢谢！",
    "{n}：{org}的{thing}{time}结束了，大家都很开心。",
    "{n}：我最喜欢{thing}，不过{m}更喜欢{thing2}。",
]


def sample_turns(n: int, language: str = "en", seed: int = 0, *, contentless_share: float = 0.0) -> list[str]:
    """``n`` synthetic LoCoMo-style chat turns ("Speaker: message"), deterministic for a seed.

    Used by throughput benchmarks and tests: no data set is downloaded.  With
    ``contentless_share`` 0 (default) acknowledgements are replaced by content
    turns, so throughput numbers are not inflated by texts that are never parsed.
    """
    rng = random.Random(seed)
    if language == "zh":
        names, places, orgs, things, times, templates = (
            _ZH_NAMES, _ZH_PLACES, _ZH_ORGS, _ZH_THINGS, _ZH_TIMES, _ZH_TEMPLATES,
        )
        feels: list[str] = [""]
        ack = "{n}：好的，谢谢！"
    else:
        names, places, orgs, things, times, templates = (
            _EN_NAMES, _EN_PLACES, _EN_ORGS, _EN_THINGS, _EN_TIMES, _EN_TEMPLATES,
        )
        feels = _EN_FEEL
        ack = "{n}: ok thanks!"
    content = [t for t in templates if t != ack]
    out: list[str] = []
    for _ in range(n):
        if rng.random() < contentless_share:
            tpl = ack
        else:
            tpl = rng.choice(content)
        n1, n2 = rng.sample(names, 2)
        t1, t2 = rng.sample(things, 2)
        out.append(
            tpl.format(
                n=n1, m=n2, place=rng.choice(places), org=rng.choice(orgs), thing=t1, thing2=t2,
                time=rng.choice(times), feel=rng.choice(feels), k=rng.randint(2, 90),
            )
        )
    return out
