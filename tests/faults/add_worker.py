"""A writer in its own process: ``add_many`` batches in a loop, printing each batch number once it returned.

``python -m tests.faults.add_worker STORE FIRST SIZE [--delay S]``: batches FIRST, FIRST+1, ... of SIZE
memories each (see :func:`tests.faults.light.batch_items`), until killed.  A printed number is an
acknowledged batch: ``add_many`` returned for it.
"""

from __future__ import annotations

import itertools
import sys

from tests.faults.light import batch_items, light_memory


def main() -> None:
    store, first, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    if store.startswith(("bolt://", "neo4j://")):
        from ripple.settings import RippleSettings

        mem = light_memory(None, store=store, settings=RippleSettings(neo4j_password=sys.argv[4],
                                                                      neo4j_retry_seconds=float(sys.argv[5])))
    else:
        mem = light_memory(store)
    mem.add_many(batch_items("warmup", 0, 2))  # (imports and first-use costs before the first timed batch)
    print("ready", flush=True)
    for batch in itertools.count(first):
        try:
            mem.add_many(batch_items("u1", batch, size))
        except Exception as exc:  # noqa: BLE001 - reported to the test, which decides
            print(f"error {batch} {type(exc).__name__}: {' '.join(str(exc).split())}", flush=True)
            continue
        print(f"ok {batch}", flush=True)


if __name__ == "__main__":
    main()
