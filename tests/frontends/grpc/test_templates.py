"""gRPC requests that repeat a message but for its tensor bytes are built from a template
(frontends/grpc/templates.py): answers follow each request's data, over both gRPC
transports; a changed model checks them again; a message whose raw contents do not fit
gets the error it always got.  ModelInfer and ModelStreamInfer alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from support import onnx_models
from support.onnx_models import write_config
from tritonclient.utils import InferenceServerException

from naiad.frontends.grpc import grpc_service_pb2 as pb
from naiad.frontends.grpc import grpc_service_pb2_grpc as pb_grpc
from naiad.frontends.grpc.templates import TEMPLATES_KEPT, Templates

pytestmark = pytest.mark.protocol


@pytest.fixture(params=["naiad", "grpcio"])
def server(request: pytest.FixtureRequest, tmp_path: Path, serve: Any) -> Any:
    repo = tmp_path / "models"
    for name in ("first", "second"):
        onnx_models.identity(repo / name / "1" / "model.onnx", shape=["batch", 4])
        write_config(repo / name, 'backend: "onnxruntime"\nmax_batch_size: 8\n')
    return serve(
        repo,
        grpc=True,
        model_control_mode="explicit",
        load_models=("first", "second"),
        grpc_transport=request.param,
    )


def infer(client: grpcclient.InferenceServerClient, model: str, x: np.ndarray, **kw: Any) -> Any:
    tensor = grpcclient.InferInput("INPUT0", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x)
    return client.infer(model, [tensor], **kw)


def test_each_answer_follows_its_own_data(server: Any) -> None:
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    rng = np.random.default_rng(1)
    for i in range(20):
        x = rng.standard_normal((3, 4)).astype(np.float32)
        model = "first" if i < 12 else "second"
        result = infer(client, model, x, request_id=f"r{i % 3}", parameters={"k": i % 2})
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), x)
        assert result.get_response().id == f"r{i % 3}"
        assert result.get_response().model_name == model
    stats = client.get_inference_statistics("second").model_stats[0]
    assert stats.inference_count == 24  # 8 requests of batch 3 went to "second"


def test_a_stream_of_one_shape_answers_each_request_with_its_data(server: Any) -> None:
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    answers: list[Any] = []
    client.start_stream(callback=lambda result, error: answers.append(error or result))
    sent = [np.full((1, 4), i, np.float32) for i in range(10)]
    try:
        for x in sent:
            tensor = grpcclient.InferInput("INPUT0", [1, 4], "FP32")
            tensor.set_data_from_numpy(x)
            client.async_stream_infer("first", [tensor])  # ten messages but for the data
    finally:
        client.stop_stream()  # waits for every answer
    assert len(answers) == 10
    for answer, x in zip(answers, sent, strict=True):  # a stream answers in order
        np.testing.assert_array_equal(answer.as_numpy("OUTPUT0"), x)


def test_a_changed_model_checks_the_same_message_again(server: Any) -> None:
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    x = np.ones((4, 4), np.float32)
    for _ in range(3):
        np.testing.assert_array_equal(infer(client, "first", x).as_numpy("OUTPUT0"), x)
    client.load_model("first", config=json.dumps({"backend": "onnxruntime", "max_batch_size": 2}))
    for _ in range(2):
        with pytest.raises(InferenceServerException, match="batch-size must be <= 2"):
            infer(client, "first", x)


def test_raw_contents_that_do_not_fit_are_refused_as_before(server: Any) -> None:
    """The same message with one raw entry too many, or of the wrong size."""
    with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        msg = pb.ModelInferRequest(model_name="first")
        tensor = msg.inputs.add(name="INPUT0", datatype="FP32")
        tensor.shape.extend([1, 4])
        data = np.arange(4, dtype=np.float32).tobytes()
        msg.raw_input_contents.append(data)
        for _ in range(2):
            reply = stub.ModelInfer(msg)
            assert np.frombuffer(reply.raw_output_contents[0], np.float32).tolist() == [0, 1, 2, 3]
        msg.raw_input_contents.append(data)
        with pytest.raises(grpc.RpcError) as extra:
            stub.ModelInfer(msg)
        assert extra.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "raw_input_contents has 2 entries but only 1 input(s)" in extra.value.details()
        del msg.raw_input_contents[:]
        msg.raw_input_contents.append(data[:-4])
        with pytest.raises(grpc.RpcError) as short:
            stub.ModelInfer(msg)
        assert "input byte size mismatch for input 'INPUT0'" in short.value.details()


def test_one_template_whatever_order_the_parameters_came_in() -> None:
    templates = Templates()
    requests = []
    for keys in (("a", "b"), ("b", "a")):
        msg = pb.ModelInferRequest(model_name="m")
        for key in keys:
            msg.parameters[key].int64_param = 1
        msg.inputs.add(name="X", datatype="FP32", shape=[1])
        msg.raw_input_contents.append(b"\0" * 4)
        requests.append(templates.decode(msg))
    assert requests[0].template is requests[1].template is not None
    assert requests[1].parameters == {"a": 1, "b": 1}
    for i in range(TEMPLATES_KEPT + 5):
        msg = pb.ModelInferRequest(model_name="m", id=str(i))
        msg.inputs.add(name="X", datatype="FP32", shape=[1])
        msg.raw_input_contents.append(b"\0" * 4)
        assert templates.decode(msg).id == str(i)
    assert len(templates._kept) <= TEMPLATES_KEPT
