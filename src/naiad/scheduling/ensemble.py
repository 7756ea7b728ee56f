"""Triton's ensemble scheduler: a graph of steps over composing models.

An ensemble has no instances of its own.  Each request becomes one
:class:`~naiad.scheduling.ensemble_run.EnsembleRun`, a task on the event
loop that sends step requests to the composing models through the core
(``services`` is the data plane) and answers through the request's
``response_sink``, so the ensemble's own statistics are recorded by the
core like any model's; its execution count and compute time are the
whole graph's.

The engine wires an ensemble to its composing models at load time
(:mod:`naiad.engine.ensembles`): the ensemble is decoupled when one of its
steps is (responses stream), and ready only while every composing model is.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from naiad.scheduling.base import Scheduler
from naiad.scheduling.ensemble_graph import EnsembleGraph
from naiad.scheduling.ensemble_run import EnsembleRun

if TYPE_CHECKING:
    from naiad.backends.base import ServerCalls
    from naiad.core.stats import ModelStats
    from naiad.core.types import InferenceRequest, InferenceResponse
    from naiad.scheduling.admission import ModelAdmission


class EnsembleScheduler(Scheduler):
    """Runs each request's graph as a task; no queue, no instances."""

    def __init__(
        self,
        stats: ModelStats,
        *,
        graph: EnsembleGraph,
        services: ServerCalls,
        decoupled: bool = False,
        admission: ModelAdmission | None = None,
        **_: Any,
    ) -> None:
        # A load of its own: its requests wait on their steps, which the server's counts.
        super().__init__([], stats, decoupled=decoupled, admission=admission)
        self.graph = graph
        self.services = services
        self._runs: dict[EnsembleRun, asyncio.Task[None]] = {}

    def enqueue(self, request: InferenceRequest) -> None:
        self.admit()
        start = time.monotonic_ns()
        request.queue_ns = max(start - request.queue_start_ns, 1)
        self.stats.record_started(1)
        run = EnsembleRun(self.graph, self.services, request, self.decoupled)
        sink = request.response_sink
        assert sink is not None

        def finish(response: InferenceResponse) -> None:
            if response.final:
                self._runs.pop(run, None)
                if response.error is None:
                    elapsed = time.monotonic_ns() - start
                    self.stats.record_execution(request.batch_size, 1, 0, elapsed, 0)
            sink(response)

        request.response_sink = finish
        self._runs[run] = self._loop.create_task(run.run())

    def has_work(self) -> bool:
        return False

    def take_batch(self) -> list[InferenceRequest]:
        return []

    def close(self) -> None:
        for run, task in list(self._runs.items()):
            run.cancel()
            task.cancel()
        super().close()
