"""Every non-inference rpc (grpc.md §3, §5, §7-§9) through tritonclient.grpc, plus health."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as aioclient
from tritonclient.utils import InferenceServerException

from naiad.frontends.grpc import grpc_service_pb2 as pb
from naiad.frontends.grpc import grpc_service_pb2_grpc as pb_grpc

pytestmark = pytest.mark.protocol


@pytest.fixture
def client(grpc_url: str) -> Iterator[grpcclient.InferenceServerClient]:
    with grpcclient.InferenceServerClient(grpc_url) as c:
        yield c


@pytest.fixture
def stub(grpc_url: str) -> Iterator[pb_grpc.GRPCInferenceServiceStub]:
    """The raw stub, for messages tritonclient never sends (wrong oneof cases)."""
    with grpc.insecure_channel(grpc_url) as channel:
        yield pb_grpc.GRPCInferenceServiceStub(channel)


def _code(exc: pytest.ExceptionInfo[InferenceServerException]) -> str:
    return exc.value.status()


def test_health(client: grpcclient.InferenceServerClient) -> None:
    assert client.is_server_live()
    assert client.is_server_ready()
    assert client.is_model_ready("identity_fp32")
    assert client.is_model_ready("identity_fp32", "1")
    # Unknown models and versions that are not loaded are ready=false with OK, as Triton
    # 2.51 answers them (checked against the reference server); a bad version is an error.
    assert client.is_model_ready("identity_fp32", "2") is False
    assert client.is_model_ready("no_such_model") is False
    assert client.is_model_ready("no_such_model", "3") is False
    with pytest.raises(InferenceServerException) as exc:
        client.is_model_ready("identity_fp32", "x")
    assert _code(exc) == "StatusCode.INVALID_ARGUMENT"


@pytest.mark.parametrize("transport", ["naiad", "grpcio"])
def test_a_request_that_does_not_parse_is_invalid_argument(
    transport: str, request: pytest.FixtureRequest
) -> None:
    # The client's fault, so INVALID_ARGUMENT (Triton 2.51 answers INTERNAL "Unable to
    # parse request", and ends a ModelStreamInfer stream with OK: docs/differences.md).
    url = request.getfixturevalue("grpc_url" if transport == "naiad" else "grpcio_url")
    garbage = b"\xff\xff\xff"
    with grpc.insecure_channel(url) as channel:
        for rpc in ("ModelInfer", "ServerLive", "ModelMetadata"):
            with pytest.raises(grpc.RpcError) as exc:
                channel.unary_unary(f"/inference.GRPCInferenceService/{rpc}")(garbage, timeout=10)
            assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT, rpc
            assert "failed to parse the request message" in exc.value.details()
        stream = channel.stream_stream("/inference.GRPCInferenceService/ModelStreamInfer")
        with pytest.raises(grpc.RpcError) as exc:
            list(stream(iter([garbage]), timeout=10))
        assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        assert stub.ServerLive(pb.ServerLiveRequest()).live  # the channel serves on


def test_standard_health_service(grpc_url: str) -> None:
    """On the wire, as any health client sends it: an empty HealthCheckRequest, and
    ``status: SERVING`` (field 1, varint 1) back."""
    with grpc.insecure_channel(grpc_url) as channel:
        check = channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=lambda raw: raw,
            response_deserializer=lambda raw: raw,
        )
        assert check(b"") == b"\x08\x01"


def test_server_metadata(client: grpcclient.InferenceServerClient) -> None:
    meta = client.get_server_metadata()
    assert meta.name == "triton"
    assert "statistics" in meta.extensions
    assert client.get_server_metadata(as_json=True)["name"] == "triton"


def test_model_metadata(client: grpcclient.InferenceServerClient) -> None:
    meta = client.get_model_metadata("add_sub", as_json=True)
    assert meta["name"] == "add_sub"
    assert meta["versions"] == ["1"]
    assert meta["platform"] == "onnxruntime_onnx"
    assert [t["name"] for t in meta["inputs"]] == ["INPUT0", "INPUT1"]
    assert meta["inputs"][0] == {"name": "INPUT0", "datatype": "FP32", "shape": ["-1", "16"]}
    assert client.get_model_metadata("add_sub", "1").versions == ["1"]
    with pytest.raises(InferenceServerException) as exc:
        client.get_model_metadata("no_such_model")
    assert _code(exc) == "StatusCode.NOT_FOUND"
    assert "Request for unknown model: 'no_such_model' is not found" in exc.value.message()


def test_model_config(client: grpcclient.InferenceServerClient) -> None:
    config = client.get_model_config("identity_fp32").config
    assert config.name == "identity_fp32"
    assert config.max_batch_size == 8
    assert config.input[0].name == "INPUT0"
    as_json = client.get_model_config("identity_fp32", "1", as_json=True)
    assert as_json["config"]["input"][0]["data_type"] == "TYPE_FP32"
    with pytest.raises(InferenceServerException) as exc:
        client.get_model_config("identity_fp32", "3")
    assert _code(exc) == "StatusCode.NOT_FOUND"


def test_statistics(client: grpcclient.InferenceServerClient) -> None:
    names = {s.name for s in client.get_inference_statistics().model_stats}
    assert {"identity_fp32", "add_sub"} <= names
    one = client.get_inference_statistics("identity_fp32", as_json=True)
    assert [s["name"] for s in one["model_stats"]] == ["identity_fp32"]
    stat = client.get_inference_statistics("identity_fp32", "1").model_stats[0]
    assert stat.version == "1"
    assert stat.inference_stats.success.count >= 0
    with pytest.raises(InferenceServerException) as exc:
        client.get_inference_statistics("no_such_model")
    assert _code(exc) == "StatusCode.INVALID_ARGUMENT"


def test_repository_index(client: grpcclient.InferenceServerClient) -> None:
    index = client.get_model_repository_index(as_json=True)["models"]
    entry = next(e for e in index if e["name"] == "identity_fp32")
    assert entry == {"name": "identity_fp32", "version": "1", "state": "READY"}


def test_repository_name_is_refused(stub: pb_grpc.GRPCInferenceServiceStub) -> None:
    with pytest.raises(grpc.RpcError) as exc:
        stub.RepositoryIndex(pb.RepositoryIndexRequest(repository_name="other"))
    assert exc.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert exc.value.details() == "'repository_name' specification is not supported"


def test_load_unload_refused_without_explicit_mode(
    client: grpcclient.InferenceServerClient,
) -> None:
    for call in (client.load_model, client.unload_model):
        with pytest.raises(InferenceServerException) as exc:
            call("identity_fp32")
        assert _code(exc) == "StatusCode.UNAVAILABLE"
        assert "explicit model load / unload is not allowed" in exc.value.message()


def test_load_parameter_typing(stub: pb_grpc.GRPCInferenceServiceStub) -> None:
    request = pb.RepositoryModelLoadRequest(model_name="identity_fp32")
    request.parameters["config"].bytes_param = b"{}"
    with pytest.raises(grpc.RpcError) as exc:
        stub.RepositoryModelLoad(request)
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert exc.value.details() == (
        "invalid value type for load parameter 'config', expected string_param."
    )
    request = pb.RepositoryModelLoadRequest(model_name="identity_fp32")
    request.parameters["bogus"].bool_param = True
    with pytest.raises(grpc.RpcError) as exc:
        stub.RepositoryModelLoad(request)
    assert exc.value.details() == "unrecognized load parameter 'bogus'."


def test_unload_in_explicit_mode(grpc_case_repo: Path, serve) -> None:  # type: ignore[no-untyped-def]
    server = serve(grpc_case_repo, grpc=True, model_control_mode="explicit",
                   load_models=("identity_fp32",))  # fmt: skip
    with grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}") as client:
        assert client.is_model_ready("identity_fp32")
        client.unload_model("identity_fp32")
        index = {e.name: e for e in client.get_model_repository_index().models}
        assert index["identity_fp32"].state == "UNAVAILABLE"
        assert index["add_sub"].state == ""


def test_system_shared_memory(client: grpcclient.InferenceServerClient) -> None:
    assert not client.get_system_shared_memory_status().regions
    client.unregister_system_shared_memory()
    client.unregister_system_shared_memory("some_region")
    with pytest.raises(InferenceServerException) as exc:
        client.register_system_shared_memory("r", "/no_such_key", 64)
    assert _code(exc) != "StatusCode.OK"
    with pytest.raises(InferenceServerException) as exc:
        client.get_system_shared_memory_status("no_such_region")
    assert _code(exc) == "StatusCode.NOT_FOUND"


def test_system_shared_memory_round_trip(client: grpcclient.InferenceServerClient) -> None:
    import numpy as np
    import tritonclient.utils.shared_memory as shm

    data = np.arange(16, dtype=np.float32).reshape(1, 16)
    handle = shm.create_shared_memory_region("grpc_in", "/naiad_grpc_test_in", 64)
    out = shm.create_shared_memory_region("grpc_out", "/naiad_grpc_test_out", 64)
    try:
        shm.set_shared_memory_region(handle, [data])
        client.register_system_shared_memory("grpc_in", "/naiad_grpc_test_in", 64)
        client.register_system_shared_memory("grpc_out", "/naiad_grpc_test_out", 64)
        status = client.get_system_shared_memory_status(as_json=True)["regions"]
        assert status["grpc_in"]["key"] == "/naiad_grpc_test_in"
        assert status["grpc_in"]["byte_size"] == "64"
        tensor = grpcclient.InferInput("INPUT0", [1, 16], "FP32")
        tensor.set_shared_memory("grpc_in", 64)
        wanted = grpcclient.InferRequestedOutput("OUTPUT0")
        wanted.set_shared_memory("grpc_out", 64)
        result = client.infer("identity_fp32", [tensor], outputs=[wanted])
        response = result.get_response()
        assert len(response.raw_output_contents) == 1 and response.raw_output_contents[0] == b""
        got = shm.get_contents_as_numpy(out, np.float32, [1, 16])
        np.testing.assert_array_equal(got, data)
    finally:
        client.unregister_system_shared_memory()
        shm.destroy_shared_memory_region(handle)
        shm.destroy_shared_memory_region(out)


def test_cuda_shared_memory(client: grpcclient.InferenceServerClient) -> None:
    assert not client.get_cuda_shared_memory_status().regions
    client.unregister_cuda_shared_memory()
    with pytest.raises(InferenceServerException):
        client.register_cuda_shared_memory("r", b"AAAA", 0, 64)


def test_trace_settings(client: grpcclient.InferenceServerClient) -> None:
    settings = client.get_trace_settings(as_json=True)["settings"]
    assert settings["trace_level"]["value"] == ["OFF"]
    assert settings["trace_rate"]["value"] == ["1000"]
    updated = client.update_trace_settings(settings={"trace_rate": "500"}, as_json=True)
    assert updated["settings"]["trace_rate"]["value"] == ["500"]
    model = client.update_trace_settings("identity_fp32", {"trace_count": "5"}, as_json=True)
    assert model["settings"]["trace_count"]["value"] == ["5"]
    assert model["settings"]["trace_rate"]["value"] == ["500"]
    cleared = client.update_trace_settings("identity_fp32", {"trace_count": None}, as_json=True)
    assert cleared["settings"]["trace_count"]["value"] == ["-1"]
    client.update_trace_settings(settings={"trace_rate": "1000"})
    with pytest.raises(InferenceServerException) as exc:
        client.update_trace_settings(settings={"trace_file": "x"})
    assert _code(exc) == "StatusCode.UNIMPLEMENTED"
    with pytest.raises(InferenceServerException) as exc:
        client.update_trace_settings(settings={"trace_rate": ["1", "2"]})
    assert _code(exc) == "StatusCode.INVALID_ARGUMENT"
    assert "expect only 1 value for 'trace_rate'" in exc.value.message()
    with pytest.raises(InferenceServerException) as exc:
        client.get_trace_settings("no_such_model")
    assert _code(exc) == "StatusCode.NOT_FOUND"


def test_log_settings(client: grpcclient.InferenceServerClient) -> None:
    settings = client.get_log_settings(as_json=True)["settings"]
    assert set(settings) == {"log_file", "log_info", "log_warning", "log_error",
                             "log_verbose_level", "log_format"}  # fmt: skip
    assert settings["log_format"] == {"string_param": "default"}
    updated = client.update_log_settings({"log_verbose_level": 0, "log_info": True}, as_json=True)
    assert updated["settings"]["log_info"] == {"bool_param": True}
    with pytest.raises(InferenceServerException) as exc:
        client.update_log_settings({"log_file": "x.log"})
    assert _code(exc) == "StatusCode.UNIMPLEMENTED"


def test_log_settings_typing(stub: pb_grpc.GRPCInferenceServiceStub) -> None:
    request = pb.LogSettingsRequest()
    request.settings["log_info"].uint32_param = 1  # a switch wants bool_param
    with pytest.raises(grpc.RpcError) as exc:
        stub.LogSettings(request)
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert exc.value.details() == "expect boolean for 'log_info'"


async def test_aio_client_rpcs(grpc_url: str) -> None:
    async with aioclient.InferenceServerClient(grpc_url) as client:
        assert await client.is_server_live()
        assert await client.is_server_ready()
        assert await client.is_model_ready("identity_fp32")
        assert (await client.get_server_metadata()).name == "triton"
        assert (await client.get_model_metadata("add_sub")).name == "add_sub"
        assert (await client.get_model_config("add_sub")).config.max_batch_size == 8
        assert (await client.get_inference_statistics("add_sub")).model_stats[0].name == "add_sub"
        assert (await client.get_model_repository_index()).models
        assert not (await client.get_system_shared_memory_status()).regions
        assert not (await client.get_cuda_shared_memory_status()).regions
        assert (await client.get_trace_settings()).settings["trace_level"].value == ["OFF"]
        assert (await client.get_log_settings()).settings["log_format"].string_param == "default"
        with pytest.raises(InferenceServerException) as exc:
            await client.get_model_metadata("no_such_model")
        assert exc.value.status() == "StatusCode.NOT_FOUND"
