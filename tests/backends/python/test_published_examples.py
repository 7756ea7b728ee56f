"""Models that use pb_utils the way Triton's published python_backend examples do.

NVIDIA's BLS examples (``examples/bls``, ``examples/bls_decoupled``) read
the target model's name from a TYPE_STRING input, so it arrives as
``bytes`` (``as_numpy()[0]``), and hand it to ``pb_utils.InferenceRequest``:
Triton's pb_utils is pybind11, whose ``std::string`` arguments take ``str``
and ``bytes`` alike.  The models here are written for these tests and
behave as those examples do (same configs, same calls, same client
requests); they run in both execution modes, over HTTP and gRPC.
"""

from __future__ import annotations

import numpy as np
import pytest
from pybackend_models import write_model

pytestmark = pytest.mark.protocol

MODES = ["process", "thread"]

_MODE = '\nparameters {{ key: "NAIAD_EXECUTION_MODE" value: {{ string_value: "{mode}" }} }}\n'

ADD_SUB_CONFIG = """
name: "add_sub"
backend: "python"
input [
  { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 4 ] }
]
instance_group [{ kind: KIND_CPU }]
"""

#: The add_sub example: output types from the config through pb_utils' helpers.
ADD_SUB = """
import json
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.dtypes = [
            pb_utils.triton_string_to_numpy(pb_utils.get_output_config_by_name(config, n)["data_type"])
            for n in ("OUTPUT0", "OUTPUT1")
        ]

    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("OUTPUT0", (a + b).astype(self.dtypes[0])),
                pb_utils.Tensor("OUTPUT1", (a - b).astype(self.dtypes[1])),
            ]))
        return responses
"""

BLS_SYNC_CONFIG = """
name: "bls_sync"
backend: "python"
input [ { name: "MODEL_NAME" data_type: TYPE_STRING dims: [ 1 ] } ]
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
input [ { name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [{ kind: KIND_CPU }]
"""

#: The BLS sync example: the target's name is the bytes of a TYPE_STRING input.
BLS_SYNC = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            in_0 = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            in_1 = pb_utils.get_input_tensor_by_name(request, "INPUT1")
            target = pb_utils.get_input_tensor_by_name(request, "MODEL_NAME").as_numpy()[0]
            call = pb_utils.InferenceRequest(
                model_name=target,
                requested_output_names=["OUTPUT0", "OUTPUT1"],
                inputs=[in_0, in_1],
            )
            answer = call.exec()
            if answer.has_error():
                raise pb_utils.TritonModelException(answer.error().message())
            responses.append(pb_utils.InferenceResponse(output_tensors=answer.output_tensors()))
        return responses
"""

#: Like the example, with every string pb_utils takes given as bytes or numpy bytes.
BLS_BYTES = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            names = pb_utils.get_input_tensor_by_name(request, "MODEL_NAME").as_numpy()
            a = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            b = pb_utils.get_input_tensor_by_name(request, "INPUT1")
            pb_utils.Logger.log_info(b"calling " + names[0])
            call = pb_utils.InferenceRequest(
                model_name=np.bytes_(names[0]),
                requested_output_names=[b"OUTPUT0", np.bytes_(b"OUTPUT1")],
                inputs=[pb_utils.Tensor(b"INPUT0", a.as_numpy()),
                        pb_utils.Tensor.from_dlpack(np.bytes_(b"INPUT1"), b.to_dlpack())],
                request_id=b"bls-" + names[0],
                model_version=np.int64(-1),
            )
            assert call.inputs()[0].name() == "INPUT0", call.inputs()[0].name()
            answer = call.exec()
            if answer.has_error():
                responses.append(pb_utils.InferenceResponse(
                    error=pb_utils.TritonError(b"BLS failed: " + answer.error().message().encode())))
                continue
            out = pb_utils.get_output_tensor_by_name(answer, "OUTPUT1")
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.get_output_tensor_by_name(answer, "OUTPUT0"),
                pb_utils.Tensor(np.str_("OUTPUT1"), out.as_numpy()),
            ]))
        return responses
"""

SQUARE_CONFIG = """
name: "square_int32"
backend: "python"
max_batch_size: 0
model_transaction_policy { decoupled: True }
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [{ kind: KIND_CPU }]
"""

#: The decoupled square example: IN=[n] sends n responses of OUT=[n], from a thread.
SQUARE = """
import threading
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            values = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            threading.Thread(
                target=self.respond, args=(request.get_response_sender(), values), daemon=True
            ).start()
        return None

    def respond(self, sender, values):
        for _ in range(values[0]):
            sender.send(pb_utils.InferenceResponse(
                output_tensors=[pb_utils.Tensor("OUT", np.array([values[0]], np.int32))]))
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
"""

BLS_DECOUPLED_CONFIG = """
name: "{name}"
backend: "python"
input [ {{ name: "IN" data_type: TYPE_INT32 dims: [ 1 ] }} ]
input [ {{ name: "MODEL_NAME" data_type: TYPE_STRING dims: [ 1 ] }} ]
input [ {{ name: "OUTPUT_NAME" data_type: TYPE_STRING dims: [ 1 ] }} ]
output [ {{ name: "SUM" data_type: TYPE_INT32 dims: [ 1 ] }} ]
instance_group [{{ kind: KIND_CPU }}]
"""

#: The BLS decoupled examples (sync and async), naming target and output in bytes.
BLS_DECOUPLED = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    {async_}def execute(self, requests):
        if len(requests) != 1:
            raise pb_utils.TritonModelException("unsupported batch size " + str(len(requests)))
        request = requests[0]
        count = pb_utils.get_input_tensor_by_name(request, "IN")
        target = pb_utils.get_input_tensor_by_name(request, "MODEL_NAME").as_numpy()[0]
        output = pb_utils.get_input_tensor_by_name(request, "OUTPUT_NAME").as_numpy()
        call = pb_utils.InferenceRequest(
            model_name=target, inputs=[count], requested_output_names=output
        )
        total = np.array([0], dtype=np.int32)
        for response in {await_}call.{exec_}(decoupled=True):
            if response.has_error():
                raise pb_utils.TritonModelException(response.error().message())
            if len(response.output_tensors()) > 0:
                total += pb_utils.get_output_tensor_by_name(response, output[0].decode()).as_numpy()
        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor(b"SUM", total)])]
"""


def _repository(repo, mode: str) -> None:
    extra = _MODE.format(mode=mode)
    write_model(repo, "add_sub", ADD_SUB, ADD_SUB_CONFIG + extra)
    write_model(repo, "square_int32", SQUARE, SQUARE_CONFIG + extra)
    write_model(repo, "bls_sync", BLS_SYNC, BLS_SYNC_CONFIG + extra)
    write_model(
        repo, "bls_bytes", BLS_BYTES, BLS_SYNC_CONFIG.replace("bls_sync", "bls_bytes") + extra
    )
    for name, use_async in (("bls_decoupled_sync", False), ("bls_decoupled_async", True)):
        source = BLS_DECOUPLED.format(
            async_="async " if use_async else "",
            await_="await " if use_async else "",
            exec_="async_exec" if use_async else "exec",
        )
        write_model(repo, name, source, BLS_DECOUPLED_CONFIG.format(name=name) + extra)


@pytest.fixture(params=MODES)
def examples(request, repo, serve):
    _repository(repo, request.param)
    return serve(repo, http=True, grpc=True)


def _client(server, protocol: str):
    if protocol == "http":
        import tritonclient.http as module

        return module, module.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    import tritonclient.grpc as module

    return module, module.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")


def _bls_inputs(module, target: str, a: np.ndarray, b: np.ndarray) -> list:
    """The inputs the BLS sync example's client sends."""
    inputs = [
        module.InferInput("INPUT0", list(a.shape), "FP32"),
        module.InferInput("INPUT1", list(b.shape), "FP32"),
        module.InferInput("MODEL_NAME", [1], "BYTES"),
    ]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    inputs[2].set_data_from_numpy(np.array([target], dtype=np.object_))
    return inputs


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize("model", ["bls_sync", "bls_bytes"])
def test_bls_sync_example(examples, protocol, model):
    from tritonclient.utils import InferenceServerException

    module, client = _client(examples, protocol)
    a = np.random.rand(4).astype(np.float32)
    b = np.random.rand(4).astype(np.float32)
    outputs = [module.InferRequestedOutput("OUTPUT0"), module.InferRequestedOutput("OUTPUT1")]
    try:
        result = client.infer(
            model, _bls_inputs(module, "add_sub", a, b), request_id="1", outputs=outputs
        )
        np.testing.assert_allclose(result.as_numpy("OUTPUT0"), a + b)
        np.testing.assert_allclose(result.as_numpy("OUTPUT1"), a - b)
        with pytest.raises(InferenceServerException) as info:
            client.infer(
                model, _bls_inputs(module, "undefined_model", a, b), request_id="1", outputs=outputs
            )
    finally:
        client.close()
    message = info.value.message()
    assert "'undefined_model'" in message and "b'undefined_model'" not in message, message


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize("model", ["bls_decoupled_sync", "bls_decoupled_async"])
def test_bls_decoupled_example(examples, protocol, model):
    module, client = _client(examples, protocol)
    inputs = [
        module.InferInput("IN", [1], "INT32"),
        module.InferInput("MODEL_NAME", [1], "BYTES"),
        module.InferInput("OUTPUT_NAME", [1], "BYTES"),
    ]
    inputs[1].set_data_from_numpy(np.array([b"square_int32"], dtype=np.object_))
    inputs[2].set_data_from_numpy(np.array(["OUT"], dtype=np.object_))
    try:
        for n in (0, 1, 4):
            inputs[0].set_data_from_numpy(np.array([n], dtype=np.int32))
            result = client.infer(model, inputs, request_id=str(n))
            assert result.as_numpy("SUM").tolist() == [n * n]
    finally:
        client.close()
