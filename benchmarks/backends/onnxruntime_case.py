"""ONNX Runtime case for backend_overhead.py: the reference the framework backends are
read against (naiad's most tuned backend, same MLP as the other cases)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

MODEL = "mlp_onnx"
FEATURES, HIDDEN, CLASSES = 64, 128, 10

CONFIG = f"""
backend: "onnxruntime"
max_batch_size: 32
input [{{ name: "x" data_type: TYPE_FP32 dims: [{FEATURES}] }}]
output [{{ name: "y" data_type: TYPE_FP32 dims: [{CLASSES}] }}]
dynamic_batching {{ }}
instance_group [{{ kind: KIND_CPU count: 1 }}]
"""


def build(repo: Path) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((FEATURES, HIDDEN)).astype(np.float32) * 0.1
    w2 = rng.standard_normal((HIDDEN, CLASSES)).astype(np.float32) * 0.1
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w1"], ["h"]),
            helper.make_node("Relu", ["h"], ["r"]),
            helper.make_node("MatMul", ["r", "w2"], ["y"]),
        ],
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", FEATURES])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", CLASSES])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    (repo / MODEL / "1").mkdir(parents=True)
    onnx.save(model, str(repo / MODEL / "1" / "model.onnx"))
    (repo / MODEL / "config.pbtxt").write_text(CONFIG)


def inputs() -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(1).standard_normal((1, FEATURES)).astype(np.float32)}


def direct(repo: Path) -> Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(
        str(repo / MODEL / "1" / "model.onnx"), options, providers=["CPUExecutionProvider"]
    )
    return lambda feed: dict(zip(["y"], session.run(["y"], feed), strict=True))
