"""This worker among the workers of one server, which must behave as one server.

With ``--workers N`` every worker holds every model and the kernel hands each
connection to any of them.  Two things still have to be kept in one place:

- **a sequence's state.**  Each correlation id has an owner worker
  (:meth:`Cluster.owner`); a request of a sequence-batched model that reaches
  another worker is validated there, passed to the owner over a local socket
  and its answer passed back, so the sequence batcher sees every request of
  the sequence.
- **the server's state.**  A model load or unload, a shared-memory
  registration, a trace or log setting must reach every worker before the call
  returns, and in one order.  The worker hands the change to the supervisor,
  which keeps that order and the journal
  (:class:`~naiad.cluster.coordinator.Coordinator`) and has every worker apply
  it; a (re)started worker replays the journal before it serves.

The workers talk to each other only to forward a sequence's requests and to
answer the statistics extension, whose answer is the whole server's: the
worker that takes the call adds every other worker's figures.
"""

from __future__ import annotations

import asyncio
import logging
import os
import zlib
from collections.abc import AsyncIterator
from typing import Any, Protocol

from naiad.cluster.coordinator import supervisor_path, worker_path
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
from naiad.engine.changes import Change, State

log = logging.getLogger("naiad")

#: How long a worker may take to report its statistics before it counts as restarting.
STATISTICS_TIMEOUT_S = 5.0

#: Set by the supervisor for each worker: its number, and how many there are.
INDEX = "NAIAD_WORKER_INDEX"
COUNT = "NAIAD_WORKERS"
#: The folder (mode 0700) where every worker, and the supervisor, listens.
DIRECTORY = "NAIAD_WORKER_DIR"


class Local(State, Protocol):
    """What the other workers and the supervisor may ask of this one (the data plane)."""

    async def infer(
        self, request: InferenceRequest, *, forwarded: bool = False
    ) -> InferenceResponse: ...

    def infer_stream(
        self, request: InferenceRequest, *, forwarded: bool = False
    ) -> AsyncIterator[InferenceResponse]: ...

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
        self._listener = Listener(worker_path(directory, index), self._serve)
        self._links = {
            i: Link(worker_path(directory, i), f"worker {i}", timeout)
            for i in range(count)
            if i != index
        }
        self._supervisor = Link(supervisor_path(directory), "the supervisor", timeout)
        # Changes apply one at a time, and none before the journal's replay is done.
        self._applying = asyncio.Lock()

    async def start(self) -> None:
        """Listen for the others and the supervisor, before this worker loads anything."""
        await self._listener.start()

    async def close(self) -> None:
        await self._listener.close()
        for link in (*self._links.values(), self._supervisor):
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
        """Apply ``change`` on every worker, this one first, in the server's one order;
        the error of the first worker that failed it, if any."""
        await self._supervisor.call("change", self.index, change)

    async def catch_up(self) -> None:
        """Replay the server's journal: a worker that (re)starts has none of its changes.

        The supervisor sends every later change from the moment it hands out the
        journal; those wait here for the replay to end.
        """
        async with self._applying:
            changes: list[Change] = await self._supervisor.call("journal", self.index, os.getpid())
            if changes:
                log.info("applying %d change(s) the other workers made", len(changes))
            for change in changes:
                try:
                    await change.apply(self._local)
                except NaiadError as exc:
                    log.warning(
                        "could not apply %s as the other workers did: %s",
                        type(change).__name__,
                        exc.message,
                    )

    def _serve(self, method: str, args: tuple[Any, ...]) -> Any:
        """One call from another worker or the supervisor (see link.Listener)."""
        return getattr(self, f"_serve_{method}")(*args)

    async def _serve_infer(self, wire: Wire) -> Wire:
        request = request_from_wire(wire)
        return response_to_wire(await self._local.infer(request, forwarded=True))

    async def _serve_infer_stream(self, wire: Wire) -> AsyncIterator[Wire]:
        async for response in self._local.infer_stream(request_from_wire(wire), forwarded=True):
            yield response_to_wire(response)

    async def _serve_statistics(self, name: str, version: str) -> list[ModelStatistics]:
        return self._local.statistics(name, version)  # its own only, never its peers'

    async def _serve_apply(self, change: Change) -> None:
        async with self._applying:
            await change.apply(self._local)
