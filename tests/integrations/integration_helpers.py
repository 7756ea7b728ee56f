"""Starting the runner examples under ``examples/runner`` as their users start them."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

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
