"""Length-aware route weights in the seed stage, and the speaker and title priors in the merge."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from ripple.recall.config import SeedConfig
from ripple.recall.merge import speaker_boosts as _speaker_boosts
from ripple.recall.seed import length_aware_seed as _length_aware_seed


def test_route_weights_follow_memory_length() -> None:
    cfg = SeedConfig(lexical=0.1, dense=0.3, late=0.9, late_length_pivot=32, late_length_power=0.5,
                     dense_length_pivot=24, dense_length_power=1.0)
    # three memories; "lo" anchors every route's minimum at 0 so normalised scores are easy to read
    lexical = {"short": 1.0, "long": 1.0, "lo": 0.0}
    dense = {"short": 1.0, "long": 0.0, "lo": 0.0}
    late = {"short": 0.0, "long": 1.0, "lo": 0.0}
    tokens = {"short": 12, "long": 128, "lo": 30}
    got = _length_aware_seed(lexical, dense, late, tokens, 0.1, cfg)
    # short (12 tokens): half the dense weight (12/24), all of MaxSim's
    assert got["short"] == pytest.approx(0.1 + 0.3 * 0.5)
    # long (128 tokens): keeps (32/128)**.5 = .5 of MaxSim's .9; the other .45 moves to dense
    assert got["long"] == pytest.approx(0.1 + 0.9 * 0.5)
    assert got["lo"] == 0.0
    # switched off: every memory gets the configured weights
    off = SeedConfig(late_length_pivot=None, dense_length_pivot=None)
    flat = _length_aware_seed(lexical, dense, late, tokens, 0.1, off)
    assert flat["short"] == pytest.approx(0.1 + off.dense) and flat["long"] == pytest.approx(0.1 + off.late)


@dataclass
class _Rec:
    id: str
    text: str


TURNS = [
    _Rec("a", "Melanie: I go running to destress."),
    _Rec("b", "Caroline: That's great, Melanie! Running sounds relaxing."),
    _Rec("c", "Gina: My store opened today."),
]


def test_speaker_named_in_the_query_gets_the_bonus() -> None:
    assert _speaker_boosts("What does Melanie do to destress?", TURNS, 0.4) == {"a": pytest.approx(1.4)}
    assert _speaker_boosts("What are Melanie's hobbies?", TURNS, 0.4) == {"a": pytest.approx(1.4)}  # possessive
    assert _speaker_boosts("What does Melanies do?", TURNS, 0.4) == {}  # whole words only


def test_two_word_speaker_names() -> None:
    turns = [_Rec("a", "Dana Whitfield: I run procurement."), _Rec("b", "Jon: Dana Whitfield, hi!"), _Rec("c", "Jon: ok")]
    assert _speaker_boosts("What does Dana Whitfield run?", turns, 0.4) == {"a": pytest.approx(1.4)}


@pytest.mark.parametrize(
    "query, weight",
    [
        ("What do Melanie, Caroline and Gina have in common?", 0.4),  # every speaker named: no preference
        ("What do people do to destress?", 0.4),  # nobody named
        ("What does Melanie do to destress?", 0.0),  # switched off
    ],
)
def test_no_bonus_without_a_single_named_subject(query: str, weight: float) -> None:
    assert _speaker_boosts(query, TURNS, weight) == {}


@pytest.mark.parametrize(
    "query, boosted",
    [
        ("What did Jon say about Gina's progress with her store?", {"j"}),  # a possessive: Gina is spoken of
        ("How did Jon feel about sharing his dance videos with Gina?", {"j"}),  # after a preposition
        ("What does Gina tell Jon she won't do?", {"g"}),  # the object of "tell"
        ("What do Jon and Gina both like?", set()),  # both do: no preference
        ("What did Jon and Gina say about Gina's store?", set()),  # Gina is also one who says
    ],
)
def test_a_question_naming_every_speaker_is_about_the_one_not_spoken_of(query: str, boosted: set[str]) -> None:
    turns = [_Rec("j", "Jon: I opened a dance studio."), _Rec("g", "Gina: My store opened today.")]
    assert set(_speaker_boosts(query, turns, 0.4)) == boosted


def test_speaker_bonus_for_chinese_names() -> None:
    turns = [_Rec("a", "张伟：我周末去爬山了。"), _Rec("b", "李娜：张伟，爬山听起来很棒！")]
    assert _speaker_boosts("张伟周末做了什么？", turns, 0.4) == {"a": pytest.approx(1.4)}


def test_without_speakers_nothing_changes() -> None:
    passages = [_Rec("p1", "Demon Dice\nDemon Dice is a collectible dice game."), _Rec("p2", "Ed Wood\nEdward Wood was...")]
    assert _speaker_boosts("Who created Demon Dice?", passages, 0.4) == {}


def test_recall_prefers_the_named_speakers_own_turn(tmp_path: Path, embedder, extractor) -> None:
    """End to end: the reply that only addresses Melanie must not outrank what Melanie said."""
    from ripple import Memory, RecallConfig

    turns = [
        "Caroline: Melanie, you always seem so calm! How do you unwind after a long week?",
        "Melanie: Pottery class on Saturdays, it is like therapy for me.",
        "Caroline: Melanie, that pottery class sounds like therapy for anyone, I should unwind like you.",
        "Caroline: I mostly read on weekends.",
    ]
    with Memory(path=str(tmp_path / "s"), embedder=embedder, extractor=extractor) as mem:
        mem.add_many([{"text": t, "user_id": "u", "session_id": "s1"} for t in turns])
        on = mem.recall("How does Melanie unwind?", user_id="u", k=4, touch=False)
        assert on.hits[0].memory.text.startswith("Melanie:")
        mem.config = RecallConfig().model_copy(update={"merge": RecallConfig().merge.model_copy(update={"speaker_weight": 0.0})})
        off = mem.recall("How does Melanie unwind?", user_id="u", k=4, touch=False)
        by_id = {h.memory.id: h.score for h in off.hits}
        melanie = next(h for h in on.hits if h.memory.text.startswith("Melanie:"))
        assert melanie.score == pytest.approx(by_id[melanie.memory.id] * 1.4, rel=1e-6)


def test_title_named_in_the_query_gets_the_bonus() -> None:
    from ripple.recall.merge import title_boosts as _title_boosts

    docs = [
        _Rec("carlo", "Philip Carlo\nPhilip Carlo was a journalist and biographer."),
        _Rec("kuklinski", "Richard Kuklinski\nKuklinski was the subject of a biography by Philip Carlo."),
        _Rec("turn", "Philip: I wrote a biography."),
    ]
    assert _title_boosts("Where was Philip Carlo born?", docs, 0.5) == {"carlo": pytest.approx(1.5)}
    assert _title_boosts("Who wrote about Richard Kuklinski and Philip Carlo?", docs, 0.5) == {
        "carlo": pytest.approx(1.5), "kuklinski": pytest.approx(1.5)}
    assert _title_boosts("Where was Philip Carlo born?", docs, 0.0) == {}
    assert _title_boosts("What did Philip write?", docs, 0.5) == {}


def test_recall_prefers_the_document_the_query_is_about(tmp_path: Path, embedder, extractor) -> None:
    """End to end: the page titled by the name outranks a page that only mentions it, by exactly ×1.5."""
    from ripple import Memory, RecallConfig

    docs = [
        "Kuklinski biography\nThe contract killer's life was told by Philip Carlo, born in Brooklyn, in a biography.",
        "Philip Carlo\nA journalist and best selling author of true crime books.",
        "Garden notes\nThe tomatoes need water twice a week in summer.",
    ]
    with Memory(path=str(tmp_path / "s"), embedder=embedder, extractor=extractor) as mem:
        mem.add_many([{"text": t, "user_id": "u"} for t in docs])
        on = mem.recall("Where was Philip Carlo born?", user_id="u", k=3, touch=False)
        assert on.hits[0].memory.text.startswith("Philip Carlo\n")
        # (the title link off too: without the prior, the Kuklinski page, which names Philip Carlo, would lift his)
        off_merge = RecallConfig().merge.model_copy(update={"title_weight": 0.0, "title_link_weight": 0.0})
        mem.config = RecallConfig().model_copy(update={"merge": off_merge})
        off = mem.recall("Where was Philip Carlo born?", user_id="u", k=3, touch=False)
        assert off.hits[0].memory.text.startswith("Kuklinski")  # without the prior, the mention wins
        by_id = {h.memory.id: h.score for h in off.hits}
        carlo = on.hits[0]
        assert carlo.score == pytest.approx(by_id[carlo.memory.id] * 1.5, rel=1e-6)


# ------------------------------------------------------------------------------------- speakers named by a familiar form

CHAT_ZH = [
    _Rec("x1", "林晓雨：我在橙子优选干产品快四年了"),
    _Rec("x2", "陈浩：刚遛完可乐回来"),
    _Rec("x3", "林晓雨：浩子！在不？"),
]


@pytest.mark.parametrize("query, turns", [
    ("小雨换工作之前在哪家公司？", ("x1", "x3")),  # 小 + the given name's last character (林晓雨's turns)
    ("晓雨之前在哪家公司？", ("x1", "x3")),  # the given name
    ("浩子家的狗叫啥？", ("x2",)),  # the last character + 子 (陈浩's turn)
    ("老陈家的狗叫啥？", ("x2",)),  # 老 + the surname
])
def test_chinese_speaker_named_by_a_familiar_form(query: str, turns: tuple[str, ...]) -> None:
    assert _speaker_boosts(query, CHAT_ZH, 0.4) == {i: pytest.approx(1.4) for i in turns}
    assert _speaker_boosts(query, CHAT_ZH, 0.4, aliases=False) == {}  # the name as stored only: nobody named


def test_english_speaker_named_by_a_short_first_name() -> None:
    assert _speaker_boosts("What did Mel paint last summer?", TURNS, 0.4) == {"a": pytest.approx(1.4)}
    assert _speaker_boosts("What did Mel paint last summer?", TURNS, 0.4, aliases=False) == {}
    # sentence-initial capitals, words under three letters and shared prefixes name nobody
    assert _speaker_boosts("Mel paint?", TURNS, 0.4) == {}
    assert _speaker_boosts("What did Me paint?", TURNS, 0.4) == {}
    two = [_Rec("a", "Melanie: hi"), _Rec("b", "Melissa: hello"), _Rec("c", "Gina: hey")]
    assert _speaker_boosts("What did Mel paint?", two, 0.4) == {}


def test_aliases_two_speakers_share_name_neither() -> None:
    from extractors.speaker import named_speakers, speaker_aliases

    assert {"晓雨", "小雨"} <= speaker_aliases("林晓雨") and "浩子" in speaker_aliases("陈浩")
    assert {"小明", "老欧阳"} <= speaker_aliases("欧阳明") and "阳明" not in speaker_aliases("欧阳明")  # surname 欧阳
    assert named_speakers("小陈最近怎么样？", {"陈浩", "陈静"}) == set()  # 小陈 is both
    assert named_speakers("浩子最近怎么样？", {"陈浩", "陈静"}) == {"陈浩"}
    assert named_speakers("What does Dana run?", {"dana whitfield", "jon"}) == {"dana whitfield"}
    assert named_speakers("What did Jon say to Gina?", {"jon", "jonas"}) == {"jon"}  # a whole name, not a prefix


# ------------------------------------------------------------------------------------- turns that only ask

def test_question_only_turns_lose_their_share() -> None:
    from ripple.recall.merge import question_factors

    turns = [
        _Rec("q", "林晓雨：店名想好了吗"), _Rec("a", "陈浩：叫“慢半拍”，我表哥起的"),
        _Rec("q2", "Caroline: Did you ever go back to Rome?"), _Rec("a2", "Melanie: Yes, twice!"),
        _Rec("p", "Did you ever go back to Rome?"),  # no speaker: the whole text is the message
    ]
    assert question_factors(turns, 0.5) == {"q": pytest.approx(0.5), "q2": pytest.approx(0.5), "p": pytest.approx(0.5)}
    assert question_factors(turns, 1.0) == {"q": 0.0, "q2": 0.0, "p": 0.0}
    assert question_factors(turns, 0.0) == {}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_recall_puts_the_answer_above_the_question_it_answers(tmp_path: Path, embedder, extractor, lang: str) -> None:
    """End to end: the question matches the query best, but the answer after it ranks first."""
    from ripple import Memory, RecallConfig

    turns = {
        "en": ["Caroline: What did you name the coffee shop?", "Melanie: Slow Beat, my cousin picked it.",
               "Caroline: I mostly read on weekends.", "Melanie: The garden needs water twice a week."],
        "zh": ["林晓雨：咖啡店的名字想好了吗", "陈浩：叫“慢半拍”，我表哥起的",
               "林晓雨：我周末一般在家看书", "陈浩：花园一周要浇两次水"],
    }[lang]
    query = {"en": "What is the name of the coffee shop?", "zh": "咖啡店叫什么名字？"}[lang]
    off = RecallConfig().model_copy(update={"merge": RecallConfig().merge.model_copy(update={"question_weight": 0.0})})
    with Memory(path=str(tmp_path / "s"), embedder=embedder, extractor=extractor) as mem:
        mem.add_many([{"text": t, "user_id": "u", "session_id": "s1"} for t in turns])
        before = mem.recall(query, user_id="u", k=4, touch=False, config=off)
        assert before.hits[0].memory.text == turns[0]  # the question itself wins without the prior
        on = mem.recall(query, user_id="u", k=4, touch=False)
        assert on.hits[0].memory.text == turns[1]


def test_a_name_no_memory_holds_as_a_word_may_still_be_a_speaker() -> None:
    """Calibrated relevance reads how many of the names a question asks about the user knows; "晓雨" is no word
    of "林晓雨：..." to the segmenter, yet it is the user's friend, not a stranger."""
    from ripple.recall.candidates import Seeded
    from ripple.recall.merge import names_of_speakers
    from ripple.recall.relevance import query_signals

    assert names_of_speakers(["晓雨", "浩子"], CHAT_ZH) == 2
    assert names_of_speakers(["王芳", "joanna"], CHAT_ZH) == 0  # strangers stay strangers
    assert names_of_speakers(["晓雨"], TURNS) == 0 and names_of_speakers([], CHAT_ZH) == 0

    class _Q:
        language = "zh"

    seeded = Seeded({}, final=False, names_known=0.5, unknown_names=("晓雨",), n_names=2)  # (林晓雨 and 晓雨)
    assert query_signals(_Q(), seeded).names_known == 0.5  # type: ignore[arg-type]
    assert query_signals(_Q(), seeded, names_of_speakers(seeded.unknown_names, CHAT_ZH)).names_known == 1.0  # type: ignore[arg-type]


def test_a_chinese_speaker_named_in_pinyin() -> None:
    """An English question names a Chinese speaker in pinyin, capitalised: "Su Lei" is 苏磊, "Su" alone is both."""
    from extractors.speaker import named_speakers, romanised_aliases

    assert romanised_aliases("林晓雨") == {"Lin Xiaoyu", "Xiaoyu Lin", "Xiaoyu", "Lin"}
    assert "He" not in romanised_aliases("何雅琪")  # a pronoun, not a name
    both = {"苏磊", "苏婷"}
    assert named_speakers("Which subjects does Su Lei have to take?", both) == {"苏磊"}
    assert named_speakers("What did Su do?", both) == set()  # shared by both: names neither
    assert named_speakers("what did lei do", both) == set()  # (a name is capitalised)
    assert named_speakers("Where does the sun rise?", {"孙悦", "李娜"}) == set()  # lower case: a word, not 孙
    assert named_speakers("Where does Sun work?", {"孙悦", "李娜"}) == {"孙悦"}
    assert _speaker_boosts("How did Chen Hao hurt his knee?", CHAT_ZH, 0.4) == {"x2": pytest.approx(1.4)}
    from ripple.recall.merge import names_of_speakers

    # "Su Lei" is read as the names "su" and "lei"; said whole, both are 苏磊's
    su = [_Rec("a", "苏磊：我报了成考"), _Rec("b", "苏婷：加油")]
    assert names_of_speakers(["lei", "su"], su, "Which subjects does Su Lei take?") == 2
    assert names_of_speakers(["lei", "su"], su) == 1  # (without the query: "Lei" alone)
