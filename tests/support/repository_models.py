"""Model folders for model-control and repository tests.

``add_const`` models answer ``INPUT0 + const``, so a test can tell which
version (or which reload) served a request.  ``GateBackend`` is an in-process
backend whose loading and execution wait for the test to open a gate: it
makes "while a load is in progress" and "while a request is in flight"
states a test can reach without timing.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

from naiad.backends.base import Backend, InstanceSpec, LoadContext, ModelInstance
from naiad.core import datatypes
from naiad.core.types import InferenceRequest, InferenceResponse, OutputTensor

WAIT_S = 30.0


def add_const_bytes(const: float, size: int = 4) -> bytes:
    """An ONNX model: OUTPUT0 = INPUT0 + const, FP32 [batch, size]."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["INPUT0", "C"], ["OUTPUT0"])],
        "add_const",
        [helper.make_tensor_value_info("INPUT0", TensorProto.FLOAT, ["batch", size])],
        [helper.make_tensor_value_info("OUTPUT0", TensorProto.FLOAT, ["batch", size])],
        initializer=[helper.make_tensor("C", TensorProto.FLOAT, [size], [const] * size)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def write_model(
    repo: Path, name: str, version: int, const: float, *, config: str | None = None
) -> Path:
    """``repo/name/version/model.onnx`` adding ``const``; a config.pbtxt unless one exists."""
    model_dir = repo / name
    version_dir = model_dir / str(version)
    version_dir.mkdir(parents=True, exist_ok=True)
    (version_dir / "model.onnx").write_bytes(add_const_bytes(const))
    config_path = model_dir / "config.pbtxt"
    if config is not None:
        config_path.write_text(config)
    elif not config_path.exists():
        config_path.write_text('backend: "onnxruntime"\nmax_batch_size: 8\n')
    return model_dir


GATE_CONFIG = """
backend: "gate"
max_batch_size: 0
input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [4] }]
output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [4] }]
instance_group [{ kind: KIND_CPU count: 1 }]
"""


def write_gate_model(repo: Path, name: str = "gate") -> Path:
    model_dir = repo / name
    (model_dir / "1").mkdir(parents=True, exist_ok=True)
    (model_dir / "config.pbtxt").write_text(GATE_CONFIG)
    return model_dir


class Gates:
    """Events shared by a test and its gate backend (one per test)."""

    def __init__(self) -> None:
        self.loading = threading.Event()  # set when an instance load started
        self.load_open = threading.Event()  # the test lets loads finish
        self.executing = threading.Event()  # set when a request started
        self.execute_open = threading.Event()  # the test lets requests finish
        self._lock = threading.Lock()
        self.active_loads = 0
        self.max_active_loads = 0

    def enter_load(self) -> None:
        with self._lock:
            self.active_loads += 1
            self.max_active_loads = max(self.max_active_loads, self.active_loads)
        self.loading.set()

    def leave_load(self) -> None:
        with self._lock:
            self.active_loads -= 1


def gate_backend(gates: Gates) -> type[Backend]:
    """A backend class bound to ``gates`` (register it as ``gate``)."""

    class GateInstance(ModelInstance):
        def execute(self, requests: list[InferenceRequest]) -> list[InferenceResponse]:
            gates.executing.set()
            if not gates.execute_open.wait(WAIT_S):
                raise RuntimeError("the test never opened the execute gate")
            out = []
            for request in requests:
                data = np.asarray(request.inputs[0].array())
                tensor = OutputTensor("OUTPUT0", datatypes.from_numpy(data.dtype), data.shape, data)
                out.append(InferenceResponse(outputs=[tensor]))
            return out

    class GateBackend(Backend):
        name = "gate"

        def preferred_instance_kind(self) -> str:
            return "KIND_CPU"

        def create_instance(self, ctx: LoadContext, spec: InstanceSpec) -> ModelInstance:
            gates.enter_load()
            try:
                if not gates.load_open.wait(WAIT_S):
                    raise RuntimeError("the test never opened the load gate")
            finally:
                gates.leave_load()
            return GateInstance()

    return GateBackend


def fp32(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)
