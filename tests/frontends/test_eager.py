"""The frontends' task-free coroutine runner (``naiad.frontends.eager``)."""

from __future__ import annotations

import asyncio

import pytest

from naiad.frontends.eager import start_eagerly

pytestmark = pytest.mark.unit


def run(main):
    return asyncio.run(main())


def test_a_coroutine_that_never_waits_finishes_at_once():
    done = []

    async def handler():
        done.append(True)

    async def main():
        assert start_eagerly(asyncio.get_running_loop(), handler()) is None
        assert done == [True]

    run(main)


def test_waits_resume_without_a_task():
    seen = []

    async def handler(first, second):
        seen.append(await first)
        seen.append(await second)
        seen.append(asyncio.current_task())

    async def main():
        loop = asyncio.get_running_loop()
        first, second = loop.create_future(), loop.create_future()
        started = start_eagerly(loop, handler(first, second))
        assert started is not None and started.waited is first
        first.set_result(1)
        await asyncio.sleep(0)
        assert started.waited is second
        second.set_result(2)
        await asyncio.sleep(0)
        assert seen == [1, 2, None]
        assert started.task is None

    run(main)


def test_cancel_while_waiting_raises_in_the_coroutine():
    seen = []

    async def handler(waited):
        try:
            await waited
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def main():
        loop = asyncio.get_running_loop()
        waited = loop.create_future()
        started = start_eagerly(loop, handler(waited))
        started.cancel()
        await asyncio.sleep(0)
        assert waited.cancelled()
        assert seen == ["cancelled"]

    run(main)


def test_cancel_after_the_result_came_still_cancels():
    """As with a task: a cancel between the future's result and the resume is not lost."""
    seen = []

    async def handler(waited):
        try:
            seen.append(await waited)
        except asyncio.CancelledError:
            seen.append("cancelled")

    async def main():
        loop = asyncio.get_running_loop()
        waited = loop.create_future()
        started = start_eagerly(loop, handler(waited))
        waited.set_result("result")
        started.cancel()  # the resume is scheduled, not run yet
        await asyncio.sleep(0)
        assert seen == ["cancelled"]

    run(main)


def test_a_bare_yield_continues_in_a_task():
    seen = []

    async def handler(waited):
        await waited
        await asyncio.sleep(0)
        seen.append(asyncio.current_task())

    async def main():
        loop = asyncio.get_running_loop()
        waited = loop.create_future()
        started = start_eagerly(loop, handler(waited))
        waited.set_result(None)
        await asyncio.sleep(0)
        assert started.task is not None
        await started.task
        assert seen == [started.task]

    run(main)


def test_an_escaping_error_goes_to_the_loop_exception_handler():
    reported = []

    async def handler(waited):
        await waited
        raise RuntimeError("boom")

    async def main():
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _, context: reported.append(context["exception"]))
        waited = loop.create_future()
        start_eagerly(loop, handler(waited))
        waited.set_result(None)
        await asyncio.sleep(0)
        assert [str(e) for e in reported] == ["boom"]

    run(main)
