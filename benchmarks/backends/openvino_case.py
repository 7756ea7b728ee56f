"""Benchmark case: a small MLP classifier as OpenVINO IR, served by the openvino backend.

``build`` writes the model and its config; ``direct`` runs the same file
with OpenVINO alone (one compiled model, one reused infer request), the
baseline naiad's overhead is measured against.  OpenVINO is imported only
inside the functions, so listing the cases needs no framework.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

MODEL = "openvino_mlp"
FEATURES = 64
HIDDEN = 256
CLASSES = 10

CONFIG = f"""
backend: "openvino"
max_batch_size: 8
input [{{name: "INPUT0" data_type: TYPE_FP32 dims: [{FEATURES}]}}]
output [{{name: "OUTPUT0" data_type: TYPE_FP32 dims: [{CLASSES}]}}]
dynamic_batching {{ }}
instance_group [{{kind: KIND_CPU count: 1}}]
parameters {{key: "PERFORMANCE_HINT" value: {{string_value: "LATENCY"}}}}
"""


def build(repo: Path) -> None:
    """``repo/openvino_mlp``: 64 -> 256 -> 256 -> 10, ReLU between, softmax at the end."""
    import openvino as ov
    import openvino.opset13 as ops

    rng = np.random.default_rng(0)
    x = ops.parameter([-1, FEATURES], ov.Type.f32, name="INPUT0")
    y = x
    for rows, cols in ((FEATURES, HIDDEN), (HIDDEN, HIDDEN), (HIDDEN, CLASSES)):
        weights = (rng.standard_normal((rows, cols)) / np.sqrt(rows)).astype(np.float32)
        y = ops.add(
            ops.matmul(y, ops.constant(weights), False, False),
            ops.constant(rng.standard_normal(cols).astype(np.float32) * 0.1),
        )
        if cols != CLASSES:
            y = ops.relu(y)
    y = ops.softmax(y, 1)
    y.output(0).get_tensor().set_names({"OUTPUT0"})
    model = ov.Model([ops.result(y)], [x], MODEL)
    version = repo / MODEL / "1"
    version.mkdir(parents=True, exist_ok=True)
    ov.save_model(model, str(version / "model.xml"), compress_to_fp16=False)
    (repo / MODEL / "config.pbtxt").write_text(CONFIG)


def inputs() -> dict[str, np.ndarray]:
    """One batch-1 request."""
    rng = np.random.default_rng(1)
    return {"INPUT0": rng.standard_normal((1, FEATURES)).astype(np.float32)}


def direct(repo: Path) -> Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]:
    """The model file run by OpenVINO itself, compiled with the config's hint."""
    import openvino as ov

    path = repo / MODEL / "1" / "model.xml"
    compiled = ov.Core().compile_model(str(path), "CPU", {"PERFORMANCE_HINT": "LATENCY"})
    request = compiled.create_infer_request()

    def run(feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        result = request.infer(feed, share_inputs=True)
        return {"OUTPUT0": result[0]}

    return run
