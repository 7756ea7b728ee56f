"""Build the ONNX models of the example repository (``examples/model_repository``).

The models are small and committed; run this script to rebuild them
(``pip install onnx`` first).  Config files are written alongside.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent / "model_repository"
OPSET = [helper.make_opsetid("", 13)]


def save(graph: onnx.GraphProto, model: str, config: str) -> None:
    proto = helper.make_model(graph, opset_imports=OPSET)
    proto.ir_version = 8
    onnx.checker.check_model(proto)
    version_dir = HERE / model / "1"
    version_dir.mkdir(parents=True, exist_ok=True)
    onnx.save(proto, str(version_dir / "model.onnx"))
    (HERE / model / "config.pbtxt").write_text(config.lstrip())


def add_sub() -> None:
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        [
            helper.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"]),
            helper.make_node("Sub", ["INPUT0", "INPUT1"], ["OUTPUT1"]),
        ],
        "add_sub",
        [helper.make_tensor_value_info(n, f, [4]) for n in ("INPUT0", "INPUT1")],
        [helper.make_tensor_value_info(n, f, [4]) for n in ("OUTPUT0", "OUTPUT1")],
    )
    save(
        graph,
        "add_sub",
        """
# OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1 on FP32 vectors of 4.
name: "add_sub"
backend: "onnxruntime"
max_batch_size: 0
input [
  { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 4 ] }
]
instance_group [ { kind: KIND_CPU count: 1 } ]
""",
    )


def identity() -> None:
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node("Identity", ["INPUT0"], ["OUTPUT0"])],
        "identity",
        [helper.make_tensor_value_info("INPUT0", f, ["batch", "n"])],
        [helper.make_tensor_value_info("OUTPUT0", f, ["batch", "n"])],
    )
    # No config.pbtxt: inputs, outputs and batching come from auto-complete.
    save(graph, "identity", "")
    (HERE / "identity" / "config.pbtxt").unlink()


def image_classifier() -> None:
    """A tiny MLP over 8x8 grey images with ten classes and a labels file."""
    rng = np.random.default_rng(7)
    w1 = numpy_helper.from_array(rng.standard_normal((64, 32)).astype(np.float32), "W1")
    b1 = numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), "B1")
    w2 = numpy_helper.from_array(rng.standard_normal((32, 10)).astype(np.float32), "W2")
    b2 = numpy_helper.from_array(rng.standard_normal(10).astype(np.float32), "B2")
    shape = helper.make_tensor("flat", TensorProto.INT64, [2], [-1, 64])
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        [
            helper.make_node("Reshape", ["IMAGE", "flat"], ["x"]),
            helper.make_node("MatMul", ["x", "W1"], ["h0"]),
            helper.make_node("Add", ["h0", "B1"], ["h1"]),
            helper.make_node("Relu", ["h1"], ["h"]),
            helper.make_node("MatMul", ["h", "W2"], ["l0"]),
            helper.make_node("Add", ["l0", "B2"], ["logits"]),
            helper.make_node("Softmax", ["logits"], ["PROBABILITIES"], axis=1),
        ],
        "image_classifier",
        [helper.make_tensor_value_info("IMAGE", f, ["batch", 8, 8])],
        [helper.make_tensor_value_info("PROBABILITIES", f, ["batch", 10])],
        initializer=[w1, b1, w2, b2, shape],
    )
    save(
        graph,
        "image_classifier",
        """
# A tiny MLP classifier: 8x8 grey image -> probabilities of ten digit classes.
# Ask for the `classification` extension to get "score:index:label" strings.
name: "image_classifier"
backend: "onnxruntime"
max_batch_size: 16
input [ { name: "IMAGE" data_type: TYPE_FP32 dims: [ 8, 8 ] } ]
output [
  { name: "PROBABILITIES" data_type: TYPE_FP32 dims: [ 10 ] label_filename: "labels.txt" }
]
instance_group [ { kind: KIND_CPU count: 1 } ]
""",
    )
    labels = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
    (HERE / "image_classifier" / "labels.txt").write_text("\n".join(labels) + "\n")


def string_upper() -> None:
    s = TensorProto.STRING
    graph = helper.make_graph(
        [
            helper.make_node(
                "StringNormalizer", ["TEXT"], ["UPPER"], case_change_action="UPPER", locale="C"
            )
        ],
        "string_upper",
        [helper.make_tensor_value_info("TEXT", s, ["n"])],
        [helper.make_tensor_value_info("UPPER", s, ["n"])],
    )
    save(
        graph,
        "string_upper",
        """
# Upper-cases a vector of UTF-8 strings (BYTES tensors).
name: "string_upper"
backend: "onnxruntime"
max_batch_size: 0
input [ { name: "TEXT" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "UPPER" data_type: TYPE_STRING dims: [ -1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
""",
    )


if __name__ == "__main__":
    add_sub()
    identity()
    image_classifier()
    string_upper()
    print(f"wrote models under {HERE}")
