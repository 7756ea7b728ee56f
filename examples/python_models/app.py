"""Python functions served as models, with no config to write.

    naiad serve examples/python_models/app.py
    naiad export examples/python_models/app.py -o /tmp/exported   # a Triton repository
"""

from collections.abc import Iterator

import numpy as np
from numpy.typing import NDArray

import naiad


@naiad.model
def greet(name: str) -> str:
    """One request, one call: a str input arrives as a Python str."""
    return f"hello {name}"


@naiad.model(max_batch_size=32, max_queue_delay_us=2000)
@naiad.batch
def normalize(x: NDArray[np.float32]) -> NDArray[np.float32]:
    """Whole batches from the dynamic batcher: x is [batch, n]."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


@naiad.model
def countdown(start: int) -> Iterator[int]:
    """A generator streams: one response per value (a decoupled model)."""
    yield from range(start, -1, -1)


@naiad.model(
    name="linear",
    inputs=[naiad.Tensor("features", np.float32, [3])],
    outputs=[naiad.Tensor("score", np.float32, [1])],
    max_batch_size=64,
    instances=2,
)
@naiad.batch
class Linear:
    """A class: load() runs once per instance, the instance is called per batch."""

    def load(self) -> None:
        self.weights = np.array([[0.5], [-1.0], [2.0]], np.float32)

    def __call__(self, features: np.ndarray) -> np.ndarray:
        return features @ self.weights
