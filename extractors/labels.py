"""Entity labels: the one vocabulary every extractor writes and the engine reads.

spaCy's named-entity labels as ripple stores them (``WORK_OF_ART`` becomes
``WORK``, ``TIME`` becomes ``DATE``), jieba's ``PERSON``/``GPE``/``ORG`` and
``MISC`` (see :data:`extractors.jieba_zh.FLAG_LABELS`), and ``PROPN`` for
proper-noun runs that NER missed.  Everything else an extractor emits is not
a name: ``DATE``, ``NOUN`` (noun phrases such as "the year"), ``VALUE`` (a
fact's value) and ``SELF`` (the user).
"""

from __future__ import annotations

__all__ = ["NAMED_LABELS", "NOISY_NAMED_LABELS"]

#: Labels of named entities: resolved across memories by name, linked by co-mention, walked by recall.
NAMED_LABELS: frozenset[str] = frozenset({
    "PERSON", "ORG", "GPE", "LOC", "NORP", "FAC", "EVENT", "WORK", "PRODUCT", "LAW", "LANGUAGE", "PROPN", "MISC",
})

#: Named labels too noisy to carry activation by default: jieba's ``nrt``/``nz`` flags (MISC) also tag
#: plain dictionary words, which would bridge unrelated memories.
NOISY_NAMED_LABELS: frozenset[str] = frozenset({"MISC"})
