"""What the data plane asks of the other workers of a ``--workers`` server.

The engine declares it and :class:`naiad.cluster.peers.Cluster` provides it,
so the engine never imports the cluster (the foreground, which sits above
both, hands a worker's data plane its cluster).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from naiad.core.statistics import ModelStatistics
    from naiad.core.types import CorrelationId, InferenceRequest, InferenceResponse
    from naiad.engine.changes import Change


class Workers(Protocol):
    #: This worker's number, and how many there are.
    index: int
    count: int

    async def start(self) -> None:
        """Listen for the others, before this worker loads anything."""

    async def catch_up(self) -> None:
        """Replay the server's state changes, before this worker serves."""

    async def close(self) -> None: ...

    async def change(self, change: Change) -> None:
        """Apply ``change`` on every worker, in the one order of the server's changes."""

    def owner(self, correlation_id: CorrelationId) -> int:
        """The worker that holds the sequence ``correlation_id``."""

    async def infer(self, owner: int, request: InferenceRequest) -> InferenceResponse: ...

    def infer_stream(
        self, owner: int, request: InferenceRequest
    ) -> AsyncIterator[InferenceResponse]: ...

    async def statistics(
        self, local: list[ModelStatistics], name: str, version: str
    ) -> list[ModelStatistics]:
        """``local`` plus every other worker's statistics."""
