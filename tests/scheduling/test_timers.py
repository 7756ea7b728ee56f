"""Fine timers: sub-millisecond batch delays run on the loop, in order, unless cancelled.

How precise they are is a measurement (benchmarks/README.md), not a test.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from naiad.scheduling import timers

pytestmark = pytest.mark.unit


async def test_fine_timers_run_on_the_loop_in_deadline_order() -> None:
    loop = asyncio.get_running_loop()
    loop_thread = threading.get_ident()
    # Set in another order than they are due.  Each deadline is reckoned when its timer
    # is set, so a test process paused between two of them (a busy machine) could make
    # them due in another order: such a try proves nothing and is made again.  Set
    # within 0.5 ms, the deadlines are at least 0.8 ms apart and their order is fixed.
    for _ in range(50):
        ran: list[tuple[str, bool]] = []
        done = asyncio.Event()

        def note(name: str, ran: list[tuple[str, bool]] = ran, done: asyncio.Event = done) -> None:
            ran.append((name, threading.get_ident() == loop_thread))
            if len(ran) == 3:
                done.set()

        began = time.monotonic()
        for name, delay in (("third", 0.003), ("first", 0.0002), ("second", 0.0015)):
            timers.call_later(loop, delay, lambda name=name: note(name))
        promptly = time.monotonic() - began < 0.0005
        await asyncio.wait_for(done.wait(), 10)
        if promptly:
            assert ran == [("first", True), ("second", True), ("third", True)]
            return
    pytest.fail("the three timers were never set within 0.5 ms of each other")


async def test_a_cancelled_fine_timer_never_runs() -> None:
    loop = asyncio.get_running_loop()
    ran: list[str] = []
    later = asyncio.Event()
    timers.call_later(loop, 0.0005, lambda: ran.append("cancelled")).cancel()
    timers.call_later(loop, 0.002, later.set)  # due after the cancelled one
    await asyncio.wait_for(later.wait(), 10)
    assert ran == []


async def test_long_and_past_delays_stay_on_the_loop() -> None:
    loop = asyncio.get_running_loop()
    assert isinstance(timers.call_later(loop, 1.0, lambda: None), asyncio.TimerHandle)
    fired = asyncio.Event()
    handle = timers.call_later(loop, -1, fired.set)
    assert isinstance(handle, asyncio.Handle)
    await asyncio.wait_for(fired.wait(), 10)


def test_a_timer_of_a_closed_loop_does_not_stop_the_others() -> None:
    gone = asyncio.new_event_loop()
    timers.call_later(gone, 0.0002, lambda: None)
    gone.close()  # before the timer fires: call_soon_threadsafe will refuse it

    async def next_one() -> None:
        fired = asyncio.Event()
        timers.call_later(asyncio.get_running_loop(), 0.001, fired.set)
        await asyncio.wait_for(fired.wait(), 10)

    asyncio.run(next_one())
