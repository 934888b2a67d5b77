"""Does a new statement replace an older one?  Frames compared, no attribute list, no model call.

Two statements state the same thing about the same subject with a different value when (see
:mod:`extractors.frames` for what a frame holds):

1. **a value changed**: exactly one slot of the new frame has no equal in the old one, and the old
   frame has a slot of the same kind that it can replace ("May 2" -> "May 9", "Initech" ->
   "Globex", "12 Baker Street" -> "40 King's Road").  With a change marker and no typed value
   the value may be a plain noun phrase, the last words the new clause does not share ("We moved
   the reception to the botanical garden").  Two changed slots are two statements ("The Atlas
   go-live is May 2" / "The Beacon go-live is May 9").
2. **the subject is the same**: the people the frames are about (``@self``, "my sister", "Tom's")
   do not differ;
3. **the qualifiers agree**: the nouns one frame has and the other lacks are on one side only.
   "the budget" may stand for "our budget for the offsite", but "the budget for new laptops"
   cannot: both sides have a noun the other lacks.
4. **not an addition**: "also", "too", "as well", "也", "还", "又" add a value to the old ones.
5. **a limit is not a running amount**: what was spent, used or booked so far, or what is left
   ("已经花了四千", "130 registered so far"), is measured against a limit ("the budget is 15,000",
   "capped at 200"); only a running amount replaces a running amount, only a limit a limit.
6. **another name is another thing**: a name that qualifies the old clause ("the Lisbon office"),
   which the new text leaves out while it names another of the same kind ("The Porto office is
   getting more space, 18 desks now"), makes two statements, even across clauses.

A new text that denies the old value ("我现在不在杭州了，调到南京分公司了", "I'm no longer at
Initech") and names a change says itself that the old statement ended: its other words need not
match.

How sure: ``high`` when the new clause says no more than the old one (or says more and marks a
change: "moved", "now", "改到") and either marks the change or restates the old frame word for
word, and the masked clauses are close in meaning (dense cosine); ``medium`` when it is
compatible but says more without marking a change, or the clauses are only moderately close;
``low`` otherwise.  High applies (supersede), medium is recorded as a conflict for review, low
does nothing.  Every verdict says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Sequence

from extractors.frames import (
    AMOUNT, IDENT, NAME, NUMERIC, PERSON, PHRASE, PLACEHOLDERS, PROPER, RATE, TEMPORAL, UNRESOLVED, Frame, Slot,
    value_group, value_groups,
)
from extractors.text import has_cjk

__all__ = ["Verdict", "JudgeCase", "structural_match", "promising", "worth_parsing", "grade", "HIGH", "MEDIUM", "LOW", "DENSE_HIGH", "DENSE_MEDIUM"]

HIGH, MEDIUM, LOW = "high", "medium", "low"
_NAMES = frozenset({NAME, PERSON, PROPER, PHRASE})
_NOT_VALUES = frozenset({IDENT, RATE})
_SHORT = 4  # words of a clause short enough to be read as a plain statement of one value
#: Cosine of the masked clauses at or above which a compatible pair is close enough to act on.
DENSE_HIGH = 0.4
#: ... and below which even a compatible pair is left alone.
DENSE_MEDIUM = 0.25


@dataclass(frozen=True, slots=True)
class Verdict:
    """How one new clause relates to one old clause (before the dense similarity is known: ``level``
    is the best it can reach)."""

    level: str
    old_value: str
    new_value: str
    old_clause: str
    new_clause: str
    old_masked: str
    new_masked: str
    reasons: tuple[str, ...]
    shape: str  # "same" | "narrower" | "broader": what the new clause says next to the old one


def _kind(slot: Slot) -> frozenset[str]:
    return frozenset({"temporal"}) if slot.kinds <= TEMPORAL else slot.kinds - {RATE} or slot.kinds


def _temporal(slot: Slot) -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for kind, norm in slot.norms:
        out.setdefault(kind, set()).add(norm)
    return {k: frozenset(v) for k, v in out.items()}


def _comparable(a: Slot, b: Slot, strong: bool) -> bool:
    """Whether ``b`` can take the place of ``a``: values of one kind (money and counts never meet; dates
    and times meet on a shared part: a weekday on a weekday, a time of day on a time of day)."""
    ka, kb = _kind(a), _kind(b)
    if ka == kb == {"temporal"}:
        ta, tb = _temporal(a), _temporal(b)
        return any(ta[k] != tb[k] for k in ta.keys() & tb.keys())
    if ka & kb:
        return True
    if PROPER in ka | kb and (ka | kb) <= {NAME, PERSON, PROPER}:
        return True  # an untyped proper noun may be a person or a place
    if (ka | kb) <= _NAMES:
        # "the trampoline park" may take the place of "Rosewood Manor", "Manchester" (tagged a person) of
        # "Leeds", but only where the new sentence names the change ("moved to", "instead")
        return strong
    na, nb = ka & NUMERIC, kb & NUMERIC
    return bool(na and nb and (AMOUNT in na or AMOUNT in nb))


def _same_value(a: Slot, b: Slot) -> bool:
    if _kind(a) == _kind(b) == {"temporal"}:  # "9:30" and "9:30 tomorrow": the same time of day
        ta, tb = _temporal(a), _temporal(b)
        shared = ta.keys() & tb.keys()
        return bool(shared) and all(ta[k] == tb[k] for k in shared)
    if {n for _, n in a.norms} == {n for _, n in b.norms}:
        return True
    if a.kinds & _NAMES and b.kinds & _NAMES:  # "Civic" is the "Honda Civic"
        return bool(a.words and b.words and (a.words <= b.words or b.words <= a.words))
    return False


@lru_cache(maxsize=1 << 16)  # a hot pair test of the write path: the same words meet again and again
def _same_word(a: str, b: str) -> bool:
    """One word, however the tokenizer cut or inflected it: "owner"/"own", "房间"/"房", "开周会"/"周会"."""
    if a == b:
        return True
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    if has_cjk(short):  # one character more ("房间"/"房"); more than that is a qualifier ("专业版"/"版")
        return short in long_ and len(long_) - len(short) <= 1
    return len(short) >= 3 and long_.startswith(short) and len(long_) - len(short) <= 3


def _minus(words: set[str], other: set[str]) -> set[str]:
    return {w for w in words if w not in other and not any(_same_word(w, o) for o in other)}


def _negated(new: Frame, slot: Slot) -> bool:
    """A negation word right before the slot ("isn't 60k", "不是14号")."""
    return any(0 <= slot.start - end <= 2 for end in new.negations)


def _as_words(slot: Slot, other: Frame) -> bool:
    """A slot that is no value here: an identifier ("Q3", "v2.3" name which thing), or a name the other
    frame has as a plain word ("Launch slipped" next to "the launch", "Tom changed" next to "Tom's phone")."""
    return IDENT in slot.kinds or (bool(slot.kinds & _NAMES) and bool(slot.words)
                                   and not _minus(set(slot.words), set(other.words)))


def _value_change(old: Frame, new: Frame, marked: bool) -> tuple[Slot | None, Slot | None, list[Slot], list[Slot]]:
    """``(old slot, new slot, old slots left, new slots left)``; (None, None, ...) when no single slot changed.

    A slot of the new frame equal to one of the old frame is shared.  A date or time the old frame
    has no counterpart for says when the change applies ("from next week", "this term"), not what."""
    new_free = [s for s in new.slots if not _as_words(s, old) and not _negated(new, s)
                and not (s.weak and s.kinds & _NAMES - {PHRASE} and not new.strong)
                and not (PHRASE in s.kinds and s.weak and not (new.strong and len(new.words) <= 3))
                and not any(_same_value(s, o) for o in old.slots)]
    old_free = [s for s in old.slots if not _as_words(s, new) and not any(_same_value(s, n) for n in new.slots)]
    old_shared = [s for s in old.slots if not _as_words(s, new) and s not in old_free]
    if len(new_free) > 1 and not any(_kind(s) == {"temporal"} for s in old.slots):
        new_free = [s for s in new_free if _kind(s) != {"temporal"}]
    if len(new_free) != 1:
        return None, None, old_free, new_free
    (vn,) = new_free
    same_kind = [s for s in old_free if _comparable(s, vn, new.strong)]
    if same_kind:
        return same_kind[-1], vn, [s for s in old_free if s is not same_kind[-1]], []
    if marked:  # "I quit Initech and joined Globex": the old value is named again, as the one left
        restated = [s for s in old_shared if _comparable(s, vn, new.strong)]  # ("Max" a person, "Leo" a proper noun)
        if restated:
            return restated[-1], vn, old_free, []
    return None, None, old_free, new_free


def promising(frame: Frame) -> bool:
    """Whether a new clause can replace anything: it has a value other than a name, or names a
    change, or it is a short statement of a name ("I work at Globex"), or a marked one."""
    names = [s for s in frame.slots if s.kinds <= _NAMES]
    return len(names) < len(frame.slots) or frame.strong or bool(names) and (
        frame.marked or len(frame.words) <= _SHORT)


def worth_parsing(frames: Sequence[Frame], ex: Any, terms: Sequence[str]
                  ) -> Callable[[str, Sequence[str]], bool]:
    """A cheap test of whether an older text (with its lexical terms) can hold a value the new
    ``frames`` may replace: a word in common (the statement is about something both name), unless
    the new text names a change ("I moved to ...", which needs no word in common with "I live
    in ..."), and a value of the same group in it (regular expressions, no parse) or, for a name, a
    text short enough to be one statement."""
    lang = "zh" if ex.language == "zh" else "en"
    groups = {value_group(k) for f in frames for slot in f.slots for k in slot.kinds}
    strong = any(f.strong for f in frames)
    by_name = strong or bool(groups & {value_group(k) for k in _NAMES})
    mine = {t for t in terms if len(t) > 1 or not has_cjk(t)}

    def test(text: str, theirs: Sequence[str]) -> bool:
        shared = not mine.isdisjoint(theirs)
        if not (shared or strong):
            return False
        if groups & value_groups(text, lang):
            return True
        return by_name and (shared or len(text) <= (12 if lang == "zh" else 48))

    return test


def structural_match(old: Frame, new: Frame, *, multi_valued: frozenset[str] = frozenset()) -> Verdict | None:
    """The verdict of the frames alone, or None when they do not state the same thing.  See the module
    docstring for the rules; a change marker counts in the sentence of the new clause.

    The fact rules' attributes, where both clauses have one, count too: one shared attribute (by its
    head word: "laptop_budget" is a "budget") is the same kind of statement, as good as a change
    marker; only different ones ("employer" / "location") are different statements unless the text
    marks a change; a shared attribute that takes many values at once (``multi_valued``:
    "preference", "language") is an addition."""
    if not new.groups & old.groups - _NOT_VALUES:
        return None  # no value of a kind the old clause has
    reasons: list[str] = []
    marked, strong = new.marked, new.strong  # (the markers of the new clause's sentence)
    if old.event or (new.event and not strong):
        return None  # "I went to the support group yesterday": an event, not a state that changes
    if old.running != new.running or old.limit != new.limit:
        return None  # "spent 6,000 so far" is measured against "the budget is 15,000": it is not the budget
    old_heads, new_heads = {a.rsplit("_", 1)[-1] for a in old.attributes}, {a.rsplit("_", 1)[-1] for a in new.attributes}
    shared_attrs = {a for a in old.attributes | new.attributes if a.rsplit("_", 1)[-1] in old_heads & new_heads}
    if shared_attrs and shared_attrs <= multi_valued:
        return None
    if old_heads and new_heads and not shared_attrs and not marked:
        return None
    if shared_attrs:
        reasons.append(f"same attribute {sorted(shared_attrs)[0]!r}")
    marked = marked or bool(shared_attrs)
    vo, vn, old_left, new_left = _value_change(old, new, marked)
    if vo is None or vn is None:
        return None
    old_words, new_words = list(old.words), list(new.words)
    old_value, new_value = vo.text, vn.text
    reasons.append(f"value {old_value!r} -> {new_value!r}")
    # slots that did not change are read as words: an unmatched name qualifies ("Falcon", "Vantage")
    old_set = set(old_words) | {w for s in old.slots if (s in old_left or _as_words(s, new)) and _kind(s) != {RATE}
                                for w in s.words}
    new_set = set(new_words) | {w for s in new.slots if (s in new_left or _as_words(s, old)) and _kind(s) != {RATE}
                                for w in s.words}
    new_set = _minus(new_set, set(vo.words))  # the old value named again ("I quit Initech")
    nominal = old.nominal | new.nominal | {w for s in (*old.slots, *new.slots) if s is not vo and s is not vn
                                           and _kind(s) != {RATE} for w in s.words}
    denied = bool({n for _, n in vo.norms} & new.denied) and strong  # "不在杭州了，调到南京了"
    if not denied and _another_name(old, old_left, new, vn):
        return None  # "The Lisbon office has 25 desks" / "The Porto office ..., 18 desks now"
    if old.subjects and new.subjects and not (old.subjects <= new.subjects or new.subjects <= old.subjects):
        return None  # "my sister" is not "I"; "Tom's" is not "Lena's"
    if UNRESOLVED in old.subjects | new.subjects:
        return None  # "his name is Kyle" / "her name's Coco": whose is not said
    only_old, only_new = _minus(old_set, new_set), _minus(new_set, old_set)
    left_out = _minus(only_old, set(new.text_words))  # (named elsewhere in the new text: not left out)
    if left_out & nominal and only_new & nominal and not denied:
        return None  # qualifiers differ on both sides: the offsite vs new laptops
    # an anchor: something both are about (a word, a person, an attribute, the old value named again),
    # or two short first-person clauses joined by a named change ("I live in Leeds" / "We moved to Manchester")
    people = {x for x in old.subjects & new.subjects if not x.startswith("@")}
    restated = {n for _, n in vo.norms} <= {n for _, n in new.context}  # "I quit Initech and joined Globex"
    if restated and not strong and not {n for _, n in vo.norms} & new.denied:
        return None  # the old value is still talked about, and nothing says it was replaced
    short = (strong or old.strong) and old.subjects == new.subjects and bool(old.subjects) and max(
        len(old_set), len(new_set)) <= 3
    # (a name both clauses hold unchanged anchors them too: "小雨的幼儿园" / "小雨幼儿园入园时间")
    named = any(s.kinds & _NAMES - {PHRASE} and s is not vo and any(_same_value(s, n) for n in new.slots)
                for s in old.slots)
    if PHRASE in vn.kinds:  # a phrase value needs a shared noun or person: "the reception", "Mia's party"
        if not ((old_set - only_old) & nominal or people or shared_attrs or restated or short or named):
            return None
    elif not (old_set - only_old or people or shared_attrs or restated or short or named):
        return None
    if new.addition:
        return None
    shape = "same" if not only_new and not left_out else "narrower" if not only_new & nominal else "broader"
    if only_new & nominal:
        reasons.append(f"the new clause adds {sorted(only_new & nominal)}")
    if left_out & nominal:
        reasons.append(f"the new clause leaves out {sorted(left_out & nominal)}")
    if new.marked or (marked and not only_new & nominal):
        # (the same attribute stands for a change marker only when the new clause adds no qualifier:
        # "Our budget is 50k" / "The budget for the team dinner is 800" may be another budget)
        reasons.append("a change marker" if new.marked else "the same attribute")
        level = HIGH
    elif shape == "same" and old.subjects == new.subjects and len(new_set) <= _SHORT:
        level = HIGH  # the old short statement word for word, with another value ("The venue is X")
    elif only_old and only_new:
        return None  # each says something the other does not, and nothing marks a change: "starts" / "ends"
    else:
        level = MEDIUM
        reasons.append("no change marker")
    return Verdict(level, old_value, new_value, old.clause, new.clause, _mask(old, vo), _mask(new, vn), tuple(reasons),
                   shape)


def _another_name(old: Frame, old_left: Sequence[Slot], new: Frame, vn: Slot) -> bool:
    """Whether a name qualifying the old clause (a name in its noun phrase, or a name slot that did
    not change) is missing from the new text while the new text names another name the old text
    does not have: the new statement is about that one."""
    mine = set(old.names) | {w for s in old_left if s.kinds & _NAMES - {PHRASE} and not s.weak for w in s.words}
    gone = _minus(mine, set(new.text_words))
    if not gone:
        return False
    return bool(_minus(set(new.text_names) - set(vn.words), set(old.text_words)))


def _mask(frame: Frame, slot: Slot | None) -> str:
    """The clause with the changed value replaced by its class ("The budget is NUMBER"): what the two
    statements say apart from the value."""
    if slot is None:
        return frame.clause
    a, b = slot.start - frame.start, slot.end - frame.start
    return f"{frame.clause[:a]}{PLACEHOLDERS[min(slot.kinds)]}{frame.clause[b:]}".strip()


def grade(v: Verdict, dense: float, *, high: float = DENSE_HIGH, medium: float = DENSE_MEDIUM
          ) -> tuple[str, tuple[str, ...]]:
    """The final level of a structural verdict given the cosine of its masked clauses."""
    reasons = (*v.reasons, f"masked clauses cosine {dense:.2f}")
    if dense < medium:
        return LOW, reasons
    if v.level == HIGH and dense >= high:
        return HIGH, reasons
    return MEDIUM, reasons


@dataclass(frozen=True, slots=True)
class JudgeCase:
    """What a pluggable judge (``LifecycleConfig.judge``) is asked about a medium-confidence pair: does
    ``new_text`` replace ``old_text``?  It answers 'supersedes', 'conflict' or 'unrelated'."""

    old_text: str
    new_text: str
    old_value: str
    new_value: str
    reasons: tuple[str, ...]
