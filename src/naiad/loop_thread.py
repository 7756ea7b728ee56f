"""An event loop on a thread of its own, which a caller may borrow while it idles.

The in-process API (``naiad.Server`` used without ``async with``, and
``naiad.Runner``) keeps the core on such a loop, so that it runs between
calls (timers, stub processes, polling) and serves every thread of the
program.  Handing each request to that thread and back costs two thread
wake-ups, 50 to 90 microseconds on a 2-vCPU VM: ten times what a small ONNX
model takes to run.

So a request may run on the caller's own thread instead.  The loop holds
its lock whenever it runs callbacks and lets go only while it waits in
``select``; a caller that gets the lock owns the loop for that moment and
runs the request's coroutine itself, and the loop's ready callbacks for a
few turns, until it completes or has to wait for a timer or I/O (a batch
delay, a stub process working); a dynamic batch formed at the end of a
turn and run inline thus completes on the caller's thread too.  A request to a model
that runs inline completes with no hand-off at all; one that waits goes on
in the loop's thread, and the caller waits for it as before.  A caller that
finds the loop busy hands its request over the usual way.

A request that completes on the caller's thread needs nothing to wait on:
its result goes into an :class:`_Outcome`, and a ``concurrent.futures``
Future (a condition, and a lock taken at each of its steps) is made only for
one that goes on in the loop's thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import selectors
import threading
import weakref
from collections.abc import Coroutine
from typing import Any, Generic, TypeVar

from naiad import interrupts
from naiad.core.errors import Unavailable
from naiad.frontends.eager import Started, start_eagerly

T = TypeVar("T")


class _Selector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """The loop's selector: it gives the loop's lock up while the loop waits."""

    def __init__(self, lock: threading.Lock) -> None:
        super().__init__()
        self._lock = lock

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        self._lock.release()
        try:
            return super().select(timeout)
        finally:
            self._lock.acquire()


class LoopThread:
    """An asyncio loop running on a daemon thread until :meth:`close`."""

    def __init__(self, name: str) -> None:
        self._lock = threading.Lock()
        self.loop = asyncio.SelectorEventLoop(_Selector(self._lock))
        #: Futures of calls still running on the loop (see close).
        self._pending: weakref.WeakSet[concurrent.futures.Future[Any]] = weakref.WeakSet()
        self._closing = False  # set by close() before it answers what is pending
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self._lock.acquire()
        try:
            asyncio.set_event_loop(self.loop)
            self.loop.run_forever()
        finally:
            self._lock.release()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def on_loop_thread(self) -> bool:
        return threading.get_ident() == self._thread.ident

    # -- handing coroutines over -------------------------------------------------

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result (never from the loop itself)."""
        return self._submit(coro).result(timeout)

    async def acall(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and await its result from another loop."""
        return await asyncio.wrap_future(self._submit(coro))

    def _submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop; its future is known to close() before it runs,
        so a caller never sees the cancellation close() gives the loop's tasks."""
        self._check_caller(coro)
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._waiting(future)
        settle = _settle(coro, _Outcome(future))
        try:
            task = asyncio.run_coroutine_threadsafe(settle, self.loop)
        except RuntimeError:  # the loop is closed
            settle.close()
            coro.close()
            raise Unavailable(_STOPPED) from None
        future.add_done_callback(lambda f: task.cancel() if f.cancelled() else None)
        return future

    def _waiting(self, future: concurrent.futures.Future[Any]) -> None:
        """Answer ``future`` with an error if the loop stops before it does (see close).

        Added before the flag is read, as close() sets the flag before it reads
        the set: a future registered while close() runs is answered by one or
        the other, never left to the cancellation close() gives what runs.
        """
        self._pending.add(future)
        if self._closing or not self.running:
            _stopped(future)

    def _check_caller(self, coro: Coroutine[Any, Any, Any]) -> None:
        if self.on_loop_thread():
            coro.close()
            raise RuntimeError("a call from the loop's own thread would wait for itself")

    # -- borrowing the loop ---------------------------------------------------------

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """:meth:`call`, run on this thread while the loop idles.

        Only for coroutines that need no task of their own (no
        ``asyncio.current_task()``, no ``asyncio.timeout``): the core's
        inference path, which the frontends run the same way.
        """
        outcome = self._borrow(coro)
        if outcome is None:
            return self.call(coro)
        return outcome.result()

    async def arun(self, coro: Coroutine[Any, Any, T]) -> T:
        """:meth:`acall`, run on this thread while the loop idles (see :meth:`run`)."""
        outcome = self._borrow(coro)
        if outcome is None:
            return await self.acall(coro)
        if outcome.future is None:
            return outcome.result()
        return await asyncio.wrap_future(outcome.future)

    def _borrow(self, coro: Coroutine[Any, Any, T]) -> _Outcome[T] | None:
        """Start ``coro`` here if the loop is idle; None when it is busy (or closed)."""
        self._check_caller(coro)
        # Before the lock, which a Ctrl-C must not keep taken; the loop's code run on
        # the main thread must not stop half-way (naiad.interrupts).
        holding = interrupts.hold()
        try:
            return self._borrowed(coro)
        finally:
            if holding:
                interrupts.release()

    def _borrowed(self, coro: Coroutine[Any, Any, T]) -> _Outcome[T] | None:
        loop = self.loop
        if loop.get_debug() or not self._lock.acquire(blocking=False):
            return None  # debug mode checks that only the loop's thread touches it
        try:
            if loop.is_closed() or not self.running:
                return None
            outcome: _Outcome[T] = _Outcome()
            # What the loop's select() was told to wait for (see the wake-up below).
            ready = len(loop._ready)  # type: ignore[attr-defined]
            scheduled = loop._scheduled  # type: ignore[attr-defined]
            first = scheduled[0] if scheduled else None
            outer = asyncio._get_running_loop()
            asyncio._set_running_loop(loop)
            try:
                started = start_eagerly(loop, _settle(coro, outcome))
                if started is not None:
                    _run_turns(loop, outcome)
                if not outcome.done:
                    # It goes on in the loop's thread, which cannot run it before this
                    # thread lets the lock go: the future is in place before it settles.
                    assert started is not None
                    future = outcome.future = concurrent.futures.Future()
                    future.add_done_callback(lambda f: _cancel_if_cancelled(f, loop, started))
                    # Registered only now, and only if it waits: it has no task for
                    # close() to cancel, and close() answers it after the loop stops.
                    self._waiting(future)
            finally:
                asyncio._set_running_loop(outer)
            # Callbacks or an earlier timer added here: wake the loop to run them.
            if len(loop._ready) != ready or (scheduled[0] if scheduled else None) is not first:  # type: ignore[attr-defined]
                loop.call_soon_threadsafe(_nothing)
            return outcome
        finally:
            self._lock.release()

    # -- stopping ---------------------------------------------------------------------

    def close(self) -> None:
        """Stop the loop, wait for its thread and close it.  Work still pending is
        dropped, and whoever waits for it gets an UNAVAILABLE error, not a hang."""
        if self.loop.is_closed():
            return
        self._closing = True
        for future in list(self._pending):
            _stopped(future)
        if self.running and not self.on_loop_thread():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(_cancel_tasks(), self.loop).result(10)
        if self.running:
            self.loop.call_soon_threadsafe(self.loop.stop)
            if not self.on_loop_thread():
                self._thread.join()
        if not self.running:
            self.loop.close()
            for future in list(self._pending):
                _stopped(future)


async def _cancel_tasks() -> None:
    """Cancel every other task of the loop and let them end (as ``asyncio.run`` does)."""
    tasks = asyncio.all_tasks() - {asyncio.current_task()}
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=5)
    await asyncio.get_running_loop().shutdown_asyncgens()


class _Outcome(Generic[T]):
    """A coroutine's result or error, and the future of a caller on another thread.

    ``future`` is None while only the thread that ran the coroutine reads it.
    """

    __slots__ = ("done", "value", "error", "future")

    def __init__(self, future: concurrent.futures.Future[T] | None = None) -> None:
        self.done = False
        self.value: Any = None
        self.error: BaseException | None = None
        self.future = future

    def settle(self, value: Any, error: BaseException | None) -> None:
        self.done = True
        self.value = value
        self.error = error
        future = self.future
        if future is None:
            return
        # Its caller may have cancelled it from its own thread.
        with contextlib.suppress(concurrent.futures.InvalidStateError):
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(value)

    def result(self) -> T:
        """What the coroutine returned (raised), waiting for it if it went on elsewhere."""
        if self.future is not None:
            return self.future.result()
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[no-any-return]


async def _settle(coro: Coroutine[Any, Any, T], outcome: _Outcome[T]) -> None:
    """Await ``coro`` into ``outcome``."""
    try:
        result = await coro
    except BaseException as exc:  # the caller re-raises it, whatever it is
        outcome.settle(None, exc)
    else:
        outcome.settle(result, None)


#: Loop turns a borrowing caller runs itself before it hands its request to the loop.
_TURNS = 4


def _run_turns(loop: asyncio.AbstractEventLoop, outcome: _Outcome[Any]) -> None:
    """Run the loop's ready callbacks on this thread, turn by turn, as the loop would.

    A request that waits only for callbacks (a dynamic batch formed at the
    end of the turn, then run inline and answered) completes here, without
    the two thread wake-ups of a hand-off.  Timers and I/O stay the loop's:
    a request that waits for them is handed over when the turns run out.
    """
    ready = loop._ready  # type: ignore[attr-defined]
    for _ in range(_TURNS):
        if outcome.done or not ready:
            return
        for _ in range(len(ready)):  # one turn: what is ready now, not what it adds
            handle = ready.popleft()
            if not handle._cancelled:
                handle._run()


def _cancel_if_cancelled(
    future: concurrent.futures.Future[Any], loop: asyncio.AbstractEventLoop, started: Started
) -> None:
    if future.cancelled() and not loop.is_closed():
        loop.call_soon_threadsafe(started.cancel)


def _nothing() -> None:
    pass


_STOPPED = "the event loop of this server or runner has stopped (it was closed)"


def _stopped(future: concurrent.futures.Future[Any]) -> None:
    with contextlib.suppress(concurrent.futures.InvalidStateError):
        future.set_exception(Unavailable(_STOPPED))
