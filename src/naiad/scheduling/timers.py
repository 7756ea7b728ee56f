"""Timers finer than the event loop's, for batch delays under a millisecond.

asyncio's selector loop and uvloop wait in whole milliseconds (epoll_wait's
and libuv's timeouts are milliseconds, rounded up), so
``loop.call_later(0.0001, ...)`` fires after about a millisecond: a model
with ``max_queue_delay_microseconds: 100`` would hold a lone request ten
times longer than its config asks, where Triton's batcher waits 100 µs.
Delays under :data:`FINE_BELOW_S` therefore go to one timer thread per
process that sleeps on a condition variable (whose timeout is not rounded to
milliseconds) and hands the callback to its loop with
``call_soon_threadsafe``; longer delays stay on the loop, where a fraction
of a millisecond is noise.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import os
import threading
import time
from collections.abc import Callable
from typing import Protocol

#: Below this, the loop's millisecond rounding would be a large part of the delay.
FINE_BELOW_S = 0.005


class Timer(Protocol):
    def cancel(self) -> None: ...


class _FineTimer:
    """A callback due at ``due`` (monotonic seconds), to run on ``loop``."""

    __slots__ = ("callback", "cancelled", "due", "loop")

    def __init__(
        self, loop: asyncio.AbstractEventLoop, due: float, callback: Callable[[], None]
    ) -> None:
        self.loop = loop
        self.due = due
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def run(self) -> None:
        # Cancelled after the thread handed it over, but before the loop ran it.
        if not self.cancelled:
            self.callback()


class _TimerThread:
    """The process's fine timers, earliest first, on one daemon thread."""

    def __init__(self) -> None:
        self._due: list[tuple[float, int, _FineTimer]] = []
        self._order = itertools.count()
        self._changed = threading.Condition(threading.Lock())
        self._thread: threading.Thread | None = None

    def add(self, timer: _FineTimer) -> None:
        with self._changed:
            heapq.heappush(self._due, (timer.due, next(self._order), timer))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="naiad-timers", daemon=True)
                self._thread.start()
            elif self._due[0][2] is timer:  # earlier than what the thread sleeps towards
                self._changed.notify()

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._due or self._due[0][0] > time.monotonic():
                    wait = self._due[0][0] - time.monotonic() if self._due else None
                    self._changed.wait(wait)
                timer = heapq.heappop(self._due)[2]
            if timer.cancelled:
                continue
            try:
                timer.loop.call_soon_threadsafe(timer.run)
            except RuntimeError:  # its loop closed meanwhile: nobody waits for it
                pass

    def forget(self) -> None:
        """In a forked child: the thread did not come along, nor did its timers."""
        self.__init__()  # type: ignore[misc]


_THREAD = _TimerThread()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_THREAD.forget)


def call_later(
    loop: asyncio.AbstractEventLoop, delay: float, callback: Callable[[], None]
) -> Timer:
    """``loop.call_later(delay, callback)``, to the microsecond where it matters."""
    if delay >= FINE_BELOW_S:
        return loop.call_later(delay, callback)
    if delay <= 0:
        return loop.call_soon(callback)
    timer = _FineTimer(loop, time.monotonic() + delay, callback)
    _THREAD.add(timer)
    return timer
