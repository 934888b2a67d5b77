"""The retry budget of server stores (graphstore.retries): its schedule, and retries recorded for a trace."""

from __future__ import annotations

import asyncio

from graphstore import retries


def test_waits_double_up_to_a_cap_and_stop_at_the_budget() -> None:
    now = [0.0]
    schedule = retries.RetryBudget(5.0, first_wait=0.1, max_wait=1.0).start(clock=lambda: now[0])
    waits = []
    while (wait := schedule.next_wait()) is not None:
        waits.append(wait)
        now[0] += wait + 0.05  # each attempt takes 50 ms
    assert waits[:5] == [0.1, 0.2, 0.4, 0.8, 1.0] and set(waits[4:]) == {1.0}
    assert now[0] <= 5.0 and schedule.attempts == len(waits) + 1
    assert retries.RetryBudget(0.0).start().next_wait() is None  # a budget of 0 never retries


def test_retries_are_recorded_in_this_context_and_its_worker_threads() -> None:
    event = retries.Retry("bolt://db:7687", 1, "ServiceUnavailable: gone", 0.1)
    retries.note(event)  # nobody records: dropped
    with retries.recording() as outer:
        retries.note(event)
        asyncio.run(asyncio.to_thread(retries.note, event))  # (to_thread copies the context)
        with retries.recording() as inner:
            retries.note(event)
    assert outer == [event, event] and inner == [event]
