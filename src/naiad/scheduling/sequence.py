"""Triton's sequence batcher: stateful models, requests routed by correlation id.

A sequence starts with a request flagged START, which gives it a slot on
one instance (or a place in the backlog when every slot is taken); all its
requests then run on that instance, one at a time and in order, each with
the control tensors (START/END/READY/CORRID) and the implicit state the
previous request left.  The END request frees the slot; so does a sequence
left idle longer than ``max_sequence_idle_microseconds``, after which its
next request is refused for lack of START, as in Triton.

With ``iterative_sequence`` a sequence is one request that the model runs
again and again (``set_release_flags(RESCHEDULE)``, e.g. one decoding step
per execution), keeping its slot in between: a request without a correlation
id gets one of its own and START; a rescheduled request goes back to its
sequence without flags; its final response ends the sequence.

The core has already checked that the request has a batch size of 1 and,
unless the sequences are iterative, a correlation id
(``naiad.core.validation``).  Batches are formed per instance by the
strategy (``sequence_batches``); the rest - running batches, rate-limiter
slots, completion - is the base scheduler's.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from naiad.core.errors import InvalidArgument, NaiadError
from naiad.core.types import (
    RESCHEDULED,
    InferenceRequest,
    InferenceResponse,
    InferInput,
    RequestedOutput,
)
from naiad.scheduling import timers
from naiad.scheduling.base import Scheduler, ServerLoad
from naiad.scheduling.sequence_batches import DirectPolicy, OldestPolicy, Rows
from naiad.scheduling.sequence_controls import (
    READY,
    check_correlation_id,
    control_inputs,
    controls_from_config,
)
from naiad.scheduling.sequence_slots import Sequence, SlotTable
from naiad.scheduling.sequence_state import (
    initial_state,
    state_inputs,
    states_from_config,
    take_state,
)
from naiad.scheduling.timers import Timer

if TYPE_CHECKING:
    import collections.abc

    from naiad.backends.base import ModelInstance
    from naiad.config import ModelConfig
    from naiad.core.stats import ModelStats
    from naiad.core.types import CorrelationId, ResponseSink
    from naiad.scheduling.admission import ModelAdmission
    from naiad.scheduling.rate_limiter import InstanceSlot

DEFAULT_IDLE_US = 1_000_000


def _discard(response: InferenceResponse) -> None:
    """Filler rows' responses go nowhere."""


class SequenceBatcher(Scheduler):
    """Direct or Oldest sequence batching over the model's instances."""

    def __init__(
        self,
        instances: list[ModelInstance],
        stats: ModelStats,
        *,
        config: ModelConfig,
        model_dir: Path | None = None,
        clock: Callable[[], int] = time.monotonic_ns,
        decoupled: bool = False,
        slots: collections.abc.Sequence[InstanceSlot | None] | None = None,
        admission: ModelAdmission | None = None,
        load: ServerLoad | None = None,
    ) -> None:
        # Passed on by name: mypyc calls a compiled __init__ wrongly with *args/**kwargs.
        super().__init__(
            instances, stats, decoupled=decoupled, slots=slots, admission=admission, load=load
        )
        sequencing = config.sequence_batching
        self.model = config.name
        self.iterative = sequencing.iterative_sequence
        self._auto_ids = itertools.count(1)
        self.batching = config.max_batch_size > 0
        self.controls = controls_from_config(config)
        self.states = states_from_config(config, model_dir)
        self.public_outputs = frozenset(o.name for o in config.output)
        self.idle_ns = (sequencing.max_sequence_idle_microseconds or DEFAULT_IDLE_US) * 1000
        rows = max(config.max_batch_size, 1)
        self.policy: DirectPolicy | OldestPolicy
        if sequencing.HasField("oldest"):
            oldest = sequencing.oldest
            per_instance = max(oldest.max_candidate_sequences, 1)
            self.policy = OldestPolicy(
                rows, list(oldest.preferred_batch_size), oldest.max_queue_delay_microseconds
            )
        else:
            direct = sequencing.direct
            per_instance = rows
            self.policy = DirectPolicy(
                rows,
                direct.max_queue_delay_microseconds,
                direct.minimum_slot_utilization,
                pad=any(c.kind == READY for c in self.controls),
            )
        self.table = SlotTable(len(self.instances), per_instance)
        self._index = {id(instance): k for k, instance in enumerate(self.instances)}
        self._by_id: dict[CorrelationId, Sequence] = {}
        self._clock = clock
        self._wake: Timer | None = None
        self._wake_at = 0
        self._reaper: asyncio.TimerHandle | None = None
        self._pump_soon = False

    # -- accepting requests ------------------------------------------------------

    def enqueue(self, request: InferenceRequest) -> None:
        self.admit()
        if self.iterative and not request.correlation_id:
            request.correlation_id = next(self._auto_ids)
            request.sequence_start = True
        cid = request.correlation_id
        sequence = self._by_id.get(cid)
        try:
            check_correlation_id(self.controls, request, self.model)
            if sequence is None and not request.sequence_start:
                raise self._no_start(cid)
        except NaiadError as exc:
            self._answer(request, InferenceResponse(error=exc))
            return
        now = self._clock()
        if sequence is None:
            sequence = Sequence(cid, initial_state(self.states), now)
            self._by_id[cid] = sequence
            self.table.place(sequence)
        if request.sequence_end:
            del self._by_id[cid]  # a later request of this id must START again
        sink = request.response_sink
        assert sink is not None
        request.response_sink = self._sink(sequence, request, sink)
        if request.outputs and self.states:
            asked = {o.name for o in request.outputs}
            request.outputs.extend(
                RequestedOutput(s.output_name) for s in self.states if s.output_name not in asked
            )
        sequence.pending.append(request)
        sequence.last_ns = now
        self.pump()

    def _sink(
        self, sequence: Sequence, request: InferenceRequest, deliver: ResponseSink
    ) -> ResponseSink:
        states, public = self.states, self.public_outputs
        inputs = request.inputs  # as the client sent them, before controls and state

        def sink(response: InferenceResponse) -> None:
            if response is RESCHEDULED:
                self._requeue(sequence, request, inputs)
                return
            if states and response.error is None:
                take_state(states, response, sequence.state, public)
            if response.final:
                sequence.busy = False
                sequence.last_ns = self._clock()
                if self.iterative and not request.sequence_end and not sequence.pending:
                    self._end(sequence)
            deliver(response)
            if response.final:
                self._arm_reaper()
                self._pump_next()

        return sink

    def _requeue(
        self, sequence: Sequence, request: InferenceRequest, inputs: list[InferInput]
    ) -> None:
        """Queue a rescheduled request again, first in its sequence and without flags."""
        sequence.busy = False
        sequence.last_ns = self._clock()
        if self._by_id.get(sequence.cid) is not sequence:  # its END already freed the slot
            self._answer(request, InferenceResponse(error=self._no_start(sequence.cid)))
            return
        now = time.monotonic_ns()  # the core's clock, as run_batch and the statistics use
        # Triton counts every execution of the request as a success.
        self.stats.record_success(now - request.arrival_ns, request.queue_ns)
        request.inputs = inputs
        request.sequence_start = request.sequence_end = False
        request.queue_start_ns = now
        self.stats.pending += 1  # leaves the queue again when it next runs
        sequence.pending.appendleft(request)
        self._pump_next()

    def _no_start(self, cid: CorrelationId) -> InvalidArgument:
        return InvalidArgument(
            f"inference request for sequence {cid} to model '{self.model}' must "
            "specify the START flag on the first request of the sequence"
        )

    def _end(self, sequence: Sequence) -> None:
        """An iterative sequence is over with its request's final response."""
        if self._by_id.get(sequence.cid) is sequence:
            del self._by_id[sequence.cid]
        self.table.release(sequence)

    def _pump_next(self) -> None:
        if not self._pump_soon and not self._closed:
            self._pump_soon = True
            self._loop.call_soon(self._pump_later)

    def _pump_later(self) -> None:
        self._pump_soon = False
        self.pump()

    # -- forming and starting batches ------------------------------------------------

    def has_work(self) -> bool:
        now = self._clock()
        return any(self._rows(instance, now)[0] for instance in self._idle)

    def take_batch(self) -> list[InferenceRequest]:
        """Unused: batches are formed per instance (see ``_start``)."""
        return []

    def _rows(self, instance: ModelInstance, now: int) -> tuple[Rows, int]:
        row = self.table.occupied[self._index[id(instance)]]
        return self.policy.form(row, now, bool(self.table.backlog))

    def pump(self) -> None:
        """Start a batch on every idle instance whose sequences have one ready.

        Not re-entrant (like the base class's): a batch run inline frees its
        instance inside this loop, and the loop itself picks up what follows.
        """
        if self._closed or self._pumping:
            return
        self._pumping = True
        try:
            self._pump()
        finally:
            self._pumping = False

    def _pump(self) -> None:
        now = self._clock()
        wake = 0
        while self._idle and not self._acquiring:
            chosen: ModelInstance | None = None
            rows: Rows = []
            for instance in reversed(self._idle):
                rows, deadline = self._rows(instance, now)
                if rows:
                    chosen = instance
                    break
                if deadline and (not wake or deadline < wake):
                    wake = deadline
            if chosen is None:
                break
            self._idle.remove(chosen)
            slot = self._slots.get(id(chosen))
            if slot is None:
                self._dispatch(chosen, rows)
                continue
            self._acquiring = True
            slot.acquire(lambda instance=chosen: self._granted(instance))  # type: ignore[misc]
        if wake:
            self._arm_wake(wake, now)

    def _start(self, instance: ModelInstance) -> None:
        """Called by the base class once the rate limiter granted ``instance``."""
        rows, _ = self._rows(instance, self._clock())
        if rows:
            self._dispatch(instance, rows)
        else:
            self._release(instance)

    def _dispatch(self, instance: ModelInstance, rows: Rows) -> None:
        template = list(next(s for s in rows if s is not None).pending[0].inputs)
        filler = None
        batch: list[InferenceRequest] = []
        for sequence in rows:
            if sequence is None:
                filler = filler or self._filler(template)
                batch.append(filler)
                self.stats.pending += 1  # run_batch counts every row as leaving the queue
                continue
            request = sequence.pending.popleft()
            sequence.busy = True
            if request.sequence_start:
                sequence.state = initial_state(self.states)
            request.inputs = request.inputs + control_inputs(self.controls, request, self.batching)
            if self.states:
                request.inputs += state_inputs(self.states, sequence.state)
            if request.sequence_end:
                self.table.release(sequence)
            batch.append(request)
        self.run_batch(instance, batch)

    def _filler(self, template: list[InferInput]) -> InferenceRequest:
        """A row that holds no request (READY false), shaped like the ``template`` inputs."""
        inputs = [
            InferInput(t.name, t.datatype, tuple(t.shape), _zeros(t.array())) for t in template
        ]
        filler = InferenceRequest(self.model, inputs)
        filler.inputs += control_inputs(self.controls, filler, self.batching, ready=False)
        if self.states:
            filler.inputs += state_inputs(self.states, initial_state(self.states))
        filler.batch_size = 1
        filler.queue_start_ns = self._clock()
        filler.response_sink = _discard
        return filler

    # -- timers ------------------------------------------------------------------------

    def _arm_wake(self, deadline: int, now: int) -> None:
        """Look again when a strategy's queue delay expires."""
        if self._wake is not None and self._wake_at <= deadline:
            return
        if self._wake is not None:
            self._wake.cancel()
        self._wake_at = deadline
        self._wake = timers.call_later(self._loop, max(deadline - now, 0) / 1e9, self._on_wake)

    def _on_wake(self) -> None:
        self._wake = None
        self._wake_at = 0
        self.pump()

    def _arm_reaper(self) -> None:
        """One timer releases idle sequences; it runs only while sequences are held."""
        if self._reaper is None and self._by_id and not self._closed:
            self._reaper = self._loop.call_later(self.idle_ns / 1e9, self._reap)

    def _reap(self) -> None:
        self._reaper = None
        now = self._clock()
        next_due = 0
        for cid, sequence in list(self._by_id.items()):
            if not sequence.idle:
                continue
            due = sequence.last_ns + self.idle_ns
            if due <= now:
                del self._by_id[cid]
                self.table.release(sequence)
            elif not next_due or due < next_due:
                next_due = due
        if next_due and not self._closed:
            self._reaper = self._loop.call_later((next_due - now) / 1e9, self._reap)
        elif self._by_id:
            self._arm_reaper()
        self.pump()

    @property
    def sequence_count(self) -> int:
        """Sequences that hold a slot or wait in the backlog (for tests and metrics)."""
        return self.table.active() + len(self.table.backlog)

    def close(self) -> None:
        for timer in (self._wake, self._reaper):
            if timer is not None:
                timer.cancel()
        self._wake = self._reaper = None
        super().close()


def _zeros(array: np.ndarray) -> np.ndarray:
    if array.dtype == np.object_:
        return np.full(array.shape, b"", dtype=np.object_)
    return np.zeros(array.shape, dtype=array.dtype)
