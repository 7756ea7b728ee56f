"""This worker among the workers of one server, which must behave as one server.

With ``--workers N`` every worker holds every model and the kernel hands each
connection to any of them.  Two things still have to be kept in one place:

- **a sequence's state.**  Each correlation id has an owner worker
  (:meth:`Cluster.owner`); a request of a sequence-batched model that reaches
  another worker is passed to the owner over a local socket and its answer
  passed back, so the sequence batcher sees every request of the sequence.
- **the server's state.**  A model load or unload, a shared-memory
  registration, a trace or log setting must reach every worker before the call
  returns, and in one order.  The change goes to a coordinator, the
  lowest-numbered worker that is up, which applies it, then has every other
  worker apply it before it answers.  Every worker keeps the changes in a
  :class:`~naiad.cluster.journal.Journal`, and a restarted worker replays
  a peer's before it serves.

The same link carries the statistics extension's answer, which is the whole
server's: the worker that takes the call adds every other worker's figures.

The supervisor (:mod:`naiad.cluster.supervisor`) names this worker and the socket
folder in the environment.
"""

from __future__ import annotations

import asyncio
import logging
import os
import zlib
from collections.abc import AsyncIterator
from typing import Any, Protocol

from naiad.cluster.journal import Change, Journal
from naiad.cluster.link import Link, Listener, PeerGone
from naiad.cluster.wire import (
    Wire,
    request_from_wire,
    request_to_wire,
    response_from_wire,
    response_to_wire,
)
from naiad.core.errors import InvalidArgument, NaiadError
from naiad.core.statistics import ModelStatistics, combined
from naiad.core.types import CorrelationId, InferenceRequest, InferenceResponse

log = logging.getLogger("naiad")

#: How long a worker may take to report its statistics before it counts as restarting.
STATISTICS_TIMEOUT_S = 5.0

#: Set by the supervisor for each worker: its number, and how many there are.
INDEX = "NAIAD_WORKER_INDEX"
COUNT = "NAIAD_WORKERS"
#: The folder (mode 0700) where every worker listens for the others.
DIRECTORY = "NAIAD_WORKER_DIR"


class Local(Protocol):
    """What the other workers may ask of this one (the data plane)."""

    async def infer(self, request: InferenceRequest) -> InferenceResponse: ...

    def infer_stream(self, request: InferenceRequest) -> AsyncIterator[InferenceResponse]: ...

    async def apply_here(self, change: Change) -> None: ...

    def statistics(self, name: str, version: str) -> list[ModelStatistics]: ...


class Cluster:
    """``timeout``: how long a peer may leave a ping unanswered while this worker
    waits on it (``--worker-timeout-secs``; see :class:`~naiad.cluster.link.Link`)."""

    def __init__(
        self, index: int, count: int, directory: str, local: Local, timeout: float = 0.0
    ) -> None:
        self.index = index
        self.count = count
        self._local = local
        self._listener = Listener(socket_path(directory, index), self._serve)
        self._links = {
            i: Link(socket_path(directory, i), f"worker {i}", timeout)
            for i in range(count)
            if i != index
        }
        self._journal = Journal()
        self._lock = asyncio.Lock()  # one change at a time while this worker coordinates
        self._caught_up = False
        self._waiting: list[Change] = []  # changes that arrived while catching up

    @classmethod
    def from_environment(cls, local: Local, timeout: float = 0.0) -> Cluster | None:
        """This worker's cluster when the supervisor started it with others, else None."""
        count = int(os.environ.get(COUNT, "1"))
        if count < 2 or DIRECTORY not in os.environ:
            return None
        return cls(int(os.environ[INDEX]), count, os.environ[DIRECTORY], local, timeout)

    async def start(self) -> None:
        """Listen for the others; before this worker loads anything, so that no change
        broadcast meanwhile is missed (it waits for :meth:`catch_up`)."""
        await self._listener.start()

    async def close(self) -> None:
        await self._listener.close()
        for link in self._links.values():
            await link.close()

    # -- sequences -----------------------------------------------------------------

    def owner(self, correlation_id: CorrelationId) -> int:
        """The worker that holds the sequence ``correlation_id`` (the same in every worker)."""
        if isinstance(correlation_id, int):
            return correlation_id % self.count
        return zlib.crc32(correlation_id.encode()) % self.count

    async def infer(self, owner: int, request: InferenceRequest) -> InferenceResponse:
        """``request``'s response, from worker ``owner``."""
        return response_from_wire(await self._links[owner].call("infer", request_to_wire(request)))

    async def infer_stream(
        self, owner: int, request: InferenceRequest
    ) -> AsyncIterator[InferenceResponse]:
        async for wire in self._links[owner].stream("infer_stream", request_to_wire(request)):
            yield response_from_wire(wire)

    # -- statistics ------------------------------------------------------------------

    async def statistics(
        self, local: list[ModelStatistics], name: str, version: str
    ) -> list[ModelStatistics]:
        """``local`` plus every other worker's statistics for the same request.

        A worker that is restarting, or has not loaded the model yet, counts as
        nothing: the requests it had taken failed with it.
        """
        asked = [
            asyncio.wait_for(link.call("statistics", name, version), STATISTICS_TIMEOUT_S)
            for link in self._links.values()
        ]
        merged = {(s.name, s.version): s for s in local}
        for answer in await asyncio.gather(*asked, return_exceptions=True):
            if isinstance(answer, (PeerGone, InvalidArgument, asyncio.TimeoutError)):
                continue  # restarting, or the model not (yet) loaded there
            if isinstance(answer, BaseException):
                raise answer
            for theirs in answer:
                key = (theirs.name, theirs.version)
                merged[key] = combined(merged[key], theirs) if key in merged else theirs
        return list(merged.values())

    # -- the server's state --------------------------------------------------------

    async def change(self, change: Change) -> None:
        """Apply ``change`` on every worker, through the coordinator; its error if any."""
        for index in range(self.count):
            if index == self.index:
                if self._caught_up:
                    await self._coordinate(change)
                    return
                continue
            try:
                if await self._links[index].call("coordinate", change):
                    return
            except PeerGone:
                continue  # restarting: the next worker coordinates
        raise PeerGone("no worker could apply the change: the server is restarting its workers")

    async def catch_up(self) -> None:
        """Replay a peer's journal (a worker that restarted lost every change)."""
        for link in self._links.values():
            try:
                changes = await link.call("journal")
            except PeerGone:
                continue
            if changes is None:  # catching up itself
                continue
            if changes:
                log.info("applying %d change(s) the other workers made", len(changes))
            for change in changes:
                await self._apply(change, replay=True)
            break
        self._caught_up = True
        while self._waiting:
            await self._apply(self._waiting.pop(0), replay=True)

    async def _coordinate(self, change: Change) -> None:
        async with self._lock:
            await self._local.apply_here(change)  # fails: nothing changed anywhere
            self._journal.record(change)
            indexes = list(self._links)
            results = await asyncio.gather(
                *(self._links[i].call("apply", change) for i in indexes), return_exceptions=True
            )
        for index, result in zip(indexes, results, strict=True):
            if isinstance(result, PeerGone):
                log.info(
                    "worker %d is restarting: it will apply %s when it starts", index, change[0]
                )
            elif isinstance(result, BaseException):
                log.warning("worker %d could not apply %s: %s", index, change[0], result)
                raise result

    async def _apply(self, change: Change, replay: bool = False) -> None:
        try:
            await self._local.apply_here(change)
        except NaiadError as exc:
            if not replay:
                raise
            log.warning("could not apply %s as the other workers did: %s", change[0], exc.message)
            return
        self._journal.record(change)

    def _serve(self, method: str, args: tuple[Any, ...]) -> Any:
        """One call from another worker (see link.Listener)."""
        return getattr(self, f"_serve_{method}")(*args)

    async def _serve_infer(self, wire: Wire) -> Wire:
        return response_to_wire(await self._local.infer(request_from_wire(wire)))

    async def _serve_infer_stream(self, wire: Wire) -> AsyncIterator[Wire]:
        async for response in self._local.infer_stream(request_from_wire(wire)):
            yield response_to_wire(response)

    async def _serve_statistics(self, name: str, version: str) -> list[ModelStatistics]:
        return self._local.statistics(name, version)  # its own only, never its peers'

    async def _serve_coordinate(self, change: Change) -> bool:
        if not self._caught_up:
            return False  # the caller asks the next worker
        await self._coordinate(change)
        return True

    async def _serve_apply(self, change: Change) -> None:
        if not self._caught_up:
            self._waiting.append(change)  # after the journal, in the order it came
            return
        await self._apply(change)

    async def _serve_journal(self) -> list[Change] | None:
        if not self._caught_up:
            return None
        async with self._lock:  # never half a change
            return self._journal.changes()


def socket_path(directory: str, index: int) -> str:
    """Where worker ``index`` listens for the others (and for the supervisor's pings)."""
    return os.path.join(directory, f"{index}.sock")
