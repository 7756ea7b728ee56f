"""Ensembles for the tests: an image pipeline, a decoupled fan-out, an ensemble of ensembles.

- ``pipeline``: ``preprocess`` (Python: uint8 HxWx3 image -> per-channel means
  in [0, 1], shape [1, 3]) -> ``classifier`` (ONNX: ``[1, 3] @ W`` -> [1, 4]
  logits) -> ``postprocess`` (Python: label bytes and score of the arg-max).
  The preprocess step fails on request parameter ``fail``.
- ``fanout``: ``repeat`` (decoupled Python: COUNT responses ``VALUE + i``) ->
  ``adder`` (ONNX ``SUM = OUT + OFFSET``, OFFSET an ensemble input).
- ``outer``: an ensemble whose only step is ``pipeline``.
- ``branches``: ``classifier`` and ``double`` side by side on one input, to
  show that asking for one output runs only the step that makes it.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

WEIGHTS = np.array(
    [[1.0, 0.0, 0.5, -1.0], [0.0, 1.0, 0.5, 2.0], [0.5, -0.5, 1.0, 0.0]], dtype=np.float32
)
LABELS = ["cat", "dog", "fish", "bird"]
IMAGE_SHAPE = (6, 5, 3)


def _save(graph: onnx.GraphProto, path: Path) -> None:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))


def _write(repo: Path, name: str, config: str, model_py: str | None = None) -> Path:
    model_dir = repo / name
    (model_dir / "1").mkdir(parents=True, exist_ok=True)
    if model_py is not None:
        (model_dir / "1" / "model.py").write_text(textwrap.dedent(model_py))
    (model_dir / "config.pbtxt").write_text(textwrap.dedent(config))
    return model_dir


PREPROCESS = """
import json
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            if json.loads(request.parameters()).get("fail"):
                raise ValueError("preprocess was asked to fail")
            image = pb_utils.get_input_tensor_by_name(request, "IMAGE").as_numpy()
            means = image.reshape(-1, 3).astype(np.float32).mean(axis=0) / 255.0
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor("PIXELS", means.reshape(1, 3).astype(np.float32))]))
        return responses
"""

POSTPROCESS = """
import numpy as np
import triton_python_backend_utils as pb_utils

LABELS = [b"cat", b"dog", b"fish", b"bird"]


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            logits = pb_utils.get_input_tensor_by_name(request, "LOGITS").as_numpy().reshape(-1)
            best = int(np.argmax(logits))
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("LABEL", np.array([LABELS[best]], dtype=object)),
                pb_utils.Tensor("SCORE", np.array([logits[best]], dtype=np.float32)),
            ]))
        return responses
"""

REPEAT = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            value = int(pb_utils.get_input_tensor_by_name(request, "VALUE").as_numpy()[0])
            count = int(pb_utils.get_input_tensor_by_name(request, "COUNT").as_numpy()[0])
            sender = request.get_response_sender()
            for i in range(count):
                sender.send(pb_utils.InferenceResponse(
                    [pb_utils.Tensor("OUT", np.array([value + i], dtype=np.int32))]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
"""


def classifier(repo: Path) -> None:
    weights = helper.make_tensor("W", TensorProto.FLOAT, [3, 4], WEIGHTS.reshape(-1).tolist())
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["PIXELS", "W"], ["LOGITS"])],
        "classifier",
        [helper.make_tensor_value_info("PIXELS", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("LOGITS", TensorProto.FLOAT, ["batch", 4])],
        initializer=[weights],
    )
    _save(graph, repo / "classifier" / "1" / "model.onnx")
    _write(repo, "classifier", """
        backend: "onnxruntime"
        max_batch_size: 4
        input [{ name: "PIXELS" data_type: TYPE_FP32 dims: [3] }]
        output [{ name: "LOGITS" data_type: TYPE_FP32 dims: [4] }]
        instance_group [{ kind: KIND_CPU count: 1 }]
    """)  # fmt: skip


def double(repo: Path) -> None:
    graph = helper.make_graph(
        [helper.make_node("Add", ["X", "X"], ["Y"])],
        "double",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", 3])],
    )
    _save(graph, repo / "double" / "1" / "model.onnx")
    _write(repo, "double", """
        backend: "onnxruntime"
        max_batch_size: 4
        input [{ name: "X" data_type: TYPE_FP32 dims: [3] }]
        output [{ name: "Y" data_type: TYPE_FP32 dims: [3] }]
        instance_group [{ kind: KIND_CPU count: 1 }]
    """)  # fmt: skip


def pipeline(repo: Path, name: str = "pipeline") -> None:
    """The pipeline ensemble and its three composing models."""
    _write(repo, "preprocess", """
        backend: "python"
        input [{ name: "IMAGE" data_type: TYPE_UINT8 dims: [-1, -1, 3] }]
        output [{ name: "PIXELS" data_type: TYPE_FP32 dims: [1, 3] }]
        instance_group [{ kind: KIND_CPU count: 1 }]
    """, PREPROCESS)  # fmt: skip
    classifier(repo)
    _write(repo, "postprocess", """
        backend: "python"
        input [{ name: "LOGITS" data_type: TYPE_FP32 dims: [1, 4] }]
        output [
          { name: "LABEL" data_type: TYPE_STRING dims: [1] },
          { name: "SCORE" data_type: TYPE_FP32 dims: [1] }
        ]
        instance_group [{ kind: KIND_CPU count: 1 }]
    """, POSTPROCESS)  # fmt: skip
    _write(repo, name, """
        platform: "ensemble"
        input [{ name: "IMAGE" data_type: TYPE_UINT8 dims: [-1, -1, 3] }]
        output [
          { name: "LABEL" data_type: TYPE_STRING dims: [1] },
          { name: "SCORE" data_type: TYPE_FP32 dims: [1] }
        ]
        ensemble_scheduling { step [
          { model_name: "preprocess" model_version: -1
            input_map { key: "IMAGE" value: "IMAGE" }
            output_map { key: "PIXELS" value: "pixels" } },
          { model_name: "classifier" model_version: -1
            input_map { key: "PIXELS" value: "pixels" }
            output_map { key: "LOGITS" value: "logits" } },
          { model_name: "postprocess" model_version: 1
            input_map { key: "LOGITS" value: "logits" }
            output_map [{ key: "LABEL" value: "LABEL" }, { key: "SCORE" value: "SCORE" }] }
        ] }
    """)  # fmt: skip


def outer(repo: Path) -> None:
    """An ensemble of the pipeline ensemble."""
    _write(repo, "outer", """
        platform: "ensemble"
        input [{ name: "PICTURE" data_type: TYPE_UINT8 dims: [-1, -1, 3] }]
        output [{ name: "CLASS" data_type: TYPE_STRING dims: [1] }]
        ensemble_scheduling { step [
          { model_name: "pipeline" model_version: -1
            input_map { key: "IMAGE" value: "PICTURE" }
            output_map { key: "LABEL" value: "CLASS" } }
        ] }
    """)  # fmt: skip


def fanout(repo: Path) -> None:
    """A decoupled ensemble: every response of ``repeat`` flows through ``adder``."""
    _write(repo, "repeat", """
        backend: "python"
        input [
          { name: "VALUE" data_type: TYPE_INT32 dims: [1] },
          { name: "COUNT" data_type: TYPE_INT32 dims: [1] }
        ]
        output [{ name: "OUT" data_type: TYPE_INT32 dims: [1] }]
        model_transaction_policy { decoupled: true }
        instance_group [{ kind: KIND_CPU count: 1 }]
    """, REPEAT)  # fmt: skip
    graph = helper.make_graph(
        [helper.make_node("Add", ["A", "B"], ["SUM"])],
        "adder",
        [helper.make_tensor_value_info(n, TensorProto.INT32, [1]) for n in ("A", "B")],
        [helper.make_tensor_value_info("SUM", TensorProto.INT32, [1])],
    )
    _save(graph, repo / "adder" / "1" / "model.onnx")
    _write(repo, "adder", """
        backend: "onnxruntime"
        input [
          { name: "A" data_type: TYPE_INT32 dims: [1] },
          { name: "B" data_type: TYPE_INT32 dims: [1] }
        ]
        output [{ name: "SUM" data_type: TYPE_INT32 dims: [1] }]
        instance_group [{ kind: KIND_CPU count: 1 }]
    """)  # fmt: skip
    _write(repo, "fanout", """
        platform: "ensemble"
        input [
          { name: "VALUE" data_type: TYPE_INT32 dims: [1] },
          { name: "COUNT" data_type: TYPE_INT32 dims: [1] },
          { name: "OFFSET" data_type: TYPE_INT32 dims: [1] }
        ]
        output [{ name: "SUM" data_type: TYPE_INT32 dims: [1] }]
        ensemble_scheduling { step [
          { model_name: "repeat"
            input_map [{ key: "VALUE" value: "VALUE" }, { key: "COUNT" value: "COUNT" }]
            output_map { key: "OUT" value: "out" } },
          { model_name: "adder"
            input_map [{ key: "A" value: "out" }, { key: "B" value: "OFFSET" }]
            output_map { key: "SUM" value: "SUM" } }
        ] }
    """)  # fmt: skip


def branches(repo: Path) -> None:
    classifier(repo)
    double(repo)
    _write(repo, "branches", """
        platform: "ensemble"
        max_batch_size: 4
        input [{ name: "PIXELS" data_type: TYPE_FP32 dims: [3] }]
        output [
          { name: "LOGITS" data_type: TYPE_FP32 dims: [4] },
          { name: "DOUBLED" data_type: TYPE_FP32 dims: [3] }
        ]
        ensemble_scheduling { step [
          { model_name: "classifier" input_map { key: "PIXELS" value: "PIXELS" }
            output_map { key: "LOGITS" value: "LOGITS" } },
          { model_name: "double" input_map { key: "X" value: "PIXELS" }
            output_map { key: "Y" value: "DOUBLED" } }
        ] }
    """)  # fmt: skip


def expected(image: np.ndarray) -> tuple[bytes, float]:
    """What ``pipeline`` answers for ``image``."""
    means = image.reshape(-1, 3).astype(np.float32).mean(axis=0) / 255.0
    logits = means.reshape(1, 3).astype(np.float32) @ WEIGHTS
    best = int(np.argmax(logits))
    return LABELS[best].encode(), float(logits.reshape(-1)[best])
