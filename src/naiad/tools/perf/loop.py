"""The event loop the measurements run on."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
_SETTLE_S = 0.05


def run_on_new_loop(work: Coroutine[Any, Any, T]) -> T:
    """Run ``work`` on a new event loop: uvloop where installed (its callbacks cost the
    measuring loop a fraction of the standard loop's)."""
    from naiad.server import new_event_loop

    loop = new_event_loop()
    try:
        return loop.run_until_complete(work)
    finally:
        # A closed TLS connection still exchanges its close_notify: let it, or the loop
        # closes under a transport that is still open.
        loop.run_until_complete(asyncio.sleep(_SETTLE_S))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
