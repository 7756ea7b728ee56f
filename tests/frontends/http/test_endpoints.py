"""Every endpoint of rest.md §13 through tritonclient.http (metrics live elsewhere)."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

pytestmark = pytest.mark.protocol


@pytest.fixture
def client(http_url: str) -> Iterator[httpclient.InferenceServerClient]:
    c = httpclient.InferenceServerClient(http_url)
    yield c
    c.close()


def _status(exc: pytest.ExceptionInfo[InferenceServerException]) -> str:
    return exc.value.status()


def test_health(client: httpclient.InferenceServerClient) -> None:
    assert client.is_server_live()
    assert client.is_server_ready()
    assert client.is_model_ready("identity_fp32")
    assert client.is_model_ready("identity_fp32", "1")
    assert not client.is_model_ready("identity_fp32", "2")
    assert not client.is_model_ready("no_such_model")


def test_model_ready_of_what_is_not_loaded_answers_as_triton(http_url: str) -> None:
    # Triton 2.51: 400 and the same body for a version that is not loaded and for a model
    # it does not know (checked against the reference server).
    host, port = http_url.rsplit(":", 1)
    for path in ("identity_fp32/versions/2", "no_such_model", "no_such_model/versions/3"):
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        try:
            conn.request("GET", f"/v2/models/{path}/ready")
            answer = conn.getresponse()
            assert answer.status == 400
            assert json.loads(answer.read()) == {"error": "Model version not ready"}
        finally:
            conn.close()


def test_server_metadata(client: httpclient.InferenceServerClient) -> None:
    meta = client.get_server_metadata()
    assert meta["name"] == "triton"
    assert "statistics" in meta["extensions"]
    assert "binary_tensor_data" in meta["extensions"]


def test_model_metadata(client: httpclient.InferenceServerClient) -> None:
    meta = client.get_model_metadata("add_sub")
    assert meta["name"] == "add_sub"
    assert meta["versions"] == ["1"]
    assert meta["platform"] == "onnxruntime_onnx"
    assert [t["name"] for t in meta["inputs"]] == ["INPUT0", "INPUT1"]
    assert meta["inputs"][0] == {"name": "INPUT0", "datatype": "FP32", "shape": [-1, 16]}
    assert client.get_model_metadata("add_sub", "1")["versions"] == ["1"]
    with pytest.raises(InferenceServerException) as exc:
        client.get_model_metadata("no_such_model")
    assert _status(exc) == "404"
    assert "Request for unknown model: 'no_such_model' is not found" in exc.value.message()


def test_model_config(client: httpclient.InferenceServerClient) -> None:
    config = client.get_model_config("identity_fp32")
    assert config["name"] == "identity_fp32"
    assert config["max_batch_size"] == 8
    assert config["input"][0]["data_type"] == "TYPE_FP32"
    assert client.get_model_config("identity_fp32", "1")["name"] == "identity_fp32"
    with pytest.raises(InferenceServerException) as exc:
        client.get_model_config("identity_fp32", "3")
    assert _status(exc) == "404"


def test_statistics(client: httpclient.InferenceServerClient) -> None:
    everything = client.get_inference_statistics()
    names = {s["name"] for s in everything["model_stats"]}
    assert {"identity_fp32", "add_sub"} <= names
    one = client.get_inference_statistics("identity_fp32")
    assert [s["name"] for s in one["model_stats"]] == ["identity_fp32"]
    stat = client.get_inference_statistics("identity_fp32", "1")["model_stats"][0]
    assert stat["version"] == "1"
    assert isinstance(stat["inference_stats"]["success"]["count"], int)
    with pytest.raises(InferenceServerException) as exc:
        client.get_inference_statistics("no_such_model")
    assert _status(exc) == "400"


def test_repository_index(client: httpclient.InferenceServerClient) -> None:
    index = client.get_model_repository_index()
    entry = next(e for e in index if e["name"] == "identity_fp32")
    assert entry == {"name": "identity_fp32", "version": "1", "state": "READY"}


def test_load_unload_refused_without_explicit_mode(
    client: httpclient.InferenceServerClient,
) -> None:
    for call in (client.load_model, client.unload_model):
        with pytest.raises(InferenceServerException) as exc:
            call("identity_fp32")
        assert _status(exc) == "503"
        assert "explicit model load / unload is not allowed" in exc.value.message()


def test_unload_in_explicit_mode(case_repo: Path, serve) -> None:  # type: ignore[no-untyped-def]
    server = serve(case_repo, http=True, model_control_mode="explicit",
                   load_models=("identity_fp32",))  # fmt: skip
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    try:
        assert client.is_model_ready("identity_fp32")
        client.unload_model("identity_fp32")
        assert not client.is_model_ready("identity_fp32")
        index = {e["name"]: e for e in client.get_model_repository_index()}
        assert index["identity_fp32"]["state"] == "UNAVAILABLE"
        assert index["add_sub"] == {"name": "add_sub"}
    finally:
        client.close()


def test_system_shared_memory(client: httpclient.InferenceServerClient) -> None:
    assert client.get_system_shared_memory_status() == []
    client.unregister_system_shared_memory()
    client.unregister_system_shared_memory("some_region")
    with pytest.raises(InferenceServerException) as exc:
        client.register_system_shared_memory("r", "/no_such_key", 64)
    assert _status(exc) != "200"


def test_cuda_shared_memory(client: httpclient.InferenceServerClient) -> None:
    assert client.get_cuda_shared_memory_status() == []
    client.unregister_cuda_shared_memory()
    with pytest.raises(InferenceServerException):
        client.register_cuda_shared_memory("r", b"AAAA", 0, 64)


def test_trace_settings(client: httpclient.InferenceServerClient) -> None:
    settings = client.get_trace_settings()
    assert settings["trace_level"] == ["OFF"]
    assert settings["trace_rate"] == "1000"
    updated = client.update_trace_settings(settings={"trace_rate": "500"})
    assert updated["trace_rate"] == "500"
    model = client.update_trace_settings("identity_fp32", {"trace_count": "5"})
    assert model["trace_count"] == "5" and model["trace_rate"] == "500"
    assert client.get_trace_settings("identity_fp32")["trace_count"] == "5"
    client.update_trace_settings(settings={"trace_rate": "1000"})
    with pytest.raises(InferenceServerException) as exc:
        client.update_trace_settings(settings={"trace_file": "x"})
    assert _status(exc) == "501"
    with pytest.raises(InferenceServerException) as exc:
        client.get_trace_settings("no_such_model")
    assert _status(exc) == "404"


def test_log_settings(client: httpclient.InferenceServerClient) -> None:
    settings = client.get_log_settings()
    assert settings["log_format"] == "default"
    assert client.update_log_settings({"log_verbose_level": 0})["log_verbose_level"] == 0
    with pytest.raises(InferenceServerException) as exc:
        client.update_log_settings({"log_file": "x.log"})
    assert _status(exc) == "501"
    with pytest.raises(InferenceServerException) as exc:
        client.update_log_settings({"log_verbose_level": -1})
    assert _status(exc) == "400"
