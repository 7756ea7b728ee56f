"""Build the ONNX models of the example repository (``examples/model_repository``).

The models are small and committed; run this script to rebuild them
(``pip install onnx scikit-learn pillow`` first: the image classifier is trained
on scikit-learn's digits, and sample digits are written for the runner examples).  Config files are written alongside.
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


def train_digits(seed: int = 7) -> list[np.ndarray]:
    """W1, B1, W2, B2 of a 64-32-10 MLP trained on scikit-learn's 8x8 digits (ink = 1).

    Full-batch Adam on softmax cross-entropy; a fifth of the images is held out
    to report the accuracy.  The images are the UCI "Optical Recognition of
    Handwritten Digits" set (CC BY 4.0) that scikit-learn ships.
    """
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float64)
    y = np.eye(10)[digits.target]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(x))
    test, train = order[: len(x) // 5], order[len(x) // 5 :]
    params = [
        rng.standard_normal((64, 32)) * np.sqrt(2 / 64),
        np.zeros(32),
        rng.standard_normal((32, 10)) * np.sqrt(2 / 32),
        np.zeros(10),
    ]
    moments = [[np.zeros_like(p), np.zeros_like(p)] for p in params]

    def forward(batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        hidden = np.maximum(batch @ params[0] + params[1], 0)
        logits = hidden @ params[2] + params[3]
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return hidden, e / e.sum(axis=1, keepdims=True)

    for step in range(1, 601):
        hidden, probs = forward(x[train])
        d_logits = (probs - y[train]) / len(train)
        d_hidden = (d_logits @ params[2].T) * (hidden > 0)
        grads = [x[train].T @ d_hidden, d_hidden.sum(0), hidden.T @ d_logits, d_logits.sum(0)]
        for p, g, m in zip(params, grads, moments, strict=True):
            m[0] = 0.9 * m[0] + 0.1 * g
            m[1] = 0.999 * m[1] + 0.001 * g * g
            p -= 0.01 * (m[0] / (1 - 0.9**step)) / (np.sqrt(m[1] / (1 - 0.999**step)) + 1e-8)
    accuracy = (forward(x[test])[1].argmax(1) == digits.target[test]).mean()
    print(f"image_classifier: {accuracy:.1%} of held-out digits right")
    right = train[forward(x[train])[1].argmax(1) == digits.target[train]]
    write_samples([digits.images[right[digits.target[right] == d][0]] for d in range(10)])
    return [p.astype(np.float32) for p in params]


def write_samples(images: list[np.ndarray]) -> None:
    """An image of each digit for the runner examples: ``digits.json`` (ink
    0-16, as scikit-learn has them) and ``digits/<d>.png`` (64x64, dark ink on white)."""
    import json

    from PIL import Image

    runner = Path(__file__).resolve().parent / "runner"
    (runner / "digits").mkdir(parents=True, exist_ok=True)
    rows = {str(d): image.astype(int).tolist() for d, image in enumerate(images)}
    (runner / "digits.json").write_text(json.dumps(rows, separators=(",", ":")) + "\n")
    for d, image in enumerate(images):
        grey = (255 - image / 16 * 255).round().astype(np.uint8)
        Image.fromarray(grey).resize((64, 64), Image.NEAREST).save(runner / "digits" / f"{d}.png")


def image_classifier() -> None:
    """An MLP over 8x8 grey digits (ink 1.0, paper 0.0) with ten classes and a labels file."""
    w1, b1, w2, b2 = (
        numpy_helper.from_array(p, n)
        for p, n in zip(train_digits(), ("W1", "B1", "W2", "B2"), strict=True)
    )
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
# An MLP trained on 8x8 handwritten digits (ink 1.0, paper 0.0) -> probabilities of
# the ten classes (examples/make_models.py trains it).
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
