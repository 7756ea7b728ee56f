"""A worker watches its supervisor: one killed without forwarding a signal must not
leave workers holding the ports on their own.

(How the supervisor learns that a worker serves is :mod:`naiad.ready`, the same
handshake as every other parent of a ``naiad serve``.)
"""

from __future__ import annotations

import asyncio
import logging
import os

log = logging.getLogger("naiad")


async def exit_with_supervisor(parent: int, stop: asyncio.Event) -> None:
    """A worker whose supervisor died (killed, never to forward a SIGTERM) drains and
    exits rather than hold the ports alone."""
    while os.getppid() == parent:
        await asyncio.sleep(1)
    log.warning("the supervisor (pid %d) is gone: this worker stops", parent)
    stop.set()
