"""A load whose ``config`` override is malformed fails as in Triton, over HTTP and gRPC.

Triton 2.51 cannot "poll" a model with a config it cannot parse: the load
answers 500 / INTERNAL "failed to load '<model>', failed to poll from model
repository", and the model keeps serving as it was.  naiad answers the same
and adds the reason (Triton only logs it).  NVIDIA's
``simple_http_model_control.py`` and ``simple_grpc_model_control.py`` client
examples check exactly this; their calls are replayed here against naiad.
"""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from support import onnx_models
from support.onnx_models import write_config
from tritonclient.utils import InferenceServerException

pytestmark = pytest.mark.protocol

SIMPLE = """
name: "simple"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [{ name: "INPUT0" data_type: TYPE_INT32 dims: [16] },
       { name: "INPUT1" data_type: TYPE_INT32 dims: [16] }]
output [{ name: "OUTPUT0" data_type: TYPE_INT32 dims: [16] },
        { name: "OUTPUT1" data_type: TYPE_INT32 dims: [16] }]
"""

#: What the examples send: not JSON at all (a fragment, doubled braces).
EXAMPLES_BAD = '"parameters": {"config": {{"max_batch_size": "16"}}}'
MALFORMED = [
    EXAMPLES_BAD,
    '{"max_batch_size": "sixteen"}',
    "[1]",
    '{"nosuchfield": 1}',
    '{"max_batch_size": 16',
]
PREFIX = "failed to load 'simple', failed to poll from model repository: invalid config override: "


@pytest.fixture
def models(repo: Path) -> Path:
    onnx_models.add_sub(repo / "simple" / "1" / "model.onnx", "INT32")
    write_config(repo / "simple", SIMPLE)
    for other in ("identity_a", "identity_b"):
        onnx_models.identity(repo / other / "1" / "model.onnx")
    return repo


def _client(server, protocol: str):  # type: ignore[no-untyped-def]
    if protocol == "http":
        return httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    return grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")


def _max_batch_size(client, protocol: str) -> int:  # type: ignore[no-untyped-def]
    config = client.get_model_config("simple")
    return int(config["max_batch_size"] if protocol == "http" else config.config.max_batch_size)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize("override", MALFORMED)
def test_a_malformed_override_is_internal_and_names_the_model_and_reason(
    models: Path, serve, protocol: str, override: str
) -> None:  # type: ignore[no-untyped-def]
    server = serve(models, http=True, grpc=True, model_control_mode="explicit",
                   load_models=("simple",))  # fmt: skip
    client = _client(server, protocol)
    with pytest.raises(InferenceServerException) as info:
        client.load_model("simple", config=override)
    status = "500" if protocol == "http" else str(grpc.StatusCode.INTERNAL)
    assert info.value.status() == status
    message = info.value.message()
    assert message.startswith(PREFIX), message
    assert len(message) > len(PREFIX), "no reason given"
    # The model serves on as it was.
    assert client.is_model_ready("simple")
    assert _max_batch_size(client, protocol) == 8


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_the_model_control_examples_pass(models: Path, serve, protocol: str) -> None:  # type: ignore[no-untyped-def]
    """The calls and checks of simple_{http,grpc}_model_control.py, in order."""
    server = serve(models, http=True, grpc=True, model_control_mode="explicit")
    client = _client(server, protocol)
    index = client.get_model_repository_index()
    assert len(index if protocol == "http" else index.models) == 3

    client.load_model("simple")
    assert client.is_model_ready("simple")

    with pytest.raises(InferenceServerException) as info:
        client.load_model("simple", config=EXAMPLES_BAD)
    assert "failed to load" in info.value.message()

    client.load_model("simple", config='{"max_batch_size":"16"}')
    assert _max_batch_size(client, protocol) == 16

    client.unload_model("simple")
    assert not client.is_model_ready("simple")

    with pytest.raises(InferenceServerException) as info:
        client.load_model("wrong_model_name")
    assert "failed to load" in info.value.message()
