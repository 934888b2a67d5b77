"""``ripple serve`` killed with SIGKILL in the middle of requests: clients get an error, nothing acknowledged is lost.

Three clients post batches of 10 memories (``POST /v1/users/u1/memories/batch``) to a real server
process (hashed vectors, so that it starts without the sentence model); once a few batches are
acknowledged (HTTP 201) the server is killed.  Every request then in flight must end in a
transport error, not hang; every acknowledged batch is in the store, whole; no batch is there in
part; the store's derived indexes are consistent (``check()``).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from graphstore.sqlite import SQLiteStore
from ripple.server.process import child_env, ripple_process
from tests.faults.light import batch_items


def test_sigkill_mid_request_loses_no_acknowledged_batch(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    acked: list[int] = []
    failed: list[tuple[int, str]] = []
    refused: list[tuple[int, int, str]] = []  # (an assert in a client thread would not fail the test)
    stop = threading.Event()

    def client(k: int, url: str) -> None:
        with httpx.Client(timeout=60) as http:
            for n in range(1000):
                if stop.is_set():
                    return
                batch = 100 * k + n
                items = [{key: v for key, v in item.items() if key != "user_id"} for item in batch_items("u1", batch, 10)]
                try:
                    r = http.post(f"{url}/v1/users/u1/memories/batch", json={"items": items})
                except httpx.TransportError as exc:
                    failed.append((batch, type(exc).__name__))
                    return
                if r.status_code != 201:
                    refused.append((batch, r.status_code, r.text[:300]))
                    return
                acked.append(batch)

    env = child_env(RIPPLE_EMBEDDER="hash-64")
    with ripple_process(store, ["serve"], log=tmp_path / "server.log", env=env) as server:
        threads = [threading.Thread(target=client, args=(k, server.url)) for k in range(1, 4)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 120
        while len(acked) < 6:
            assert time.monotonic() < deadline, f"only {len(acked)} batches acknowledged: {server.log_text()[-2000:]}"
            time.sleep(0.01)
        server.proc.kill()  # SIGKILL: no graceful shutdown
        server.proc.wait()
        stop.set()
        for t in threads:
            t.join(timeout=90)
        assert not any(t.is_alive() for t in threads), "a client hung after the server died"

    assert not refused, f"the server refused a batch before it died: {refused[:3]}"
    assert failed, "no request was in flight when the server died"
    s = SQLiteStore(store)
    try:
        per_batch: Counter[Any] = Counter(json.loads(m.metadata_json)["batch"] for m in s.list_memories("u1"))
        assert all(per_batch[b] == 10 for b in acked), f"an acknowledged batch was lost: {per_batch}"
        assert all(n == 10 for n in per_batch.values()), f"a partial batch survived: {per_batch}"
        assert set(per_batch) <= set(acked) | {b for b, _ in failed}
        assert [f.line() for f in s.check() if f.level != "ok"] == []
    finally:
        s.close()
