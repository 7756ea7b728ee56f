"""The supervisor's part in the server's state: one order of changes, one journal.

A model load or unload, a shared-memory registration, a trace or log
setting made on any worker must reach every worker before the call returns,
in the same order everywhere.  The supervisor, which never restarts and
loads no model, is where that order is kept: a worker hands it each change
(:meth:`Coordinator.change`), and it

1. has the worker that took the call apply it first: that worker's error is
   the client's, and then nothing changed anywhere;
2. records it in the journal;
3. has every other serving worker apply it, together.  A worker that is
   restarting is skipped: it replays the journal before it serves again.  A
   worker that fails a change the first one applied is out of step with the
   server: the client gets its error, naming the worker, and the supervisor restarts
   it, so that it replays the journal like any new worker (a change it still
   cannot apply is then a warning in its log, and it serves without it).

One change at a time: the next waits for every worker to have applied the
last.  A (re)started worker asks for the journal (:meth:`Coordinator.journal`)
under the same lock, and from that moment it is sent every later change; it
applies them after its replay (see :class:`naiad.cluster.peers.Cluster`).

If the worker that took the call dies before it answers, the change still
goes on: the next worker that serves applies it first (its error, if any,
means nothing changed), then the others, and the restarted worker replays it
(the client lost its connection, as with any request in flight).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import Any

from naiad.cluster.journal import Journal
from naiad.cluster.link import Link, Listener, PeerGone
from naiad.core.errors import Internal, NaiadError
from naiad.engine.changes import Change

log = logging.getLogger("naiad")


class Coordinator:
    """``restart(index, pid)`` stops worker ``index`` if it still runs as process
    ``pid`` (out of step), for the supervisor to start it again; ``timeout`` is
    ``--worker-timeout-secs`` (see :class:`Link`)."""

    def __init__(
        self,
        directory: str,
        count: int,
        restart: Callable[[int, int], None],
        timeout: float = 0.0,
    ) -> None:
        self._listener = Listener(supervisor_path(directory), self._serve)
        self._links = {
            i: Link(worker_path(directory, i), f"worker {i}", timeout) for i in range(count)
        }
        self._restart = restart
        self._journal = Journal()
        self._lock = asyncio.Lock()
        #: The workers that have the journal (index -> pid): every later change goes to them.
        self._serving: dict[int, int] = {}

    async def start(self) -> None:
        """Before the workers start: each asks for the journal as it starts."""
        await self._listener.start()

    async def close(self) -> None:
        await self._listener.close()
        for link in self._links.values():
            await link.close()

    def forget(self, index: int) -> None:
        """Worker ``index`` exited: it gets the journal again when it starts."""
        self._serving.pop(index, None)

    async def change(self, origin: int, change: Change) -> None:
        """Apply ``change`` on every worker, first on ``origin``; the client's error if any.

        Carried through even if the worker that asked goes meanwhile (it died, or
        its client did, cancelling the call): a change reaches every worker or none.
        """
        task = asyncio.ensure_future(self._change(origin, change))
        task.add_done_callback(_retrieved)
        await asyncio.shield(task)

    async def _change(self, origin: int, change: Change) -> None:
        async with self._lock:
            first = await self._apply_first(origin, change)  # fails: nothing changed
            self._journal.record(change)
            others = sorted(i for i in self._serving if i != first)
            results = await asyncio.gather(
                *(self._links[i].call("apply", change) for i in others), return_exceptions=True
            )
            # Still under the lock, so that a worker out of step gets no later change.
            failed = self._out_of_step(others, results, change)
        if failed:
            index, error = failed[0]
            raise NaiadError.of(
                error.kind, f"{error.message} (on worker {index}, restarting to catch up)"
            )

    async def _apply_first(self, origin: int, change: Change) -> int:
        """Apply ``change`` on ``origin``, or if it went, on the next worker that serves;
        which one applied it.  Its error is raised: then nothing changed anywhere."""
        for index in [origin, *sorted(i for i in self._serving if i != origin)]:
            try:
                await self._links[index].call("apply", change)
            except PeerGone:
                log.info(
                    "worker %d went while applying %s: the others apply it", index, _name(change)
                )
                self._serving.pop(index, None)
                continue
            return index
        raise PeerGone("no worker could apply the change: the server is restarting its workers")

    def _out_of_step(
        self, others: list[int], results: list[object], change: Change
    ) -> list[tuple[int, NaiadError]]:
        """Forget the workers that did not apply ``change``, restarting those that failed
        it; the failures."""
        failed: list[tuple[int, NaiadError]] = []
        for index, result in zip(others, results, strict=True):
            if isinstance(result, PeerGone):
                log.info(
                    "worker %d is restarting: it applies %s when it starts", index, _name(change)
                )
                self._serving.pop(index, None)
            elif isinstance(result, BaseException):
                error = result if isinstance(result, NaiadError) else Internal(str(result))
                log.warning(
                    "worker %d could not apply %s as the others did (%s): restarting it",
                    index,
                    _name(change),
                    error.message,
                )
                pid = self._serving.pop(index, None)
                if pid is not None:  # else it exited meanwhile, and replays anyway
                    self._restart(index, pid)
                failed.append((index, error))
        return failed

    async def journal(self, index: int, pid: int) -> list[Change]:
        """The changes worker ``index`` (process ``pid``) must replay; from now on it
        is sent every change."""
        async with self._lock:  # never half a change
            self._serving[index] = pid
            return self._journal.changes()

    async def _serve(self, method: str, args: tuple[Any, ...]) -> Any:
        """A call from a worker (see link.Listener): ``change`` or ``journal``."""
        if method == "change":
            await self.change(*args)
            return None
        if method == "journal":
            return await self.journal(*args)
        raise Internal(f"the supervisor has no call '{method}'")


def supervisor_path(directory: str) -> str:
    """Where the supervisor listens for its workers' changes."""
    return os.path.join(directory, "supervisor.sock")


def worker_path(directory: str, index: int) -> str:
    """Where worker ``index`` listens for the others (and for the supervisor)."""
    return os.path.join(directory, f"{index}.sock")


def _retrieved(task: asyncio.Future[None]) -> None:
    """Its caller may be gone: the error is the caller's, or nobody's, never "unretrieved"."""
    if not task.cancelled():
        task.exception()


def _name(change: Change) -> str:
    return type(change).__name__
