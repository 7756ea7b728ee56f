"""Workers agreeing on the server's state: one order, every worker, a late one catching up."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from naiad.cluster.journal import Change
from naiad.cluster.peers import Cluster
from naiad.core.errors import InvalidArgument, NotFound
from naiad.core.statistics import ModelStatistics
from naiad.core.stats import ModelStats
from naiad.core.types import InferenceRequest, InferenceResponse

pytestmark = pytest.mark.unit


class Worker:
    """A data plane that only records the changes it applies."""

    def __init__(self, folder: Path, index: int, count: int, log: list[tuple[int, str]]) -> None:
        self.index = index
        self.log = log
        self.cluster = Cluster(index, count, str(folder), self)

    async def infer(self, request: InferenceRequest) -> InferenceResponse:
        return InferenceResponse(request.model_name, id=f"ran on {self.index}")

    async def infer_stream(self, request: InferenceRequest) -> AsyncIterator[InferenceResponse]:
        yield await self.infer(request)

    def statistics(self, name: str, version: str) -> list[ModelStatistics]:
        """Worker i served i + 1 requests of "m"; worker 1 has no model "late" yet."""
        if name == "late" and self.index == 1:
            raise InvalidArgument("requested model 'late' is not available")
        stats = ModelStats()
        for _ in range(self.index + 1):
            stats.record_success(1000, 10)
        return [stats.snapshot(name or "m", 1)]

    async def apply_here(self, change: Change) -> None:
        method, args = change
        if args[0] == "missing":
            raise NotFound("no model 'missing'")
        self.log.append((self.index, f"{method} {args[0]}"))


@pytest.fixture
async def workers(tmp_path: Path) -> AsyncIterator[list[Worker]]:
    log: list[tuple[int, str]] = []
    made = [Worker(tmp_path, i, 3, log) for i in range(3)]
    for worker in made:
        await worker.cluster.start()
    for worker in made:
        await worker.cluster.catch_up()
    yield made
    for worker in made:
        await worker.cluster.close()


async def test_a_change_is_applied_by_the_coordinator_first_then_everywhere(workers):
    await workers[2].cluster.change(("load_model", ("a", None, None)))
    assert workers[0].log[0] == (0, "load_model a")  # worker 0 coordinates
    assert sorted(workers[0].log) == [(0, "load_model a"), (1, "load_model a"),
                                      (2, "load_model a")]  # fmt: skip
    # A change that fails where it is tried first fails for the caller and goes nowhere.
    with pytest.raises(NotFound, match="no model 'missing'"):
        await workers[1].cluster.change(("load_model", ("missing", None, None)))
    assert len(workers[0].log) == 3


async def test_a_restarted_worker_replays_what_the_others_did(workers, tmp_path):
    await workers[1].cluster.change(("load_model", ("a", None, None)))
    await workers[1].cluster.change(("shm_register", ("system", "r", {})))
    await workers[2].cluster.close()  # worker 2 dies ...
    await workers[0].cluster.change(("unload_model", ("a", False)))  # ... and misses this
    log: list[tuple[int, str]] = []
    reborn = Worker(tmp_path, 2, 3, log)
    await reborn.cluster.start()
    await reborn.cluster.catch_up()
    assert log == [(2, "shm_register system"), (2, "unload_model a")]
    await reborn.cluster.close()


async def test_with_worker_0_gone_the_next_coordinates(workers):
    await workers[0].cluster.close()
    await workers[2].cluster.change(("load_model", ("b", None, None)))
    assert workers[0].log[0] == (1, "load_model b")


async def test_a_sequence_runs_on_its_owner(workers):
    cluster = workers[0].cluster
    assert [cluster.owner(i) for i in (3, 4, 5)] == [0, 1, 2]
    assert cluster.owner("order-17") == workers[1].cluster.owner("order-17")
    response = await cluster.infer(2, InferenceRequest("m"))
    assert response.id == "ran on 2"
    assert [r.id async for r in cluster.infer_stream(1, InferenceRequest("m"))] == ["ran on 1"]


async def test_statistics_are_the_whole_servers(workers):
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
