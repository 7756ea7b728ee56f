"""BF16 through Python models: DLPack keeps the type, over HTTP (binary) and gRPC.

numpy has no bfloat16, so a Triton model moves BF16 with ``to_dlpack`` and
``Tensor.from_dlpack``; the DLPack capsule carries the type (``kDLBfloat``)
and the output must reach the client as ``BF16``, not as the ``UINT16`` its
16 bits would look like.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from pybackend_models import write_model

pytestmark = pytest.mark.protocol

MODES = ["process", "thread"]

BF16_CONFIG = """
name: "{name}"
backend: "python"
max_batch_size: 0
input [ {{ name: "X" data_type: {in_type} dims: [ -1 ] }} ]
output [ {{ name: "Y" data_type: TYPE_BF16 dims: [ -1 ] }} ]
parameters {{ key: "NAIAD_EXECUTION_MODE" value: {{ string_value: "{mode}" }} }}
"""

#: Echoes a BF16 input the ways Triton's examples move tensors between frameworks.
ECHO = """
import json
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X")
            how = json.loads(request.parameters()).get("how", "capsule")
            if how == "capsule":
                y = pb_utils.Tensor.from_dlpack("Y", x.to_dlpack())
            else:  # any object with __dlpack__, here the input tensor itself
                y = pb_utils.Tensor.from_dlpack("Y", x)
            responses.append(pb_utils.InferenceResponse([y]))
        return responses
"""

#: Makes BF16 from FP32 with ml_dtypes, without torch: naiad's addition (Triton 2.51
#: refuses both calls; docs/differences.md). The echo paths are checked against 2.51.
MAKE = """
import json
import ml_dtypes
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
            half = x.astype(ml_dtypes.bfloat16)
            how = json.loads(request.parameters()).get("how", "tensor")
            if how == "tensor":
                y = pb_utils.Tensor("Y", half)
            else:
                y = pb_utils.Tensor.from_dlpack("Y", half)
            responses.append(pb_utils.InferenceResponse([y]))
        return responses
"""

VALUES = np.array([-1.5, 0.0, 2.0, 3.0e38], dtype=ml_dtypes.bfloat16)


@pytest.fixture
def bf16_server(repo, serve):
    for mode in MODES:
        write_model(
            repo,
            f"echo_{mode}",
            ECHO,
            BF16_CONFIG.format(name=f"echo_{mode}", in_type="TYPE_BF16", mode=mode),
        )
        write_model(
            repo,
            f"make_{mode}",
            MAKE,
            BF16_CONFIG.format(name=f"make_{mode}", in_type="TYPE_FP32", mode=mode),
        )
    return serve(repo, http=True, grpc=True)


def _infer(server, protocol: str, model: str, values: np.ndarray, how: str):
    if protocol == "http":
        import tritonclient.http as client_module

        client = client_module.InferenceServerClient(f"127.0.0.1:{server.http_port}")
        outputs = [client_module.InferRequestedOutput("Y", binary_data=True)]
    else:
        import tritonclient.grpc as client_module

        client = client_module.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
        outputs = [client_module.InferRequestedOutput("Y")]
    datatype = "BF16" if values.dtype == ml_dtypes.bfloat16 else "FP32"
    tensor = client_module.InferInput("X", list(values.shape), datatype)
    tensor.set_data_from_numpy(values)
    try:
        return client.infer(model, [tensor], outputs=outputs, parameters={"how": how})
    finally:
        client.close()


def _datatype(result, protocol: str) -> str:
    if protocol == "http":
        return result.get_output("Y")["datatype"]
    return result.get_output("Y").datatype


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", ["capsule", "object"])
def test_bf16_echo_through_dlpack(bf16_server, protocol, mode, how):
    result = _infer(bf16_server, protocol, f"echo_{mode}", VALUES, how)
    assert _datatype(result, protocol) == "BF16"
    out = result.as_numpy("Y")
    assert out.dtype == ml_dtypes.bfloat16
    assert out.tobytes() == VALUES.tobytes()


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", ["tensor", "dlpack"])
def test_bf16_made_with_ml_dtypes(bf16_server, protocol, mode, how):
    values = np.array([-1.5, 0.25, 2.0], dtype=np.float32)
    result = _infer(bf16_server, protocol, f"make_{mode}", values, how)
    assert _datatype(result, protocol) == "BF16"
    out = result.as_numpy("Y")
    assert out.dtype == ml_dtypes.bfloat16
    assert out.tobytes() == values.astype(ml_dtypes.bfloat16).tobytes()
