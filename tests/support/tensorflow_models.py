"""Real TensorFlow SavedModels for tests, saved from small ``tf.Module``s."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

#: Every TensorFlow dtype naiad maps, by Triton datatype name.
TYPES = {
    "BOOL": tf.bool,
    "UINT8": tf.uint8,
    "UINT16": tf.uint16,
    "UINT32": tf.uint32,
    "UINT64": tf.uint64,
    "INT8": tf.int8,
    "INT16": tf.int16,
    "INT32": tf.int32,
    "INT64": tf.int64,
    "FP16": tf.float16,
    "FP32": tf.float32,
    "FP64": tf.float64,
    "BF16": tf.bfloat16,
    "BYTES": tf.string,
}

FEATURES = 8
CLASSES = 3
HIDDEN = 16


class Dense(tf.Module):
    """A two-layer classifier: ``serving_default`` (two inputs, two outputs) and ``embed``."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        rng = np.random.default_rng(seed)
        self.w1 = tf.Variable(rng.standard_normal((FEATURES, HIDDEN)).astype(np.float32))
        self.b1 = tf.Variable(rng.standard_normal(HIDDEN).astype(np.float32))
        self.w2 = tf.Variable(rng.standard_normal((HIDDEN, CLASSES)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None, FEATURES], tf.float32)])
    def embed(self, features: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"hidden": tf.nn.relu(tf.matmul(features, self.w1) + self.b1)}

    @tf.function(
        input_signature=[
            tf.TensorSpec([None, FEATURES], tf.float32, name="features"),
            tf.TensorSpec([None, 1], tf.float32, name="temperature"),
        ]
    )
    def classify(self, features: tf.Tensor, temperature: tf.Tensor) -> dict[str, tf.Tensor]:
        logits = tf.matmul(self.embed(features)["hidden"], self.w2) / temperature
        return {"logits": logits, "probabilities": tf.nn.softmax(logits)}


class Strings(tf.Module):
    """One string per request in, its upper case and its length out."""

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def serve(self, text: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"upper": tf.strings.upper(text), "length": tf.strings.length(text)}


class Identities(tf.Module):
    """A non-batching model: ``in_<type>`` of shape [2] comes back as ``out_<type>``."""

    @tf.function(
        input_signature=[tf.TensorSpec([2], t, name=f"in_{n.lower()}") for n, t in TYPES.items()]
    )
    def serve(self, *tensors: tf.Tensor) -> dict[str, tf.Tensor]:
        return {f"out_{n.lower()}": tf.identity(t) for n, t in zip(TYPES, tensors, strict=True)}


def dense(path: Path) -> Path:
    module = Dense()
    signatures = {"serving_default": module.classify, "embed": module.embed}
    tf.saved_model.save(module, str(path), signatures=signatures)
    return path


def strings(path: Path) -> Path:
    module = Strings()
    tf.saved_model.save(module, str(path), signatures={"serving_default": module.serve})
    return path


def identities(path: Path) -> Path:
    module = Identities()
    tf.saved_model.save(module, str(path), signatures={"serving_default": module.serve})
    return path


class Reference:
    """A SavedModel's signature as TensorFlow itself loads and runs it: the expected answers."""

    def __init__(self, path: Path, key: str = "serving_default") -> None:
        self.loaded = tf.saved_model.load(str(path))  # owns the variables
        self.function = self.loaded.signatures[key]

    def __call__(self, **inputs: np.ndarray) -> dict[str, np.ndarray]:
        outputs = self.function(**{k: tf.constant(v) for k, v in inputs.items()})
        return {k: v.numpy() for k, v in outputs.items()}
