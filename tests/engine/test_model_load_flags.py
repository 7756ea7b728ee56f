"""``--model-load-thread-count`` and ``--model-load-retry-count``, as Triton means them.

Thread count: how many model versions load their instances at the same time
(Triton's load thread pool, default 4); the others are LOADING and wait.
Retry count: a version whose load failed is started afresh up to that many
more times (Triton's ``for retry in 0..load_retry`` around creating the model),
so a model that fails once, then loads, is served with a retry count of 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from support.repository_models import Gates, gate_backend, write_gate_model

from naiad import Server
from naiad.core.errors import InvalidArgument

pytestmark = pytest.mark.protocol

WAIT_S = 30.0


@contextlib.asynccontextmanager
async def serving(repo: Path, gates: Gates | None = None, **settings: Any) -> AsyncIterator[Server]:
    server = Server(repo, model_control_mode="explicit", **settings)
    if gates is not None:
        server.dataplane.backends.register("gate", gate_backend(gates))
    await server.start_async()
    try:
        yield server
    finally:
        if gates is not None:
            gates.load_open.set()
        await server.stop_async(10)


async def eventually(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        assert time.monotonic() < deadline, f"never: {what}"
        await asyncio.sleep(0.01)


async def stays(check: Callable[[], bool], seconds: float) -> bool:
    """Whether ``check`` holds all along ``seconds`` (what must not happen, watched)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not check():
            return False
        await asyncio.sleep(0.01)
    return True


def _loading(server: Server, names: list[str]) -> bool:
    registry = server.dataplane.registry.models
    return all(
        name in registry and 1 in registry[name].versions
        and registry[name].versions[1].state.name == "LOADING"
        for name in names
    )  # fmt: skip


@pytest.mark.parametrize("threads", [1, 2])
async def test_thread_count_bounds_the_models_loading_at_once(repo: Path, threads: int) -> None:
    names = ["g1", "g2", "g3"]
    for name in names:
        write_gate_model(repo, name)
    gates = Gates()
    async with serving(repo, gates, model_load_thread_count=threads) as server:
        loads = [asyncio.create_task(server.dataplane.load_model(n)) for n in names]
        await eventually(lambda: gates.active_loads == threads, f"{threads} loads at once")
        await eventually(lambda: _loading(server, names), "every model LOADING")
        assert await stays(lambda: gates.active_loads == threads, 1.0), "a load took no slot"
        gates.load_open.set()
        await asyncio.gather(*loads)
        assert all(server.model_ready(n) for n in names)
    assert gates.max_active_loads == threads


async def test_the_default_is_four_at_once(repo: Path) -> None:
    names = [f"g{i}" for i in range(5)]
    for name in names:
        write_gate_model(repo, name)
    gates = Gates()
    async with serving(repo, gates) as server:
        loads = [asyncio.create_task(server.dataplane.load_model(n)) for n in names]
        await eventually(lambda: gates.active_loads == 4, "four loads at once")
        await eventually(lambda: _loading(server, names), "every model LOADING")
        gates.load_open.set()
        await asyncio.gather(*loads)
    assert gates.max_active_loads == 4


CONFIG = """
backend: "python"
max_batch_size: 0
input [{ name: "X" data_type: TYPE_FP32 dims: [ -1 ] }]
output [{ name: "Y" data_type: TYPE_FP32 dims: [ -1 ] }]
instance_group [{ kind: KIND_CPU count: 1 }]
"""

#: Fails its first FAILURES loads; each load leaves a mark in the model's folder.
FLAKY = """
from pathlib import Path

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        marks = Path(args["model_repository"]) / "loads"
        loads = len(marks.read_text()) + 1 if marks.exists() else 1
        marks.write_text("x" * loads)
        if loads <= {failures}:
            raise RuntimeError(f"load {{loads}} fails on purpose")

    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "Y", pb_utils.get_input_tensor_by_name(r, "X").as_numpy())]) for r in requests]
"""


def _flaky(repo: Path, failures: int) -> Path:
    model = repo / "flaky"
    (model / "1").mkdir(parents=True)
    (model / "config.pbtxt").write_text(CONFIG)
    (model / "1" / "model.py").write_text(FLAKY.format(failures=failures))
    return model / "loads"  # args["model_repository"] is the model's folder


@pytest.mark.parametrize(
    ("retries", "failures", "loads"),
    [(1, 1, 2), (3, 2, 3)],
    ids=["fails-once-one-retry", "fails-twice-three-retries"],
)
async def test_a_retry_loads_a_model_that_failed(
    repo: Path, retries: int, failures: int, loads: int
) -> None:
    marks = _flaky(repo, failures)
    async with serving(repo, model_load_retry_count=retries) as server:
        await server.dataplane.load_model("flaky")
        assert server.model_ready("flaky")
    assert len(marks.read_text()) == loads


@pytest.mark.parametrize(("retries", "failures"), [(0, 1), (2, 3)], ids=["no-retry", "two"])
async def test_a_model_that_fails_every_try_fails_after_the_retries(
    repo: Path, retries: int, failures: int
) -> None:
    marks = _flaky(repo, failures)
    async with serving(repo, model_load_retry_count=retries) as server:
        with pytest.raises(InvalidArgument, match=f"load {retries + 1} fails on purpose"):
            await server.dataplane.load_model("flaky")
        assert not server.model_ready("flaky")
    assert len(marks.read_text()) == retries + 1
