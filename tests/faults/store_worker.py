"""A store client in its own OS process, driven line by line over stdin/stdout (JSON).

The fault and coherence tests start several of these on one embedded store so that
the processes are real (own connection, own vector caches, own GIL) and the test
process decides the interleaving.  Commands (one JSON object a line; one reply each):

* ``{"op": "write", "ids": [...]}``: one batch with a memory and an entity per id
* ``{"op": "delete", "ids": [...]}`` / ``{"op": "forget", "ids": [...]}``
* ``{"op": "visible"}``: the ids that ``nearest_memories`` / ``nearest_entities`` return
* ``{"op": "burst", "prefix": "p", "n": 40, "seed": 1}``: write, search and delete in a
  loop as fast as possible; replies with what was acknowledged
* ``{"op": "quit"}``
"""

from __future__ import annotations

import json
import random
import sys
import zlib

import numpy as np

from graphstore import INVALIDATED, open_store
from graphstore.records import WriteBatch
from graphstore.testing import DIM, make_entity, make_memory

USER = "u1"


def _vector(rid: str) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(rid.encode()))
    v = rng.standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def _batch(ids: list[str]) -> WriteBatch:
    return WriteBatch(memories=[make_memory(i, USER, vec=_vector(i)) for i in ids],
                      entities=[make_entity(f"e_{i}", USER, vec=_vector(i)) for i in ids])


def _visible(store) -> dict[str, list[str]]:  # type: ignore[no-untyped-def]
    q = _vector("query")
    return {"memories": sorted(h[0] for h in store.nearest_memories(USER, q, 100_000)),
            "entities": sorted(h[0] for h in store.nearest_entities(USER, q, 100_000))}


def main(uri: str) -> None:
    store = open_store(uri)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        op = cmd["op"]
        reply: dict[str, object] = {"ok": True}
        if op == "write":
            store.write(_batch(cmd["ids"]))
        elif op == "delete":
            store.delete_memories(cmd["ids"])
        elif op == "forget":
            store.set_status(cmd["ids"], INVALIDATED)
        elif op == "visible":
            reply.update(_visible(store))
        elif op == "burst":
            rng = random.Random(cmd["seed"])
            acked: list[str] = []
            deleted: list[str] = []
            for i in range(cmd["n"]):
                rid = f"{cmd['prefix']}_{i}"
                store.write(_batch([rid]))
                acked.append(rid)
                if rng.random() < 0.2 and len(acked) > len(deleted) + 1:
                    victim = rng.choice([a for a in acked[:-1] if a not in deleted])
                    store.delete_memories([victim])
                    deleted.append(victim)
                _visible(store)  # keep this process's caches loaded, as a busy agent's are
            reply.update(acked=acked, deleted=deleted)
        elif op == "quit":
            print(json.dumps(reply), flush=True)
            break
        print(json.dumps(reply), flush=True)
    store.close()


if __name__ == "__main__":
    main(sys.argv[1])
