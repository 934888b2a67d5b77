"""Chinese extraction on real sentences with jieba."""

from __future__ import annotations

import pytest

from extractors import JiebaExtractor
from extractors.base import Extraction

pytestmark = pytest.mark.slow


def ents(r: Extraction) -> dict[str, str]:
    return {e.key: e.label for e in r.entities}


def triples(r: Extraction) -> set[tuple[str, str, str]]:
    return {(t.subject, t.predicate, t.object) for t in r.triples}


def test_person_place_and_workplace(jieba_ex: JiebaExtractor) -> None:
    text = "张伟在北京的阿里巴巴工作。"
    r = jieba_ex.extract(text)
    e = ents(r)
    assert e["张伟"] == "PERSON"
    assert e["北京"] == "GPE"
    assert "阿里巴巴" in e
    assert ("张伟", "工作_在", "阿里巴巴") in triples(r)
    for x in r.entities:
        assert text[x.start : x.end] == x.name
    assert r.language == "zh" and not r.contentless


def test_entity_verb_entity(jieba_ex: JiebaExtractor) -> None:
    assert ("张伟", "喜欢", "北京烤鸭") in triples(jieba_ex.extract("张伟喜欢北京烤鸭"))
    t = triples(jieba_ex.extract("周杰伦在台北开演唱会"))
    assert {("周杰伦", "开", "演唱会"), ("周杰伦", "开_在", "台北")} <= t


def test_serial_verbs_share_the_subject(jieba_ex: JiebaExtractor) -> None:
    r = jieba_ex.extract("王芳昨天去杭州参加了陶艺课，感觉很棒。")
    t = triples(r)
    assert ("王芳", "去", "杭州") in t
    assert ("王芳", "参加", "陶艺课") in t
    assert not any(s == "杭州" for s, _, _ in t)
    assert {"陶艺课", "陶艺"} <= set(ents(r))  # compound noun and its part
    assert r.kind == "event"


def test_coordinated_subjects(jieba_ex: JiebaExtractor) -> None:
    r = jieba_ex.extract("刘洋和陈静决定下个月去成都")
    t = triples(r)
    assert ("刘洋", "去", "成都") in t and ("陈静", "去", "成都") in t
    assert r.kind == "decision"


def test_triples_stay_inside_a_clause(jieba_ex: JiebaExtractor) -> None:
    r = jieba_ex.extract("张伟很忙。李娜喜欢上海")
    assert triples(r) == {("李娜", "喜欢", "上海")}


def test_speaker_and_first_person(jieba_ex: JiebaExtractor) -> None:
    text = "李娜：我叫李娜，我住在上海，在腾讯上班。"
    r = jieba_ex.extract(text)
    assert r.entities[0].key == "李娜" and r.entities[0].label == "PERSON"
    assert (r.entities[0].start, r.entities[0].end) == (0, 2)
    assert ("李娜", "住_在", "上海") in triples(r)
    assert [(f.attribute, f.value, f.subject) for f in r.facts] == [("name", "李娜", "李娜"), ("location", "上海", "李娜")]
    assert r.kind == "personal_info"


def test_courtesies_are_not_entities(jieba_ex: JiebaExtractor) -> None:
    r = jieba_ex.extract("谢谢你帮我订了去杭州的票")  # jieba tags 谢谢 as a person name
    assert "谢谢" not in ents(r)
    assert "杭州" in ents(r)
    assert jieba_ex.extract("小王：好的，谢谢！").contentless


def test_latin_names_inside_chinese(jieba_ex: JiebaExtractor) -> None:
    text = "我在 Northwind 工作，常去New York City出差"
    r = jieba_ex.extract(text)
    e = ents(r)
    assert e.get("northwind") == "PROPN" and e.get("new york city") == "PROPN"
    assert [(f.attribute, f.value) for f in r.facts][:1] == [("employer", "Northwind")]
    for x in r.entities:
        assert text[x.start : x.end] == x.name


def test_no_single_character_or_stopword_entities(jieba_ex: JiebaExtractor) -> None:
    for r in jieba_ex.extract_many(["我们在这里等你", "他说的事情很重要", "今天天气不错"]):
        for e in r.entities:
            assert len(e.key) >= 2, e
            assert e.key not in ("我们", "这里", "事情", "今天"), e


def test_hmm_off_is_supported() -> None:
    r = JiebaExtractor(hmm=False).extract("张伟在北京工作")
    assert "北京" in ents(r)


def test_adjacent_name_tokens_are_merged(jieba_ex: JiebaExtractor) -> None:
    # jieba cuts this name into surname 王/nr + given name 秀英/nr.
    r = jieba_ex.extract("王秀英昨天见了张伟")
    e = ents(r)
    assert e.get("王秀英") == "PERSON"
    assert "秀英" not in e
    assert ("王秀英", "见", "张伟") in triples(r)
