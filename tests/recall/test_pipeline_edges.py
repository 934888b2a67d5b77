"""Hub damping needs each entity's degree on the hop that *leaves* the entity."""

from __future__ import annotations

from graphstore.records import EDGE_MENTIONS, EDGE_NEXT, Neighbor
from ripple.recall.channels import edges_from_rows as _edges


def test_entity_degree_carries_from_the_hop_that_entered_it() -> None:
    known: dict[str, int] = {}
    hop1 = [Neighbor("m_1", "e_hub", EDGE_MENTIONS, 1.0, 40, "", "PERSON"),
            Neighbor("m_1", "e_rare", EDGE_MENTIONS, 1.0, 2, "", "PROPN"),
            Neighbor("m_1", "m_2", EDGE_NEXT, 1.0, 1, "", "")]
    assert {e.target: e.source_degree for e in _edges(hop1, known)} == {"e_hub": 1, "e_rare": 1, "m_2": 1}
    hop2 = [Neighbor("e_hub", "m_3", EDGE_MENTIONS, 1.0, 1, "", ""),
            Neighbor("e_rare", "m_4", EDGE_MENTIONS, 1.0, 1, "", "")]
    assert {e.target: e.source_degree for e in _edges(hop2, known)} == {"m_3": 40, "m_4": 2}


def test_seed_entity_degree_is_counted_from_its_rows() -> None:
    rows = [Neighbor("e_seed", f"m_{i}", EDGE_MENTIONS, 1.0, 1, "", "") for i in range(3)]
    assert {e.source_degree for e in _edges(rows, {})} == {3}
