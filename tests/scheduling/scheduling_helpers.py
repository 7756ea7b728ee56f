"""A backend that records what the schedulers hand it, and helpers to drive it.

``OUTPUT0 = INPUT0 * 2`` per request.  The recorder keeps every batch an
instance executed (request ids, rows, instance name), how many ran at once,
and can hold executions until the test releases them, so tests observe
batching, ordering and concurrency without depending on timing.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from naiad import Server
from naiad.backends.base import Backend, InstanceSpec, LoadContext, ModelInstance
from naiad.core import datatypes
from naiad.core.errors import Internal
from naiad.core.types import InferenceRequest, InferenceResponse, InferInput, OutputTensor

WAIT_S = 30.0


@dataclass
class Batch:
    model: str
    instance: str
    ids: list[str]
    rows: list[int]
    first_values: list[float]
    #: The thread it ran on: an instance's own are ``naiad-instance``, else the loop's.
    thread: str = ""


@dataclass
class Recorder:
    batches: list[Batch] = field(default_factory=list)
    active: int = 0
    max_active: int = 0
    #: While set, executions wait for ``release`` (``hold_first``: only the first one).
    hold: bool = False
    hold_first: bool = False
    release: threading.Event = field(default_factory=threading.Event)
    barrier: threading.Barrier | None = None
    fail_warmup: bool = False
    #: Executions of these models also wait for ``release``.
    hold_models: set[str] = field(default_factory=set)
    #: ``(inline_max_ns, alone_max_ns)``: the instances may run on the event loop
    #: (``ModelInstance.inline_ok``) within these bounds.
    inline: tuple[int, int] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ids(self, model: str | None = None) -> list[list[str]]:
        return [b.ids for b in self.batches if model is None or b.model == model]

    def served(self) -> list[list[str]]:
        """Batches of real requests (warmup excluded)."""
        return [b.ids for b in self.batches if not b.ids[0].startswith("warmup:")]


class RecordingInstance(ModelInstance):
    def __init__(self, recorder: Recorder, ctx: LoadContext, spec: InstanceSpec) -> None:
        self.recorder = recorder
        self.model = ctx.name
        self.name = spec.name
        if recorder.inline is not None:
            self.inline_ok = True
            self.inline_max_ns, self.alone_max_ns = recorder.inline

    def execute(self, requests: list[InferenceRequest]) -> list[InferenceResponse]:
        rec = self.recorder
        with rec.lock:
            first = not rec.batches
            rec.batches.append(
                Batch(
                    self.model,
                    self.name,
                    [r.id for r in requests],
                    [r.batch_size for r in requests],
                    [float(r.inputs[0].array().reshape(-1)[0]) for r in requests],
                    threading.current_thread().name,
                )
            )
            rec.active += 1
            rec.max_active = max(rec.max_active, rec.active)
        try:
            if rec.fail_warmup and requests[0].id.startswith("warmup:"):
                raise Internal("warmup went wrong")
            if rec.hold or (rec.hold_first and first) or self.model in rec.hold_models:
                assert rec.release.wait(WAIT_S), "the test never released the instance"
            if rec.barrier is not None:
                rec.barrier.wait(WAIT_S)
            responses = []
            for r in requests:
                x = r.inputs[0].array()
                y = x * 2
                responses.append(
                    InferenceResponse(outputs=[OutputTensor("OUTPUT0", datatypes.FP32, y.shape, y)])
                )
            return responses
        finally:
            with rec.lock:
                rec.active -= 1


def backend_for(recorder: Recorder) -> type[Backend]:
    class RecordingBackend(Backend):
        name = "recording"

        def preferred_instance_kind(self) -> str:
            return "KIND_CPU"

        def create_instance(self, ctx: LoadContext, spec: InstanceSpec) -> ModelInstance:
            return RecordingInstance(recorder, ctx, spec)

    return RecordingBackend


def write_model(repo: Path, name: str, extra: str = "", max_batch_size: int = 8) -> Path:
    """A ``recording`` model with one FP32 input of any length."""
    model_dir = repo / name
    (model_dir / "1").mkdir(parents=True, exist_ok=True)
    (model_dir / "config.pbtxt").write_text(
        f'backend: "recording"\n'
        f"max_batch_size: {max_batch_size}\n"
        'input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [-1] }]\n'
        'output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [-1] }]\n' + extra
    )
    return model_dir


def make_server(repo: Path, recorder: Recorder, **settings: Any) -> Server:
    server = Server(repo, **settings)
    server.dataplane.backends.register("recording", backend_for(recorder))
    return server


def request(
    model: str,
    rid: str,
    value: float = 1.0,
    rows: int = 1,
    width: int = 4,
    *,
    priority: int = 0,
    timeout_us: int = 0,
    batching: bool = True,
) -> InferenceRequest:
    shape = (rows, width) if batching else (width,)
    data = np.full(shape, value, dtype=np.float32)
    return InferenceRequest(
        model,
        [InferInput("INPUT0", datatypes.FP32, shape, data)],
        id=rid,
        priority=priority,
        timeout_us=timeout_us,
    )


async def until(condition: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
    """Poll ``condition`` on the loop until it holds (bounded; never a fixed sleep)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not condition():
        if loop.time() > end:
            raise AssertionError(f"timed out waiting for: {what}")
        await asyncio.sleep(0.001)


def infer(server: Server, req: InferenceRequest) -> asyncio.Task:
    return asyncio.ensure_future(server.dataplane.infer(req))


def scheduler(server: Server, model: str) -> Any:
    return server.dataplane.registry.get(model, None).scheduler


def stats(server: Server, model: str) -> dict[str, Any]:
    return server.statistics(model)["model_stats"][0]


def batch_sizes(server: Server, model: str) -> dict[int, int]:
    """Executions per batch size, from the statistics extension."""
    return {
        b["batch_size"]: b["compute_infer"]["count"] for b in stats(server, model)["batch_stats"]
    }
