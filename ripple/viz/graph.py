"""What to draw of a user's memory graph: a pure function over exported records.

The page (:mod:`ripple.viz.page`) only renders what this module decides, so
every choice a person sees (which nodes, which are highlighted, what was left
out and why) is made here, over plain dicts, and tested without a browser.

Input is what the public API gives: the JSON-ready records of
``Memory.export(user_id=...)`` (see :mod:`graphstore.jsonl`) and, for a recall,
its hits (:func:`hits_from_recall`).  Three views:

* **overview** (no focus): the most recent memories and the entities they
  mention most, capped at ``limit`` nodes;
* **recall**: the hits, the seeds their activation started from and every node
  on their paths, plus one ring of neighbours for context;
* **entity**: one entity, the memories that mention it and what those mention
  (two rings).

A large graph never becomes an unreadable hairball: past ``limit`` nodes the
rest is left out and :attr:`GraphView.notes` says what and by which rule.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping, Sequence

__all__ = [
    "DEFAULT_LIMIT",
    "EDGE_KINDS",
    "PATH_KINDS",
    "ENTITY_GROUPS",
    "MEMORY_STATUSES",
    "GraphIndex",
    "GraphView",
    "HitMark",
    "build_graph",
    "hits_from_recall",
]

DEFAULT_LIMIT = 100
EDGE_KINDS = ("MENTIONS", "RELATED", "NEXT", "SUPERSEDES", "RETRACTS")
#: Kinds a recall path may step along that the store keeps no edge of: a title link (one memory's text names
#: another's title; :func:`ripple.recall.merge.title_links`), drawn only on the paths that took it.
PATH_KINDS = ("NAMES_TITLE",)
MEMORY_STATUSES = ("active", "superseded", "invalidated")
# Entity labels (spaCy NER, POS fallbacks, ripple's own) folded into the few classes a legend can show.
ENTITY_GROUPS = ("self", "person", "organisation", "place", "time-value", "named", "concept")
_GROUP_OF_LABEL = {
    "SELF": "self",
    "PERSON": "person",
    "ORG": "organisation", "NORP": "organisation",
    "GPE": "place", "LOC": "place", "FAC": "place",
    "DATE": "time-value", "TIME": "time-value", "VALUE": "time-value", "MONEY": "time-value",
    "QUANTITY": "time-value", "PERCENT": "time-value", "CARDINAL": "time-value", "ORDINAL": "time-value",
    "NOUN": "concept",
}
_CO_MENTION = "co_mention"
_LABEL_COLS = 26  # display columns per label line (a CJK character takes two)
_MEMORY_LINES = 3
_CROWDED = 60  # past this many nodes a memory's label gets one line less
_ENTITY_LINES = 2


def entity_group(label: str) -> str:
    """The legend class of an entity label; proper names without a NER class are "named"."""
    return _GROUP_OF_LABEL.get(label.upper(), "named")


@dataclass(frozen=True, slots=True)
class HitMark:
    """One recall hit as the picture needs it: where it ranked and the path that reached it.

    ``path`` holds ``(source, edge kind, target)`` steps from a seed memory to
    the hit (empty when the hit is a seed itself).  ``text`` and ``status`` let
    the page show a hit the export does not contain (a store changed between
    the two calls).
    """

    id: str
    rank: int
    score: float
    via: str = "seed"
    path: tuple[tuple[str, str, str], ...] = ()
    text: str = ""
    status: str = "active"


def hits_from_recall(result: Any) -> tuple[HitMark, ...]:
    """The :class:`HitMark` of every hit of a :class:`ripple.RecallResult`."""
    return tuple(
        HitMark(id=h.memory.id, rank=h.rank, score=float(h.score), via=h.via,
                path=tuple((s.source, s.edge, s.target) for s in h.path),
                text=h.memory.text, status=h.memory.status)
        for h in result.hits
    )


@dataclass(slots=True)
class _Edge:
    src: str
    kind: str
    dst: str
    weight: float
    predicates: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)


def _edge_key(kind: str, a: str, b: str) -> tuple[str, str, str]:
    """RELATED edges are drawn once per entity pair (all predicates on one line); the rest per direction."""
    if kind == "RELATED":
        a, b = sorted((a, b))
    return (kind, a, b)


def _path_key(kind: str, a: str, b: str) -> tuple[str, frozenset[str]]:
    """A path step may walk an edge against its stored direction (entity -> memory on MENTIONS)."""
    return (kind, frozenset((a, b)))


@dataclass(slots=True)
class GraphIndex:
    """A user's exported graph, slimmed to what a picture needs (no vectors, no terms).

    Build it with :meth:`from_records`, which consumes the export once, so a
    large export is never held in memory whole.
    """

    memories: dict[str, dict[str, Any]] = field(default_factory=dict)
    entities: dict[str, dict[str, Any]] = field(default_factory=dict)
    edges: dict[tuple[str, str, str], _Edge] = field(default_factory=dict)
    adjacency: dict[str, set[str]] = field(default_factory=dict)
    degree: dict[str, int] = field(default_factory=dict)  # memories that mention each entity
    user_id: str = ""

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]]) -> "GraphIndex":
        """Index the records of ``Memory.export``; unknown record types are ignored."""
        index = cls()
        raw_edges: list[Mapping[str, Any]] = []
        for n, rec in enumerate(records, start=1):
            kind = rec.get("type")
            try:
                if kind == "memory":
                    index.memories[rec["id"]] = _slim_memory(rec)
                    index.user_id = index.user_id or str(rec.get("user_id") or "")
                elif kind == "entity":
                    index.entities[rec["id"]] = _slim_entity(rec)
                elif kind == "edge":
                    raw_edges.append({k: rec[k] for k in ("src", "edge", "dst")} | {
                        "weight": float(rec.get("weight", 1.0)), "predicate": rec.get("predicate") or "",
                        "evidence": rec.get("evidence")})
            except (KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"export record {n} ({kind}): missing or bad field {exc}") from exc
        for e in raw_edges:
            index._add_edge(e["src"], e["edge"], e["dst"], e["weight"], e["predicate"], e["evidence"])
        return index

    def _has(self, node_id: str) -> bool:
        return node_id in self.memories or node_id in self.entities

    def _add_edge(self, src: str, kind: str, dst: str, weight: float, predicate: str, evidence: str | None) -> None:
        if not (self._has(src) and self._has(dst)) or src == dst:
            return  # a dangling edge (its node belongs to no record of this export) has nothing to attach to
        key = _edge_key(kind, src, dst)
        edge = self.edges.get(key)
        if edge is None:
            edge = self.edges[key] = _Edge(src=src, kind=kind, dst=dst, weight=weight)
            self.adjacency.setdefault(src, set()).add(dst)
            self.adjacency.setdefault(dst, set()).add(src)
            if kind == "MENTIONS" and dst in self.entities:
                self.degree[dst] = self.degree.get(dst, 0) + 1
        edge.weight = max(edge.weight, weight)
        if predicate and predicate not in edge.predicates:
            edge.predicates.append(predicate)
        if evidence and evidence not in edge.evidence:
            edge.evidence.append(evidence)

    def find_entity(self, text: str) -> str | None:
        """The id of the entity named ``text`` (name, key or alias; case and width folded), else None.

        When several match, the most mentioned wins: "Dana" finds "Dana
        Whitfield" through her alias rather than a stray one-off "dana".
        """
        want = _fold(text)
        if not want:
            return None
        exact = [eid for eid, e in self.entities.items() if want in (_fold(e["name"]), _fold(e["key"]))]
        if not exact:
            exact = [eid for eid, e in self.entities.items()
                     if any(want == _fold(a.lstrip("~")) for a in e.get("aliases", ()))]
        if not exact:
            return None
        return max(exact, key=lambda eid: (self.degree.get(eid, 0), eid))

    def neighbours(self, node_id: str) -> set[str]:
        return self.adjacency.get(node_id, set())


def _fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _iso(ts: Any) -> str | None:
    if ts is None:
        return None
    try:
        return datetime.fromtimestamp(float(ts), tz=timezone.utc).strftime("%Y-%m-%d %H:%M")
    except (TypeError, ValueError, OverflowError, OSError):
        return str(ts)


def _slim_memory(rec: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": rec["id"], "text": str(rec["text"]), "at": float(rec.get("at") or 0.0),
        "status": rec.get("status") or "active", "kind": rec.get("kind") or "message",
        "session_id": rec.get("session_id"), "agent_id": rec.get("agent_id"),
        "importance": rec.get("importance"), "confidence": rec.get("confidence"), "mentions": rec.get("mentions"),
        "pinned": bool(rec.get("pinned", False)), "access_count": rec.get("access_count"),
        "language": rec.get("language"), "valid_to": rec.get("valid_to"), "created_at": rec.get("created_at"),
        "metadata": rec.get("metadata") or {},
    }


def _slim_entity(rec: Mapping[str, Any]) -> dict[str, Any]:
    return {"id": rec["id"], "name": str(rec["name"]), "key": str(rec.get("key") or rec["name"]),
            "label": str(rec.get("label") or ""), "aliases": tuple(rec.get("aliases") or ())}


# ---------------------------------------------------------------- labels


def _width(ch: str) -> int:
    return 2 if unicodedata.east_asian_width(ch) in "WF" else 1


def wrap_label(text: str, *, cols: int = _LABEL_COLS, lines: int = _MEMORY_LINES) -> str:
    """Wrap ``text`` into at most ``lines`` lines of ``cols`` display columns, with an ellipsis if cut.

    Latin text breaks at spaces; CJK text (no spaces) breaks between any two
    characters, and a CJK character counts two columns, so Chinese and English
    labels come out the same width.
    """
    out: list[str] = []
    line = ""
    for piece in _break_points(" ".join(text.split())):
        joined = line + piece if line else piece.lstrip()
        if line and _cols(joined) > cols:
            out.append(line.rstrip())
            joined = piece.lstrip()
        while _cols(joined) > cols:  # one word wider than a line: cut it
            head = _cut(joined, cols) or joined[0]
            out.append(head)
            joined = joined[len(head):]
        line = joined
    if line.strip():
        out.append(line.rstrip())
    if len(out) > lines:
        out = out[: lines - 1] + [_cut(out[lines - 1], cols - 1).rstrip() + "…"]
    return "\n".join(out)


def _cols(text: str) -> int:
    return sum(_width(ch) for ch in text)


def _cut(text: str, cols: int) -> str:
    """The longest prefix of ``text`` that fits in ``cols`` display columns."""
    used = 0
    for i, ch in enumerate(text):
        used += _width(ch)
        if used > cols:
            return text[:i]
    return text


def _break_points(text: str) -> list[str]:
    """Pieces that may start a new line: a space-led word, or a single wide (CJK) character."""
    pieces: list[str] = []
    cur = ""
    for ch in text:
        if ch == " " or _width(ch) == 2:
            if cur:
                pieces.append(cur)
            cur = ch
            if _width(ch) == 2:
                pieces.append(cur)
                cur = ""
        else:
            cur += ch
    if cur:
        pieces.append(cur)
    # keep closing punctuation on the line of the character before it
    merged: list[str] = []
    for p in pieces:
        if merged and len(p) == 1 and p in "，。、；：！？）》」』,.;:!?)":
            merged[-1] += p
        else:
            merged.append(p)
    return merged


# ---------------------------------------------------------------- the view


@dataclass(frozen=True, slots=True)
class GraphView:
    """What the page draws: JSON-ready nodes and edges, plus the words around them.

    ``mode`` is "overview", "recall" or "entity".  ``totals`` counts the
    user's whole graph, ``shown`` the part drawn; ``notes`` are sentences for
    the page (what was left out, and by which rule).
    """

    user_id: str
    mode: str
    nodes: tuple[dict[str, Any], ...]
    edges: tuple[dict[str, Any], ...]
    totals: dict[str, int]
    shown: dict[str, int]
    notes: tuple[str, ...] = ()
    query: str | None = None
    focus: str | None = None  # the entity's name in "entity" mode
    hits: tuple[dict[str, Any], ...] = ()
    limit: int = DEFAULT_LIMIT

    def to_data(self) -> dict[str, Any]:
        """Everything the page script reads, as one JSON-ready dict."""
        return {
            "user_id": self.user_id, "mode": self.mode, "query": self.query, "focus": self.focus,
            "nodes": list(self.nodes), "edges": list(self.edges), "hits": list(self.hits),
            "totals": dict(self.totals), "shown": dict(self.shown), "notes": list(self.notes), "limit": self.limit,
            "edge_kinds": [*EDGE_KINDS, *PATH_KINDS], "entity_groups": list(ENTITY_GROUPS),
            "memory_statuses": list(MEMORY_STATUSES),
        }

    def summary(self) -> str:
        """One line for a terminal: what was drawn out of what."""
        s, t = self.shown, self.totals
        line = (f"{s['memories']} of {t['memories']} memories, {s['entities']} of {t['entities']} entities, "
                f"{s['edges']} of {t['edges']} edges")
        return line + (f" ({self.notes[-1]})" if self.notes and s["nodes"] < t["nodes"] else "")


def build_graph(
    index: GraphIndex,
    *,
    user_id: str | None = None,
    hits: Sequence[HitMark] = (),
    query: str | None = None,
    focus_entity: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> GraphView:
    """Choose and describe the nodes and edges to draw.

    Parameters
    ----------
    index
        The user's graph (:meth:`GraphIndex.from_records`).
    hits
        A recall's hits: draws the "recall" view around them.  ``query`` is the
        recall's query, shown in the title.
    focus_entity
        An entity id (:meth:`GraphIndex.find_entity`): draws its neighbourhood.
    limit
        Most nodes to draw.  The recall's own nodes (hits, seeds, path) are
        always drawn; neighbours and the overview fill the rest.

    Returns
    -------
    GraphView
        Nodes carry ``role`` ("hit", "seed", "path" or "context" in a recall;
        "focus", "near" (one step) or "context" (two) around an entity; "" in
        the overview) and ``seed`` when activation started there, hits their ``rank`` and ``score``; edges carry ``kind``
        and ``on_path`` (with the ranks of the hits whose path uses them).
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    roles: dict[str, str] = {}
    seeds: set[str] = set()
    hit_of: dict[str, HitMark] = {}
    path_edges: dict[tuple[str, frozenset[str]], list[int]] = {}
    extra_memories: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    if hits:
        mode = "recall"
        for h in sorted(hits, key=lambda h: h.rank):
            hit_of[h.id] = h
            if h.id not in index.memories:
                extra_memories[h.id] = {"id": h.id, "text": h.text, "at": 0.0, "status": h.status, "kind": "message",
                                        "metadata": {}}
            seeds.add(h.path[0][0] if h.path else h.id)
            for src, kind, dst in h.path:
                path_edges.setdefault(_path_key(kind, src, dst), []).append(h.rank)
                roles.setdefault(src, "path")
                roles.setdefault(dst, "path")
        for node in seeds:
            roles[node] = "seed"
        for h in hits:  # a hit that is also the seed of another hit's path is drawn as a hit
            roles[h.id] = "hit"
        ranked_hits = [h.id for h in sorted(hits, key=lambda h: h.rank)]
        core = [n for n in dict.fromkeys(ranked_hits + list(roles)) if index._has(n) or n in extra_memories]
        chosen, left_out, _ = _rings(index, core, limit=limit, rings=1)
    elif focus_entity is not None:
        if focus_entity not in index.entities:
            raise ValueError(f"no entity with id {focus_entity!r} in this graph")
        mode = "entity"
        roles[focus_entity] = "focus"
        core = [focus_entity]
        chosen, left_out, first_ring = _rings(index, core, limit=limit, rings=2)
        roles.update((n, "near") for n in first_ring)
    else:
        mode = "overview"
        chosen, note = _overview(index, limit)
        left_out = 0
        if note:
            notes.append(note)
    if mode != "overview":
        for node in chosen:
            roles.setdefault(node, "context")
        if left_out:
            notes.append(f"{left_out} more neighbours left out (limit {limit} nodes; raise it with --limit)")

    lines = _MEMORY_LINES if len(chosen) <= _CROWDED else _MEMORY_LINES - 1
    nodes = [_node(index, n, roles.get(n, ""), hit_of.get(n), extra_memories, lines=lines)
             | ({"seed": True} if n in seeds else {}) for n in chosen]
    chosen_set = set(chosen)
    edges = []
    drawn_paths: set[tuple[str, frozenset[str]]] = set()
    for key, e in index.edges.items():
        if e.src in chosen_set and e.dst in chosen_set:
            pk = _path_key(e.kind, e.src, e.dst)
            ranks = path_edges.get(pk, [])
            if ranks:
                drawn_paths.add(pk)
            edges.append(_edge(e, ranks))
    for (kind, ends), ranks in path_edges.items():  # a path step whose edge the export lacks
        if (kind, ends) not in drawn_paths and ends <= chosen_set and len(ends) == 2:
            a, b = sorted(ends)
            edges.append(_edge(_Edge(src=a, kind=kind, dst=b, weight=0.0), ranks))

    n_mem = sum(1 for n in nodes if n["kind"] == "memory")
    totals = {"memories": len(index.memories), "entities": len(index.entities), "edges": len(index.edges)}
    totals["nodes"] = totals["memories"] + totals["entities"]
    shown = {"memories": n_mem, "entities": len(nodes) - n_mem, "edges": len(edges), "nodes": len(nodes)}
    hit_rows = tuple(
        {"id": h.id, "rank": h.rank, "score": round(h.score, 4), "via": h.via,
         "text": (index.memories.get(h.id) or extra_memories[h.id])["text"], "path_length": len(h.path)}
        for h in sorted(hits, key=lambda h: h.rank)
    )
    return GraphView(
        user_id=user_id or index.user_id, mode=mode, nodes=tuple(nodes), edges=tuple(edges), totals=totals,
        shown=shown, notes=tuple(notes), query=query,
        focus=index.entities[focus_entity]["name"] if mode == "entity" and focus_entity else None,
        hits=hit_rows, limit=limit,
    )


def _ranked(index: GraphIndex, cands: Iterable[str], chosen: set[str]) -> list[str]:
    """Candidates in the order they earn a place, memories and entities taking turns.

    Entities: proper names before noun phrases (noun phrases carry no
    activation in recall), then the most links to what is already drawn,
    then the most mentioned.  Memories: the most links to what is drawn, then
    active before replaced, then the most recent.  Taking turns keeps both
    kinds in the picture when a hub has hundreds of neighbours of one kind.
    """
    def links(n: str) -> int:
        return len(index.neighbours(n) & chosen)

    mems: list[str] = []
    ents: list[str] = []
    for n in cands:
        (ents if n in index.entities else mems).append(n)
    ents.sort(key=lambda e: (entity_group(index.entities[e]["label"]) != "concept", links(e),
                             index.degree.get(e, 0), e), reverse=True)
    mems.sort(key=lambda m: (links(m), index.memories[m]["status"] == "active", index.memories[m]["at"], m),
              reverse=True)
    out = [n for pair in zip(mems, ents) for n in pair]
    return out + mems[len(ents):] + ents[len(mems):]


def _rings(index: GraphIndex, core: list[str], *, limit: int, rings: int) -> tuple[list[str], int, list[str]]:
    """The core nodes, then up to ``rings`` rings of neighbours while there is room.

    Each ring is ranked by :func:`_ranked`.  A ring that is not the last takes
    at most half of the room left, so that a hub's first ring (hundreds of
    memories that mention it) cannot crowd out the second, which shows how
    those memories connect to each other.  Returns the chosen ids in order,
    how many ring candidates did not fit, and the first ring.
    """
    chosen = list(dict.fromkeys(core))
    chosen_set = set(chosen)
    frontier = [n for n in chosen if index._has(n)]
    left_out = 0
    first: list[str] = []
    for ring in range(rings):
        cands = {m for n in frontier for m in index.neighbours(n)} - chosen_set
        room = max(0, limit - len(chosen))
        if ring < rings - 1:
            room = (room + 1) // 2 if len(cands) > room else room
        taken = _ranked(index, cands, chosen_set)[:room]
        left_out += len(cands) - len(taken)
        chosen.extend(taken)
        chosen_set.update(taken)
        frontier = taken
        if ring == 0:
            first = taken
    return chosen, left_out, first


def _overview(index: GraphIndex, limit: int) -> tuple[list[str], str]:
    """The most recent memories and the entities they mention most, ``limit`` nodes in all."""
    mems = sorted(index.memories, key=lambda m: (index.memories[m]["at"], m), reverse=True)
    if len(mems) + len(index.entities) <= limit:
        return mems + _ranked(index, index.entities, set()), ""
    budget = min(len(mems), max(limit // 2, limit - len(index.entities)))
    kept = mems[:budget]
    kept_set = set(kept)
    linked = [e for e in index.entities if index.neighbours(e) & kept_set]
    ents = _ranked(index, linked, kept_set)[: limit - len(kept)]
    kept += mems[budget : budget + limit - len(kept) - len(ents)]  # room the entities did not use
    n_mem, n_ent = len(kept), len(ents)
    note = (f"showing the {n_mem} most recent of {len(mems)} memories and {n_ent} of the {len(index.entities)} "
            f"entities (names first, then the most mentioned by those memories); "
            f"{len(mems) - n_mem + len(index.entities) - n_ent} nodes left out "
            f"(limit {limit}; use --around to look at one part, --limit to draw more)")
    return kept + ents, note


def _node(index: GraphIndex, node: str, role: str, hit: HitMark | None,
          extra: Mapping[str, dict[str, Any]], *, lines: int = _MEMORY_LINES) -> dict[str, Any]:
    ent = index.entities.get(node)
    if ent is not None:
        degree = index.degree.get(node, 0)
        group = entity_group(ent["label"])
        props = {"id": node, "label": ent["label"], "key": ent["key"], "mentioned by": f"{degree} memories"}
        if ent["aliases"]:
            props["aliases"] = ", ".join(a.lstrip("~") for a in ent["aliases"])
        return {
            "id": node, "kind": "entity", "group": group, "role": role,
            "label": wrap_label(ent["name"], lines=_ENTITY_LINES), "text": ent["name"], "degree": degree,
            "size": 18 if group == "self" else round(8 + 5 * math.log2(1 + degree), 1), "props": props,
            "tooltip": f"{ent['name']}\n{ent['label']} · mentioned by {degree} memor{'y' if degree == 1 else 'ies'}",
        }
    mem = index.memories.get(node) or extra[node]
    status = mem["status"] if mem["status"] in MEMORY_STATUSES else "active"
    props = {k: v for k, v in (
        ("id", node), ("status", status), ("kind", mem.get("kind")), ("at", _iso(mem["at"]) if mem["at"] else None),
        ("session", mem.get("session_id")), ("agent", mem.get("agent_id")),
        ("importance", mem.get("importance")), ("confidence", mem.get("confidence")),
        ("mentions", mem.get("mentions")), ("pinned", mem.get("pinned") or None),
        ("recalled", mem.get("access_count") or None), ("language", mem.get("language")),
        ("valid to", _iso(mem.get("valid_to"))), ("stored", _iso(mem.get("created_at"))),
    ) if v is not None}
    if mem.get("metadata"):
        props["metadata"] = mem["metadata"]
    label = mem["text"] if status == "active" else f"({status}) {mem['text']}"
    tip_head = " · ".join(str(x) for x in (props.get("at"), props.get("kind"), status,
                                            f"session {mem['session_id']}" if mem.get("session_id") else None) if x)
    out = {
        "id": node, "kind": "memory", "group": status, "role": role, "status": status,
        "label": wrap_label(label, lines=lines), "text": mem["text"], "props": props, "tooltip": f"{mem['text']}\n{tip_head}",
    }
    if hit is not None:
        out.update(rank=hit.rank, score=round(hit.score, 4), via=hit.via,
                   tooltip=f"#{hit.rank} · score {hit.score:.3f} · via {hit.via}\n" + out["tooltip"])
        out["label"] = f"#{hit.rank} · {hit.score:.2f} · {hit.via}\n" + out["label"]
    return out


def _edge(e: _Edge, ranks: Sequence[int]) -> dict[str, Any]:
    preds = sorted(e.predicates, key=lambda p: (p == _CO_MENTION, e.predicates.index(p)))
    label = ", ".join(p for p in preds if p != _CO_MENTION) if e.kind == "RELATED" else ""
    if ranks and e.kind != "RELATED":
        label = e.kind  # a path says which way activation went: name the edge kind on it
    out: dict[str, Any] = {
        "id": f"{e.kind}:{e.src}>{e.dst}", "from": e.src, "to": e.dst, "kind": e.kind, "label": label,
        "weight": round(e.weight, 4), "on_path": bool(ranks), "paths": sorted(set(ranks)),
        "tooltip": e.kind + (f" ({', '.join(preds)})" if preds else "") + f" · weight {e.weight:.2f}",
    }
    if e.kind == "RELATED":
        out["predicates"] = preds
        out["co_mention_only"] = preds == [_CO_MENTION]
    if e.evidence:
        out["evidence"] = list(e.evidence)
    return out
