"""The generations in flight: a fixed concurrency, or arrivals at a rate.

As :class:`naiad.tools.perf.load.Load` sends perf's requests, for streams:
concurrency mode keeps N requests outstanding, each on a stream of its own
that sends the next prompt as soon as the last stream ended; rate mode
starts requests at constant or Poisson intervals, each on a free stream.
Finished generations are kept, in the order they ended, until a measurement
takes them.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import itertools
import time
from dataclasses import dataclass, field

from naiad.tools.perf.llm.streams import Generation, Stream, Transport
from naiad.tools.perf.load import gaps, paced
from naiad.tools.perf.targets import RequestFailed


@dataclass
class Taken:
    """The generations that ended in one stretch of time, the errors, the client's CPU."""

    generations: list[Generation] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    cpu_s: float = 0.0

    def extend(self, other: Taken) -> None:
        self.generations.extend(other.generations)
        self.errors.extend(other.errors)
        self.cpu_s += other.cpu_s


class LlmLoad:
    def __init__(self, transport: Transport, distribution: str = "constant") -> None:
        self.transport = transport
        self.distribution = distribution
        self._ends: list[int] = []
        self._done: list[Generation] = []
        self._errors: list[str] = []
        self._contexts: list[asyncio.Task[None]] = []
        self._scheduler: asyncio.Task[None] | None = None
        self._idle: list[Stream] = []
        self._prompt = itertools.count()
        self._cpu = time.process_time()

    async def set_concurrency(self, count: int) -> None:
        await self._stop_schedule()
        while len(self._contexts) > count:
            task = self._contexts.pop()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        while len(self._contexts) < count:
            stream = await self.transport.connect()
            self._contexts.append(asyncio.ensure_future(self._context(stream)))

    async def set_rate(self, rate: float) -> None:
        await self.set_concurrency(0)
        self._scheduler = asyncio.ensure_future(self._schedule(rate))

    async def stop(self) -> None:
        await self.set_concurrency(0)
        for stream in self._idle:
            await stream.close()
        self._idle.clear()

    def take(self, start_ns: int, end_ns: int) -> Taken:
        """The generations that ended between ``start_ns`` and ``end_ns``; older ones are
        forgotten."""
        first = bisect.bisect_left(self._ends, start_ns)
        last = bisect.bisect_left(self._ends, end_ns)
        done = self._done[first:last]
        del self._ends[:last], self._done[:last]
        cpu, self._cpu = time.process_time() - self._cpu, time.process_time()
        errors, self._errors = self._errors, []
        return Taken(done, errors, cpu)

    # -- sending -------------------------------------------------------------------------

    async def _send(self, stream: Stream) -> None:
        try:
            generation = await stream.generate(next(self._prompt))
        except (RequestFailed, ConnectionError, OSError) as exc:
            self._errors.append(str(exc) or type(exc).__name__)
            await asyncio.sleep(0.01)  # a failing server is not hammered in a tight loop
            return
        # Streams end out of order; keep the list sorted by end for take()'s bisection.
        at = bisect.bisect_right(self._ends, generation.end_ns)
        self._ends.insert(at, generation.end_ns)
        self._done.insert(at, generation)

    async def _context(self, stream: Stream) -> None:
        try:
            while True:
                await self._send(stream)
        finally:
            await stream.close()

    async def _schedule(self, rate: float) -> None:
        await paced(gaps(rate, self.distribution), lambda _: self._scheduled())

    async def _scheduled(self) -> None:
        stream = self._idle.pop() if self._idle else await self.transport.connect()
        try:
            await self._send(stream)
        except asyncio.CancelledError:
            await stream.close()  # cut mid-stream: not reusable
            raise
        self._idle.append(stream)

    async def _stop_schedule(self) -> None:
        if self._scheduler is not None:
            self._scheduler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._scheduler
            self._scheduler = None
