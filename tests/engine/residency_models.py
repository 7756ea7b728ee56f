"""Small real models for the residency tests: Python models that hold a known amount of
memory (a table written at initialize, so every page is resident) and answer
``INPUT0 + k``, so an answer says which model gave it."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

MiB = 1 << 20

MODEL_PY = """
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        time.sleep({load_s})
        {fail}
        self.table = np.ones({size} // 8, dtype=np.float64)

    def execute(self, requests):
        time.sleep({run_s})
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            out = pb_utils.Tensor("OUTPUT0", x + np.float32({k}))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses

    def finalize(self):
        time.sleep({unload_s})
"""

CONFIG = """
backend: "python"
input [{{ name: "INPUT0" data_type: TYPE_FP32 dims: [4] }}]
output [{{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [4] }}]
{extra}
"""

PINNED = 'parameters { key: "naiad.pinned" value: { string_value: "true" } }'


def python_model(
    repo: Path,
    name: str,
    k: int,
    size: int = 16 * MiB,
    *,
    load_s: float = 0,
    run_s: float = 0,
    unload_s: float = 0,
    fails: bool = False,
    extra: str = "",
) -> None:
    """A model answering ``INPUT0 + k`` that holds ``size`` bytes once loaded."""
    version = repo / name / "1"
    version.mkdir(parents=True, exist_ok=True)
    fail = 'raise RuntimeError("this model cannot load")' if fails else "pass"
    text = MODEL_PY.format(size=size, k=k, load_s=load_s, run_s=run_s, unload_s=unload_s, fail=fail)
    (version / "model.py").write_text(text)
    (repo / name / "config.pbtxt").write_text(CONFIG.format(extra=extra))


def ensemble(repo: Path, name: str, step: str) -> None:
    """An ensemble of one step, ``step``, with the same signature."""
    (repo / name / "1").mkdir(parents=True, exist_ok=True)
    (repo / name / "config.pbtxt").write_text(
        f"""
platform: "ensemble"
input [{{ name: "INPUT0" data_type: TYPE_FP32 dims: [4] }}]
output [{{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [4] }}]
ensemble_scheduling {{ step [{{
  model_name: "{step}" model_version: -1
  input_map {{ key: "INPUT0" value: "INPUT0" }}
  output_map {{ key: "OUTPUT0" value: "OUTPUT0" }}
}}] }}
"""
    )


X = np.arange(4, dtype=np.float32)


def infer_http(port: int, model: str) -> np.ndarray:
    client = httpclient.InferenceServerClient(f"127.0.0.1:{port}", network_timeout=120)
    try:
        tensor = httpclient.InferInput("INPUT0", [4], "FP32")
        tensor.set_data_from_numpy(X)
        return client.infer(model, [tensor]).as_numpy("OUTPUT0")  # type: ignore[no-any-return]
    finally:
        client.close()


def infer_grpc(port: int, model: str) -> np.ndarray:
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
    try:
        tensor = grpcclient.InferInput("INPUT0", [4], "FP32")
        tensor.set_data_from_numpy(X)
        return client.infer(model, [tensor], client_timeout=120).as_numpy("OUTPUT0")  # type: ignore[no-any-return]
    finally:
        client.close()


def residency(http_port: int) -> dict[str, Any]:
    """The dashboard's residency view (this process's)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/dashboard/api/residency") as r:
        return json.loads(r.read())  # type: ignore[no-any-return]


def states(http_port: int) -> dict[str, str]:
    return {m["name"]: m["state"] for m in residency(http_port)["models"]}


def metric(metrics_port: int, family: str) -> dict[str, float]:
    """``family``'s samples by their label text (``model="m1"``; "" without labels)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics") as r:
        text = r.read().decode()
    found = {}
    for m in re.finditer(rf"^{family}(?:\{{(.*?)\}})? (\S+)$", text, re.M):
        found[m.group(1) or ""] = float(m.group(2))
    return found
