"""Shared memory across agents: scopes are hard partitions, roles gate writes (property-tested on both stores)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ripple import PermissionDenied

pytestmark = pytest.mark.slow

SCOPES = ["user", "team:a", "team:b"]
ROLES = [None, "reader", "writer", "curator"]
WORDS = ["zebra", "quartz", "mango", "violet", "harbor", "falcon", "cobalt", "tundra", "saffron", "lagoon"]
_run = itertools.count()

grants_st = st.fixed_dictionaries({s: st.sampled_from(ROLES) for s in SCOPES})


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(agents=st.lists(grants_st, min_size=2, max_size=3),
       writes=st.lists(st.tuples(st.integers(0, 2), st.sampled_from(SCOPES), st.sampled_from(WORDS)),
                       min_size=1, max_size=6))
def test_no_memory_appears_in_a_scope_it_was_not_granted(store_mem: Any, agents: list[dict[str, Any]],
                                                         writes: list[tuple[int, str, str]]) -> None:
    n = next(_run)
    user = f"u{n}"
    rename = {"user": "user", "team:a": f"team:a{n}", "team:b": f"team:b{n}"}
    sessions = []
    for i, grants in enumerate(agents):
        access = {rename[s]: r for s, r in grants.items() if r is not None}
        sessions.append(store_mem.session(user, f"s{i}", agent_id=f"agent{i}", access=access))
    written: dict[str, str] = {}  # marker -> scope name (unrenamed)
    for who, scope, word in writes:
        if who >= len(sessions):
            continue
        s, grants = sessions[who], agents[who]
        marker = f"{word}{n}x{len(written)}"
        if grants[scope] in ("writer", "curator"):
            # each in its own room: one code word is not an update of another (the write path supersedes those)
            s.remember(f"The code word of room {len(written)} is {marker}.", scope=rename[scope])
            written[marker] = scope
        else:
            with pytest.raises(PermissionDenied):
                s.remember(f"The code word of room {len(written)} is {marker}.", scope=rename[scope])
    for s, grants in zip(sessions, agents):
        readable = {rename[x] for x in SCOPES if grants[x] is not None} | {"session"}
        for marker, scope in written.items():
            hits = s.recall(f"What is the code word {marker}?", k=20)
            assert all(h.scope in readable for h in hits)
            found = any(marker in h.hit.memory.text for h in hits)
            if grants[scope] is None:
                assert not found, f"{marker} written to {scope} leaked to an agent without a role there"
            else:
                assert found, f"{marker} in {scope} is missing for an agent that may read it"
            for h in hits:  # every memory a hit shows was written with its writer recorded
                assert h.hit.memory.metadata.get("written_by", "") is not None
