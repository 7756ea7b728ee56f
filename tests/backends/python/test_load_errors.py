"""Loading a Python model whose ``initialize`` raises fails as Triton's load does.

Triton 2.51 answers every such load (the first and each one after) with
INVALID_ARGUMENT over gRPC and 400 over HTTP: ``load failed for model 'bad':
version 1 is at UNAVAILABLE state: Internal: ValueError: ...;`` and the
repository index lists the version UNAVAILABLE with the same reason.
"""

from __future__ import annotations

import numpy as np
import pytest
from pybackend_models import write_model

pytestmark = pytest.mark.protocol

MODES = ["process", "thread"]

CONFIG = """
name: "{name}"
backend: "python"
max_batch_size: 0
input [ {{ name: "X" data_type: TYPE_FP32 dims: [ -1 ] }} ]
output [ {{ name: "Y" data_type: TYPE_FP32 dims: [ -1 ] }} ]
parameters {{ key: "NAIAD_EXECUTION_MODE" value: {{ string_value: "{mode}" }} }}
"""

BAD = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        raise ValueError("initialize refuses")

    def execute(self, requests):
        return []
"""

GOOD = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "Y", pb_utils.get_input_tensor_by_name(r, "X").as_numpy() * 2)]) for r in requests]
"""


def _models(repo, mode: str) -> None:
    write_model(repo, "bad", BAD, CONFIG.format(name="bad", mode=mode))
    write_model(repo, "good", GOOD, CONFIG.format(name="good", mode=mode))


def _clients(server):
    import tritonclient.grpc as grpcclient
    import tritonclient.http as httpclient

    return (
        ("grpc", grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")),
        ("http", httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")),
    )


def _load_error(name: str, client) -> str:
    """The message of a failing ``load_model("bad")``, after checking its status."""
    from tritonclient.utils import InferenceServerException

    with pytest.raises(InferenceServerException) as info:
        client.load_model("bad")
    assert info.value.status() == ("StatusCode.INVALID_ARGUMENT" if name == "grpc" else "400")
    message = info.value.message()
    assert "load failed for model 'bad'" in message and "initialize refuses" in message
    return message


def _check_index(client) -> None:
    rows = {row["name"]: row for row in _rows(client)}
    assert rows["bad"]["state"] == "UNAVAILABLE"
    assert rows["bad"]["reason"].startswith("Internal: ValueError: initialize refuses")


def _rows(client) -> list[dict]:
    index = client.get_model_repository_index()
    if isinstance(index, list):  # HTTP
        return index
    return [{"name": m.name, "state": m.state, "reason": m.reason} for m in index.models]


def _check_good_loads(client) -> None:
    client.load_model("good")
    assert client.is_model_ready("good")


@pytest.mark.parametrize("mode", MODES)
def test_explicit_load_of_a_failing_model_fails_every_time(repo, serve, mode):
    _models(repo, mode)
    server = serve(repo, http=True, grpc=True, model_control_mode="explicit")
    clients = _clients(server)
    try:
        for name, client in clients + clients:  # each load tries again and fails again
            _load_error(name, client)
            _check_index(client)
        for _, client in clients:
            _check_good_loads(client)
        assert not clients[0][1].is_model_ready("bad")
    finally:
        for _, client in clients:
            client.close()


@pytest.mark.parametrize("mode", MODES)
def test_failed_start_up_load_then_explicit_loads(repo, serve, mode):
    _models(repo, mode)
    server = serve(
        repo,
        http=True,
        grpc=True,
        model_control_mode="explicit",
        load_models=("bad",),
        strict_readiness=False,
    )
    reason = dict(server.dataplane.failed_models())["bad version 1"]
    assert reason.startswith("Internal: ValueError: initialize refuses")
    clients = _clients(server)
    try:
        for name, client in clients:
            _check_index(client)
            _load_error(name, client)
        _check_good_loads(clients[0][1])
        import tritonclient.http as httpclient

        x = httpclient.InferInput("X", [2], "FP32")
        x.set_data_from_numpy(np.array([1.0, 2.0], dtype=np.float32))
        result = clients[1][1].infer("good", [x])
        assert result.as_numpy("Y").tolist() == [2.0, 4.0]
    finally:
        for _, client in clients:
            client.close()


@pytest.mark.parametrize("mode", MODES)
def test_load_error_is_worded_as_triton(repo, serve, mode):
    _models(repo, mode)
    server = serve(repo, grpc=True, http=True, model_control_mode="explicit")
    for name, client in _clients(server):
        try:
            message = _load_error(name, client)
        finally:
            client.close()
        assert message.startswith(
            "load failed for model 'bad': version 1 is at UNAVAILABLE state: "
            "Internal: ValueError: initialize refuses\n\nAt:\n  "
        ), message
        frames = message.split("At:\n")[1]
        # Triton names the file by its full path; naiad from the repository's root.
        assert frames.endswith("  bad/1/model.py(7): initialize\n;\n"), message
        assert str(repo) not in message
        assert frames.count("\n  ") == 0  # only the model's frame (Triton's), not the server's
