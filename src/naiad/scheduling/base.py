"""What every scheduler shares: instances to run batches on, and how results leave.

A scheduler owns its queue and calls the backend; the core hands it
validated requests whose ``response_sink`` already does the core's part
(output shaping, statistics, delivery to the frontend).

A subclass keeps the queue: ``enqueue`` stores a request and calls
``pump``; ``has_work`` says whether a batch could be formed now and
``take_batch`` forms it.  The base class owns the idle instances, the rate
limiter's slots (an instance asks for its resources only when there is work,
and forms its batch once they are granted, so the batch holds everything that
arrived meanwhile), the worker threads and the completion of batches.

Small models run inline: a thread hand-off costs tens of microseconds (far
more on a loaded machine), which dwarfs a model that itself takes a few.
An instance whose backend allows it (``ModelInstance.inline_ok``) and whose
recent executions averaged under its ``inline_max_ns`` runs on the event
loop; a few slow batches in a row move it back to its worker thread.  A
batch that nothing else in the server could run beside (``_alone``) runs on
the loop for longer (``alone_max_ns``): its thread would overlap nothing.  On the
worker thread what counts is the thread's CPU time: its wall time also holds
waits for the GIL, which say nothing about the model.  Not for a model that
may wait without computing (``ModelInstance.may_wait``): there wall time
counts, or a model that sleeps would look fast.
"""

from __future__ import annotations

import abc
import asyncio
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, ClassVar

from naiad.backends.base import RunOnThread
from naiad.core.errors import Cancelled, Internal, NaiadError
from naiad.core.types import InferenceRequest, InferenceResponse

_EWMA = 0.2

if TYPE_CHECKING:
    from naiad.backends.base import ModelInstance
    from naiad.core.stats import ModelStats
    from naiad.scheduling.admission import ModelAdmission
    from naiad.scheduling.rate_limiter import InstanceSlot


class ServerLoad:
    """How many requests every model of one server holds (ensembles aside).

    A batch that nothing else could run beside loses nothing by holding the
    event loop: see :meth:`Scheduler._alone`.
    """

    def __init__(self) -> None:
        self.in_flight = 0


class Scheduler(abc.ABC):
    """Queues requests of one model version and runs them on its instances."""

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
        self.instances = instances
        self.stats = stats
        self.decoupled = decoupled
        #: Checked by the core before ``enqueue``; released in ``request_done``.
        self.admission = admission
        self._loop = asyncio.get_running_loop()
        # A thread of its own per instance, as Triton has: models with
        # thread-affine state always run on the same thread.
        self._executors = {
            id(instance): ThreadPoolExecutor(1, thread_name_prefix="naiad-instance")
            for instance in instances
        }
        self._slots: dict[int, InstanceSlot] = {}
        if slots is not None:
            for instance, slot in zip(instances, slots, strict=False):
                if slot is not None:
                    self._slots[id(instance)] = slot
        # An instance is listed once per batch it may hold (rate-limited ones once).
        # ``pump`` takes from the end, where every instance's first turn lies:
        # requests spread over the instances before any waits behind another.
        self._depths = {id(instance): self._depth(instance) for instance in instances}
        depth = max(self._depths.values(), default=1)
        self._pipelined = depth > 1
        self._idle: list[ModelInstance] = [
            instance
            for turn in reversed(range(depth))
            for instance in reversed(instances)
            if turn < self._depths[id(instance)]
        ]
        self._acquiring = False
        self._pumping = False
        self._closed = False
        #: Moving average of each instance's execution time; absent until measured.
        self._exec_ns: dict[int, float] = {}
        self.in_flight = 0
        #: The server's, shared by its models' schedulers; its own when alone.
        self.load = load if load is not None else ServerLoad()
        #: Whether a batch forms only once the loop has read every request ready
        #: with it (the dynamic batcher's): then ``in_flight`` at that moment
        #: says whether another instance would have work.
        self.whole_turns = False
        self._idle_event: asyncio.Event | None = None

    #: Whether instances get ``pipeline_depth`` batches at once; only for
    #: schedulers whose batches do not depend on instances being busy.
    pipelines: ClassVar[bool] = False

    def _depth(self, instance: ModelInstance) -> int:
        if not self.pipelines or id(instance) in self._slots:
            return 1
        return max(1, instance.pipeline_depth)

    @abc.abstractmethod
    def enqueue(self, request: InferenceRequest) -> None:
        """Accept a validated request; its responses go to ``request.response_sink``."""

    @abc.abstractmethod
    def has_work(self) -> bool:
        """Whether a batch is ready to run now."""

    @abc.abstractmethod
    def take_batch(self) -> list[InferenceRequest]:
        """Remove and return the next batch (empty when nothing is ready after all)."""

    def admit(self) -> None:
        """Count a request in (``request_done`` counts it out)."""
        self.in_flight += 1
        self.load.in_flight += 1

    def withdraw(self) -> None:
        """Count out a request admitted that will not reach ``request_done``."""
        self.in_flight -= 1
        self.load.in_flight -= 1

    async def drain(self) -> None:
        """Wait until every accepted request has been answered."""
        while self.in_flight:
            self._idle_event = asyncio.Event()
            await self._idle_event.wait()

    def close(self) -> None:
        self._closed = True
        for slot in self._slots.values():
            slot.close()
        for executor in self._executors.values():
            executor.shutdown(wait=False, cancel_futures=True)

    # -- dispatch --------------------------------------------------------------

    def pump(self) -> None:
        """Start batches on idle instances while there is work.

        Not re-entrant: an inline batch that completes frees its instance
        while this loop runs, and the loop itself picks up the next batch.
        """
        if self._pumping:
            return
        self._pumping = True
        try:
            refused = 0
            while self._idle and not self._acquiring and self.has_work():
                instance = self._idle.pop()
                if self._pipelined and not instance.takes_another():
                    # A later turn of a busy instance that holds enough (idle instances'
                    # first turns lie at the end, so every instance is busy): try others.
                    self._idle.insert(0, instance)
                    refused += 1
                    if refused >= len(self.instances):
                        break
                    continue
                slot = self._slots.get(id(instance))
                if slot is None:
                    self._start(instance)
                    continue
                self._acquiring = True
                slot.acquire(lambda instance=instance: self._granted(instance))  # type: ignore[misc]
        finally:
            self._pumping = False

    def _granted(self, instance: ModelInstance) -> None:
        self._acquiring = False
        if self._closed:
            self._slots[id(instance)].release()
            return
        self._start(instance)
        self.pump()

    def _start(self, instance: ModelInstance) -> None:
        batch = self.take_batch() if self.has_work() else []
        if batch:
            self.run_batch(instance, batch)
        else:
            self._release(instance)

    def _release(self, instance: ModelInstance) -> None:
        slot = self._slots.get(id(instance))
        if slot is not None:
            slot.release()
        if self._pipelined:
            depth = self._depths[id(instance)]
            if depth > 1 and self._idle.count(instance) + 1 < depth:
                self._idle.insert(0, instance)  # it still runs a batch: idle instances go first
                return
        self._idle.append(instance)

    # -- running a batch -------------------------------------------------------

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
                # Never 0 once started: the core reads 0 as "did not execute".
                request.queue_ns = max(now - request.queue_start_ns, 1)
                live.append(request)
        self.stats.record_started(len(live))  # the pending-requests gauge
        if not live:
            self.on_instance_free(instance)
            return
        if instance.is_async:
            started: Any = instance.execute_async(live)  # a coroutine or already a future
            future = (
                started if isinstance(started, asyncio.Future) else asyncio.ensure_future(started)
            )
            future.add_done_callback(lambda f: self._batch_done(f, instance, live, now))
            return
        average = self._exec_ns.get(id(instance))
        if instance.inline_ok and average is not None:
            if average < instance.inline_max_ns:
                self._run_inline(instance, live, now, instance.inline_max_ns)
                return
            if average < instance.alone_max_ns and self._alone(len(live)):
                self._run_inline(instance, live, now, instance.alone_max_ns)
                return
        self._run_on_thread(instance, live, now)

    def _alone(self, batch: int) -> bool:
        """Whether nothing else could run while a batch of ``batch`` requests holds the loop.

        No other model's request is in flight, and no request of this model
        that another instance could take: its only instance (later requests
        would wait for it anyway), or a batch that holds every request the
        model has, formed once the loop read all that were ready.  Such a
        batch gains nothing from its thread and pays two hand-offs: each a
        wake-up, then a wait for the GIL behind the loop's turn.  On this
        project's 2-core VM a FIL batch-1 request took 975 µs through its
        thread, 286 µs inline.  A batch formed the moment its request arrived
        (the default scheduler's) cannot know of the requests the loop has not
        read yet, which sibling instances would run beside it: it keeps its
        thread.
        """
        if self.load.in_flight > self.in_flight:
            return False
        return len(self.instances) == 1 or (self.whole_turns and self.in_flight == batch)

    def _run_on_thread(
        self, instance: ModelInstance, batch: list[InferenceRequest], start_ns: int
    ) -> None:
        executor = self._executors[id(instance)]
        future = self._loop.run_in_executor(executor, self._timed, instance, batch)
        future.add_done_callback(lambda f: self._batch_done(f, instance, batch, start_ns))

    def _timed(
        self, instance: ModelInstance, batch: list[InferenceRequest]
    ) -> list[InferenceResponse] | None:
        """``execute`` on a worker thread, measuring the CPU it took there."""
        clock = time.monotonic_ns if instance.may_wait else time.thread_time_ns
        start = clock()
        try:
            return instance.execute(batch)
        finally:
            self._observe(instance, clock() - start)

    def _observe(self, instance: ModelInstance, elapsed_ns: int) -> None:
        key = id(instance)
        previous = self._exec_ns.get(key)
        self._exec_ns[key] = (
            float(elapsed_ns) if previous is None else previous + _EWMA * (elapsed_ns - previous)
        )

    def _run_inline(
        self, instance: ModelInstance, batch: list[InferenceRequest], start_ns: int, bound: int
    ) -> None:
        start = time.monotonic_ns()
        responses = None
        error: NaiadError | None = None
        try:
            responses = instance.execute(batch)
        except RunOnThread:
            self._run_on_thread(instance, batch, start_ns)
            return
        except Exception as exc:
            error = _as_error(exc)
        # Wall time here (a cheap clock); clamped, so one preemption of the
        # process cannot send the instance back to its thread on its own.
        self._observe(instance, min(time.monotonic_ns() - start, 2 * bound))
        self._finish_batch(instance, batch, start_ns, responses, error)

    def _batch_done(
        self,
        future: asyncio.Future,
        instance: ModelInstance,
        batch: list[InferenceRequest],
        start_ns: int,
    ) -> None:
        responses = None
        error: NaiadError | None = None
        try:
            responses = future.result()
        except Exception as exc:
            error = _as_error(exc)
        self._finish_batch(instance, batch, start_ns, responses, error)

    def _finish_batch(
        self,
        instance: ModelInstance,
        batch: list[InferenceRequest],
        start_ns: int,
        responses: Sequence[InferenceResponse | None] | None,
        error: NaiadError | None,
    ) -> None:
        """Answer every request of a batch that ran (or failed) and free its instance."""
        elapsed = time.monotonic_ns() - start_ns
        if error is None:
            timings = instance.compute_ns or (0, elapsed, 0)
            rows = batch[0].batch_size if len(batch) == 1 else sum(r.batch_size for r in batch)
            self.stats.record_execution(rows, len(batch), *timings)
            if not self.decoupled or responses is not None:
                if responses is None or len(responses) != len(batch):
                    error = Internal(
                        "backend returned "
                        f"{0 if responses is None else len(responses)} responses "
                        f"for {len(batch)} requests"
                    )
                else:
                    # Lengths checked: zip's strict= would cost a keyword parse per call.
                    for request, response in zip(batch, responses):  # noqa: B905
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
        self.load.in_flight -= 1
        if self.admission is not None:
            self.admission.leave()
        if not self.in_flight and self._idle_event is not None:
            self._idle_event.set()

    def on_instance_free(self, instance: ModelInstance) -> None:
        """``instance`` finished a batch and may take the next one."""
        self._release(instance)
        if not self._closed:
            self.pump()


def _as_error(exc: Exception) -> NaiadError:
    """What a batch's requests are answered with when ``execute`` raised ``exc``."""
    if isinstance(exc, NaiadError):
        return exc
    return Internal(f"{type(exc).__name__}: {exc}")  # a backend bug must not take the server down
