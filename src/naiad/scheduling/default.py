"""Triton's default scheduler: each request runs alone on the next free instance."""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING

from naiad.scheduling.base import Scheduler

if TYPE_CHECKING:
    from naiad.backends.base import ModelInstance
    from naiad.core.types import InferenceRequest


class DefaultScheduler(Scheduler):
    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self._idle: list[ModelInstance] = list(reversed(self.instances))
        self._queue: collections.deque[InferenceRequest] = collections.deque()

    def enqueue(self, request: InferenceRequest) -> None:
        self.in_flight += 1
        if self._idle and not self._queue:
            self.run_batch(self._idle.pop(), [request])
        else:
            self._queue.append(request)

    def on_instance_free(self, instance: ModelInstance) -> None:
        if self._queue:
            self.run_batch(instance, [self._queue.popleft()])
        else:
            self._idle.append(instance)
