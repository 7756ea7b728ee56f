"""Workers agreeing on the server's state: one order, every worker, a late one catching up."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from naiad.core.errors import NotFound
from naiad.core.types import InferenceRequest, InferenceResponse
from naiad.engine.peers import Cluster
from naiad.engine.peers.journal import Change

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
