"""What every scheduler shares: instances to run batches on, and how results leave.

A scheduler owns its queue and calls the backend; the core hands it
validated requests whose ``response_sink`` already does the core's part
(output shaping, statistics, delivery to the frontend).
"""

from __future__ import annotations

import abc
import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from naiad.core.errors import Cancelled, Internal, NaiadError
from naiad.core.types import InferenceRequest, InferenceResponse

if TYPE_CHECKING:
    from naiad.backends.base import ModelInstance
    from naiad.core.stats import ModelStats


class Scheduler(abc.ABC):
    """Queues requests of one model version and runs them on its instances."""

    def __init__(
        self,
        instances: list[ModelInstance],
        stats: ModelStats,
        *,
        decoupled: bool = False,
    ) -> None:
        self.instances = instances
        self.stats = stats
        self.decoupled = decoupled
        self._loop = asyncio.get_running_loop()
        self._executor = ThreadPoolExecutor(
            max_workers=max(1, len(instances)), thread_name_prefix="naiad-instance"
        )
        self.in_flight = 0
        self._idle_event: asyncio.Event | None = None

    @abc.abstractmethod
    def enqueue(self, request: InferenceRequest) -> None:
        """Accept a validated request; its responses go to ``request.response_sink``."""

    async def drain(self) -> None:
        """Wait until every accepted request has been answered."""
        while self.in_flight:
            self._idle_event = asyncio.Event()
            await self._idle_event.wait()

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    # -- running a batch -------------------------------------------------

    def run_batch(self, instance: ModelInstance, batch: list[InferenceRequest]) -> None:
        """Execute ``batch`` on ``instance`` without blocking the loop.

        Requests cancelled while queued are answered here without running.
        ``on_instance_free`` is called when the instance can take more work.
        """
        live: list[InferenceRequest] = []
        now = time.monotonic_ns()
        for request in batch:
            if request.cancelled:
                self._answer(request, InferenceResponse(error=Cancelled("request cancelled")))
            else:
                request.queue_ns = now - request.queue_start_ns
                live.append(request)
        if not live:
            self.on_instance_free(instance)
            return
        if instance.is_async:
            future: asyncio.Future = asyncio.ensure_future(instance.execute_async(live))
        else:
            future = self._loop.run_in_executor(self._executor, instance.execute, live)
        future.add_done_callback(lambda f: self._batch_done(f, instance, live, now))

    def _batch_done(
        self,
        future: asyncio.Future,
        instance: ModelInstance,
        batch: list[InferenceRequest],
        start_ns: int,
    ) -> None:
        elapsed = time.monotonic_ns() - start_ns
        error: NaiadError | None = None
        responses = None
        try:
            responses = future.result()
        except NaiadError as exc:
            error = exc
        except Exception as exc:  # a backend bug must not take the server down
            error = Internal(f"{type(exc).__name__}: {exc}")
        if error is None:
            timings = instance.compute_ns or (0, elapsed, 0)
            rows = sum(r.batch_size for r in batch)
            self.stats.record_execution(rows, len(batch), *timings)
            if not self.decoupled or responses is not None:
                if responses is None or len(responses) != len(batch):
                    error = Internal(
                        "backend returned "
                        f"{0 if responses is None else len(responses)} responses "
                        f"for {len(batch)} requests"
                    )
                else:
                    for request, response in zip(batch, responses):
                        if response is not None:
                            self._answer(request, response)
        if error is not None:
            for request in batch:
                self._answer(request, InferenceResponse(error=error))
        self.on_instance_free(instance)

    def _answer(self, request: InferenceRequest, response: InferenceResponse) -> None:
        sink = request.response_sink
        assert sink is not None
        sink(response)

    def request_done(self) -> None:
        """Book-keeping when a request has its final response (called by the core)."""
        self.in_flight -= 1
        if not self.in_flight and self._idle_event is not None:
            self._idle_event.set()

    @abc.abstractmethod
    def on_instance_free(self, instance: ModelInstance) -> None:
        """``instance`` finished a batch and may take the next one."""
