"""Real ONNX models for tests, built with the ``onnx`` helper API."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import onnx
from onnx import TensorProto, helper

ONNX_TYPES = {
    "BOOL": TensorProto.BOOL,
    "UINT8": TensorProto.UINT8,
    "UINT16": TensorProto.UINT16,
    "UINT32": TensorProto.UINT32,
    "UINT64": TensorProto.UINT64,
    "INT8": TensorProto.INT8,
    "INT16": TensorProto.INT16,
    "INT32": TensorProto.INT32,
    "INT64": TensorProto.INT64,
    "FP16": TensorProto.FLOAT16,
    "FP32": TensorProto.FLOAT,
    "FP64": TensorProto.DOUBLE,
    "BYTES": TensorProto.STRING,
}

Dims = Sequence[int | str | None]


def _save(graph: onnx.GraphProto, path: Path, opset: int = 13) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


def identity(
    path: Path,
    datatype: str = "FP32",
    shape: Dims = ("batch", 16),
    input_name: str = "INPUT0",
    output_name: str = "OUTPUT0",
) -> Path:
    t = ONNX_TYPES[datatype]
    graph = helper.make_graph(
        [helper.make_node("Identity", [input_name], [output_name])],
        "identity",
        [helper.make_tensor_value_info(input_name, t, list(shape))],
        [helper.make_tensor_value_info(output_name, t, list(shape))],
    )
    return _save(graph, path)


def add_sub(path: Path, datatype: str = "FP32", shape: Dims = ("batch", 16)) -> Path:
    """OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1 (Triton's 'simple')."""
    t = ONNX_TYPES[datatype]
    graph = helper.make_graph(
        [
            helper.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"]),
            helper.make_node("Sub", ["INPUT0", "INPUT1"], ["OUTPUT1"]),
        ],
        "add_sub",
        [helper.make_tensor_value_info(n, t, list(shape)) for n in ("INPUT0", "INPUT1")],
        [helper.make_tensor_value_info(n, t, list(shape)) for n in ("OUTPUT0", "OUTPUT1")],
    )
    return _save(graph, path)


def matmul(path: Path, size: int = 256, seed: int = 0, rows: int = 0) -> Path:
    """OUTPUT0 = INPUT0 @ W, a compute-bound model for batching and parallelism tests.

    Each batch item is one ``size`` vector, or a ``rows`` x ``size`` matrix when ``rows``.
    """
    import numpy as np

    weights = np.random.default_rng(seed).standard_normal((size, size)).astype("float32")
    item = [rows, size] if rows else [size]
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["INPUT0", "W"], ["OUTPUT0"])],
        "matmul",
        [helper.make_tensor_value_info("INPUT0", TensorProto.FLOAT, ["batch", *item])],
        [helper.make_tensor_value_info("OUTPUT0", TensorProto.FLOAT, ["batch", *item])],
        initializer=[
            helper.make_tensor("W", TensorProto.FLOAT, [size, size], weights.reshape(-1).tolist())
        ],
    )
    return _save(graph, path)


def ragged(path: Path) -> Path:
    """Shows a ragged batch as the model sees it.

    INPUT is every request's data end to end (1-D); COUNT (INT32) and ACC
    (FP32) are batch inputs with one entry per request.  OUT echoes INPUT,
    COUNT_OUT and ACC_OUT give each request its own entry back as ``[1, 1]``.
    """
    axes = helper.make_tensor("AXES", TensorProto.INT64, [1], [1])
    graph = helper.make_graph(
        [
            helper.make_node("Identity", ["INPUT"], ["OUT"]),
            helper.make_node("Unsqueeze", ["COUNT", "AXES"], ["COUNT_OUT"]),
            helper.make_node("Unsqueeze", ["ACC", "AXES"], ["ACC_OUT"]),
        ],
        "ragged",
        [
            helper.make_tensor_value_info("INPUT", TensorProto.FLOAT, ["n"]),
            helper.make_tensor_value_info("COUNT", TensorProto.INT32, ["r"]),
            helper.make_tensor_value_info("ACC", TensorProto.FLOAT, ["r"]),
        ],
        [
            helper.make_tensor_value_info("OUT", TensorProto.FLOAT, ["n"]),
            helper.make_tensor_value_info("COUNT_OUT", TensorProto.INT32, ["r", 1]),
            helper.make_tensor_value_info("ACC_OUT", TensorProto.FLOAT, ["r", 1]),
        ],
        initializer=[axes],
    )
    return _save(graph, path)


def write_config(model_dir: Path, text: str) -> None:
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "config.pbtxt").write_text(text)
