"""Triton's dynamic batcher: many queued requests, one execution.

When an instance is free the batcher walks the queues in priority order and
gathers requests while their shapes agree (ragged inputs excepted) and the
rows fit ``max_batch_size``.  It sends at once the largest preferred size it
can reach, or everything it gathered when the batch cannot grow or no delay
is configured; otherwise it waits until the oldest request has waited
``max_queue_delay_microseconds`` (one deadline per batch, on the monotonic
clock).  Backends receive the requests and concatenate their tensors along
the batch dimension; responses are split back by row counts.

Queue timeouts use one loop timer for the earliest deadline, so a request
that times out is answered at its deadline even while every instance is
busy (Triton answers it only when the running batch ends).
"""

from __future__ import annotations

import collections
import time
from typing import TYPE_CHECKING, Any

from naiad.core.errors import QueueFull, Unavailable
from naiad.core.types import InferenceRequest, InferenceResponse
from naiad.scheduling import timers
from naiad.scheduling.base import Scheduler, ServerLoad
from naiad.scheduling.queues import Entry, PriorityQueues
from naiad.scheduling.timers import Timer

if TYPE_CHECKING:
    from collections.abc import Sequence

    from naiad.backends.base import ModelInstance
    from naiad.config import ModelConfig
    from naiad.core.stats import ModelStats
    from naiad.core.types import ResponseSink
    from naiad.scheduling.admission import ModelAdmission
    from naiad.scheduling.rate_limiter import InstanceSlot


def _request_prefix(request: InferenceRequest) -> str:
    return f"[request id: {request.id or '<id_unknown>'}] "


class DynamicBatcher(Scheduler):
    """Forms batches by preferred size, delay, priority and shape."""

    def __init__(
        self,
        instances: list[ModelInstance],
        stats: ModelStats,
        *,
        config: ModelConfig,
        decoupled: bool = False,
        slots: Sequence[InstanceSlot | None] | None = None,
        admission: ModelAdmission | None = None,
        load: ServerLoad | None = None,
    ) -> None:
        # Passed on by name: mypyc calls a compiled __init__ wrongly with *args/**kwargs.
        super().__init__(
            instances, stats, decoupled=decoupled, slots=slots, admission=admission, load=load
        )
        batching = config.dynamic_batching
        self.batching = config.max_batch_size > 0
        self.whole_turns = self.batching  # batches form at the end of the loop's turn
        self.max_rows = max(config.max_batch_size, 1)
        self.preferred = frozenset(s for s in batching.preferred_batch_size if s > 0)
        self.delay_ns = batching.max_queue_delay_microseconds * 1000
        self.preserve_ordering = batching.preserve_ordering
        self.ragged = frozenset(i.name for i in config.input if i.allow_ragged_batch)
        self.queues = PriorityQueues.from_config(config)
        self._plan: list[Entry] | None = None
        self._planned = False
        self._delay_timer: Timer | None = None
        self._delay_at = 0
        self._deadline_timer: Timer | None = None
        self._deadline_at = 0
        self._order: collections.deque[list[Any]] = collections.deque()
        self._pump_soon = False

    # -- accepting requests ------------------------------------------------------

    def enqueue(self, request: InferenceRequest) -> None:
        self.admit()
        if self.preserve_ordering:
            self._keep_order(request)
        queues = self.queues
        level = queues.level_index(request.priority)
        if queues.is_full(level):
            self._answer(
                request,
                InferenceResponse(
                    error=QueueFull(f"{_request_prefix(request)}Exceeds maximum queue size")
                ),
            )
            return
        timeout_us = queues.policy(level).timeout_us(request.timeout_us)
        deadline = request.queue_start_ns + timeout_us * 1000 if timeout_us else 0
        queues.push(Entry(request, level, deadline, self._shape_key(request)))
        self._planned = False
        if deadline and (not self._deadline_at or deadline < self._deadline_at):
            self._arm_deadline(deadline)
        if not self.batching:
            self.pump()
        elif not self._pump_soon:
            # Every request the loop reads in this turn joins the batch: pumping
            # at once would start a batch of one (inline models finish before
            # the next request is even parsed) and batching would never happen.
            self._pump_soon = True
            self._loop.call_soon(self._pump_deferred)

    def _pump_deferred(self) -> None:
        self._pump_soon = False
        self.pump()

    def _shape_key(self, request: InferenceRequest) -> object:
        """Requests batch together only when this agrees (ragged inputs excepted)."""
        if not self.batching:
            return None
        ragged = self.ragged
        inputs = request.inputs
        if len(inputs) == 1:
            t = inputs[0]
            return (t.name, None if t.name in ragged else tuple(t.shape[1:]))
        return tuple(
            sorted((t.name, None if t.name in ragged else tuple(t.shape[1:])) for t in inputs)
        )

    # -- forming batches ---------------------------------------------------------

    def has_work(self) -> bool:
        if not self.queues.size:
            return False
        if not self._planned:
            self._plan = self._form(time.monotonic_ns())
            self._planned = True
        return self._plan is not None

    def take_batch(self) -> list[InferenceRequest]:
        if not self.has_work():
            return []
        plan = self._plan
        assert plan is not None
        self._planned = False
        self._plan = None
        batch = []
        for entry in plan:
            self.queues.remove(entry)
            batch.append(entry.request)
            entry.request = None  # type: ignore[assignment]  # the heap may keep the entry
        self.queues.compact()
        return batch

    def _form(self, now: int) -> list[Entry] | None:
        """The batch to send now, or None to wait (with the delay timer armed)."""
        if self.queues.next_deadline() and self.queues.next_deadline() <= now:
            self._expire(now)
        chosen: list[Entry] = []
        sums: list[int] = []
        rows = 0
        key: object = None
        closed = False
        for entry in self.queues:
            n = entry.request.batch_size
            if chosen and (entry.shape_key != key or rows + n > self.max_rows):
                closed = True
                break
            if not chosen:
                key = entry.shape_key
            chosen.append(entry)
            rows += n
            sums.append(rows)
            if rows >= self.max_rows:
                closed = True
                break
        if not chosen:
            return None
        preferred = self.preferred
        best = 0
        for i, total in enumerate(sums):
            if total in preferred:
                best = i + 1
        if best:
            return chosen[:best]
        if closed or not self.delay_ns:
            return chosen
        send_at = chosen[0].request.queue_start_ns + self.delay_ns
        if now >= send_at:
            return chosen
        self._arm_delay(send_at, now)
        return None

    def _arm_delay(self, at_ns: int, now: int) -> None:
        if self._delay_timer is not None:
            if self._delay_at <= at_ns:
                return
            self._delay_timer.cancel()
        self._delay_at = at_ns
        self._delay_timer = timers.call_later(self._loop, (at_ns - now) / 1e9, self._on_delay)

    def _on_delay(self) -> None:
        self._delay_timer = None
        self._delay_at = 0
        self._planned = False
        self.pump()

    # -- queue timeouts ----------------------------------------------------------

    def _arm_deadline(self, at_ns: int) -> None:
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
        self._deadline_at = at_ns
        delay = max(at_ns - time.monotonic_ns(), 0) / 1e9
        self._deadline_timer = timers.call_later(self._loop, delay, self._on_deadline)

    def _on_deadline(self) -> None:
        self._deadline_timer = None
        self._deadline_at = 0
        self._expire(time.monotonic_ns())
        self.pump()

    def _expire(self, now: int) -> None:
        """Reject (or delay) what is due, then re-arm the timer for the next deadline."""
        rejected = self.queues.expire(now)
        self._planned = False
        for entry in rejected:
            request, entry.request = entry.request, None  # type: ignore[assignment]
            self._answer(request, InferenceResponse(error=Unavailable("Request timeout expired")))
        if rejected:
            self.queues.compact()
        upcoming = self.queues.next_deadline()
        if upcoming and upcoming != self._deadline_at:
            self._arm_deadline(upcoming)

    # -- preserve_ordering -----------------------------------------------------

    def _keep_order(self, request: InferenceRequest) -> None:
        """Hold final responses until every earlier request has its own."""
        deliver: ResponseSink | None = request.response_sink
        assert deliver is not None
        slot: list[Any] = [deliver, None]
        self._order.append(slot)

        def sink(response: InferenceResponse) -> None:
            if not response.final:
                deliver(response)
                return
            slot[1] = response
            order = self._order
            while order and order[0][1] is not None:
                send, final = order.popleft()
                send(final)

        request.response_sink = sink

    def close(self) -> None:
        for timer in (self._delay_timer, self._deadline_timer):
            if timer is not None:
                timer.cancel()
        super().close()
