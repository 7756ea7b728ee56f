"""Triton's default scheduler: each request runs alone on the next free instance."""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING

from naiad.scheduling.base import Scheduler, ServerLoad

if TYPE_CHECKING:
    from collections.abc import Sequence

    from naiad.backends.base import ModelInstance
    from naiad.core.stats import ModelStats
    from naiad.core.types import InferenceRequest
    from naiad.scheduling.admission import ModelAdmission
    from naiad.scheduling.rate_limiter import InstanceSlot


class DefaultScheduler(Scheduler):
    """One request per execution, in arrival order; parallelism = instance count."""

    pipelines = True

    def __init__(
        self,
        instances: list[ModelInstance],
        stats: ModelStats,
        *,
        decoupled: bool = False,
        slots: Sequence[InstanceSlot | None] | None = None,
        admission: ModelAdmission | None = None,
        load: ServerLoad | None = None,
    ) -> None:
        # Passed on by name: mypyc calls a compiled __init__ wrongly with *args/**kwargs.
        super().__init__(
            instances, stats, decoupled=decoupled, slots=slots, admission=admission, load=load
        )
        self._queue: collections.deque[InferenceRequest] = collections.deque()

    def enqueue(self, request: InferenceRequest) -> None:
        self.admit()
        self._queue.append(request)
        self.pump()

    def has_work(self) -> bool:
        return bool(self._queue)

    def take_batch(self) -> list[InferenceRequest]:
        return [self._queue.popleft()]
