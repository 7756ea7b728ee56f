"""What every tool prints: stdout that reaches a pipe line by line, and latencies in
the unit a person reads (ms from 1 ms up, µs below)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from naiad.tools.console import duration

pytestmark = pytest.mark.unit

#: Prints a line, then waits for its stdin to close: output must not wait for the exit.
PROGRAM = """
import sys
from naiad.tools.console import line_buffered
line_buffered()
print("first line")
sys.stdin.read()
"""


def test_stdout_reaches_a_pipe_at_each_line_not_at_exit() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # Python's default
    proc = subprocess.Popen([sys.executable, "-c", PROGRAM], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)  # fmt: skip
    lines: list[str] = []
    arrived = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        lines.append(proc.stdout.readline())
        arrived.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        # Block-buffered, the line would come only when the program exits, which it
        # does only once its stdin closes, after this wait.
        assert arrived.wait(60), "the line did not reach the pipe while the program ran"
        assert lines == ["first line\n"]
    finally:
        proc.communicate(timeout=60)
        reader.join(10)


def test_latencies_read_in_ms_from_one_ms_up() -> None:
    assert duration(12.34) == "12.3 µs"
    assert duration(850.4) == "850 µs"
    assert duration(1000) == "1.0 ms"
    assert duration(12_345) == "12.3 ms"
    assert duration(250_000) == "250 ms"
