"""Benchmark case: a TensorFlow SavedModel MLP served by naiad against TensorFlow itself.

``build`` saves a three-layer classifier (64 features -> 256 -> 256 -> 10,
about 90k weights) with dynamic batching; ``direct`` loads the same folder
with ``tf.saved_model.load`` and calls its serving signature, the way a
TensorFlow user would without a server.  TensorFlow is imported only inside
the functions, so listing the cases costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

MODEL = "tf_mlp"

FEATURES = 64
HIDDEN = 256
CLASSES = 10

CONFIG = f"""\
platform: "tensorflow_savedmodel"
max_batch_size: 32
input [{{ name: "features" data_type: TYPE_FP32 dims: [{FEATURES}] }}]
output [
  {{ name: "probabilities" data_type: TYPE_FP32 dims: [{CLASSES}] }},
  {{ name: "label" data_type: TYPE_INT64 dims: [1] reshape: {{ shape: [] }} }}
]
dynamic_batching {{ }}
instance_group [{{ kind: KIND_CPU count: 2 }}]
"""


def _tf() -> Any:
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    return tf


def build(repo: Path) -> None:
    """Write ``<repo>/tf_mlp/1/model.savedmodel`` and its config.pbtxt."""
    tf = _tf()
    rng = np.random.default_rng(0)

    def weights(*shape: int) -> Any:
        return tf.Variable((rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32))

    class Mlp(tf.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.w1, self.b1 = weights(FEATURES, HIDDEN), tf.Variable(tf.zeros([HIDDEN]))
            self.w2, self.b2 = weights(HIDDEN, HIDDEN), tf.Variable(tf.zeros([HIDDEN]))
            self.w3 = weights(HIDDEN, CLASSES)

        @tf.function(input_signature=[tf.TensorSpec([None, FEATURES], tf.float32)])
        def serve(self, features: Any) -> dict[str, Any]:
            hidden = tf.nn.relu(features @ self.w1 + self.b1)
            hidden = tf.nn.relu(hidden @ self.w2 + self.b2)
            probabilities = tf.nn.softmax(hidden @ self.w3)
            return {"probabilities": probabilities, "label": tf.argmax(probabilities, axis=1)}

    model = Mlp()
    folder = repo / MODEL
    tf.saved_model.save(model, str(folder / "1" / "model.savedmodel"), signatures=model.serve)
    (folder / "config.pbtxt").write_text(CONFIG)


def inputs() -> dict[str, np.ndarray]:
    """One batch-1 request."""
    rng = np.random.default_rng(1)
    return {"features": rng.standard_normal((1, FEATURES)).astype(np.float32)}


class _Direct:
    """The loaded SavedModel and its signature (the object owns the variables)."""

    def __init__(self, path: Path) -> None:
        self.tf = _tf()
        self.loaded = self.tf.saved_model.load(str(path))
        self.signature = self.loaded.signatures["serving_default"]

    def __call__(self, request: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        tensors = {k: self.tf.constant(v) for k, v in request.items()}
        return {k: v.numpy() for k, v in self.signature(**tensors).items()}


def direct(repo: Path) -> Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]:
    """The same SavedModel run by TensorFlow alone: load once, call the signature per request."""
    return _Direct(repo / MODEL / "1" / "model.savedmodel")
