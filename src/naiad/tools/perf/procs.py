"""The load spread over several client processes, when one core cannot send it.

A Python client spends tens of microseconds of CPU per request; at high
concurrency one process would measure itself.  Each child process opens its
own target and connections and runs a :class:`~naiad.tools.perf.load.Load`
with its share of the concurrency (or rate); the parent asks every child for
the requests completed in each window.  ``perf_counter_ns`` is the system's
monotonic clock, the same in every process, so windows line up.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
from multiprocessing.connection import Connection as Pipe
from typing import Any

from naiad.tools.interrupt import ignore_in_child
from naiad.tools.perf.load import Load, Sample, Sequences
from naiad.tools.perf.loop import run_on_new_loop
from naiad.tools.perf.model import ModelInfo, build_steps
from naiad.tools.perf.settings import PerfError, PerfSettings
from naiad.tools.perf.targets import Target, make_target


class Group:
    """The load of this process alone (the usual case)."""

    def __init__(self, load: Load) -> None:
        self.load = load
        self.processes = 1

    async def set_concurrency(self, count: int) -> None:
        await self.load.set_concurrency(count)

    async def set_rate(self, rate: float, intervals_us: list[float]) -> None:
        await self.load.set_rate(rate, intervals_us)

    async def take(self, start_ns: int, end_ns: int) -> Sample:
        return self.load.take(start_ns, end_ns)

    async def stop(self) -> None:
        await self.load.stop()


class Processes:
    """The same interface over ``count`` child processes."""

    def __init__(self, settings: PerfSettings, count: int) -> None:
        context = multiprocessing.get_context("spawn")
        self.processes = count
        self._pipes: list[Pipe] = []
        self._children = []
        for index in range(count):
            mine, theirs = context.Pipe()
            child = context.Process(target=_child, args=(settings, index, count, theirs),
                                    daemon=True)  # fmt: skip
            child.start()
            theirs.close()
            self._pipes.append(mine)
            self._children.append(child)

    async def start(self) -> None:
        answers = await self._all([None] * self.processes)
        for answer in answers:
            if answer != "ready":  # the child's PerfError
                await self.stop()
                raise PerfError(answer)

    async def set_concurrency(self, count: int) -> None:
        shares = [count // self.processes + (i < count % self.processes)
                  for i in range(self.processes)]  # fmt: skip
        await self._all([("concurrency", share) for share in shares])

    async def set_rate(self, rate: float, intervals_us: list[float]) -> None:
        spread = [i * self.processes for i in intervals_us]
        await self._all([("rate", rate / self.processes, spread)] * self.processes)

    async def take(self, start_ns: int, end_ns: int) -> Sample:
        total = Sample()
        for sample in await self._all([("take", start_ns, end_ns)] * self.processes):
            total.extend(sample)
        return total

    async def stop(self) -> None:
        running = [p for p, c in zip(self._pipes, self._children, strict=True) if c.is_alive()]
        for pipe in running:
            with contextlib.suppress(OSError):
                pipe.send(("stop",))
        for child in self._children:
            await asyncio.to_thread(child.join, 10)
            if child.is_alive():
                child.kill()

    async def _all(self, commands: list[Any]) -> list[Any]:
        loop = asyncio.get_running_loop()
        for pipe, command in zip(self._pipes, commands, strict=True):
            if command is not None:
                pipe.send(command)
        return list(await asyncio.gather(*(loop.run_in_executor(None, p.recv)
                                           for p in self._pipes)))  # fmt: skip


def _child(settings: PerfSettings, index: int, count: int, pipe: Pipe) -> None:
    ignore_in_child()
    run_on_new_loop(_serve(settings, index, count, pipe))


async def _serve(settings: PerfSettings, index: int, count: int, pipe: Pipe) -> None:
    loop = asyncio.get_running_loop()
    try:
        target, load = await prepared(settings, index, count)
    except PerfError as exc:
        pipe.send(str(exc))
        return
    pipe.send("ready")
    try:
        while True:
            command = await loop.run_in_executor(None, pipe.recv)
            if command[0] == "concurrency":
                await load.set_concurrency(command[1])
                pipe.send(None)
            elif command[0] == "rate":
                await load.set_rate(command[1], command[2])
                pipe.send(None)
            elif command[0] == "take":
                pipe.send(load.take(command[1], command[2]))
            else:
                await load.stop()
                pipe.send(None)
                return
    finally:
        await target.close()


async def prepared(
    settings: PerfSettings, index: int = 0, count: int = 1, model: ModelInfo | None = None
) -> tuple[Target, Load]:
    """A target opened and its requests encoded, and a load ready to send them."""
    target = make_target(settings)
    try:
        found = await target.open()
        model = model or found
        streams = build_steps(model, settings)
        target.prepare(model, streams)
    except BaseException:
        await target.close()
        raise
    steps = sum(len(s) for s in streams)
    sequences = Sequences(settings, steps, index, count) if model.sequence else None
    return target, Load(target, settings, steps, sequences)
