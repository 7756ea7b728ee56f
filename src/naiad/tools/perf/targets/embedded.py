"""``--embedded``: the model repository served in this process, measured with no network.

perf_analyzer's C API mode.  The server shares the measuring event loop and
each request goes straight to the data plane, so the figures are naiad's
core, schedulers and backend alone: what a program using naiad in-process
gets, and the floor under the HTTP and gRPC figures.
"""

from __future__ import annotations

import asyncio
import logging

import numpy as np

from naiad.config import config_to_dict
from naiad.core import datatypes
from naiad.core.errors import NaiadError
from naiad.core.types import InferenceRequest, InferInput, RequestedOutput
from naiad.core.versions import parse_version
from naiad.server import Server
from naiad.tools.perf.model import ModelInfo, Step
from naiad.tools.perf.settings import PerfError, PerfSettings
from naiad.tools.perf.stats import ServerStats
from naiad.tools.perf.targets import RequestFailed, Sequence


class EmbeddedConnection:
    def __init__(self, target: EmbeddedTarget) -> None:
        self.target = target

    async def infer(self, step: int, sequence: Sequence) -> tuple[int, int]:
        target = self.target
        inputs = target.steps[step % len(target.steps)]
        request = InferenceRequest(
            target.settings.model,
            [InferInput(name, dt, array.shape, array) for name, dt, array in inputs],
            model_version=target.version,
            outputs=[RequestedOutput(o) for o in target.outputs],
        )
        if sequence is not None:
            request.correlation_id, request.sequence_start, request.sequence_end = sequence
        try:
            if target.decoupled:
                async for response in target.server.dataplane.infer_stream(request):
                    if response.error is not None:
                        raise response.error
            else:
                await target.server.dataplane.infer(request, endpoint="naiad perf")
        except NaiadError as exc:
            raise RequestFailed(exc.message) from None
        # A model that runs inline answers before the first await suspends: give the loop
        # (the windows, the other contexts) its turn.
        await asyncio.sleep(0)
        return 0, 0

    async def close(self) -> None:
        return None


class EmbeddedTarget:
    def __init__(self, settings: PerfSettings) -> None:
        self.settings = settings
        self.server = Server(list(settings.model_repository))
        self.version = parse_version(settings.version) if settings.version else None
        self.steps: list[list[tuple[str, datatypes.DataType, np.ndarray]]] = []
        self.outputs: list[str] = []
        self.decoupled = False
        self._started = False

    async def open(self) -> ModelInfo:
        # The server's start-up lines would mix with the report (its warnings still show).
        logging.getLogger("naiad").setLevel(logging.WARNING)
        try:
            await self.server.start_async()
        except NaiadError as exc:
            raise PerfError(f"--model-repository: {exc.message}") from None
        self._started = True
        try:
            config = self.server.dataplane.model_config(self.settings.model, self.settings.version)
        except NaiadError as exc:
            raise PerfError(f"model '{self.settings.model}': {exc.message}") from None
        return ModelInfo.from_config(config_to_dict(config))

    def prepare(self, model: ModelInfo, streams: list[list[Step]]) -> None:
        types = {t.name: datatypes.from_name(t.datatype) for t in model.inputs}
        self.outputs = model.outputs
        self.decoupled = model.decoupled
        self.steps = [[(name, types[name], array) for name, array in step.items()]
                      for stream in streams for step in stream]  # fmt: skip

    async def connect(self) -> EmbeddedConnection:
        return EmbeddedConnection(self)

    async def statistics(self) -> ServerStats:
        try:
            stats = self.server.dataplane.statistics(self.settings.model, self.settings.version)
        except NaiadError:
            return ServerStats()
        total = ServerStats()
        for entry in stats:
            total = total + ServerStats.of(entry)
        return total

    async def close(self) -> None:
        if self._started:
            await self.server.stop_async(0)
