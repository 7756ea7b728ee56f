"""Run a request's coroutine without a task while it only awaits futures.

A request to a small model usually completes without waiting at all (the
model runs inline on the loop), so it should cost no task and no extra loop
iteration: the coroutine starts at once, as with Python 3.12's eager tasks.
When it waits (a batch in a stub process, a dynamic batch forming), the
future's done callback resumes it directly; a task would cost its creation,
its registration and one more loop iteration per wait.  Should the coroutine
yield anything but a future (``asyncio.sleep(0)``), it continues in a real
task.  ``asyncio.current_task()`` is None while it runs without one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any


class Started:
    """A coroutine that waited: cancel it whether or not it runs in a task."""

    __slots__ = ("coro", "loop", "waited", "task", "cancelling")

    def __init__(self, coro: Coroutine[Any, Any, None], loop: asyncio.AbstractEventLoop) -> None:
        self.coro = coro
        self.loop = loop
        self.waited: asyncio.Future[Any] | None = None
        self.task: asyncio.Task[None] | None = None
        self.cancelling = False

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()
            return
        # What Task.cancel does: cancel what the coroutine awaits, and should
        # that be done already, raise CancelledError in it when it resumes.
        self.cancelling = True
        if self.waited is not None:
            self.waited.cancel()

    def resume(self, _: object = None) -> None:
        """Continue the coroutine (the awaited future is done) until it waits again or ends."""
        self.waited = None
        try:
            if self.cancelling:
                self.cancelling = False
                waited = self.coro.throw(asyncio.CancelledError())
            else:
                waited = self.coro.send(None)
        except (StopIteration, asyncio.CancelledError):
            return
        except Exception as exc:  # what a task would log when nobody reads its result
            self.loop.call_exception_handler(
                {"message": "request coroutine failed", "exception": exc}
            )
            return
        self._wait_on(waited)

    def _wait_on(self, waited: Any) -> None:
        if asyncio.isfuture(waited):
            waited._asyncio_future_blocking = False  # what a task does before waiting on it
            self.waited = waited
            waited.add_done_callback(self.resume)
        else:  # a bare yield: a task knows how to continue from it
            self.task = self.loop.create_task(self.coro)  # type: ignore[arg-type]


def start_eagerly(
    loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, None]
) -> Started | None:
    """Run ``coro`` until it first waits; then resume it whenever what it awaits is done.

    Returns None when it finished without waiting, else a handle to cancel it.
    """
    try:
        waited = coro.send(None)
    except StopIteration:
        return None
    started = Started(coro, loop)
    started._wait_on(waited)
    return started
