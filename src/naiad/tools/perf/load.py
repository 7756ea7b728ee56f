"""The requests in flight in one process: a fixed concurrency, or a schedule of arrivals.

Concurrency mode keeps N requests outstanding, each context sending its next
request as soon as the last one answered (perf_analyzer's default).  Rate
mode sends requests at the times a schedule says (constant or Poisson gaps,
or the intervals of a file), on as many connections as it needs.  For a
stateful model every context (or, in rate mode, each of a few sequences)
sends whole sequences of ``--sequence-length`` requests with correlation ids
from ``--sequence-id-range``.

Completed requests are kept as (end, latency, send, receive) times until a
measurement window takes them.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import itertools
import random
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field

from naiad.tools.perf.settings import PerfSettings
from naiad.tools.perf.targets import Connection, RequestFailed, Target


@dataclass
class Sample:
    """The requests that completed in one window of one process."""

    latencies: list[int] = field(default_factory=list)  # ns
    send_ns: int = 0
    recv_ns: int = 0
    errors: list[str] = field(default_factory=list)
    cpu_s: float = 0.0

    def extend(self, other: Sample) -> None:
        self.latencies.extend(other.latencies)
        self.send_ns += other.send_ns
        self.recv_ns += other.recv_ns
        self.errors.extend(other.errors)
        self.cpu_s += other.cpu_s


class Sequences:
    """Correlation ids and the place of each request in its sequence."""

    def __init__(
        self, settings: PerfSettings, steps: int, offset: int = 0, stride: int = 1
    ) -> None:
        self.length = max(settings.sequence_length, 1)
        first, last = settings.sequence_id_range
        self._ids = itertools.cycle(range(first + offset, last + 1, stride))
        self.steps = steps

    def run(self) -> tuple[int, int]:
        """A new sequence: its correlation id and the step it starts from."""
        corrid = next(self._ids)
        return corrid, corrid % self.steps


class Load:
    def __init__(
        self, target: Target, settings: PerfSettings, steps: int, sequences: Sequences | None
    ) -> None:
        self.target = target
        self.settings = settings
        self.steps = steps
        self.sequences = sequences
        self._ends: list[int] = []
        self._records: list[tuple[int, int, int]] = []  # latency, send, recv
        self._errors: list[str] = []
        self._contexts: list[asyncio.Task[None]] = []
        self._scheduler: asyncio.Task[None] | None = None
        self._idle: list[Connection] = []
        self._step = itertools.count()
        self._cpu = time.process_time()

    # -- the levels ----------------------------------------------------------------------

    async def set_concurrency(self, count: int) -> None:
        while len(self._contexts) > count:
            task = self._contexts.pop()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        while len(self._contexts) < count:
            connection = await self.target.connect()
            self._contexts.append(asyncio.ensure_future(self._context(connection)))

    async def set_rate(self, rate: float, intervals_us: list[float]) -> None:
        """Requests at ``rate`` per second (or at the given intervals, in turn)."""
        await self.stop()
        self._scheduler = asyncio.ensure_future(self._schedule(rate, intervals_us))

    async def stop(self) -> None:
        await self.set_concurrency(0)
        if self._scheduler is not None:
            self._scheduler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._scheduler
            self._scheduler = None
        for connection in self._idle:
            await connection.close()
        self._idle.clear()

    def take(self, start_ns: int, end_ns: int) -> Sample:
        """The requests that completed between ``start_ns`` and ``end_ns``; older ones
        are forgotten."""
        first = bisect.bisect_left(self._ends, start_ns)
        last = bisect.bisect_left(self._ends, end_ns)
        records = self._records[first:last]
        del self._ends[:last], self._records[:last]
        cpu, self._cpu = time.process_time() - self._cpu, time.process_time()
        errors, self._errors = self._errors, []
        return Sample(
            latencies=[r[0] for r in records],
            send_ns=sum(r[1] for r in records),
            recv_ns=sum(r[2] for r in records),
            errors=errors,
            cpu_s=cpu,
        )

    # -- sending -------------------------------------------------------------------------

    async def _send(
        self, connection: Connection, step: int, sequence: tuple[int, bool, bool] | None
    ) -> None:
        start = time.perf_counter_ns()
        try:
            send, recv = await connection.infer(step, sequence)
        except (RequestFailed, ConnectionError, OSError) as exc:
            self._errors.append(str(exc) or type(exc).__name__)
            await asyncio.sleep(0.01)  # a failing server is not hammered in a tight loop
            return
        end = time.perf_counter_ns()
        self._ends.append(end)
        self._records.append((end - start, send, recv))

    async def _context(self, connection: Connection) -> None:
        try:
            while True:
                if self.sequences is None:
                    await self._send(connection, next(self._step), None)
                    continue
                corrid, step = self.sequences.run()
                length = self.sequences.length
                for i in range(length):
                    await self._send(connection, step + i, (corrid, i == 0, i == length - 1))
        finally:
            await connection.close()

    async def _schedule(self, rate: float, intervals_us: list[float]) -> None:
        """Send at the scheduled times, each request on a free connection."""
        spacing: Iterator[float] = (
            itertools.cycle([i / 1e6 for i in intervals_us])
            if intervals_us
            else gaps(rate, self.settings.request_distribution)
        )
        sequences = [_Running(self.sequences) for _ in range(4)] if self.sequences else []
        await paced(spacing, lambda n: self._scheduled(n, sequences))

    async def _scheduled(self, n: int, sequences: list[_Running]) -> None:
        connection = self._idle.pop() if self._idle else await self.target.connect()
        try:
            if not sequences:
                await self._send(connection, next(self._step), None)
                return
            running = sequences[n % len(sequences)]
            async with running.lock:  # a sequence's requests go one after another
                await self._send(connection, *running.next_request())
        finally:
            self._idle.append(connection)


class _Running:
    """One of the sequences rate mode keeps going: where it is, and one request at a time."""

    def __init__(self, sequences: Sequences) -> None:
        self.sequences = sequences
        self.corrid, self.step = sequences.run()
        self.index = 0
        self.lock = asyncio.Lock()

    def next_request(self) -> tuple[int, tuple[int, bool, bool]]:
        """The step to send and its (correlation id, start, end); a new sequence after the end."""
        index, length = self.index, self.sequences.length
        request = (self.step + index, (self.corrid, index == 0, index == length - 1))
        if index == length - 1:
            self.corrid, self.step = self.sequences.run()
            self.index = 0
        else:
            self.index = index + 1
        return request


async def paced(spacing: Iterator[float], send: Callable[[int], Awaitable[None]]) -> None:
    """Start ``send(n)`` at the times ``spacing`` spaces out, without waiting for earlier
    ones (rate mode); until cancelled, which cancels the sends still running."""
    running: set[asyncio.Future[None]] = set()
    loop = asyncio.get_running_loop()
    due = loop.time()
    try:
        for n in itertools.count():
            due += next(spacing)
            delay = due - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            task = asyncio.ensure_future(send(n))
            running.add(task)
            task.add_done_callback(running.discard)
    finally:
        for pending in list(running):
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pending


def gaps(rate: float, distribution: str) -> Iterator[float]:
    """The seconds between requests at ``rate`` per second: constant, or Poisson."""
    if distribution == "poisson":
        return (random.expovariate(rate) for _ in itertools.count())
    return itertools.repeat(1.0 / rate)
