"""The Python models of ``examples/model_repository`` work as documented."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from pybackend_helpers import A, B, request, stream

pytestmark = pytest.mark.e2e

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "model_repository"


@pytest.fixture(scope="module")
def example_repo(tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("examples")
    for name in ("add_sub", "add_sub_python", "bls", "repeat"):
        shutil.copytree(EXAMPLES / name, repo / name)
    return repo


@pytest.fixture(scope="module")
def examples(example_repo):
    from naiad import Server

    with Server(model_repository=example_repo) as server:
        yield server


def test_add_sub_python(examples):
    out = examples.infer("add_sub_python", {"INPUT0": A, "INPUT1": B})
    np.testing.assert_array_equal(out["OUTPUT0"], A + B)
    np.testing.assert_array_equal(out["OUTPUT1"], A - B)


@pytest.mark.parametrize("target", ["add_sub", "add_sub_python"])
def test_bls_calls_onnx_and_python_models(examples, target):
    out = examples.infer("bls", {"INPUT0": A, "INPUT1": B}, parameters={"model": target})
    np.testing.assert_allclose(out["OUTPUT0"], A + B)
    np.testing.assert_allclose(out["OUTPUT1"], A - B)


def test_repeat(examples):
    responses = stream(examples, request("repeat", {"IN": np.array([7, 8], dtype=np.int32)}))
    assert [r.as_numpy("OUT").tolist() for r in responses[:-1]] == [[7], [8]]
    assert responses[-1].final and not responses[-1].outputs


def test_http_with_tritonclient(example_repo, serve):
    examples = serve(example_repo, http=True)
    import tritonclient.http as httpclient

    client = httpclient.InferenceServerClient(f"127.0.0.1:{examples.http_port}")
    try:
        inputs = [
            httpclient.InferInput("INPUT0", [4], "FP32"),
            httpclient.InferInput("INPUT1", [4], "FP32"),
        ]
        inputs[0].set_data_from_numpy(A)
        inputs[1].set_data_from_numpy(B, binary_data=False)
        for model in ("add_sub_python", "bls"):
            result = client.infer(model, inputs)
            np.testing.assert_allclose(result.as_numpy("OUTPUT0"), A + B)
            np.testing.assert_allclose(result.as_numpy("OUTPUT1"), A - B)
        assert client.is_model_ready("add_sub_python")
        assert client.get_model_metadata("add_sub_python")["platform"] == "python"
    finally:
        client.close()


def test_grpc_stream_with_tritonclient(example_repo, serve):
    examples = serve(example_repo, grpc=True)
    import queue

    import tritonclient.grpc as grpcclient

    results: queue.Queue = queue.Queue()
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{examples.grpc_port}")
    try:
        client.start_stream(callback=lambda result, error: results.put((result, error)))
        values = np.array([3, 1, 4], dtype=np.int32)
        tensor = grpcclient.InferInput("IN", [3], "INT32")
        tensor.set_data_from_numpy(values)
        client.async_stream_infer(
            "repeat", [tensor], request_id="r1", enable_empty_final_response=True
        )
        got = []
        while True:
            result, error = results.get(timeout=30)
            assert error is None, error
            response = result.get_response()
            if result.as_numpy("OUT") is not None:
                got.append(int(result.as_numpy("OUT")[0]))
            if response.parameters["triton_final_response"].bool_param:
                break
        assert got == [3, 1, 4]
    finally:
        client.stop_stream()
        client.close()
