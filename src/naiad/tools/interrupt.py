"""Ctrl-C in a measuring tool: stop cleanly and keep what was measured.

A tool that measures for minutes owes its user the numbers it already has
when they press Ctrl-C.  Two cases need care.  Work on an event loop: Python's
own SIGINT handler raises KeyboardInterrupt inside whichever loop callback
runs at that moment, and uvloop reports one raised in a transport's callback
as that connection's error and carries on, so the tool would not stop and a
measurement would fail for nothing.  :func:`run_cancellable` instead cancels
the work on SIGINT (its ``finally`` blocks stop the load and close the
connections) and raises KeyboardInterrupt once the loop is done.  Work that
blocks the main thread gets Python's KeyboardInterrupt where it waits, and
each tool catches it around its measuring loop, as for the loop case.

Either way the tool writes its partial results and exits with
:data:`INTERRUPTED`, without a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

#: The exit code of a run stopped by Ctrl-C (128 + SIGINT), as shells report it.
INTERRUPTED = 130
_SETTLE_S = 0.05


def run_cancellable(work: Coroutine[Any, Any, T]) -> T:
    """Run ``work`` on a new event loop; SIGINT cancels it and raises KeyboardInterrupt
    here once its cancellation has run (its ``finally`` blocks included)."""
    from naiad.server import new_event_loop

    previous = signal.getsignal(signal.SIGINT)
    loop = new_event_loop()
    try:
        task = loop.create_task(work)
        interrupted = False

        def interrupt() -> None:
            nonlocal interrupted
            interrupted = True
            task.cancel()

        try:
            loop.add_signal_handler(signal.SIGINT, interrupt)
        except (NotImplementedError, RuntimeError, ValueError):  # Windows, or not the main thread
            pass
        try:
            return loop.run_until_complete(task)
        except asyncio.CancelledError:
            if interrupted:
                raise KeyboardInterrupt from None
            raise
        finally:
            # A closed TLS connection still exchanges its close_notify: let it, or the
            # loop closes under a transport that is still open.
            loop.run_until_complete(asyncio.sleep(_SETTLE_S))
            loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()
        # uvloop leaves its own handler in place after remove_signal_handler, one that
        # swallows SIGINT once its loop is closed: put back the one from before.
        with contextlib.suppress(ValueError, TypeError):  # not the main thread
            signal.signal(signal.SIGINT, previous)


def ignore_in_child() -> None:
    """For a helper process of a tool: a Ctrl-C at the terminal reaches the whole
    process group, and the parent, not the child, decides how to stop (it tells
    its children), so the child neither dies half-way nor prints a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
