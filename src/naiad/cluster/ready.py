"""The ready-pipe handshake between the ``--workers`` supervisor and a worker.

The supervisor hands each worker the write end of a pipe (its descriptor
number in ``READY_FD``) and waits for a line on it; a worker writes once it
serves, so the supervisor knows when every worker has loaded its models.
A worker also watches its parent: a supervisor killed without forwarding a
signal must not leave workers holding the ports on their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os

log = logging.getLogger("naiad")

#: A worker tells the supervisor it serves by writing to this inherited descriptor.
READY_FD = "NAIAD_WORKER_READY_FD"


def tell_supervisor() -> bool:
    """Tell the ``--workers`` supervisor this worker serves (it waits for every one);
    whether there is one."""
    fd = os.environ.pop(READY_FD, None)
    if fd is None:
        return False
    with contextlib.suppress(OSError):
        os.write(int(fd), b"ready\n")
        os.close(int(fd))
    return True


async def exit_with_supervisor(parent: int, stop: asyncio.Event) -> None:
    """A worker whose supervisor died (killed, never to forward a SIGTERM) drains and
    exits rather than hold the ports alone."""
    while os.getppid() == parent:
        await asyncio.sleep(1)
    log.warning("the supervisor (pid %d) is gone: this worker stops", parent)
    stop.set()
