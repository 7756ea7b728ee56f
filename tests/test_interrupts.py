"""``naiad.interrupts``: a Ctrl-C inside a short step is raised after it."""

from __future__ import annotations

import asyncio
import signal
import threading

import pytest

from naiad import interrupts

pytestmark = pytest.mark.unit


@pytest.fixture
def default_handler():
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("only the main thread gets KeyboardInterrupt")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_press_inside_the_step_is_raised_after_it(default_handler):
    finished = []

    async def step() -> int:
        signal.raise_signal(signal.SIGINT)  # as if pressed while asyncio.run builds its loop
        await asyncio.sleep(0)
        finished.append(True)
        return 1

    with pytest.raises(KeyboardInterrupt):
        with interrupts.held():
            asyncio.run(step())
    assert finished == [True]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_no_press_no_interrupt(default_handler):
    with interrupts.held():
        value = asyncio.run(asyncio.sleep(0, result=3))
    assert value == 3
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
