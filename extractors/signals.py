"""Write-path signals for the memory lifecycle: hedges, retractions, corrections.

An agent's memory has to change its mind the way the user does.  Three cheap
signals, read from the wording of one message, tell the engine how:

* **confidence** — a hedged statement ("I think the budget is 60k", "我了解一点
  Rust") is stored, but with less weight than a plain one.  The scale:

  ====  =====================================================================
  1.0   plain statement
  0.8   approximate figure: "roughly", "around 50k", "or so", "大约", "左右"
  0.6   partial or vague: "I know a bit of", "sort of", "kinda", "了解一点", "略懂"
  0.5   a guess: "maybe", "probably", "I think", "I guess", "might", "可能", "也许",
        "好像", "大概", "估计", "我觉得"
  0.4   explicit uncertainty: "not sure", "no idea", "I doubt", "不确定", "说不准"
  ====  =====================================================================

  Cues do not add up: a text gets the lowest value of the cues it contains.
* **retracts** / **retract_hint** — the message takes back something said
  before: "forget that", "never mind, drop the plan", "scratch that",
  "ignore what I said about the hotel", "算了", "不要了", "别再提了", "忘掉这个".
  The hint is the words naming what is taken back ("the plan", "the hotel"),
  empty when the message does not say ("forget that").  Only imperatives count:
  "I forgot my keys", "don't forget the meeting" and "never mind the weather,
  the trip was great" are not retractions.
* **corrects** — the message corrects the previous one: "no, I meant Tuesday",
  "actually it's Tuesday, not Monday", "correction: ...", "不对，是周二",
  "我是说周二".  When it also states an attribute ("no, the budget is 70k"),
  the fact rules pick the value up; otherwise only the flag is set.
  "Scratch that, the budget is 70k" sets both flags: it takes the last
  statement back and replaces it.

All of it is regular expressions over one message (microseconds, no model);
like the fact rules, they favour precision over recall.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

__all__ = [
    "Signals",
    "detect_signals",
    "hedge_confidence",
    "find_retraction",
    "is_correction",
    "sentence_span",
    "at_clause_start",
]


@dataclass(frozen=True, slots=True)
class Signals:
    """The lifecycle signals of one message (see the module docstring)."""

    confidence: float = 1.0
    retracts: bool = False
    retract_hint: str = ""
    corrects: bool = False


_F = re.IGNORECASE


def _prep(text: str) -> str:
    return unicodedata.normalize("NFKC", text).replace("\u2019", "'").replace("\u2018", "'")


# --------------------------------------------------------------------------- hedges

# Each cue pattern comes with needles: lower-case substrings one of which the text must
# contain before the pattern is tried.  Most messages contain none, so the signals cost a
# few substring tests instead of a few dozen regular-expression scans.
_HEDGES: tuple[tuple[float, re.Pattern[str], tuple[str, ...]], ...] = (
    (0.4, re.compile(
        r"\bnot\s+(?:\S+\s+){0,2}?(?:sure|certain)\b|\bunsure\b|\bno\s+idea\b|\bi\s+doubt\b|\bdon't\s+quote\s+me\b"
        r"|\bwho\s+knows\b", _F), ("sure", "certain", "idea", "doubt", "quote", "knows")),
    (0.4, re.compile(r"不确定|不太确定|不是很确定|不敢肯定|说不准|说不好|拿不准|没把握"), ("确定", "肯定", "说不", "拿不准", "没把握")),
    (0.5, re.compile(
        r"\b(?:maybe|perhaps|probably|possibly|presumably|supposedly|apparently|likely|might|iirc|afaik)\b"
        r"|\bi\s+think\b(?!\s+(?:about|of|over|through|back|ahead)\b)|\bi\s+guess\b|\bi\s+suppose\b"
        r"|\bi\s+believe\b(?!\s+in\b)|\bi\s+assume\b|\bi\s+reckon\b|\bi'm\s+guessing\b|\bi\s+am\s+guessing\b"
        r"|\bit\s+seems\b|\bseems\s+like\b|\bcould\s+be\b|\bif\s+i\s+remember\s+(?:correctly|right)\b", _F),
     ("maybe", "perhaps", "probabl", "possibl", "presumabl", "suppos", "apparent", "likely", "might", "iirc", "afaik",
      "think", "guess", "believe", "assume", "reckon", "seem", "could be", "remember")),
    (0.5, re.compile(r"(?<!不)可能|也许|或许|好像|大概|估计|似乎|貌似|说不定|恐怕|我觉得|我猜"),
     ("可能", "也许", "或许", "好像", "大概", "估计", "似乎", "貌似", "说不定", "恐怕", "我觉得", "我猜")),
    (0.6, re.compile(
        r"\b(?:know|speak|understand|read|write|play|learned|learnt|studied|code|cook|use)\s+"
        r"(?:a\s+(?:little\s+)?bit|a\s+little|some\s+basic|the\s+basics)\b|\b(?:somewhat|more\s+or\s+less)\b", _F),
     ("bit", "little", "basic", "somewhat", "more or less")),
    (0.6, re.compile(r"(?:了解|懂|会|知道|学过|会说|会讲|学了)(?:一点|点儿)|(?:了解|懂|学过)一些|略懂|略知|稍微(?:懂|会|了解)|半懂"),
     ("一点", "点儿", "一些", "略", "稍微", "半懂")),
    (0.8, re.compile(
        r"\b(?:roughly|approximately|approx)\b|\b(?:around|about)\s+[$€£¥]?\d|\d\S*\s+or\s+so\b|\b\d+\s*-?ish\b", _F),
     ("rough", "approx", "around", "about", " or so", "ish")),
    (0.8, re.compile(r"大约|左右|差不多|将近"), ("大约", "左右", "差不多", "将近")),
)
_KIND_OF = re.compile(r"\b(?:(?:sort|kind)\s+of|kinda|sorta)\b", _F)
_KIND_OF_CONFIDENCE = 0.6
# "kind of"/"kinda" after one of these is a noun phrase ("what kinda jobs"), not a hedge.
_NOUN_KIND_OF = frozenset(
    "what which this that the a any some every same one no whatever different these those what's all my your our "
    "its his her their".split()
)
_LAST_WORD = re.compile(r"([\w']+)\W*$")


# "kinda"/"sort of" before a feeling grades the feeling ("kinda nervous", "sort of overwhelming"):
# it says how strong the feeling is, not how sure the speaker is of a fact.
_FEELINGS = frozenset(
    "nervous scary scared sad low down tired weird crazy wild hard tough busy boring bored fun funny cool lonely "
    "happy glad upset stressful anxious worried annoying bummed sick hungry jealous proud shy awkward lost "
    "cute nice bad good great sweet stressed overwhelmed excited worried surprised confused disappointed".split()
)
_NEXT_WORD = re.compile(r"\W*([\w'-]+)")


def _vague_kind_of(s: str, low: str) -> bool:
    """A hedging "sort of"/"kinda" ("I sort of know it"), not "what kind of music" or "kinda nervous"."""
    if "sort" not in low and "kind" not in low:
        return False
    for m in _KIND_OF.finditer(s):
        prev = _LAST_WORD.search(low, 0, m.start())
        if prev is not None and prev.group(1) in _NOUN_KIND_OF:
            continue
        nxt = _NEXT_WORD.match(low, m.end())
        word = nxt.group(1) if nxt else ""
        if word in _FEELINGS or word.endswith("ing"):  # (an -ing word after "kinda" is an adjective: "boring")
            continue
        return True
    return False


def _has(low: str, needles: tuple[str, ...]) -> bool:
    return any(n in low for n in needles)


def hedge_confidence(text: str) -> float:
    """Confidence of a statement from its hedges: 1.0 when plain, lower when hedged.

    >>> [hedge_confidence(t) for t in ("I know a bit of Rust", "maybe Friday", "I'm not sure", "我住在北京")]
    [0.6, 0.5, 0.4, 1.0]
    """
    if not text:
        return 1.0
    s = _prep(text)
    low = s.lower()
    best = 1.0
    for value, pattern, needles in _HEDGES:
        if value < best and _has(low, needles) and pattern.search(s):
            best = value
    if _KIND_OF_CONFIDENCE < best and _vague_kind_of(s, low):
        best = _KIND_OF_CONFIDENCE
    return best


# --------------------------------------------------------------------------- clause starts

# Words that may open a clause before an imperative without making it a statement.
_LEAD_WORDS = (
    r"please|pls|just|oh|ok|okay|actually|no|nah|nope|wait|so|hey|um|uh|hmm|and|well|sorry|yeah|yes|ah|alright"
    r"|also|then|now|oops|hm|er|erm|look|listen|never\s+mind|nevermind|nvm|on\s+second\s+thought"
)
_LEAD = re.compile(rf"^(?:(?:{_LEAD_WORDS})\b[\s,.!-]*)*$", _F)
_CLAUSE_BREAK = re.compile(r"[,;:!?\n()\"“”]|\.(?=\s|$)|—|\s-\s")
_SENTENCE_BREAK = re.compile(r"[!?\n。！？]|\.(?=\s|$)")


def _clause_before(s: str, pos: int) -> str:
    """The text between the last clause break before ``pos`` and ``pos``."""
    start = 0
    for m in _CLAUSE_BREAK.finditer(s, 0, pos):
        start = m.end()
    return s[start:pos]


def at_clause_start(s: str, pos: int) -> bool:
    """Whether only interjections ("oh", "please", "no,") precede ``pos`` in its clause."""
    return bool(_LEAD.match(_clause_before(s, pos).strip()))


def sentence_span(s: str, pos: int) -> tuple[int, int]:
    """``(start, end)`` of the sentence of ``s`` that contains ``pos`` (a "." must end a word)."""
    start = 0
    for m in _SENTENCE_BREAK.finditer(s, 0, pos):
        start = m.end()
    end = _SENTENCE_BREAK.search(s, pos)
    return start, (end.end() if end else len(s))


def _is_question(s: str, pos: int) -> bool:
    start, end = sentence_span(s, pos)
    sentence = s[start:end].rstrip()
    return sentence.endswith(("?", "？")) or sentence.rstrip("。！!.").endswith("吗")


# --------------------------------------------------------------------------- retractions

_HINT_STOP = re.compile(
    r"\s*(?:[,;:!?\n()\"“”]|\.(?=\s|$)|\s-\s|—|\s(?:and|but|because|since|so|then|please|too|for\s+now|as\s+well"
    r"|completely|entirely|altogether|anymore|now|okay|ok)\b)",
    _F,
)
_VAGUE_HINTS = frozenset(
    {"it", "that", "this", "everything", "all", "all that", "all this", "that one", "this one", "the whole thing",
     "what i said", "what i just said", "anything", "my last message", "the last message", "the previous message",
     "my previous message", "my last comment", "what i wrote", "what i told you"}
)

_ABOUT = r"(?:\s+(?:about|regarding)\s+(?P<about>[^\n]+))?"
_WHAT_I_SAID = (
    r"(?:what\s+i\s+(?:just\s+)?(?:said|told\s+you|wrote|mentioned|asked(?:\s+for)?)"
    r"|everything\s+i\s+(?:just\s+)?said)"
)
_EN_RETRACT: tuple[tuple[re.Pattern[str], bool], ...] = (
    # (pattern, must start a clause); the hint comes from the "about" or "obj" group.
    (re.compile(
        rf"\bforget\s+(?:about\s+)?(?:{_WHAT_I_SAID}|i\s+(?:said|mentioned|asked)\s+(?:anything|that|it)){_ABOUT}", _F
    ), True),
    (re.compile(r"\bforget\s+(?:it|that|this|everything|all\s+(?:of\s+)?(?:that|this|it))\b", _F), True),
    (re.compile(r"\bforget\s+about\s+(?P<obj>[^\n]+)", _F), True),
    (re.compile(r"\bforget\s+(?P<obj>(?:the|my|our|that|this|those|these)\s+[^\n]+)", _F), True),
    # A request is a question but still a retraction: "Can you forget what I said about the hotel?"
    (re.compile(
        rf"\b(?:can|could|would|will)\s+you\s+(?:please\s+)?forget\s+(?:about\s+)?"
        rf"(?:(?:it|that|this|{_WHAT_I_SAID}){_ABOUT}|(?P<obj>(?:the|my|our)\s+[^\n?]+))", _F
    ), False),
    # "never mind" alone or about something; "never mind the weather, ..." is not a retraction.
    (re.compile(
        r"\b(?:never\s*mind|nvm)\b(?=\s*(?:[,.;:!?—-]|$|(?:that|it|then|about)\b))(?:\s+about\s+(?P<obj>[^\n]+))?", _F
    ), True),
    # "never mind the bedroom idea": what is dropped is a plan, an idea, a request
    (re.compile(r"\b(?:never\s*mind|nvm)\s+(?P<obj>(?:the|my|our|that|this)\s+(?:[\w-]+\s+){0,3}?"
                r"(?:idea|plan|plans|request|reminder|booking|order|trip|thing))\b", _F), True),
    (re.compile(
        r"\b(?:scratch|strike|cancel|undo|delete|drop|disregard)\s+(?:that|this|it)\b(?!\s+(?:is|was|'s|off|on)\b)", _F
    ), True),
    (re.compile(
        rf"\b(?:ignore|disregard)\s+(?:{_WHAT_I_SAID}|my\s+(?:last|previous)\s+(?:message|comment|answer)"
        rf"|the\s+(?:last|previous)\s+message|that|it){_ABOUT}", _F
    ), True),
    (re.compile(rf"\bi\s+take\s+(?:(?:that|it)\s+back|back\s+(?:{_WHAT_I_SAID}|that|my\s+last\s+\w+)){_ABOUT}", _F), False),
    (re.compile(
        rf"\b(?:let\s+me|i'd\s+like\s+to|i\s+want\s+to)\s+(?:take\s+(?:that|it)\s+back"
        rf"|retract\s+(?:that|it|{_WHAT_I_SAID})){_ABOUT}", _F
    ), False),
    (re.compile(rf"\bi\s+retract\s+(?:that|it|my\s+\w+|{_WHAT_I_SAID}){_ABOUT}", _F), False),
    (re.compile(
        r"\b(?:don't|do\s+not|please\s+don't)\s+(?:remember|save|store|keep|record)\s+(?:that|this|it)\b", _F
    ), True),
    (re.compile(r"\bstop\s+remembering\s+(?P<obj>[^\n]+)", _F), True),
)
_EN_RETRACT_NEEDLES = (
    "forget", "mind", "nvm", "scratch", "strike", "cancel", "undo", "delete", "drop", "disregard", "ignore", "take",
    "retract", "remember", "save", "store", "keep", "record",
)
# After "never mind"/"forget it": "..., drop the plan" names what is dropped.
_FOLLOW_HINT = re.compile(
    r"\b(?:drop|cancel|scrap|skip|ditch|forget(?:\s+about)?|ignore|scratch)\s+(?P<obj>(?:the|my|our|that|this)\s+[^\n]+)", _F
)

_ZH_RETRACT: tuple[re.Pattern[str], ...] = (
    re.compile(r"不要了(?![解])"),
    re.compile(r"(?<![打计盘清结核估推换演运预总合划])算了(?![一下算半好很个两三几些解])"),
    re.compile(r"(?:别|不要|不用)再?提了|别再说了|不要再说了"),
    re.compile(r"忘(?:了|掉|记)(?:它|这个|那个|这件事|那件事|这事|那事|我(?:刚才|之前|刚刚)?说的(?:话|事)?)?吧"),
    re.compile(r"(?:^|(?<=[，。！？；,.!?;\s请你就]))(?:把(?P<obj>[^，。！？；,.!?;]{1,15}?))?忘掉(?!了)"),
    re.compile(r"(?:别|不要|不用)再?记(?:住|下|着)?(?:这个|那个|它|这件事|那件事|了)"),
    re.compile(r"当我没说|就当我没说过?|(?:刚才|刚刚|之前|前面)(?:说|讲)的(?:话)?不算"
               r"|(?:刚才|刚刚|之前|前面|上面)(?:那句|那条|说的)(?:话)?(?:作废|不算数?)"
               # "上一条删一下": the message before, deleted
               r"|(?:刚才|刚刚|之前|前面|上面|上一)(?:那句|那条|条|句)(?:话|消息)?(?:先|就)?删(?:一下|掉|了|除)"),
    re.compile(r"(?P<obj>[^，。！？；,.!?;]{1,12}?)的事(?:就|先|还是)?(?:不提了|别提了|算了)"),
    re.compile(r"撤回|我收回|收回(?:刚才|之前|刚刚)?(?:说)?的话|取消(?:刚才|之前|刚刚|上面)(?:说的|那条)"),
)
_ZH_RETRACT_NEEDLES = ("不要了", "算了", "提了", "说了", "忘", "记", "没说", "不算", "撤回", "收回", "取消", "作废", "删")
_ZH_LEADING_FILLER = re.compile(r"^(?:那个|这个|好吧|关于|至于|还有|另外|其实|哦|噢|嗯|唉|哎|那|这)+")
_ZH_TRAILING_FILLER = re.compile(r"(?:的事情|的事|就|也|还是|的话|吧|呢|那个|这个)+$")
_ZH_PRONOUN_HINTS = frozenset("我 你 他 她 它 我们 你们 他们 这 那 这个 那个 这些 那些 都 全部 所有".split())
_ZH_CLAUSE_BREAK = re.compile(r"[，。！？；,.!?;\s、]")


def _hint_en(raw: str | None) -> str:
    if not raw:
        return ""
    m = _HINT_STOP.search(raw)
    hint = (raw[: m.start()] if m else raw).strip().strip("'\"“”‘’`*_ ").strip()
    if not hint or hint.lower() in _VAGUE_HINTS or len(hint.split()) > 8:
        return ""
    return hint


def _hint_zh(s: str, start: int, obj: str | None) -> str:
    """The named object of a Chinese retraction: "把X忘掉", or the clause before "X不要了"."""
    if obj:
        raw = obj
    else:
        begin = 0
        for m in _ZH_CLAUSE_BREAK.finditer(s, 0, start):
            begin = m.end()
        raw = s[begin:start]
    raw = _ZH_LEADING_FILLER.sub("", raw.strip())
    raw = _ZH_TRAILING_FILLER.sub("", raw).strip()
    if raw.startswith(("我", "你", "咱")) and len(raw) <= 2:
        return ""
    if not raw or raw in _ZH_PRONOUN_HINTS or len(raw) > 15:
        return ""
    return raw


def find_retraction(text: str) -> tuple[bool, str]:
    """``(True, hint)`` when ``text`` takes back something said before, else ``(False, "")``.

    >>> [find_retraction(t) for t in ("Forget about the plan.", "I forgot my keys", "算了")]
    [(True, 'the plan'), (False, ''), (True, '')]
    """
    if not text:
        return False, ""
    s = _prep(text)
    low = s.lower()
    for pattern, clause_start in _EN_RETRACT if _has(low, _EN_RETRACT_NEEDLES) else ():
        for m in pattern.finditer(s):
            if clause_start and not at_clause_start(s, m.start()):
                continue
            if clause_start and _is_question(s, m.start()):
                continue
            groups = m.groupdict()
            hint = _hint_en(groups.get("about") or groups.get("obj"))
            if not hint:
                follow = _FOLLOW_HINT.search(s, m.end())
                if follow:
                    hint = _hint_en(follow.group("obj"))
            return True, hint
    for pattern in _ZH_RETRACT if _has(low, _ZH_RETRACT_NEEDLES) else ():
        for m in pattern.finditer(s):
            if _is_question(s, m.start()):
                continue
            return True, _hint_zh(s, m.start(), m.groupdict().get("obj"))
    return False, ""


# --------------------------------------------------------------------------- corrections

_MARKERS = (r"no|nope|nah|sorry|oops|whoops|wait|actually|my\s+bad|my\s+mistake|correction"
            # "wrong number, it's BA 429": the speaker names what was wrong in what they said
            r"|wrong(?:\s+(?:number|address|email|date|day|time|one|name|room|amount|figure))?")
_MARKED = re.compile(rf"^\s*(?:(?:{_MARKERS})\b[\s,.!:-]*)+$", _F)
_MARKER_NEEDLES = ("no", "nah", "sorry", "oops", "whoops", "wait", "actually", "my bad", "my mistake", "correction",
                   "wrong")
# A word that starts a value: a number, an amount or a date word ("Tuesday", "next week").
_VALUE_WORD = (
    r"(?:[$€£¥\d]|[\w.+-]+@\w|(?:today|tomorrow|tonight|next|this|end|mid|early|late|noon|midnight|monday|tuesday"
    r"|wednesday|thursday|friday|saturday|sunday|january|february|march|april|june|july|august|september|october"
    r"|november|december)\b)"
)
_VALUE_START = rf"(?:{_VALUE_WORD}|(?-i:[A-Z]))"
# A misreading owned up to: "misread my diary", "misheard the time", "mixed them up".
_MISREAD_EN = r"(?:\bmis(?:read|heard|remembered)\b|\bmixed\s+(?:it|them|those|that|the\s+\w+)\s+up\b)"
# Where a cue may stand: "marker" after "no,"/"sorry,"/"actually" only (bare "I mean" is a
# filler, bare "it's X" a statement), "clause" at the start of a clause, "any" anywhere.
_EN_CORRECT: tuple[tuple[re.Pattern[str], str, tuple[str, ...]], ...] = (
    (re.compile(r"\bi\s+meant\b(?!\s+(?:to|it|that|well|no\s+harm|every\s+word|what)\b)", _F), "clause", ("meant",)),
    (re.compile(r"\bi\s+mean\b(?!\s+(?:to|it|that|well)\b)", _F), "marker", ("mean",)),
    (re.compile(r"\bbut\s+(?:i\s+)?meant\b(?!\s+to\b)", _F), "any", ("meant",)),
    (re.compile(r"(?:^|(?<=[\s(]))correction\s*[:：,-]|\bto\s+correct\s+(?:myself|that|what\s+i\s+said)\b"
                r"|\blet\s+me\s+correct\b|\bi\s+misspoke\b|\bi\s+mistyped\b|(?:^|(?<=\s))typo\s*[:：,-]"
                r"|\bi\s+was\s+wrong\b|\bi\s+(?:said|wrote|had)\s+(?:it\s+|that\s+)?wrong\b", _F),
     "any", ("correct", "misspoke", "mistyped", "typo", "wrong")),
    # "oops, Friday the 11th": a value right after an admitted slip (not "sorry, I can't": a value word only)
    (re.compile(rf"\b(?:oops|whoops|sorry|my\s+bad|my\s+mistake)[\s,.!:-]+(?:it'?s\s+|i\s+mean\s+)?{_VALUE_WORD}", _F),
     "clause", ("oops", "sorry", "my bad", "my mistake")),
    # "misread my diary", "misheard the time", "mixed them up", with a value said: the English counterpart of
    # "看错了", "记反了" (a misreading owned up to)
    (re.compile(rf"{_MISREAD_EN}(?=.*{_VALUE_WORD})|{_VALUE_WORD}.*{_MISREAD_EN}", _F | re.S),
     "any", ("misread", "misheard", "misremembered", "mixed")),
    # "*KX19 ABD": the chat convention for a typo fixed, a message that opens with an asterisk and the right text
    (re.compile(r"^\*(?=[^\s*])", _F), "any", ("*",)),
    (re.compile(rf"\bmake\s+that\s+{_VALUE_START}", _F), "clause", ("make that",)),
    # "scratch that, the budget is 70k": a retraction followed by the replacement.
    (re.compile(r"\b(?:scratch|strike)\s+that\s*[,;:.—-]+\s*\w", _F), "clause", ("scratch", "strike")),
    (re.compile(rf"\b(?:the|my|our)\s+(?:[\w-]+\s+){{0,2}}?(?:is|are|'s)\s+(?:(?:at|on|in|by)\s+)?{_VALUE_START}", _F),
     "marker", _MARKER_NEEDLES),
    (re.compile(rf"\b(?:it's|it\s+is|that's|that\s+is|it\s+should\s+be|should\s+be|it\s+was)\s+{_VALUE_START}", _F),
     "marker", _MARKER_NEEDLES),
    # "Tuesday, not Monday" / "70k, not 60k": a value set against another.  A capitalised
    # word counts only inside a sentence ("Thanks, not today" is no correction).
    (re.compile(
        rf"(?:{_VALUE_WORD}|(?<=\w\s)(?-i:[A-Z]))[^\s,.;!?]*(?:\s+[^\s,.;!?]+){{0,3}},\s*not\s+(?:the\s+)?{_VALUE_START}", _F
    ), "any", (", not",)),
)
_ZH_CORRECT = re.compile(
    r"(?:^|(?<=[，。！？；,.!?;\s]))(?:不对不对|不对|不是的|错了|(?:我|[\u4e00-\u9fff]{1,3}?)?(?:说错了|搞错了|弄错了|写错了|打错了|记错了)|口误)(?=[，,。！!\s]|$)"
    r"|(?:^|(?<=[，。！？；,.!?;\s]))(?:我是说|我的意思是|我指的是|我想说的是)"
    r"|更正(?:一下)?[:：，,]|纠正一下|修正一下|应该是[^，。！？]{1,15}才对"
    # "刚看错短信了", "数字记反了", "看错行了": a misreading owned up to (看 / 听 / 记 / 写 / 打 + 错 / 反)
    r"|[看听记写打](?:错|反|岔|混)[\u4e00-\u9fff]{0,2}?了(?=[，,。！!\s]|$)"
    # "改一下，10个人": a message that opens by amending the one before
    r"|^改一下[，,:：\s]"
    # "不是周一，是周二": only when the negated part is a number or a date ("不是我不想去，是没时间" is not).
    r"|(?:^|(?<=[，。！？；,.!?;\s]))不是[^，。！？,]{0,6}[\d零〇一二两三四五六七八九十百千万周月号日][^，。！？,]{0,4}[，,]\s*(?:而)?是"
    # "是十三号，不是十二号": the same, the other way round
    r"|(?:^|(?<=[，。！？；,.!?;\s]))是[^，。！？,]{0,6}[\d零〇一二两三四五六七八九十百千万周月号日][^，。！？,]{0,4}[，,]?\s*不是"
    # "改成七个人吧" opening a message: "make that seven" (with a subject, "周报改成周四交了", it is an update)
    r"|^(?:那就|那|还是)?改成[^，。！？,]{0,6}[\d零〇一二两三四五六七八九十百千万周月号日点]"
)


def is_correction(text: str) -> bool:
    """Whether ``text`` corrects the previous statement ("no, I meant Tuesday", "不对，是周二").

    >>> [is_correction(t) for t in ("Sorry, I meant Tuesday", "I meant to call you", "不对，是周二")]
    [True, False, True]
    """
    if not text:
        return False
    s = _prep(text)
    low = s.lower()
    for pattern, where, needles in _EN_CORRECT:
        if not _has(low, needles):
            continue
        for m in pattern.finditer(s):
            if _is_question(s, m.start()):
                continue
            if where == "marker":
                sentence_start, _ = sentence_span(s, m.start())
                if not _MARKED.match(s[sentence_start : m.start()]):
                    continue
            elif where == "clause" and not at_clause_start(s, m.start()):
                continue  # "what I meant was", "he thinks I meant" are not corrections
            return True
    return bool(_ZH_CORRECT.search(s))


# --------------------------------------------------------------------------- all together


def detect_signals(text: str) -> Signals:
    """Confidence, retraction and correction signals of one message.

    >>> detect_signals("never mind, drop the plan")
    Signals(confidence=1.0, retracts=True, retract_hint='the plan', corrects=False)
    """
    retracts, hint = find_retraction(text)
    return Signals(
        confidence=hedge_confidence(text),
        retracts=retracts,
        retract_hint=hint,
        corrects=is_correction(text),
    )
