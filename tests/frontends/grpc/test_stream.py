"""ModelStreamInfer semantics (grpc.md §6) and cancellation, with decoupled Python models."""

from __future__ import annotations

import queue
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as aioclient
from backends.python.pybackend_models import repeat, write_model
from tritonclient.utils import InferenceServerException

pytestmark = pytest.mark.protocol

SLOW = """
import time
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for request in requests:
            seconds = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            time.sleep(float(seconds[0]))
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", seconds)]))
        return out
"""

SLOW_CONFIG = """
name: "slow"
backend: "python"
max_batch_size: 0
input [{ name: "IN" data_type: TYPE_FP32 dims: [ 1 ] }]
output [{ name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] }]
instance_group [{ kind: KIND_CPU count: 1 }]
parameters { key: "NAIAD_EXECUTION_MODE" value: { string_value: "thread" } }
"""


@pytest.fixture
def python_url(repo: Path, serve: Any) -> str:
    """A server with a decoupled model (``repeat``), a slow one and an ONNX-free repo."""
    repeat(repo, mode="thread")
    write_model(repo, "slow", SLOW, SLOW_CONFIG)
    server = serve(repo, grpc=True)
    return f"127.0.0.1:{server.grpc_port}"


def _fp32_input(mod: Any, value: float = 1.0, name: str = "INPUT0") -> Any:
    tensor = mod.InferInput(name, [1, 16], "FP32")
    tensor.set_data_from_numpy(np.full((1, 16), value, dtype=np.float32))
    return tensor


def _int_input(values: list[int]) -> Any:
    tensor = grpcclient.InferInput("IN", [len(values)], "INT32")
    tensor.set_data_from_numpy(np.array(values, dtype=np.int32))
    return tensor


def _collect(url: str, send: Any, headers: dict[str, str] | None = None) -> list[tuple[Any, Any]]:
    got: queue.Queue[tuple[Any, Any]] = queue.Queue()
    with grpcclient.InferenceServerClient(url) as client:
        client.start_stream(lambda result, error: got.put((result, error)), headers=headers)
        send(client)
        client.stop_stream()
    return [got.get_nowait() for _ in range(got.qsize())]


def test_responses_follow_request_order_with_errors_in_band(grpc_url: str) -> None:
    def send(client: grpcclient.InferenceServerClient) -> None:
        for i in range(24):
            if i == 7:
                client.async_stream_infer("no_such_model", [_fp32_input(grpcclient)],
                                          request_id="bad")  # fmt: skip
            elif i % 3 == 0:
                inputs = [_fp32_input(grpcclient), _fp32_input(grpcclient, 2.0, "INPUT1")]
                client.async_stream_infer("add_sub", inputs, request_id=str(i))
            else:
                client.async_stream_infer("identity_fp32", [_fp32_input(grpcclient, i)],
                                          request_id=str(i))  # fmt: skip

    answers = _collect(grpc_url, send)
    assert len(answers) == 24
    for i, (result, error) in enumerate(answers):
        if i == 7:
            assert result is None
            assert "Request for unknown model: 'no_such_model' is not found" in error.message()
            continue
        assert error is None
        response = result.get_response()
        assert response.id == str(i)
        assert response.parameters["triton_final_response"].bool_param
        if i % 3:
            np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), np.full((1, 16), i))


def test_triton_grpc_error_ends_the_stream_with_a_status(grpc_url: str) -> None:
    def send(client: grpcclient.InferenceServerClient) -> None:
        client.async_stream_infer("identity_fp32", [_fp32_input(grpcclient)], request_id="ok")
        client.async_stream_infer("no_such_model", [_fp32_input(grpcclient)], request_id="bad")

    answers = _collect(grpc_url, send, headers={"triton_grpc_error": "true"})
    errors = [error for _, error in answers if error is not None]
    assert len(errors) == 1
    assert errors[0].status() == "StatusCode.NOT_FOUND"
    assert "no_such_model" in errors[0].message()


def test_decoupled_responses_and_empty_final(python_url: str) -> None:
    def send(client: grpcclient.InferenceServerClient) -> None:
        client.async_stream_infer("repeat", [_int_input([4, 5, 6])], request_id="a")
        client.async_stream_infer("repeat", [_int_input([7])], request_id="b",
                                  enable_empty_final_response=True)  # fmt: skip

    answers = _collect(python_url, send)
    assert all(error is None for _, error in answers)
    by_id: dict[str, list[Any]] = {}
    for result, _ in answers:
        by_id.setdefault(result.get_response().id, []).append(result)
    assert [r.as_numpy("OUT").tolist() for r in by_id["a"]] == [[4], [5], [6]]
    finals = [r.get_response().parameters["triton_final_response"].bool_param for r in by_id["a"]]
    assert finals == [False, False, False]  # the flag-only final is not sent unless asked
    b = by_id["b"]
    assert [r.get_response().parameters["triton_final_response"].bool_param for r in b] == [
        False,
        True,
    ]
    empty = b[-1].get_response()
    assert not empty.outputs and empty.model_name == "repeat" and empty.id == "b"


def test_decoupled_model_error_in_band(python_url: str) -> None:
    answers = _collect(
        python_url, lambda c: c.async_stream_infer("repeat", [_int_input([-1])], request_id="x")
    )
    assert len(answers) == 1
    assert answers[0][0] is None
    assert "negative repeat" in answers[0][1].message()


def test_decoupled_model_refused_by_model_infer(python_url: str) -> None:
    with grpcclient.InferenceServerClient(python_url) as client:
        with pytest.raises(InferenceServerException) as exc:
            client.infer("repeat", [_int_input([1])])
    assert exc.value.status() == "StatusCode.UNIMPLEMENTED"
    assert "ModelInfer RPC doesn't support models with decoupled transaction policy" in (
        exc.value.message()
    )


async def test_aio_stream_infer_decoupled(python_url: str) -> None:
    async with aioclient.InferenceServerClient(python_url) as client:
        tensor = aioclient.InferInput("IN", [2], "INT32")
        tensor.set_data_from_numpy(np.array([1, 2], dtype=np.int32))

        async def requests() -> AsyncIterator[dict[str, Any]]:
            yield {"model_name": "repeat", "inputs": [tensor], "request_id": "r"}

        answers = [item async for item in client.stream_infer(requests())]
    assert [error for _, error in answers] == [None, None]
    assert [r.as_numpy("OUT").tolist() for r, _ in answers] == [[1], [2]]


def _slow(client: grpcclient.InferenceServerClient, seconds: float, **kwargs: Any) -> Any:
    tensor = grpcclient.InferInput("IN", [1], "FP32")
    tensor.set_data_from_numpy(np.array([seconds], dtype=np.float32))
    return client.infer("slow", [tensor], **kwargs)


def test_deadline_cancels_a_queued_request(python_url: str) -> None:
    """A request whose deadline passed while queued is answered without running."""
    with grpcclient.InferenceServerClient(python_url) as client:
        assert client.is_server_live()  # connected: the next two calls arrive in order
        done: queue.Queue[Any] = queue.Queue()
        client.async_infer(
            # Long enough for the cancellation to be seen on a loaded machine.
            "slow",
            [_slow_input(2.0)],
            callback=lambda result, error: done.put(error),
        )
        with pytest.raises(InferenceServerException) as exc:
            # queued behind the busy instance; were it run, it would take 0.4 s more
            _slow(client, 0.4, client_timeout=0.1)
        assert exc.value.status() == "StatusCode.DEADLINE_EXCEEDED"
        assert done.get(timeout=30) is None
        _slow(client, 0.0)  # queued after the cancelled one: once it ran, that one was seen
        stats = client.get_inference_statistics("slow").model_stats[0]
    assert stats.execution_count == 2


def _slow_input(seconds: float) -> Any:
    tensor = grpcclient.InferInput("IN", [1], "FP32")
    tensor.set_data_from_numpy(np.array([seconds], dtype=np.float32))
    return tensor


def test_big_message_beyond_grpc_default_limit(grpc_url: str) -> None:
    """8 MiB each way: the server raised grpc's 4 MiB receive limit (grpc.md §0)."""
    n = 2 * 1024 * 1024
    tensor = grpcclient.InferInput("INPUT0", [1, n], "FP32")
    data = np.arange(n, dtype=np.float32).reshape(1, n)
    tensor.set_data_from_numpy(data)
    with grpcclient.InferenceServerClient(grpc_url) as client:
        result = client.infer("identity_fp32_var", [tensor])
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data)


def test_rpc_error_codes_reach_grpc_clients(grpc_url: str) -> None:
    with grpc.insecure_channel(grpc_url) as channel:
        from naiad.frontends.grpc import grpc_service_pb2 as pb
        from naiad.frontends.grpc import grpc_service_pb2_grpc as pb_grpc

        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        with pytest.raises(grpc.RpcError) as exc:
            stub.ModelInfer(pb.ModelInferRequest(model_name="identity_fp32"))
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
