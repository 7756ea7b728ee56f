"""Helpers of the metrics tests: a real ONNX model, a controllable fake backend,
and a scrape helper that reads ``/metrics`` over HTTP as Prometheus would."""

from __future__ import annotations

import re
import threading
import urllib.request
from pathlib import Path

import numpy as np
from support import onnx_models
from support.onnx_models import write_config

from naiad.backends.base import Backend, InstanceSpec, LoadContext, ModelInstance
from naiad.core import datatypes
from naiad.core.errors import Internal
from naiad.core.types import InferenceRequest, InferenceResponse, OutputTensor

SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$")


def scrape(server: object) -> str:
    port = server.metrics_port  # type: ignore[attr-defined]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics") as resp:
        return resp.read().decode()


def samples(text: str) -> dict[str, float]:
    """``name{labels}`` -> value for every sample line of an exposition."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        match = SAMPLE.match(line)
        assert match, f"malformed sample line: {line!r}"
        out[match.group(1) + (match.group(2) or "")] = float(match.group(3))
    return out


def add_simple(repo: Path, name: str = "simple", extra: str = "") -> None:
    """Triton's 'simple' (add/sub over [batch, 16] FP32) with max_batch_size 8."""
    onnx_models.add_sub(repo / name / "1" / "model.onnx")
    write_config(repo / name, f'platform: "onnxruntime_onnx"\nmax_batch_size: 8\n{extra}')


def simple_inputs(rows: int = 1) -> dict[str, np.ndarray]:
    data = np.ones((rows, 16), np.float32)
    return {"INPUT0": data, "INPUT1": data}


class FakeInstance(ModelInstance):
    """Echoes IN to OUT; fails when asked; can hold executions until released."""

    def __init__(self, backend: FakeBackend) -> None:
        self.backend = backend

    def execute(self, requests: list[InferenceRequest]) -> list[InferenceResponse]:
        self.backend.started.set()
        self.backend.release.wait(timeout=60)
        if any(r.parameters.get("fail") for r in requests):
            raise Internal("the model failed")
        self.compute_ns = (1000, 5000, 2000)
        out = []
        for request in requests:
            array = request.inputs[0].array()
            out.append(
                InferenceResponse(outputs=[OutputTensor("OUT", datatypes.FP32, array.shape, array)])
            )
        return out


class FakeBackend(Backend):
    name = "fake"

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.release.set()

    def preferred_instance_kind(self) -> str:
        return "KIND_CPU"

    def create_instance(self, ctx: LoadContext, spec: InstanceSpec) -> ModelInstance:
        return FakeInstance(self)


FAKE_CONFIG = """backend: "fake"
max_batch_size: 0
input [{ name: "IN" data_type: TYPE_FP32 dims: [2] }]
output [{ name: "OUT" data_type: TYPE_FP32 dims: [2] }]
instance_group [{ kind: KIND_CPU count: 1 }]
"""


def add_fake(repo: Path, name: str = "fake", extra: str = "") -> None:
    (repo / name / "1").mkdir(parents=True, exist_ok=True)
    write_config(repo / name, FAKE_CONFIG + extra)
