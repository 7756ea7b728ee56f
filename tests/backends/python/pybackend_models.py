"""Model repositories for the Python backend tests: real ``model.py`` files."""

from __future__ import annotations

import textwrap
from pathlib import Path

ADD_SUB_CONFIG = """
name: "{name}"
backend: "python"
max_batch_size: {max_batch}
input [
  {{ name: "INPUT0" data_type: {dtype} dims: [ {dims} ] }},
  {{ name: "INPUT1" data_type: {dtype} dims: [ {dims} ] }}
]
output [
  {{ name: "OUTPUT0" data_type: {dtype} dims: [ {dims} ] }},
  {{ name: "OUTPUT1" data_type: {dtype} dims: [ {dims} ] }}
]
instance_group [{{ kind: KIND_CPU count: {count} }}]
{extra}
"""

ADD_SUB = """
import json
import os
import time
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.args = args
        self.config = json.loads(args["model_config"])

    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            params = json.loads(request.parameters())
            if params.get("crash") == "exit":
                os._exit(3)
            if params.get("crash") == "segv":
                import ctypes
                ctypes.string_at(0)
            if params.get("fail"):
                raise ValueError("asked to fail")
            if params.get("delay"):
                time.sleep(float(params["delay"]))
            out = {"pid": os.getpid(), "args": self.args, "params": params,
                   "id": request.request_id(), "corr": request.correlation_id(),
                   "flags": request.flags(), "requested": request.requested_output_names()}
            responses.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor("OUTPUT0", a + b), pb_utils.Tensor("OUTPUT1", a - b)],
                parameters={"echo": json.dumps(out)},
            ))
        return responses
"""

BLS = """
import json
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    {async_}def execute(self, requests):
        responses = []
        for request in requests:
            params = json.loads(request.parameters())
            target = params.get("target", "add_sub")
            inputs = [pb_utils.get_input_tensor_by_name(request, "INPUT0"),
                      pb_utils.get_input_tensor_by_name(request, "INPUT1")]
            bls = pb_utils.InferenceRequest(
                model_name=target, requested_output_names=["OUTPUT0", "OUTPUT1"],
                inputs=inputs, timeout=int(params.get("bls_timeout", 0)),
                parameters={{"delay": params.get("delay", 0)}},
            )
            response = {await_}bls.{exec_}(decoupled=bool(params.get("decoupled", False)))
            if params.get("decoupled"):
                response = list(response)[0]
            if response.has_error():
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(
                    response.error().message(), response.error().code())))
                continue
            out0 = pb_utils.get_output_tensor_by_name(response, "OUTPUT0")
            out1 = pb_utils.get_output_tensor_by_name(response, "OUTPUT1")
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUTPUT0", out0.as_numpy()),
                pb_utils.Tensor("OUTPUT1", out1.as_numpy() * 10),
            ]))
        return responses
"""

REPEAT_CONFIG = """
name: "{name}"
backend: "python"
max_batch_size: 0
model_transaction_policy {{ decoupled: true }}
input [
  {{ name: "IN" data_type: TYPE_INT32 dims: [ -1 ] }},
  {{ name: "DELAY" data_type: TYPE_UINT32 dims: [ -1 ] optional: true }}
]
output [
  {{ name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }},
  {{ name: "IDX" data_type: TYPE_UINT32 dims: [ 1 ] }}
]
instance_group [{{ kind: KIND_CPU }}]
"""

REPEAT = """
import threading
import time
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            values = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            if len(values) and values[0] == -1:
                raise RuntimeError("negative repeat")
            threading.Thread(target=self.respond, args=(request, values)).start()
        return None

    def respond(self, request, values):
        sender = request.get_response_sender()
        for i, value in enumerate(values):
            sender.send(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUT", np.array([value], dtype=np.int32)),
                pb_utils.Tensor("IDX", np.array([i], dtype=np.uint32)),
            ]))
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
"""

ASYNC_SQUARE = """
import asyncio
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    async def execute(self, requests):
        for request in requests:
            values = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            sender = request.get_response_sender()
            for i, value in enumerate(values):
                await asyncio.sleep(0)
                sender.send(pb_utils.InferenceResponse([
                    pb_utils.Tensor("OUT", np.array([value * value], dtype=np.int32)),
                    pb_utils.Tensor("IDX", np.array([i], dtype=np.uint32)),
                ]), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL if i == len(values) - 1 else 0)
            if not len(values):
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
"""

AUTO_COMPLETE = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        auto_complete_model_config.set_max_batch_size(8)
        auto_complete_model_config.set_dynamic_batching()
        auto_complete_model_config.add_input({"name": "X", "data_type": "TYPE_INT64", "dims": [2]})
        auto_complete_model_config.add_output({"name": "Y", "data_type": "TYPE_INT64", "dims": [2]})
        return auto_complete_model_config

    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "Y", pb_utils.get_input_tensor_by_name(r, "X").as_numpy() * 2)]) for r in requests]
"""


def write_model(repo: Path, name: str, source: str, config: str | None, version: int = 1) -> Path:
    folder = repo / name
    (folder / str(version)).mkdir(parents=True, exist_ok=True)
    (folder / str(version) / "model.py").write_text(textwrap.dedent(source))
    if config is not None:
        (folder / "config.pbtxt").write_text(config)
    return folder


def add_sub(
    repo: Path,
    name: str = "add_sub",
    *,
    dtype: str = "TYPE_FP32",
    dims: str = "4",
    max_batch: int = 0,
    count: int = 1,
    mode: str = "",
    extra: str = "",
    source: str = ADD_SUB,
) -> Path:
    """``mode``: the model's NAIAD_EXECUTION_MODE; none leaves the server's default."""
    if mode:
        extra += (
            f'\nparameters {{ key: "NAIAD_EXECUTION_MODE" value: {{ string_value: "{mode}" }} }}'
        )
    config = ADD_SUB_CONFIG.format(
        name=name, dtype=dtype, dims=dims, max_batch=max_batch, count=count, extra=extra
    )
    return write_model(repo, name, source, config)


def bls(repo: Path, name: str = "bls", *, use_async: bool = False, mode: str = "") -> Path:
    source = BLS.format(
        async_="async " if use_async else "",
        await_="await " if use_async else "",
        exec_="async_exec" if use_async else "exec",
    )
    return add_sub(repo, name, mode=mode, source=source)


def repeat(repo: Path, name: str = "repeat", source: str = REPEAT, mode: str = "") -> Path:
    config = REPEAT_CONFIG.format(name=name)
    if mode:
        config += (
            f'\nparameters {{ key: "NAIAD_EXECUTION_MODE" value: {{ string_value: "{mode}" }} }}'
        )
    return write_model(repo, name, source, config)
