"""Waiting in a test for something the server does on its own threads."""

from __future__ import annotations

import time
from collections.abc import Callable


def until(condition: Callable[[], object], what: str, within: float = 30) -> None:
    """Poll ``condition()`` until true (a loaded machine gets there late, never early)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.005)
    raise AssertionError(f"not {what} within {within} s")
