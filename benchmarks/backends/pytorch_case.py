"""Benchmark case: a TorchScript MLP on naiad's pytorch backend against torch itself.

An MLP of the size a tabular or embedding-head model has (64 -> 256 -> 256
-> 10, FP32), dynamically batched.  torch is imported inside the functions,
so the harness can list every case without every framework installed.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

MODEL = "pytorch_mlp"

FEATURES = 64
CLASSES = 10

CONFIG = f"""backend: "pytorch"
max_batch_size: 32
input [{{ name: "INPUT__0" data_type: TYPE_FP32 dims: [{FEATURES}] }}]
output [{{ name: "OUTPUT__0" data_type: TYPE_FP32 dims: [{CLASSES}] }}]
dynamic_batching {{ }}
instance_group [{{ kind: KIND_CPU count: 1 }}]
"""


def _model_file(repo: Path) -> Path:
    return repo / MODEL / "1" / "model.pt"


def build(repo: Path) -> None:
    """Write the scripted MLP (fixed seed) and its config into ``repo``."""
    import torch

    torch.manual_seed(0)
    mlp = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, 256),
        torch.nn.ReLU(),
        torch.nn.Linear(256, 256),
        torch.nn.ReLU(),
        torch.nn.Linear(256, CLASSES),
    ).eval()
    path = _model_file(repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():  # torch 2.11+ deprecates TorchScript; it is the point here
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.script(mlp).save(str(path))
    (repo / MODEL / "config.pbtxt").write_text(CONFIG)


def inputs() -> dict[str, np.ndarray]:
    """One batch-1 request."""
    x = np.random.default_rng(0).standard_normal((1, FEATURES)).astype(np.float32)
    return {"INPUT__0": x}


def direct(repo: Path) -> Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]:
    """The same file run by torch the usual way: load once, then forward in inference mode."""
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        module = torch.jit.load(str(_model_file(repo)), map_location="cpu")

    def run(request: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        with torch.inference_mode():
            out = module(torch.from_numpy(request["INPUT__0"]))
        return {"OUTPUT__0": out.numpy()}

    return run
