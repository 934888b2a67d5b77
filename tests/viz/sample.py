"""A small exported graph, written by hand in the shape of ``Memory.export``, English and Chinese.

It has every edge kind, a superseded and an invalidated memory, a RELATED
pair stated twice (a predicate and a co-mention), vectors that the picture
must drop, and one dangling edge.  The hits are a recall over it: a seed, a
hit reached through an entity, and a Chinese hit reached along its session.
"""

from __future__ import annotations

from typing import Any

from ripple.viz import HitMark

USER = "u1"
DAY = 86_400.0
T0 = 1_777_593_600.0  # 2026-05-01


def _memory(mid: str, text: str, day: int, session: str, **kw: Any) -> dict[str, Any]:
    rec = {"type": "memory", "id": mid, "user_id": USER, "agent_id": None, "session_id": session, "text": text,
           "at": T0 + day * DAY, "created_at": T0 + day * DAY + 5, "kind": "message", "importance": 0.5,
           "status": "active", "access_count": 0, "last_access": None, "metadata": {}, "language": "en",
           "confidence": 1.0, "mentions": 1, "last_seen": None, "valid_to": None, "pinned": False,
           "terms": ["x"], "embedding": "AAAAAA==", "token_vectors": "AAAA"}
    rec.update(kw)
    return rec


def _entity(eid: str, name: str, label: str, *aliases: str, key: str | None = None) -> dict[str, Any]:
    return {"type": "entity", "id": eid, "user_id": USER, "name": name, "key": key or name.lower(), "label": label,
            "aliases": list(aliases), "embedding": None}


def _edge(src: str, kind: str, dst: str, predicate: str = "", weight: float = 1.0, evidence: str | None = None) -> dict[str, Any]:
    return {"type": "edge", "src": src, "edge": kind, "dst": dst, "user_id": USER, "weight": weight,
            "predicate": predicate, "evidence": evidence, "at": T0}


def records() -> list[dict[str, Any]]:
    return [
        _memory("m_1", "Internally we call the Northwind rebrand Project Bluebird.", 0, "s1"),
        _memory("m_2", "Dana Whitfield leads Project Bluebird at Northwind Traders.", 1, "s1"),
        _memory("m_3", "Our budget is 50,000 CNY.", 2, "s1", status="superseded", kind="fact", valid_to=T0 + 3 * DAY),
        _memory("m_4", "The budget is now 60k.", 3, "s2", kind="fact"),
        _memory("m_5", "Let's plan a team offsite in Lisbon.", 4, "s2", status="invalidated"),
        _memory("m_6", "Never mind, drop the Lisbon plan.", 5, "s2", kind="retraction"),
        _memory("m_7", "我叫张伟，在北京的阿里巴巴工作。", 6, "s3", language="zh", kind="personal_info"),
        _memory("m_8", "张伟下周去上海见客户。", 7, "s3", language="zh", metadata={"source": "chat"}),
        _entity("e_nw", "Northwind Traders", "ORG", "~northwind"),
        _entity("e_bb", "Project Bluebird", "PROPN", "~bluebird", "bluebird"),
        _entity("e_dana", "Dana Whitfield", "PERSON", "~dana", "dana"),
        _entity("e_budget", "budget", "NOUN"),
        _entity("e_50k", "50000 CNY", "VALUE"),
        _entity("e_60k", "60k", "VALUE"),
        _entity("e_lisbon", "Lisbon", "GPE"),
        _entity("e_self", "(user)", "SELF", key="@self"),
        _entity("e_zw", "张伟", "PERSON"),
        _entity("e_bj", "北京", "GPE"),
        _entity("e_ali", "阿里巴巴", "ORG"),
        _entity("e_sh", "上海", "GPE"),
        _entity("e_kehu", "客户", "NOUN"),
        *[_edge(m, "MENTIONS", e) for m, e in [
            ("m_1", "e_nw"), ("m_1", "e_bb"), ("m_2", "e_nw"), ("m_2", "e_bb"), ("m_2", "e_dana"),
            ("m_3", "e_budget"), ("m_3", "e_50k"), ("m_4", "e_budget"), ("m_4", "e_60k"), ("m_5", "e_lisbon"),
            ("m_6", "e_lisbon"), ("m_7", "e_zw"), ("m_7", "e_bj"), ("m_7", "e_ali"), ("m_8", "e_zw"), ("m_8", "e_sh"),
            ("m_8", "e_kehu"),
        ]],
        _edge("m_1", "NEXT", "m_2"), _edge("m_2", "NEXT", "m_3"), _edge("m_4", "NEXT", "m_5"),
        _edge("m_5", "NEXT", "m_6"), _edge("m_7", "NEXT", "m_8"),
        _edge("m_4", "SUPERSEDES", "m_3"), _edge("m_6", "RETRACTS", "m_5"),
        _edge("e_dana", "RELATED", "e_bb", "co_mention", 0.5, "m_2"),
        _edge("e_dana", "RELATED", "e_bb", "lead", 1.0, "m_2"),
        _edge("e_self", "RELATED", "e_zw", "name", 1.0, "m_7"),
        _edge("e_self", "RELATED", "e_60k", "budget", 1.0, "m_4"),
        _edge("e_zw", "RELATED", "e_sh", "去", 1.0, "m_8"),
        _edge("e_ali", "RELATED", "e_bj", "co_mention", 0.5, "m_7"),
        _edge("m_1", "MENTIONS", "e_gone"),  # its entity is not in the export
    ]


QUERY = "Bluebird 的负责人是谁？"


def hits() -> list[HitMark]:
    return [
        HitMark(id="m_2", rank=1, score=0.9, via="seed"),
        HitMark(id="m_1", rank=2, score=0.71, via="entity", path=(("m_2", "MENTIONS", "e_bb"), ("e_bb", "MENTIONS", "m_1"))),
        HitMark(id="m_8", rank=3, score=0.42, via="session", path=(("m_7", "NEXT", "m_8"),)),
    ]
