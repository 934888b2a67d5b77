"""Speaker prefixes of dialogue turns ("Caroline: I went to ...", "张伟：我今天...").

Conversation benchmarks (LoCoMo, LongMemEval) and many agent logs store turns
as "Speaker: message".  The speaker is the most important entity of the turn —
it is who "I" and "my" refer to — yet a parser sees "Caroline:" as a broken
sentence fragment.  Splitting it off first gives the parser a clean sentence,
lets first-person facts and triples resolve to the speaker, and keeps
content-free detection on the message alone ("Caroline: ok" is still "ok").
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from typing import Iterable

from .normalize import entity_key
from .text import _SENTENCE_START, is_cjk_char

__all__ = ["SpeakerTurn", "split_speaker", "ROLE_SUBJECTS", "speaker_aliases", "says_name", "named_speakers", "spoken_of"]

#: Chat roles: stripped like a speaker but never an entity, "I" is the user or the assistant.
ROLE_SUBJECTS: dict[str, str] = {
    "user": "user",
    "human": "user",
    "me": "user",
    "customer": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "bot": "assistant",
    "agent": "assistant",
    "system": "assistant",
    "gpt": "assistant",
    "用户": "user",
    "我": "user",
    "助手": "assistant",
    "系统": "assistant",
    "机器人": "assistant",
}

# Labels that look like "Word:" but introduce content rather than name a speaker.
_NOT_SPEAKERS = frozenset(
    """note notes reminder update summary question answer todo to-do edit ps p.s fyi warning error important
    re subject title date time location topic tip tips example step result results reason update goal goals
    q a http https ftp mailto file www tldr tl;dr nb warning caution info agenda action decision task
    注意 提醒 问题 回答 答 问 备注 总结 更新 主题 标题 时间 地点 原因 结果 答案 任务 决定 待办 说明 例如 比如
    今天 明天 昨天 早上 上午 中午 下午 晚上 地址 电话 邮箱 价格 预算 名字 姓名 公司 职位 日期 内容 要求 目标
    更正 更正一下 纠正 纠正一下 更新 更新一下 补充 补充一下 修改 修正 修正一下 另外 顺便 顺便说一下 提醒一下 说明一下 重要 重要提醒
    correction update typo ps""".split()
)

# (a word that starts with a Han character is no Latin word: "合唱排练时间：周四晚" and "我每天坐7:20那趟班车"
# are no speaker's turns; Han prefixes have their own branch and test, see _han_speaker)
_LATIN_WORD = r"(?![\u3400-\u4dbf\u4e00-\u9fff])[^\W\d_][\w'’.\-]*"
_SPEAKER = re.compile(
    rf"^(?P<lead>\s*)(?P<name>{_LATIN_WORD}(?:[ \t]+{_LATIN_WORD})?|[\u4e00-\u9fff]{{1,4}})[ \t]*[:：](?!//)[ \t]*"
)


@dataclass(frozen=True, slots=True)
class SpeakerTurn:
    """Where the speaker name and the message are in a text.

    ``speaker`` is the name as written (None when there is no prefix or it is
    a chat role such as "User"); ``start``/``end`` are its offsets (-1 when
    None); ``message_start`` is where the message begins; ``subject`` is the
    key first-person statements are about ("user" without a named speaker).
    """

    speaker: str | None
    start: int
    end: int
    message_start: int
    subject: str


_NO_SPEAKER = SpeakerTurn(None, -1, -1, 0, "user")


def split_speaker(text: str) -> SpeakerTurn:
    """Detect a "Speaker: message" prefix of one or two capitalised words, or of 1-4 Han characters that
    name a person or a role (not what a note is about: see :func:`_han_speaker`).

    >>> t = split_speaker("Caroline: I went to a support group")
    >>> (t.speaker, t.start, t.end, t.subject)
    ('Caroline', 0, 8, 'caroline')
    """
    m = _SPEAKER.match(text)
    if not m:
        return _NO_SPEAKER
    name = m.group("name").rstrip(".'’-")
    start = m.start("name")
    end = start + len(name)
    low = name.lower()
    if low in ROLE_SUBJECTS:
        return SpeakerTurn(None, -1, -1, m.end(), ROLE_SUBJECTS[low])
    if not name or low in _NOT_SPEAKERS or any(w in _NOT_SPEAKERS for w in low.split()):
        return _NO_SPEAKER
    if _HAN.match(name):
        if not _han_speaker(name):
            return _NO_SPEAKER
    elif not is_cjk_char(name[0]):
        # Latin names: every word capitalised ("Dana Whitfield", not "Dear diary").
        if not all(w[:1].isupper() for w in name.split()):
            return _NO_SPEAKER
    key = entity_key(name)
    if not key:
        return _NO_SPEAKER
    return SpeakerTurn(name, start, end, m.end(), key)


_HAN = re.compile(r"^[\u4e00-\u9fff]+$")
#: Who a Chinese turn may be said by besides a name: family and people in a role, alone or after a
#: surname ("妈妈：", "张医生：", "王老师："), as chat logs label them.
_ADDRESSES_ZH = frozenset(
    """妈妈 妈 母亲 爸爸 爸 父亲 老妈 老爸 姐姐 姐 妹妹 哥哥 哥 弟弟 老婆 老公 妻子 丈夫 爱人 对象 男朋友 女朋友 儿子 女儿
    爷爷 奶奶 外公 外婆 姥姥 姥爷 叔叔 叔 阿姨 舅舅 舅妈 婶婶 姑姑 表哥 表姐 表妹 表弟 堂哥 堂姐 室友 老板 老板娘 领导 同事
    邻居 房东 老师 班主任 医生 大夫 护士 律师 经理 总 主任 师傅 教练 队长 班长 客服 店长 司机 同学 学长 学姐""".split()
)
#: The familiar forms :func:`speaker_aliases` knows a name by: 小 / 老 / 阿 + a character, a character
#: doubled or with 子 ("小张", "老陈", "诺诺", "浩子").
_FAMILIAR_ZH = re.compile(r"^(?:[小老阿][\u4e00-\u9fff]|([\u4e00-\u9fff])\1|[\u4e00-\u9fff]子)$")


@functools.lru_cache(maxsize=4096)
def _han_speaker(prefix: str) -> bool:
    """Whether a Han prefix before a colon names who speaks ("林晓雨：", "李总：", "妈妈：", "小张：") rather
    than what the note is about ("广场舞：晚上6点半开始", "目标院校：南大", "婚宴酒店：香格里拉").

    People write a note's subject before a colon as often as a chat log writes its speaker there; only
    a person's name, a familiar form of one (:data:`_FAMILIAR_ZH`) or someone's role (alone or
    after a surname) is a speaker.  A name is what jieba tags as one (``nr``); a noun such as "周会" or
    "高铁" is not, though it begins with a surname."""
    if prefix in _ADDRESSES_ZH or _FAMILIAR_ZH.match(prefix) or prefix[:2] in _COMPOUND_SURNAMES:
        return True
    from .jieba_zh import _posseg  # (lazily: the English path never needs jieba)

    words = [(w.word, w.flag) for w in _posseg().cut(prefix)]
    if all(flag.startswith("nr") for _, flag in words):
        return True
    rest = prefix[1:]  # "张医生", "陈阿姨": a surname and a role ("李总", "刘姐" are tagged as names)
    return rest in _ADDRESSES_ZH and (len(rest) > 1 or words[0][1].startswith("nr"))


# ------------------------------------------------------------------------------------------- names in a question

#: Two-character Chinese surnames (the rest are one character): the given name is what follows them.
_COMPOUND_SURNAMES = frozenset(
    "欧阳 司马 诸葛 上官 司徒 东方 皇甫 尉迟 公孙 慕容 夏侯 令狐 长孙 宇文 轩辕 端木 南宫 西门 独孤 呼延 万俟 闻人 澹台".split()
)
_HAN_NAME = re.compile(r"^[\u4e00-\u9fff]{2,4}$")
_CAPITALISED = re.compile(r"(?<![\w'’])[A-Z][a-z]{2,}(?![a-z])")


def speaker_aliases(key: str) -> frozenset[str]:
    """Other forms a question uses for the speaker ``key`` (a :class:`SpeakerTurn` subject).

    Friends rarely call each other by their full name: in the Chinese chat set
    林晓雨 is asked about as 晓雨 and 小雨, 陈浩 as 浩子, and none of those
    contains the name the turns are stored under.  A Chinese name is a surname
    (one character, or two: 欧阳) and a given name; the familiar forms are the
    given name (two characters or more), 小 / 阿 + its last character, that
    character doubled or with 子 (浩子), and 老 / 小 + the surname.  A Latin
    name of several words is also named by its first or last word ("Dana" for
    Dana Whitfield).  Every alias has at least two characters.

    >>> sorted(speaker_aliases("陈浩"))
    ['小浩', '小陈', '浩子', '浩浩', '老陈', '阿浩']
    """
    if _HAN_NAME.match(key):
        surname = key[:2] if key[:2] in _COMPOUND_SURNAMES and len(key) > 2 else key[0]
        given = key[len(surname):]
        last = given[-1]
        out = {"小" + last, "阿" + last, last * 2, last + "子", "老" + surname, "小" + surname}
        if len(given) >= 2:
            out.add(given)
        return frozenset(a for a in out if a != key)
    words = key.split()
    if len(words) > 1 and key.isascii():
        return frozenset(w for w in (words[0], words[-1]) if len(w) >= 2)
    return frozenset()


@functools.lru_cache(maxsize=1024)
def romanised_aliases(key: str) -> frozenset[str]:
    """How an English sentence writes the Chinese name ``key``: in pinyin, capitalised, the given name as one
    word ("Chen Hao", "Hao Chen", "Hao", "Chen"; "Lin Xiaoyu", "Xiaoyu"), so that "What did Su Lei sign up
    for?" asked of 苏磊's chat names him.  Forms under three letters are left out ("He" for 何 is a pronoun);
    :func:`named_speakers` matches these only as capitalised words, so "the sun" names no 孙."""
    if not _HAN_NAME.match(key):
        return frozenset()
    from pypinyin import lazy_pinyin

    surname = key[:2] if key[:2] in _COMPOUND_SURNAMES and len(key) > 2 else key[0]
    sur, given = ("".join(lazy_pinyin(part)).capitalize() for part in (surname, key[len(surname):]))
    if not (sur.isascii() and given.isascii() and sur.isalpha() and given.isalpha()):
        return frozenset()  # (a character pypinyin does not know)
    return frozenset(a for a in (f"{sur} {given}", f"{given} {sur}", given, sur) if len(a) >= 3)


def says_name(text: str, name: str) -> bool:
    """``name`` occurs in the lower-cased ``text`` (as whole words, for a Latin name)."""
    if name not in text:
        return False
    return not name.isascii() or re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is not None


#: A word after which a name in an English question is whom something is done to, for or about, not who does it.
_SPOKEN_OF_BEFORE = re.compile(r"(?<!\w)(?:to|with|for|from|about|besides|of|than|tell|tells|told|ask|asks|asked|give"
                               r"|gives|gave|get|gets|got)\s+$", re.IGNORECASE)


def spoken_of(query: str, speakers: Iterable[str]) -> set[str]:
    """The speakers (keys) an English ``query`` names only as whom something is done to, for or about.

    "What did Jon say about Gina's progress?", "What does Nate want to do when he goes over to Joanna's
    place?", "How did Nate feel about sharing desserts with Joanna?": the question is about what Jon and
    Nate said, and the other name is in a possessive ("Gina's") or after a preposition or a verb that
    takes a person as its object ("with Joanna", "told Gina").  A speaker named once as the one who
    does something is not spoken of.  CJK names are left alone (their grammar marks objects otherwise)."""
    out: set[str] = set()
    for key in speakers:
        forms = [f for f in {key, *speaker_aliases(key)} if f.isascii() and len(f) > 2]
        hits = [m for f in forms for m in re.finditer(rf"(?<![\w'’]){re.escape(f)}(?![\w])", query, re.IGNORECASE)]
        if hits and all(_SPOKEN_OF_BEFORE.search(query, 0, m.start()) or re.match(r"['’]s?(?!\w)", query[m.end():])
                        for m in hits):
            out.add(key)
    return out


def named_speakers(query: str, speakers: Iterable[str]) -> set[str]:
    """The speakers (keys, as :func:`split_speaker`'s subject) that ``query`` names.

    By the key itself ("Melanie", "张伟"), by one of its :func:`speaker_aliases`
    ("小雨" for 林晓雨), or, for a Latin name, by a shortened first name: a
    capitalised word of three letters or more inside a sentence that begins
    exactly one speaker's name ("Mel" for Melanie).  An alias or short form
    two speakers share names neither.
    """
    keys = set(speakers)
    text = unicodedata.normalize("NFKC", query).lower()
    named = {k for k in keys if says_name(text, k)}
    owners: dict[str, set[str]] = {}
    for k in keys:
        for alias in speaker_aliases(k):
            owners.setdefault(alias.lower(), set()).add(k)
    for alias, who in owners.items():
        if len(who) == 1 and alias not in keys and says_name(text, alias):
            named |= who
    if all(k.isascii() for k in keys):
        return _short_forms(query, keys, named)
    plain = unicodedata.normalize("NFKC", query)
    romanised: dict[str, set[str]] = {}
    for k in keys:
        for alias in romanised_aliases(k):
            romanised.setdefault(alias, set()).add(k)
    for alias, who in romanised.items():  # (capitalised, as names are: "the sun" is no 孙)
        if len(who) == 1 and re.search(rf"(?<![\w'’]){re.escape(alias)}(?![\w'’])", plain):
            named |= who
    return _short_forms(query, keys, named)


def _short_forms(query: str, keys: set[str], named: set[str]) -> set[str]:
    """``named`` and the speakers a Latin short first name names ("Mel" for Melanie: see :func:`named_speakers`)."""
    for m in _CAPITALISED.finditer(query):
        if _SENTENCE_START.search(query[: m.start()]):
            continue
        short = m.group().lower()
        if any(short in k.split() for k in keys):
            continue  # a whole word of some speaker's name: that speaker, matched above
        who = {k for k in keys if k.isascii() and k != short
               and any(w.startswith(short) and len(w) > len(short) for w in k.split())}
        if len(who) == 1:
            named |= who
    return named
