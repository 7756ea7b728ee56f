"""Where ``naiad perf`` sends its requests: a server over HTTP or gRPC, or in-process.

Every target pre-encodes the requests before the load starts (tensor bytes
do not change between requests), so that the measured loop only writes bytes
and waits.
"""

from __future__ import annotations

from typing import Protocol

from naiad.tools.perf.model import ModelInfo, Step
from naiad.tools.perf.settings import PerfError, PerfSettings
from naiad.tools.perf.stats import ServerStats

#: A request's place in a sequence: (correlation id, start, end); None outside one.
Sequence = tuple[int, bool, bool] | None


class RequestFailed(Exception):
    """The server answered a request with an error (its message)."""


class Connection(Protocol):
    async def infer(self, step: int, sequence: Sequence) -> tuple[int, int]:
        """Send request ``step`` and wait for its (final) response; the nanoseconds spent
        sending and receiving, for perf_analyzer's Client Send and Client Recv."""
        ...

    async def close(self) -> None: ...


class Target(Protocol):
    async def open(self) -> ModelInfo:
        """Reach the server and learn the model (a clear PerfError when either fails)."""
        ...

    def prepare(self, model: ModelInfo, streams: list[list[Step]]) -> None:
        """Encode every step once (streams flattened in order)."""
        ...

    async def connect(self) -> Connection: ...

    async def statistics(self) -> ServerStats:
        """The model version's statistics now (zeros where the server has none)."""
        ...

    async def close(self) -> None: ...


def make_target(settings: PerfSettings) -> Target:
    if settings.protocol == "grpc":
        from naiad.tools.perf.targets.grpc import GrpcTarget

        return GrpcTarget(settings)
    if settings.protocol == "embedded":
        from naiad.tools.perf.targets.embedded import EmbeddedTarget

        return EmbeddedTarget(settings)
    if settings.protocol == "http":
        from naiad.tools.perf.targets.http import HttpTarget

        return HttpTarget(settings)
    raise PerfError(f"-i {settings.protocol}: expected http or grpc")
