"""A version whose third instance fails to load releases the two that loaded.

Backends hold memory, threads and files per instance (a compiled OpenVINO
model, a TensorFlow session): a failed load must close what it opened and
tell the backend the version is gone, or every retry leaks another copy.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.onnx_models import write_config

from naiad import Server
from naiad.backends.base import Backend, InstanceSpec, LoadContext, ModelInstance
from naiad.core.errors import Unavailable

pytestmark = pytest.mark.protocol


class Instance(ModelInstance):
    def __init__(self, backend: FlakyBackend) -> None:
        self.backend = backend

    def close(self) -> None:
        self.backend.closed += 1


class FlakyBackend(Backend):
    """Loads two instances, then runs out of memory."""

    name = "flaky"

    def __init__(self) -> None:
        self.created = self.closed = self.unloaded = 0

    def preferred_instance_kind(self) -> str:
        return "KIND_CPU"

    def create_instance(self, ctx: LoadContext, spec: InstanceSpec) -> ModelInstance:
        if self.created == 2:
            raise Unavailable(f"instance '{spec.name}' does not fit in memory")
        self.created += 1
        return Instance(self)

    def unload(self, ctx: LoadContext) -> None:
        self.unloaded += 1


async def test_instances_loaded_before_the_failure_are_closed(repo: Path) -> None:
    (repo / "flaky" / "1").mkdir(parents=True)
    write_config(
        repo / "flaky",
        'backend: "flaky"\n'
        'input [{ name: "IN" data_type: TYPE_FP32 dims: [2] }]\n'
        'output [{ name: "OUT" data_type: TYPE_FP32 dims: [2] }]\n'
        "instance_group [{ kind: KIND_CPU count: 3 }]\n",
    )
    backend = FlakyBackend()
    server = Server(repo)
    server.dataplane.backends.register("flaky", lambda: backend)  # type: ignore[arg-type]
    await server.start_async()
    try:
        rows = await server.dataplane.repository_index()
        reason = {row.name: row.reason for row in rows}["flaky"]
        assert "does not fit in memory" in reason
        # Released when the load failed, not only when the server stops.
        assert (backend.created, backend.closed, backend.unloaded) == (2, 2, 1)
    finally:
        await server.stop_async(10)
