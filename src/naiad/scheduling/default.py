"""Triton's default scheduler: each request runs alone on the next free instance."""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Any

from naiad.scheduling.base import Scheduler

if TYPE_CHECKING:
    from naiad.core.types import InferenceRequest


class DefaultScheduler(Scheduler):
    """One request per execution, in arrival order; parallelism = instance count."""

    pipelines = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._queue: collections.deque[InferenceRequest] = collections.deque()

    def enqueue(self, request: InferenceRequest) -> None:
        self.in_flight += 1
        self._queue.append(request)
        self.pump()

    def has_work(self) -> bool:
        return bool(self._queue)

    def take_batch(self) -> list[InferenceRequest]:
        return [self._queue.popleft()]
