"""Starting the runner examples under ``examples/runner`` as their users start them."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

RUNNER_EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "runner"
DIGITS = json.loads((RUNNER_EXAMPLES / "digits.json").read_text())
LABELS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def wait_for(
    url: str, proc: subprocess.Popen, log: Callable[[], str], timeout: float = 180
) -> None:
    """Until ``url`` answers 200; fails with the process's output if it exits first."""
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, f"exited with {proc.returncode}:\n{log()}"
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, f"{url} did not answer:\n{log()}"
        time.sleep(0.2)


def stop(proc: subprocess.Popen, timeout: float = 60) -> int:
    proc.terminate()
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise


@contextlib.contextmanager
def serving(command: list[str], ready: str, log: Path, **popen: Any) -> Iterator[subprocess.Popen]:
    """``command`` running (its output in ``log``) once ``ready`` answers 200; stopped after."""
    with log.open("w") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, **popen)
    try:
        wait_for(ready, proc, log.read_text)
        yield proc
    finally:
        if proc.poll() is None:
            stop(proc)
