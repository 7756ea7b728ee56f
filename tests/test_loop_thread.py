"""The in-process API's loop thread, and callers that borrow it while it idles."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Iterator

import pytest

import naiad
from naiad.loop_thread import LoopThread

pytestmark = pytest.mark.unit


@pytest.fixture
def lt() -> Iterator[LoopThread]:
    thread = LoopThread("test-loop")
    yield thread
    thread.close()


def _loop_ident(lt: LoopThread) -> int:
    async def ident() -> int:
        return threading.get_ident()

    return lt.call(ident())


async def _where(lt: LoopThread) -> int:
    assert asyncio.get_running_loop() is lt.loop
    return threading.get_ident()


def test_a_coroutine_that_does_not_wait_runs_on_the_calling_thread(lt):
    assert lt.run(_where(lt)) == threading.get_ident()


def test_a_coroutine_that_waits_finishes_on_the_loop_thread(lt):
    async def waits() -> tuple[int, int]:
        before = threading.get_ident()
        await asyncio.sleep(0.01)  # a timer the idle loop did not know of
        return before, threading.get_ident()

    before, after = lt.run(waits())
    assert before == threading.get_ident()
    assert after == _loop_ident(lt)


def test_errors_reach_the_caller(lt):
    async def fails() -> None:
        raise ValueError("broken")

    with pytest.raises(ValueError, match="broken"):
        lt.run(fails())


def test_a_busy_loop_gets_the_coroutine_handed_over(lt):
    started, release = threading.Event(), threading.Event()

    def busy() -> None:  # a callback that holds the loop until the test lets it go
        started.set()
        release.wait(30)

    lt.loop.call_soon_threadsafe(busy)
    assert started.wait(5)
    where: list[int] = []
    caller = threading.Thread(target=lambda: where.append(lt.run(_where(lt))))
    caller.start()
    # The loop stays busy until run() has handed the coroutine over (a pending call),
    # however late this thread gets there: no sleep decides what is tested.
    deadline = time.monotonic() + 30
    while not lt._pending and time.monotonic() < deadline:
        time.sleep(0.001)
    handed_over = bool(lt._pending)
    release.set()
    caller.join(30)
    assert handed_over
    assert where == [_loop_ident(lt)]


def test_callbacks_scheduled_by_a_borrower_run_on_the_loop(lt):
    done = threading.Event()

    async def schedules() -> None:
        asyncio.get_running_loop().call_soon(done.set)

    lt.run(schedules())
    assert done.wait(5)


def test_a_coroutine_that_waits_only_for_callbacks_completes_on_the_calling_thread(lt):
    """As a request does whose dynamic batch forms at the end of the loop's turn."""

    async def waits_for_a_callback() -> tuple[int, int]:
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[int] = loop.create_future()
        loop.call_soon(lambda: answer.set_result(threading.get_ident()))
        return await answer, threading.get_ident()

    answered_on, finished_on = lt.run(waits_for_a_callback())
    assert answered_on == finished_on == threading.get_ident()


def test_a_longer_chain_of_callbacks_is_handed_to_the_loop(lt):
    """The caller runs a few turns, not the loop's work for ever."""

    async def hops(n: int) -> int:
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[int] = loop.create_future()

        def hop(left: int) -> None:
            if left:
                loop.call_soon(hop, left - 1)
            else:
                answer.set_result(threading.get_ident())

        loop.call_soon(hop, n)
        return await answer

    assert lt.run(hops(20)) == _loop_ident(lt)


def test_ctrl_c_in_the_borrowed_turns_waits_until_the_loop_is_whole(lt):
    """The loop's code run on the main thread must not stop half-way: a press is
    raised once the borrowed turns are over, and the loop serves on."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("only the main thread gets KeyboardInterrupt")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    ran: list[str] = []

    async def pressed_in_a_callback() -> int:
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[int] = loop.create_future()

        def press() -> None:
            signal.raise_signal(signal.SIGINT)  # Ctrl-C, while a loop callback runs
            ran.append("the rest of the callback")
            answer.set_result(7)

        loop.call_soon(press)
        return await answer

    try:
        with pytest.raises(KeyboardInterrupt):
            lt.run(pressed_in_a_callback())
        assert ran == ["the rest of the callback"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert lt.run(_where(lt)) == threading.get_ident()
    finally:
        signal.signal(signal.SIGINT, previous)


async def test_arun_from_another_loop(lt):
    assert await lt.arun(_where(lt)) == threading.get_ident()

    async def waits() -> int:
        await asyncio.sleep(0.01)
        return 7

    assert await lt.arun(waits()) == 7


async def test_cancelling_the_awaiting_task_cancels_the_coroutine(lt):
    reached, cancelled = threading.Event(), threading.Event()

    async def forever() -> None:
        reached.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    task = asyncio.ensure_future(lt.arun(forever()))
    await asyncio.to_thread(reached.wait, 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(cancelled.wait, 5)


def test_a_call_from_the_loop_thread_is_refused(lt):
    async def nested() -> None:
        lt.run(_where(lt))

    with pytest.raises(RuntimeError, match="own thread"):
        lt.call(nested())


def test_close_stops_the_thread(lt):
    lt.close()
    assert not lt.running
    assert lt.loop.is_closed()


def _close_while_a_call_waits(
    lt: LoopThread, reached: threading.Event | None = None
) -> BaseException:
    """Close ``lt`` while another thread waits in ``call``; what that thread got."""
    reached = reached or threading.Event()

    async def forever() -> None:
        reached.set()
        await asyncio.Event().wait()

    outcome: list[BaseException] = []

    def waiter() -> None:
        try:
            lt.call(forever())
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=waiter)
    thread.start()
    assert reached.wait(5)
    lt.close()
    thread.join(5)
    assert not thread.is_alive()
    return outcome[0]


def test_closing_answers_a_call_it_did_not_know_of_yet(
    lt: LoopThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """close() answers the futures it knows of, then cancels what runs: a call's
    future is known before its coroutine runs, so its caller gets UNAVAILABLE,
    never the cancellation."""
    reached = threading.Event()
    known_before_running: list[bool] = []
    waiting = LoopThread._waiting

    def spy(self: LoopThread, future: object) -> None:
        # Were the coroutine already scheduled, the loop would start it within this
        # wait; it may not be, so the wait runs out (a slow machine can only make
        # the test pass where it should fail, never the reverse).
        known_before_running.append(not reached.wait(0.2))
        waiting(self, future)  # type: ignore[arg-type]

    monkeypatch.setattr(LoopThread, "_waiting", spy)
    error = _close_while_a_call_waits(lt, reached)
    assert known_before_running == [True]
    assert isinstance(error, naiad.NaiadError) and "has stopped" in str(error)


def test_closing_answers_whoever_still_waits(lt):
    error = _close_while_a_call_waits(lt)
    assert isinstance(error, naiad.NaiadError) and "has stopped" in str(error)
    with pytest.raises(naiad.NaiadError, match="has stopped"):
        lt.call(_where(lt))
