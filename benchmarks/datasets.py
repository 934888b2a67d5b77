"""Benchmark datasets as plain records: documents, queries with gold ids, loaders.

Three sources:

* :func:`load_locomo` -- LoCoMo long conversations, one dialog turn per document,
  one user per conversation (Maharana et al., 2024).
* :func:`load_multihop` -- MuSiQue / HotpotQA passage retrieval in the HippoRAG
  subset format, one user for the whole corpus.
* :func:`load_zh_probe` -- the small hand-written Chinese probe (one gold
  memory per question, Chinese and cross-lingual English questions).  The
  Chinese chat set (``zh/zh-chat-dev.json``) is in LoCoMo format and loads
  with :func:`load_locomo`, as does its sealed held-out twin
  (``zh/zh-chat-heldout.json``, dataset ``zh-heldout``: scored, never tuned on).
* :func:`synthetic` -- a seeded generator of users, sessions and two-hop fact
  chains, from a thousand to a million memories, generated lazily by block.

Loaders do the data cleaning once and record what they changed in
``Dataset.info`` so that a run's header can show it.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Iterator, Mapping, Sequence

__all__ = [
    "Doc",
    "Query",
    "Dataset",
    "SyntheticDocs",
    "LOCOMO_CATEGORIES",
    "default_data_dir",
    "load_locomo",
    "load_multihop",
    "load_zh_probe",
    "synthetic",
    "clean_evidence",
    "parse_locomo_datetime",
    "iter_doc_chunks",
]

PROJECT_ROOT = Path(__file__).resolve().parents[1]
_NO_META: Mapping[str, Any] = MappingProxyType({})


# --------------------------------------------------------------------------- records


@dataclass(slots=True)
class Doc:
    """One stored memory: a dialog turn, a passage or a synthetic turn."""

    id: str
    text: str
    user_id: str
    session_id: str | None = None
    at: datetime | None = None
    speaker: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Query:
    """A question asked on behalf of ``user_id``; ``gold`` are the doc ids that answer it."""

    id: str
    text: str
    user_id: str
    gold: tuple[str, ...]
    category: str
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Dataset:
    """Documents, queries and what the loader did to build them.

    ``docs`` is a list, or for large synthetic sets a lazily generated
    :class:`SyntheticDocs` (sized and iterable, with ``chunks()``).
    """

    name: str
    docs: Sequence[Doc] | "SyntheticDocs"
    queries: list[Query]
    info: dict[str, Any] = field(default_factory=dict)
    # name -> entity label of every name the documents use, when the source knows them (the synthetic
    # generator does): what ``--extractor gazetteer`` matches instead of parsing with spaCy
    known_entities: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def n_docs(self) -> int:
        return len(self.docs)


def iter_doc_chunks(docs: Iterable[Doc], size: int = 10_000) -> Iterator[list[Doc]]:
    """Documents in lists of at most ``size``; uses ``docs.chunks()`` when there is one."""
    chunks = getattr(docs, "chunks", None)
    if chunks is not None:
        for chunk in chunks():
            for i in range(0, len(chunk), size):
                yield chunk[i : i + size]
        return
    buf: list[Doc] = []
    for d in docs:
        buf.append(d)
        if len(buf) >= size:
            yield buf
            buf = []
    if buf:
        yield buf


#: The development data the repository carries (see its README for sources and licences).
BUNDLED_DATA_DIR = Path(__file__).resolve().parent / "data"


def default_data_dir() -> Path:
    """``$RIPPLE_DATA_DIR`` if set, else the data the repository carries (``benchmarks/data``)."""
    env = os.environ.get("RIPPLE_DATA_DIR")
    if env:
        return Path(env)
    return BUNDLED_DATA_DIR


# --------------------------------------------------------------------------- LoCoMo

LOCOMO_CATEGORIES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}

_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        "january february march april may june july august september october november december".split()
    )
}
_LOCOMO_DT = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap]\.?m\.?)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$", re.I
)
_SESSION_KEY = re.compile(r"^session_(\d+)$")
_EVIDENCE_ID = re.compile(r"^D:?(\d+):(\d+)$")


def parse_locomo_datetime(value: str) -> datetime | None:
    """Parse ``"1:56 pm on 8 May, 2023"`` (locale-independent); ``None`` if it does not parse."""
    m = _LOCOMO_DT.match(value or "")
    if not m:
        return None
    hour, minute, ampm, day, month, year = m.groups()
    mon = _MONTHS.get(month.lower()) or next(
        (v for k, v in _MONTHS.items() if len(month) >= 3 and k.startswith(month.lower())), None
    )
    if mon is None:
        return None
    h = int(hour) % 12 + (12 if ampm.lower().startswith("p") else 0)
    return datetime(int(year), mon, int(day), h, int(minute))


def clean_evidence(raw: Iterable[Any], valid_ids: Iterable[str] | None = None) -> tuple[list[str], Counter]:
    """Normalise LoCoMo evidence ids and drop the ones that cannot be resolved.

    Handles the malformed forms found in the data: several ids in one entry
    separated by ``;``, ``,`` or spaces (``"D8:6; D9:17"``), an extra colon
    (``"D:11:26"`` -> ``"D11:26"``), zero padding (``"D30:05"`` -> ``"D30:5"``)
    and bare ``"D"`` (dropped).  With ``valid_ids``, ids naming a turn that does
    not exist are dropped too.  Order is kept and duplicates removed.

    Returns the cleaned ids and a counter of what was done
    (``split``, ``normalised``, ``unparseable``, ``missing_turn``, ``duplicate``).
    """
    valid = set(valid_ids) if valid_ids is not None else None
    stats: Counter = Counter()
    out: list[str] = []
    for entry in raw:
        parts = [p for p in re.split(r"[;,\s]+", str(entry).strip()) if p]
        if len(parts) > 1:
            stats["split"] += 1
        for part in parts:
            m = _EVIDENCE_ID.match(part)
            if not m:
                stats["unparseable"] += 1
                continue
            norm = f"D{int(m.group(1))}:{int(m.group(2))}"
            if norm != part:
                stats["normalised"] += 1
            if valid is not None and norm not in valid:
                stats["missing_turn"] += 1
                continue
            if norm in out:
                stats["duplicate"] += 1
                continue
            out.append(norm)
    return out, stats


def _turn_text(turn: Mapping[str, Any]) -> str:
    speaker = str(turn.get("speaker", "")).strip()
    text = str(turn.get("text") or "").strip()
    caption = str(turn.get("blip_caption") or "").strip()
    if caption:
        low = caption.lower()
        if low.startswith("a photography of "):
            caption = "a photo of " + caption[len("a photography of ") :]
        elif not low.startswith(("a photo", "a picture", "an image", "a screenshot")):
            caption = "a photo of " + caption
        shared = f"[shares {caption}]"
        text = f"{text} {shared}" if text else shared
    return f"{speaker}: {text}" if speaker else text


def load_locomo(
    path: str | os.PathLike[str],
    *,
    categories: Iterable[int] = (1, 2, 3, 4),
    name: str = "locomo",
) -> Dataset:
    """Load a file in LoCoMo format (a list of conversations).

    One user per conversation (``user_id = sample_id``); one document per dialog
    turn, id ``"{sample_id}:{dia_id}"``, text ``"{speaker}: {text}"`` with the
    BLIP caption of shared images appended as ``"[shares a photo of ...]"``; the
    session date is the document time.  ``observation``, ``session_summary``
    and ``event_summary`` are never read.  Questions keep categories
    ``categories`` (default 1-4; 5 is adversarial), with evidence cleaned by
    :func:`clean_evidence`; questions left without evidence are dropped.
    """
    path = Path(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, dict):  # a single conversation
        data = [data]
    keep = set(categories)
    docs: list[Doc] = []
    queries: list[Query] = []
    ev_stats: Counter = Counter()
    cat_raw: Counter = Counter()
    cat_kept: Counter = Counter()
    dropped_no_evidence: list[str] = []
    sessions_without_date = 0
    n_image_turns = 0
    per_conv: dict[str, dict[str, int]] = {}

    for ci, conv_item in enumerate(data):
        sample_id = str(conv_item.get("sample_id", f"conv-{ci}"))
        conv = conv_item["conversation"]
        sessions = sorted(
            (int(m.group(1)), key) for key in conv if (m := _SESSION_KEY.match(key))
        )
        valid_ids: set[str] = set()
        n_turns = 0
        for n, key in sessions:
            at = parse_locomo_datetime(str(conv.get(f"{key}_date_time", "")))
            if at is None:
                sessions_without_date += 1
            session_id = f"{sample_id}:session_{n}"
            for turn in conv[key] or []:
                dia_id = str(turn["dia_id"])
                valid_ids.add(dia_id)
                n_turns += 1
                if turn.get("blip_caption"):
                    n_image_turns += 1
                docs.append(
                    Doc(
                        id=f"{sample_id}:{dia_id}",
                        text=_turn_text(turn),
                        user_id=sample_id,
                        session_id=session_id,
                        at=at,
                        speaker=turn.get("speaker"),
                        meta={"dia_id": dia_id, "session": n, "image": bool(turn.get("blip_caption"))},
                    )
                )
        n_q = 0
        for qi, qa in enumerate(conv_item.get("qa", [])):
            cat = int(qa["category"])
            cat_raw[cat] += 1
            if cat not in keep:
                continue
            qid = f"{sample_id}:q{qi}"
            evidence, st = clean_evidence(qa.get("evidence") or [], valid_ids)
            ev_stats.update(st)
            if not evidence:
                dropped_no_evidence.append(qid)
                continue
            cat_kept[cat] += 1
            n_q += 1
            answer = qa.get("answer", qa.get("adversarial_answer"))
            queries.append(
                Query(
                    id=qid,
                    text=str(qa["question"]),
                    user_id=sample_id,
                    gold=tuple(f"{sample_id}:{e}" for e in evidence),
                    category=LOCOMO_CATEGORIES.get(cat, str(cat)),
                    meta={"category_id": cat, "answer": answer, "raw_evidence": list(qa.get("evidence") or [])},
                )
            )
        per_conv[sample_id] = {"sessions": len(sessions), "turns": n_turns, "questions": n_q}

    info = {
        "source": str(path),
        "conversations": len(data),
        "docs": len(docs),
        "image_turns": n_image_turns,
        "sessions_without_date": sessions_without_date,
        "questions_by_category_raw": {LOCOMO_CATEGORIES.get(c, str(c)): v for c, v in sorted(cat_raw.items())},
        "questions_by_category": {LOCOMO_CATEGORIES.get(c, str(c)): v for c, v in sorted(cat_kept.items())},
        "questions": len(queries),
        "evidence_cleaning": dict(ev_stats),
        "dropped_no_evidence": dropped_no_evidence,
        "per_conversation": per_conv,
    }
    return Dataset(name=name, docs=docs, queries=queries, info=info)


# --------------------------------------------------------------------------- multi-hop (HippoRAG format)

_HOPS = re.compile(r"^(\d+)hop")


def _norm_ws(text: str) -> str:
    return " ".join(text.split())


def load_multihop(
    name: str,
    corpus_path: str | os.PathLike[str],
    questions_path: str | os.PathLike[str],
) -> Dataset:
    """Load MuSiQue or HotpotQA in the HippoRAG tuning-subset format.

    The corpus is either a list of ``{"title", "text"}`` passages (MuSiQue) or a
    dict ``title -> [sentences]`` (HotpotQA).  Every passage is a document of a
    single user ``name``; id ``"{name}:{i}"`` with ``i`` its position in the
    corpus file (titles are not unique in MuSiQue), text ``"{title}\\n{text}"``
    as in HippoRAG's passage embedding.

    Gold passages: MuSiQue ``paragraphs`` with ``is_supporting`` (matched on
    title and text), HotpotQA ``supporting_facts`` titles.  Category: number
    of hops from a MuSiQue id (``"3hop1__..."`` -> ``"3hop"``), the question
    ``type`` for HotpotQA (``bridge``/``comparison``).  Gold passages missing
    from the corpus are listed in ``info["gold_misses"]``.
    """
    corpus_raw = json.loads(Path(corpus_path).read_text(encoding="utf-8"))
    questions_raw = json.loads(Path(questions_path).read_text(encoding="utf-8"))

    passages: list[tuple[str, str]] = []
    if isinstance(corpus_raw, dict):
        for title, body in corpus_raw.items():
            text = "".join(body) if isinstance(body, list) else str(body)
            passages.append((str(title), text.strip()))
    else:
        for p in corpus_raw:
            passages.append((str(p.get("title", "")), str(p.get("text", p.get("paragraph_text", ""))).strip()))

    docs: list[Doc] = []
    by_title_text: dict[tuple[str, str], str] = {}
    by_title: dict[str, list[str]] = defaultdict(list)
    for i, (title, text) in enumerate(passages):
        doc_id = f"{name}:{i}"
        docs.append(
            Doc(
                id=doc_id,
                text=f"{title}\n{text}" if title else text,
                user_id=name,
                session_id=None,
                at=None,
                speaker=None,
                meta={"title": title, "index": i},
            )
        )
        by_title_text.setdefault((title, _norm_ws(text)), doc_id)
        by_title[title].append(doc_id)

    queries: list[Query] = []
    misses: list[dict[str, str]] = []
    ambiguous = 0
    dropped: list[str] = []
    for qi, q in enumerate(questions_raw):
        qid = str(q.get("id", q.get("_id", f"{name}-q{qi}")))
        gold: list[str] = []
        if "paragraphs" in q:
            wanted = [
                (str(p.get("title", "")), str(p.get("paragraph_text", p.get("text", ""))))
                for p in q["paragraphs"]
                if p.get("is_supporting")
            ]
            for title, text in wanted:
                doc_id = by_title_text.get((title, _norm_ws(text)))
                if doc_id is None and len(by_title.get(title, [])) == 1:
                    doc_id = by_title[title][0]
                if doc_id is None:
                    misses.append({"query": qid, "title": title})
                elif doc_id not in gold:
                    gold.append(doc_id)
        elif "supporting_facts" in q:
            for title in dict.fromkeys(str(t) for t, *_ in q["supporting_facts"]):
                ids = by_title.get(title, [])
                if not ids:
                    misses.append({"query": qid, "title": title})
                    continue
                if len(ids) > 1:
                    ambiguous += 1
                for doc_id in ids:
                    if doc_id not in gold:
                        gold.append(doc_id)
        else:
            raise ValueError(f"{questions_path}: question {qid} has neither 'paragraphs' nor 'supporting_facts'")

        m = _HOPS.match(qid)
        if m:
            category = f"{m.group(1)}hop"
        else:
            category = str(q.get("type") or "all")
        if not gold:
            dropped.append(qid)
            continue
        answer = q.get("answer")
        meta: dict[str, Any] = {"answer": answer}
        if "level" in q:
            meta["level"] = q["level"]
        if m:
            meta["musique_type"] = qid.split("__", 1)[0]
        queries.append(Query(id=qid, text=str(q["question"]), user_id=name, gold=tuple(gold), category=category, meta=meta))

    info = {
        "source": {"corpus": str(corpus_path), "questions": str(questions_path)},
        "docs": len(docs),
        "questions": len(queries),
        "questions_by_category": dict(sorted(Counter(q.category for q in queries).items())),
        "gold_per_question": dict(sorted(Counter(len(q.gold) for q in queries).items())),
        "gold_misses": misses,
        "gold_ambiguous_titles": ambiguous,
        "dropped_no_gold": dropped,
        "doc_text": "title\\ntext",
    }
    return Dataset(name=name, docs=docs, queries=queries, info=info)


# --------------------------------------------------------------------------- Chinese probe


def load_zh_probe(path: str | os.PathLike[str], *, name: str = "zh-probe") -> Dataset:
    """Load the Chinese probe: ``{"memories": [{id, text}], "questions_zh": [...], "questions_en": [...]}``.

    One user (``name``) owns every memory; a memory is a document with id
    ``"{name}:{id}"`` and no session or time.  Each question has exactly one
    gold memory (``"gold"``); Chinese questions get category ``"zh"``, the
    English questions about the Chinese memories ``"en-cross"``.  A question
    whose gold memory does not exist is an error, not a silent drop: the
    file is small and hand-written.
    """
    path = Path(path)
    raw = json.loads(path.read_text(encoding="utf-8"))
    docs = [Doc(id=f"{name}:{m['id']}", text=str(m["text"]), user_id=name, meta={"memory_id": m["id"]})
            for m in raw["memories"]]
    known = {d.meta["memory_id"] for d in docs}
    queries: list[Query] = []
    for key, category in (("questions_zh", "zh"), ("questions_en", "en-cross")):
        for q in raw.get(key, []):
            if q["gold"] not in known:
                raise ValueError(f"{path}: question {q['id']} names a memory that does not exist: {q['gold']}")
            queries.append(Query(id=f"{name}:{q['id']}", text=str(q["question"]), user_id=name,
                                 gold=(f"{name}:{q['gold']}",), category=category, meta={"question_id": q["id"]}))
    info = {
        "source": str(path),
        "docs": len(docs),
        "questions": len(queries),
        "questions_by_category": dict(sorted(Counter(q.category for q in queries).items())),
    }
    return Dataset(name=name, docs=docs, queries=queries, info=info)


# --------------------------------------------------------------------------- synthetic

_ONSETS = "b c d f g h j k l m n p r s t v w z br cr dr fr gr kr pr tr st sk sl sn th sh ch".split()
_VOWELS = "a e i o u a e o ai ia eo ou".split()
_CODAS = ["", "", "", "n", "r", "l", "s", "th", "x", "m", "nd", "rt"]
_ORG_SUFFIX = "Labs Group Systems Partners Health Foods Robotics Capital Media Works Logistics Studio".split()
_PLACE_FORMS = ("{}", "Port {}", "{} Falls", "New {}", "{} Springs", "{}ville")

# Filler turns (str.format templates). Slots: P0, P1 people, O0 org, J0 project, L0 place.
_FILLER = (
    "I grabbed coffee with {P0} near {L0} this morning.",
    "{P0} just got promoted at {O0}.",
    "We are planning the launch of {J0} with {P0}.",
    "Have you talked to {P0} about {J0} yet?",
    "{O0} is hiring again, {P0} told me.",
    "I'm flying to {L0} next week for a conference.",
    "{P0} and {P1} were arguing about {J0} again.",
    "The {O0} team in {L0} shipped a big update.",
    "{P1} sent me photos from the trip to {L0}.",
    "Reminder to call {P0} about dinner on Friday.",
    "I finished reading a book about gardening.",
    "The weather has been lovely, we went hiking.",
    "My sister recommended a new recipe for dinner.",
    "Work was exhausting today, lots of meetings.",
    "ok",
    "thanks!",
)
# relative frequencies of the filler templates (the two contentless ones are rare)
_FILLER_P = (10, 8, 8, 8, 6, 6, 6, 6, 6, 6, 5, 5, 5, 5, 1.5, 1.5)

# Chain types: (name, X type, Y type, Z type, fact A (X->Y), fact B (Y->Z), distractor (Y2->Z), question)
_CHAINS = (
    (
        "employer-location", "P", "O", "L",
        "{X} started a new job at {Y} last month.",
        "{Y} moved its headquarters to {Z}.",
        "{Y2} opened a new office in {Z}.",
        "Does {X} work for a company that is based in {Z}?",
    ),
    (
        "project-sponsor", "P", "J", "O",
        "{X} has been leading {Y} since spring.",
        "{Y} got its funding from {Z}.",
        "{Z} also pays for {Y2}, I heard.",
        "Is the project that {X} leads backed by {Z}?",
    ),
    (
        "friend-city", "P", "P", "L",
        "{X} has been close friends with {Y} since college.",
        "{Y} finally moved to {Z}.",
        "{Y2} is thinking about moving to {Z} too.",
        "Does {X} know anyone who lives in {Z}?",
    ),
    (
        "org-project-site", "O", "J", "L",
        "{X} is running {Y} now.",
        "{Y} is being built in {Z}.",
        "{Y2} is also being built in {Z}.",
        "Is {X} building anything in {Z}?",
    ),
)
_CHAIN_EVERY = 40  # one chain (3 turns) per this many turns of a block


def _rng(*key: int):  # type: ignore[no-untyped-def]
    import numpy as np

    return np.random.default_rng([int(k) for k in key])


def _name_pool(rng, n: int, *, min_syll: int = 2, max_syll: int = 3) -> list[str]:  # type: ignore[no-untyped-def]
    """``n`` distinct capitalised pseudo-words of mostly ``min_syll`` syllables."""
    import numpy as np

    out: dict[str, None] = {}
    while len(out) < n:
        m = (n - len(out)) * 2
        nsyl = np.where(rng.random(m) < 0.85, min_syll, max_syll)
        ons = rng.integers(0, len(_ONSETS), size=(m, max_syll))
        vow = rng.integers(0, len(_VOWELS), size=(m, max_syll))
        cod = rng.integers(0, len(_CODAS), size=m)
        for i in range(m):
            w = "".join(_ONSETS[ons[i, j]] + _VOWELS[vow[i, j]] for j in range(nsyl[i])) + _CODAS[cod[i]]
            w = w.capitalize()
            if 4 <= len(w) <= 11:
                out.setdefault(w, None)
                if len(out) >= n:
                    break
    return list(out)


class _Pools:
    """Global entity name pools for one seed: people, orgs, projects, places."""

    def __init__(self, seed: int, size: int) -> None:
        rng = _rng(seed, 7)
        words = _name_pool(rng, size * 5)
        first, last, org, proj, place = (words[i * size : (i + 1) * size] for i in range(5))
        sfx = rng.integers(0, len(_ORG_SUFFIX), size=size)
        form = rng.integers(0, len(_PLACE_FORMS), size=size)
        self.people = [f"{a} {b}" for a, b in zip(first, last)]
        self.orgs = [f"{w} {_ORG_SUFFIX[s]}" for w, s in zip(org, sfx)]
        self.projects = [f"Project {w}" for w in proj]
        self.places = [_PLACE_FORMS[f].format(w) for w, f in zip(place, form)]

    def of(self, kind: str) -> list[str]:
        return {"P": self.people, "O": self.orgs, "J": self.projects, "L": self.places}[kind]


@dataclass(slots=True)
class _User:
    index: int
    user_id: str
    count: int
    session_len: int
    gap_minutes: int  # between session starts: the user's history spans about two years
    start: datetime
    speakers: tuple[str, str]
    vocab: dict[str, list[str]]


@dataclass(slots=True)
class _Block:
    user: _User
    block: int
    offset: int  # index of the block's first turn within the user
    length: int
    chains: list[tuple[int, int, int, int, str, str, str, str]]  # (type, pos_a, pos_b, pos_d, X, Y, Z, Y2)


class SyntheticDocs:
    """The documents of a :func:`synthetic` dataset, generated block by block on demand.

    Sized and iterable; ``chunks()`` yields one list of :class:`Doc` per block
    (at most ``block_size`` docs) so that a million memories never need to be
    held at once.  Each block is generated from its own seeded stream, so the
    output does not depend on how it is consumed.
    """

    def __init__(self, blocks: list[_Block], n: int, seed: int) -> None:
        self._blocks = blocks
        self._n = n
        self._seed = seed

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[Doc]:
        for chunk in self.chunks():
            yield from chunk

    def chunks(self) -> Iterator[list[Doc]]:
        for b in self._blocks:
            yield _generate_block(b, self._seed)


def _zipf_p(n: int, s: float = 0.7):  # type: ignore[no-untyped-def]
    import numpy as np

    w = 1.0 / np.arange(1, n + 1) ** s
    return w / w.sum()


def _generate_block(b: _Block, seed: int) -> list[Doc]:
    import numpy as np

    u = b.user
    rng = _rng(seed, 2, u.index, b.block)
    n = b.length
    p = np.asarray(_FILLER_P, dtype=float)
    tmpl = rng.choice(len(_FILLER), size=n, p=p / p.sum()).tolist()
    slots = {}
    for key, kind in (("P0", "P"), ("P1", "P"), ("O0", "O"), ("J0", "J"), ("L0", "L")):
        names = u.vocab[kind]
        slots[key] = rng.choice(len(names), size=n, p=_zipf_p(len(names))).tolist()
    P, O, J, L = u.vocab["P"], u.vocab["O"], u.vocab["J"], u.vocab["L"]
    texts = [
        _FILLER[t].format(
            P0=P[slots["P0"][i]], P1=P[slots["P1"][i]], O0=O[slots["O0"][i]], J0=J[slots["J0"][i]], L0=L[slots["L0"][i]]
        )
        for i, t in enumerate(tmpl)
    ]
    kinds: dict[int, dict[str, Any]] = {}
    for ctype, pa, pb, pd, x, y, z, y2 in b.chains:
        spec = _CHAINS[ctype]
        texts[pa] = spec[4].format(X=x, Y=y)
        texts[pb] = spec[5].format(Y=y, Z=z)
        texts[pd] = spec[6].format(Y2=y2, Z=z)
        kinds[pa] = {"role": "fact_a", "chain": spec[0]}
        kinds[pb] = {"role": "fact_b", "chain": spec[0]}
        kinds[pd] = {"role": "distractor", "chain": spec[0]}

    docs: list[Doc] = []
    uid = u.user_id
    sl = u.session_len
    spk = u.speakers
    for i in range(n):
        g = b.offset + i  # index within the user
        s, t = divmod(g, sl)
        docs.append(
            Doc(
                id=f"{uid}:{g}",
                text=f"{spk[g & 1]}: {texts[i]}",
                user_id=uid,
                session_id=f"{uid}:s{s}",
                at=u.start + timedelta(minutes=s * u.gap_minutes + 2 * t),
                speaker=spk[g & 1],
                meta=kinds.get(i, _NO_META),
            )
        )
    return docs


def _human(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}k"
    return str(n)


def synthetic(
    n_memories: int,
    *,
    n_users: int = 10,
    seed: int = 0,
    n_queries: int = 200,
    block_size: int = 10_000,
) -> Dataset:
    """A reproducible synthetic memory store with two-hop questions, for scale tests.

    ``n_memories`` turns (exactly) are spread over ``n_users`` users; each user
    talks in sessions of 8-30 turns between two speakers about people,
    organisations, projects and places drawn from generated names (mentions
    follow a Zipf-like law, so some entities are hubs).  One turn in
    ~13 belongs to a *chain*: fact A links X to Y, fact B (elsewhere in the
    same user's history) links Y to Z, and a distractor links another Y' to
    the same Z.  A query names X and Z only; gold = (A, B).  Categories are
    the chain types.

    Generation is lazy: ``dataset.docs`` is a :class:`SyntheticDocs` whose
    blocks of ``block_size`` turns are produced on iteration from their own
    seeded streams; the queries (at most ``n_queries``, sampled from all
    chains) are computed up front from the cheap block plans.
    """
    import numpy as np

    if n_memories < 1 or n_users < 1:
        raise ValueError("n_memories and n_users must be positive")
    n_users = min(n_users, n_memories)
    base, extra = divmod(n_memories, n_users)
    counts = [base + (1 if i < extra else 0) for i in range(n_users)]
    biggest = max(counts)
    pool_size = max(2000, min(20_000, 200 + biggest // 50))
    pools = _Pools(seed, pool_size)

    users: list[_User] = []
    for ui, c in enumerate(counts):
        r = _rng(seed, 0, ui)
        vocab = {}
        for kind, base_n, per in (("P", 20, 100), ("O", 10, 300), ("J", 8, 400), ("L", 10, 300)):
            pool = pools.of(kind)
            k = min(len(pool), base_n + c // per)
            vocab[kind] = [pool[j] for j in r.choice(len(pool), size=k, replace=False).tolist()]
        spk = r.choice(len(pools.people), size=2, replace=False).tolist()
        sl = int(r.integers(8, 31))
        users.append(
            _User(
                index=ui,
                user_id=f"u{ui:04d}",
                count=c,
                session_len=sl,
                gap_minutes=int(min(7 * 1440, max(90, 2 * 365 * 1440 // max(1, c // sl)))),
                start=datetime(2022, 1, 1, 8) + timedelta(days=int(r.integers(0, 365))),
                speakers=(pools.people[spk[0]].split()[0], pools.people[spk[1]].split()[0]),
                vocab=vocab,
            )
        )

    blocks: list[_Block] = []
    for u in users:
        nb = math.ceil(u.count / block_size)
        for bi in range(nb):
            offset = bi * block_size
            length = min(block_size, u.count - offset)
            r = _rng(seed, 1, u.index, bi)
            n_chains = length // _CHAIN_EVERY if length >= _CHAIN_EVERY else (1 if length >= 3 else 0)
            chains = []
            if n_chains:
                pos = r.choice(length, size=3 * n_chains, replace=False).tolist()
                types = r.integers(0, len(_CHAINS), size=n_chains).tolist()
                for ci in range(n_chains):
                    spec = _CHAINS[types[ci]]
                    a, bpos = sorted(pos[3 * ci : 3 * ci + 2])
                    d = pos[3 * ci + 2]
                    xs, ys, zs = u.vocab[spec[1]], u.vocab[spec[2]], u.vocab[spec[3]]
                    x = int(r.integers(len(xs)))
                    y = int(r.integers(len(ys)))
                    if spec[1] == spec[2] and y == x:
                        y = (y + 1) % len(ys)
                    z = int(r.integers(len(zs)))
                    y2 = (y + 1 + int(r.integers(len(ys) - 1))) % len(ys)
                    if spec[1] == spec[2] and y2 == x:  # keep the distractor off X as well
                        y2 = (y2 + 1) % len(ys)
                        if y2 == y:
                            y2 = (y2 + 1) % len(ys)
                    chains.append((types[ci], a, bpos, d, xs[x], ys[y], zs[z], ys[y2]))
            blocks.append(_Block(user=u, block=bi, offset=offset, length=length, chains=chains))

    all_chains = [(b, c) for b in blocks for c in b.chains]
    r = _rng(seed, 3)
    take = min(n_queries, len(all_chains))
    chosen = sorted(r.choice(len(all_chains), size=take, replace=False).tolist()) if take else []
    queries: list[Query] = []
    for qn, idx in enumerate(chosen):
        b, (ctype, pa, pb, pd, x, y, z, y2) = all_chains[idx]
        spec = _CHAINS[ctype]
        uid = b.user.user_id
        queries.append(
            Query(
                id=f"{uid}:q{qn}",
                text=spec[7].format(X=x, Z=z),
                user_id=uid,
                gold=(f"{uid}:{b.offset + pa}", f"{uid}:{b.offset + pb}"),
                category=spec[0],
                meta={"bridge": y, "distractor": f"{uid}:{b.offset + pd}"},
            )
        )

    docs = SyntheticDocs(blocks, n_memories, seed)
    info = {
        "generator": "synthetic",
        "params": {"n_memories": n_memories, "n_users": n_users, "seed": seed, "n_queries": n_queries, "block_size": block_size},
        "docs": n_memories,
        "users": n_users,
        "chains": len(all_chains),
        "questions": len(queries),
        "questions_by_category": dict(sorted(Counter(q.category for q in queries).items())),
    }
    labels = {"P": "PERSON", "O": "ORG", "J": "PRODUCT", "L": "GPE"}
    known = {name: labels[kind] for u in users for kind, names in u.vocab.items() for name in names}
    return Dataset(name=f"synthetic-{_human(n_memories)}", docs=docs, queries=queries, info=info,
                   known_entities=known)
