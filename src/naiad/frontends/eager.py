"""Start a request's coroutine eagerly: Python 3.12's eager task start, for every version.

A request to a small model usually completes without waiting at all (the
model runs inline on the loop), so it should cost no task and no extra loop
iteration.  Both frontends start their per-request coroutines this way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any


class Started:
    """A coroutine that waited: cancel it whether or not it has its task yet."""

    __slots__ = ("waited", "task")

    def __init__(self, waited: asyncio.Future[Any] | None) -> None:
        self.waited = waited
        self.task: asyncio.Task[None] | None = None

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()
        elif self.waited is not None:
            # What Task.cancel does while its coroutine waits: cancel what it awaits.
            self.waited.cancel()


def start_eagerly(
    loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, None]
) -> Started | None:
    """Run ``coro`` until it first waits, and only then give it a task.

    Returns None when it finished without waiting, else a handle to cancel it.
    """
    try:
        waited = coro.send(None)
    except StopIteration:
        return None
    if not asyncio.isfuture(waited):  # a bare yield (asyncio.sleep(0)): continue in a task
        started = Started(None)
        started.task = loop.create_task(coro)
        return started
    started = Started(waited)
    # Resume once the awaited future is done, as a Task would.
    waited._asyncio_future_blocking = False  # type: ignore[attr-defined]

    def resume(_: object) -> None:
        started.task = loop.create_task(coro)

    waited.add_done_callback(resume)
    return started
