"""Ensembles over HTTP and gRPC with tritonclient: answers, subsets, streaming, errors."""

from __future__ import annotations

import queue
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from scheduling.ensemble_models import IMAGE_SHAPE, expected, fanout, pipeline
from tritonclient.utils import InferenceServerException

from naiad import Server

pytestmark = pytest.mark.protocol

WAIT_S = 30.0
IMAGE = (np.arange(int(np.prod(IMAGE_SHAPE)), dtype=np.uint8).reshape(IMAGE_SHAPE) * 13) % 241


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    repo = tmp_path_factory.mktemp("ensemble_clients")
    pipeline(repo)
    fanout(repo)
    with Server(repo, http_port=0, grpc_port=0) as started:
        yield started


def _client(server: Server, protocol: str) -> tuple[Any, Any]:
    if protocol == "http":
        return httpclient, httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    return grpcclient, grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")


def _image(module: Any) -> Any:
    tensor = module.InferInput("IMAGE", list(IMAGE.shape), "UINT8")
    tensor.set_data_from_numpy(IMAGE)
    return tensor


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_pipeline(server: Server, protocol: str) -> None:
    module, client = _client(server, protocol)
    result = client.infer("pipeline", [_image(module)])
    label, score = expected(IMAGE)
    assert result.as_numpy("LABEL").tolist() == [label]
    assert result.as_numpy("SCORE")[0] == pytest.approx(score, rel=1e-6)
    assert client.get_model_metadata("pipeline") is not None
    assert client.is_model_ready("pipeline")


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_output_subset(server: Server, protocol: str) -> None:
    module, client = _client(server, protocol)
    result = client.infer(
        "pipeline", [_image(module)], outputs=[module.InferRequestedOutput("LABEL")]
    )
    assert result.as_numpy("LABEL").tolist() == [expected(IMAGE)[0]]
    assert result.as_numpy("SCORE") is None


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_step_error(server: Server, protocol: str) -> None:
    module, client = _client(server, protocol)
    with pytest.raises(InferenceServerException) as caught:
        client.infer("pipeline", [_image(module)], parameters={"fail": True})
    message = caught.value.message()
    assert "in ensemble 'pipeline', step 0 (model 'preprocess')" in message
    assert "preprocess was asked to fail" in message


def test_decoupled_ensemble_streams(server: Server) -> None:
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    results: queue.Queue[Any] = queue.Queue()
    client.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        inputs = []
        for name, value in (("VALUE", 5), ("COUNT", 4), ("OFFSET", 1000)):
            tensor = grpcclient.InferInput(name, [1], "INT32")
            tensor.set_data_from_numpy(np.array([value], dtype=np.int32))
            inputs.append(tensor)
        client.async_stream_infer("fanout", inputs, enable_empty_final_response=True)
        sums = []
        while True:
            result, error = results.get(timeout=WAIT_S)
            assert error is None, error
            response = result.get_response()
            if result.as_numpy("SUM") is not None:
                sums.append(int(result.as_numpy("SUM")[0]))
            if response.parameters["triton_final_response"].bool_param:
                break
    finally:
        client.stop_stream()
    assert sorted(sums) == [1005, 1006, 1007, 1008]
