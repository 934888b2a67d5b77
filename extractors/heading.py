"""Titles of titled documents ("Eddie Irvine\\nEdmund Irvine Jr. (born 1965) is ...").

A wiki page, a note or a document chunk often starts with a line that names
what it is about.  That line is the strongest statement of the memory's
subject there is: a question that names it ("Where was Philip Carlo born?")
asks about that document more than about the others that merely mention the
name.  Recall uses it the way it uses a turn's speaker (see
``ripple.recall.pipeline``); nothing is stored for it.
"""

from __future__ import annotations

import functools
import re

from .normalize import entity_key
from .text import has_cjk

__all__ = ["split_title", "title_key", "names_title"]

_MAX_WORDS = 12
_MAX_CHARS = 100
_QUALIFIER = re.compile(r"\s*[(（][^()（）]*[)）]\s*$")  # "Mark King (musician)" -> "Mark King"
_SENTENCE_END = tuple(".!?。！？:：;；")


def split_title(text: str) -> str | None:
    """The first line of ``text`` when it reads as a title: short, no sentence ending, a body below it.

    >>> split_title("Eddie Irvine\\nEdmund Irvine Jr. is a retired racing driver.")
    'Eddie Irvine'
    >>> split_title("I went to the store.\\nThen home.") is None
    True
    >>> split_title("Caroline: I went to a support group") is None
    True
    """
    head, sep, body = text.strip().partition("\n")
    head = head.strip()
    if not sep or not body.strip() or not head or head.endswith(_SENTENCE_END):
        return None
    if len(head) > _MAX_CHARS or len(head.split()) > _MAX_WORDS:
        return None
    return head


def title_key(title: str) -> str:
    """The key a title is matched by: its entity key without a trailing qualifier.

    >>> title_key("Mark King (musician)")
    'mark king'
    """
    return entity_key(_QUALIFIER.sub("", title))


def names_title(query_key: str, key: str) -> bool:
    """Whether a query (already :func:`~extractors.normalize.entity_key`-normalised) names the title ``key``:
    as whole words, or as a substring for a CJK title."""
    if len(key) < 2 or (len(key) < 3 and key.isascii()):
        return False
    if key not in query_key:  # (most keys are not in the text at all: no pattern to build or run)
        return False
    if has_cjk(key):
        return True
    return _whole_words(key).search(query_key) is not None


@functools.lru_cache(maxsize=4096)
def _whole_words(key: str) -> "re.Pattern[str]":
    """``key`` as whole words (a title link reads every titled candidate's key against a few texts per
    recall: compiled once per key, not once per test, which was most of their cost)."""
    return re.compile(rf"(?<!\w){re.escape(key)}(?!\w)")
