"""Workers agreeing on the server's state through the supervisor: one order,
every worker, the worker that took the call first, a restarted one catching up."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from naiad.cluster.coordinator import Coordinator
from naiad.cluster.peers import Cluster
from naiad.core.errors import Internal, InvalidArgument, NotFound
from naiad.core.statistics import ModelStatistics
from naiad.core.stats import ModelStats
from naiad.core.types import InferenceRequest, InferenceResponse
from naiad.engine.changes import LoadModel, RegisterSystemRegion, UnloadModel

pytestmark = pytest.mark.unit

Log = list[tuple[int, str]]


class Control:
    """Model control that records what it is asked; "missing" is unknown everywhere,
    "flaky" fails on worker 1 only, and every load takes ``delay`` seconds."""

    def __init__(self, index: int, log: Log, delay: float = 0.0) -> None:
        self.index, self.log, self.delay = index, log, delay

    async def load(self, name: str, override: Any, files: Any) -> None:
        await asyncio.sleep(self.delay)
        if name == "missing" or (name == "flaky" and self.index == 1):
            raise NotFound(f"no model '{name}'")
        self.log.append((self.index, f"load {name}"))

    async def unload(self, name: str, dependents: bool) -> None:
        self.log.append((self.index, f"unload {name}"))


class Shm:
    def __init__(self, index: int, log: Log) -> None:
        self.index, self.log = index, log

    def register_system(self, name: str, key: str, offset: int, byte_size: int) -> None:
        self.log.append((self.index, f"register {name}"))


class Worker:
    """A data plane that only records the changes it applies."""

    def __init__(self, folder: Path, index: int, count: int, log: Log, delay: float = 0) -> None:
        self.index = index
        self.control = Control(index, log, delay)
        self.shm = Shm(index, log)
        self.cluster = Cluster(index, count, str(folder), self)  # type: ignore[arg-type]

    async def infer(
        self, request: InferenceRequest, *, forwarded: bool = False
    ) -> InferenceResponse:
        assert forwarded  # the worker that took it validated it
        return InferenceResponse(request.model_name, id=f"ran on {self.index}")

    async def infer_stream(
        self, request: InferenceRequest, *, forwarded: bool = False
    ) -> AsyncIterator[InferenceResponse]:
        yield await self.infer(request, forwarded=forwarded)

    def statistics(self, name: str, version: str) -> list[ModelStatistics]:
        """Worker i served i + 1 requests of "m"; worker 1 has no model "late" yet."""
        if name == "late" and self.index == 1:
            raise InvalidArgument("requested model 'late' is not available")
        stats = ModelStats()
        for _ in range(self.index + 1):
            stats.record_success(1000, 10)
        return [stats.snapshot(name or "m", 1)]


class Server:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.log: Log = []
        self.restarted: list[int] = []
        self.coordinator = Coordinator(
            str(folder), 3, lambda index, pid: self.restarted.append(index)
        )
        self.workers = [Worker(folder, i, 3, self.log) for i in range(3)]

    def of(self, index: int) -> list[str]:
        return [what for i, what in self.log if i == index]


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    made = Server(tmp_path)
    await made.coordinator.start()
    for worker in made.workers:
        await worker.cluster.start()
    for worker in made.workers:
        await worker.cluster.catch_up()
    yield made
    for worker in made.workers:
        await worker.cluster.close()
    await made.coordinator.close()


async def test_a_change_is_applied_where_it_was_made_first_then_everywhere(server):
    await server.workers[2].cluster.change(LoadModel("a"))
    assert server.log[0] == (2, "load a")
    assert sorted(server.log) == [(0, "load a"), (1, "load a"), (2, "load a")]
    # A change that fails where it was made fails for the caller and goes nowhere.
    with pytest.raises(NotFound, match="no model 'missing'"):
        await server.workers[1].cluster.change(LoadModel("missing"))
    assert len(server.log) == 3
    assert await server.coordinator.journal(0, os.getpid()) == [LoadModel("a")]


async def test_a_worker_that_fails_what_the_others_applied_is_restarted(server):
    with pytest.raises(NotFound, match=r"no model 'flaky' \(on worker 1, restarting"):
        await server.workers[0].cluster.change(LoadModel("flaky"))
    assert sorted(server.log) == [(0, "load flaky"), (2, "load flaky")]
    assert server.restarted == [1]
    # It is in the journal, for worker 1 to replay when it starts again ...
    assert await server.coordinator.journal(2, os.getpid()) == [LoadModel("flaky")]
    # ... and the next change no longer waits for the worker being restarted.
    await server.workers[2].cluster.close()
    server.coordinator.forget(2)
    await server.workers[0].cluster.change(UnloadModel("flaky"))
    assert server.of(0) == ["load flaky", "unload flaky"]


async def test_a_restarted_worker_replays_what_the_others_did(server, tmp_path):
    await server.workers[1].cluster.change(LoadModel("a"))
    await server.workers[1].cluster.change(RegisterSystemRegion("r", "/key", 0, 8))
    await server.workers[2].cluster.close()  # worker 2 dies ...
    await server.workers[0].cluster.change(UnloadModel("a"))  # ... and misses this
    server.coordinator.forget(2)
    log: Log = []
    reborn = Worker(tmp_path, 2, 3, log)
    await reborn.cluster.start()
    await reborn.cluster.catch_up()
    assert log == [(2, "register r"), (2, "unload a")]
    await reborn.cluster.close()


async def test_a_change_made_during_a_replay_is_applied_after_it(server, tmp_path):
    await server.workers[0].cluster.change(LoadModel("a"))
    await server.workers[2].cluster.close()
    server.coordinator.forget(2)
    log: Log = []
    reborn = Worker(tmp_path, 2, 3, log, delay=0.3)  # its replayed load takes a while
    await reborn.cluster.start()
    replay = asyncio.ensure_future(reborn.cluster.catch_up())
    while not set(server.coordinator._serving) >= {0, 1, 2}:  # it has the journal
        await asyncio.sleep(0.01)
    await server.workers[1].cluster.change(LoadModel("b"))
    await replay
    assert log == [(2, "load a"), (2, "load b")]
    await reborn.cluster.close()


async def test_a_change_goes_on_when_the_worker_that_made_it_is_gone(server):
    await server.workers[2].cluster.close()  # went before it applied the change
    await server.coordinator.change(2, LoadModel("a"))
    assert server.log == [(0, "load a"), (1, "load a")]  # worker 0 in its place, then 1
    assert await server.coordinator.journal(0, os.getpid()) == [LoadModel("a")]
    # Gone, and the next worker cannot apply it: nothing changed anywhere.
    with pytest.raises(NotFound, match="no model 'missing'"):
        await server.coordinator.change(2, LoadModel("missing"))
    assert await server.coordinator.journal(0, os.getpid()) == [LoadModel("a")]


async def test_a_change_is_carried_through_when_its_caller_goes(server, tmp_path):
    """The worker that asked dies, or its client does: the call is cancelled, the
    change is not (a change reaches every worker or none)."""
    server.workers[0].control.delay = 0.3
    asking = asyncio.ensure_future(server.workers[2].cluster.change(LoadModel("a")))
    while not server.log:  # worker 2 applied it; worker 0 is still loading
        await asyncio.sleep(0.01)
    asking.cancel()
    journal = await server.coordinator.journal(1, os.getpid())  # waits for the change to end
    assert journal == [LoadModel("a")]
    assert sorted(server.log) == [(0, "load a"), (1, "load a"), (2, "load a")]


async def test_the_supervisor_answers_only_its_calls(server):
    with pytest.raises(Internal, match="no call 'infer'"):
        await server.coordinator._serve("infer", ())


async def test_a_sequence_runs_on_its_owner(server):
    cluster = server.workers[0].cluster
    assert [cluster.owner(i) for i in (3, 4, 5)] == [0, 1, 2]
    assert cluster.owner("order-17") == server.workers[1].cluster.owner("order-17")
    response = await cluster.infer(2, InferenceRequest("m"))
    assert response.id == "ran on 2"
    assert [r.id async for r in cluster.infer_stream(1, InferenceRequest("m"))] == ["ran on 1"]


async def test_statistics_are_the_whole_servers(server):
    workers = server.workers
    local = workers[0].statistics("m", "")
    (summed,) = await workers[0].cluster.statistics(local, "m", "")
    assert summed.inference_stats.success.count == 1 + 2 + 3
    assert summed.inference_stats.success.ns == 6 * 1000
    # a worker without the model (still loading it) and one that is gone count as nothing
    (late,) = await workers[0].cluster.statistics(workers[0].statistics("late", ""), "late", "")
    assert late.inference_stats.success.count == 1 + 3
    await workers[2].cluster.close()
    (left,) = await workers[0].cluster.statistics(local, "m", "")
    assert left.inference_stats.success.count == 1 + 2
