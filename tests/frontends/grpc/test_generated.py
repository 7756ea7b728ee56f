"""The committed grpc_service modules match the .proto and speak Triton's wire format."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor

import naiad.frontends.grpc.grpc_service_pb2 as pb
import naiad.frontends.grpc.grpc_service_pb2_grpc as pb_grpc

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[3]
GRPC_DIR = ROOT / "src" / "naiad" / "frontends" / "grpc"
CONFIG_DIR = ROOT / "src" / "naiad" / "config"
GENERATED = (
    "grpc_service_pb2.py", "grpc_service_pb2.pyi", "grpc_service_pb2_grpc.py",
    "health_pb2.py", "health_pb2.pyi", "health_pb2_grpc.py",
)  # fmt: skip

# grpc.md section 1: rpc -> (request, response, client streaming, server streaming).
RPCS: dict[str, tuple[str, str, bool, bool]] = {
    "ServerLive": ("ServerLiveRequest", "ServerLiveResponse", False, False),
    "ServerReady": ("ServerReadyRequest", "ServerReadyResponse", False, False),
    "ModelReady": ("ModelReadyRequest", "ModelReadyResponse", False, False),
    "ServerMetadata": ("ServerMetadataRequest", "ServerMetadataResponse", False, False),
    "ModelMetadata": ("ModelMetadataRequest", "ModelMetadataResponse", False, False),
    "ModelInfer": ("ModelInferRequest", "ModelInferResponse", False, False),
    "ModelStreamInfer": ("ModelInferRequest", "ModelStreamInferResponse", True, True),
    "ModelConfig": ("ModelConfigRequest", "ModelConfigResponse", False, False),
    "ModelStatistics": ("ModelStatisticsRequest", "ModelStatisticsResponse", False, False),
    "RepositoryIndex": ("RepositoryIndexRequest", "RepositoryIndexResponse", False, False),
    "RepositoryModelLoad": (
        "RepositoryModelLoadRequest", "RepositoryModelLoadResponse", False, False
    ),
    "RepositoryModelUnload": (
        "RepositoryModelUnloadRequest", "RepositoryModelUnloadResponse", False, False
    ),
    "SystemSharedMemoryStatus": (
        "SystemSharedMemoryStatusRequest", "SystemSharedMemoryStatusResponse", False, False
    ),
    "SystemSharedMemoryRegister": (
        "SystemSharedMemoryRegisterRequest", "SystemSharedMemoryRegisterResponse", False, False
    ),
    "SystemSharedMemoryUnregister": (
        "SystemSharedMemoryUnregisterRequest", "SystemSharedMemoryUnregisterResponse", False, False
    ),
    "CudaSharedMemoryStatus": (
        "CudaSharedMemoryStatusRequest", "CudaSharedMemoryStatusResponse", False, False
    ),
    "CudaSharedMemoryRegister": (
        "CudaSharedMemoryRegisterRequest", "CudaSharedMemoryRegisterResponse", False, False
    ),
    "CudaSharedMemoryUnregister": (
        "CudaSharedMemoryUnregisterRequest", "CudaSharedMemoryUnregisterResponse", False, False
    ),
    "TraceSetting": ("TraceSettingRequest", "TraceSettingResponse", False, False),
    "LogSettings": ("LogSettingsRequest", "LogSettingsResponse", False, False),
}  # fmt: skip


def _load_gen_protos() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_protos", ROOT / "scripts" / "gen_protos.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _embedded_descriptor(source: str) -> bytes:
    """The serialized FileDescriptorProto that a generated ``_pb2.py`` adds to its pool.

    Read from the source rather than imported: importing a second, different
    ``grpc_service.proto`` into naiad's pool would itself fail.
    """
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "AddSerializedFile"
        ):
            arg = node.args[0]
            assert isinstance(arg, ast.Constant) and isinstance(arg.value, bytes)
            return arg.value
    raise AssertionError("no AddSerializedFile call in generated module")


def _version_lines(text: str) -> list[str]:
    return [
        line
        for line in text.splitlines()
        if "Protobuf Python Version" in line or "GRPC_GENERATED_VERSION =" in line
    ]


def test_committed_descriptor_matches_proto(tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools")
    out = tmp_path / "grpc_service.desc"
    args = [f"-I{CONFIG_DIR}", f"-I{GRPC_DIR}", f"--descriptor_set_out={out}"]
    assert _load_gen_protos().run_protoc([*args, str(GRPC_DIR / "grpc_service.proto")]) == 0
    fresh = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file[0]
    ours = descriptor_pb2.FileDescriptorProto.FromString(pb.DESCRIPTOR.serialized_pb)
    for proto in (fresh, ours):  # the python plugin embeds descriptors without json_name
        _drop_json_names(proto.message_type)
    assert ours == fresh, "grpc_service_pb2.py is stale: run scripts/gen_protos.py"


def _drop_json_names(types: object) -> None:
    for message_type in types:  # type: ignore[attr-defined]
        for field in message_type.field:
            field.ClearField("json_name")
        _drop_json_names(message_type.nested_type)


def test_regenerated_modules_match_committed(tmp_path: Path) -> None:
    """Same descriptor always; byte-identical text when the same protoc/grpc_tools wrote them."""
    pytest.importorskip("grpc_tools")
    written = {p.name: p for p in _load_gen_protos().generate(tmp_path)}
    fresh = {name: written[name].read_text(encoding="utf-8") for name in GENERATED}
    current = {name: (GRPC_DIR / name).read_text(encoding="utf-8") for name in GENERATED}

    assert _embedded_descriptor(fresh["grpc_service_pb2.py"]) == pb.DESCRIPTOR.serialized_pb
    for name in GENERATED:
        assert "_descriptor_pool.Default()" not in current[name]  # naiad's own pool
        assert "\nimport grpc_service_pb2" not in current[name]  # package-qualified imports
        assert "\nimport model_config_pb2" not in current[name]
    same_tools = all(_version_lines(fresh[n]) == _version_lines(current[n]) for n in GENERATED)
    if not same_tools:
        pytest.skip("installed grpcio-tools differs from the one that wrote the committed files")
    for name in GENERATED:
        assert fresh[name] == current[name], f"{name} is stale: run scripts/gen_protos.py"


def test_every_rpc_of_the_protocol_exists() -> None:
    service = pb.DESCRIPTOR.services_by_name["GRPCInferenceService"]
    assert service.full_name == "inference.GRPCInferenceService"
    assert pb.DESCRIPTOR.package == "inference"
    assert [m.name for m in service.methods] == list(RPCS)
    for method in service.methods:
        request, response, client_streaming, server_streaming = RPCS[method.name]
        assert method.input_type.full_name == f"inference.{request}"
        assert method.output_type.full_name == f"inference.{response}"
        assert method.client_streaming is client_streaming, method.name
        assert method.server_streaming is server_streaming, method.name
        # The servicer base class that the frontend subclasses has every rpc.
        assert callable(getattr(pb_grpc.GRPCInferenceServiceServicer, method.name))
    assert callable(pb_grpc.add_GRPCInferenceServiceServicer_to_server)


def test_config_response_embeds_naiads_model_config() -> None:
    """ModelConfigResponse.config is the very message class the config package parses into."""
    from naiad.config import model_config_pb2

    response = pb.ModelConfigResponse()
    response.config.CopyFrom(model_config_pb2.ModelConfig(name="m", max_batch_size=8))
    assert pb.ModelConfigResponse.FromString(response.SerializeToString()).config.name == "m"


def _field_signature(field: FieldDescriptor) -> tuple[object, ...]:
    return (
        field.number,
        field.type,
        field.label,
        field.message_type.full_name if field.message_type else None,
        field.enum_type.full_name if field.enum_type else None,
        field.containing_oneof.name if field.containing_oneof else None,
    )


def _all_messages(messages: object) -> dict[str, Descriptor]:
    found: dict[str, Descriptor] = {}
    for message in messages.values():  # type: ignore[attr-defined]
        found[message.full_name] = message
        found.update(_all_messages(message.nested_types_by_name))
    return found


def test_every_message_matches_tritonclient() -> None:
    """Field names, numbers, types, labels and oneofs equal tritonclient's, message by message."""
    theirs_pb = pytest.importorskip("tritonclient.grpc.service_pb2")
    ours = _all_messages(pb.DESCRIPTOR.message_types_by_name)
    theirs = _all_messages(theirs_pb.DESCRIPTOR.message_types_by_name)
    assert sorted(ours) == sorted(theirs)
    for full_name, message in theirs.items():
        expected = {f.name: _field_signature(f) for f in message.fields}
        assert {f.name: _field_signature(f) for f in ours[full_name].fields} == expected, full_name
        assert ours[full_name].GetOptions().map_entry == message.GetOptions().map_entry

    their_service = theirs_pb.DESCRIPTOR.services_by_name["GRPCInferenceService"]
    our_service = pb.DESCRIPTOR.services_by_name["GRPCInferenceService"]
    assert [
        (m.name, m.input_type.full_name, m.output_type.full_name, m.client_streaming)
        for m in our_service.methods
    ] == [
        (m.name, m.input_type.full_name, m.output_type.full_name, m.client_streaming)
        for m in their_service.methods
    ]


def test_key_field_numbers() -> None:
    """A few numbers spelled out, so a wrong number is readable without tritonclient."""

    def numbers(message: Descriptor) -> dict[str, int]:
        return {f.name: f.number for f in message.fields}

    assert numbers(pb.ModelInferRequest.DESCRIPTOR) == {
        "model_name": 1, "model_version": 2, "id": 3, "parameters": 4, "inputs": 5,
        "outputs": 6, "raw_input_contents": 7,
    }  # fmt: skip
    assert numbers(pb.ModelInferResponse.DESCRIPTOR) == {
        "model_name": 1, "model_version": 2, "id": 3, "parameters": 4, "outputs": 5,
        "raw_output_contents": 6,
    }  # fmt: skip
    assert numbers(pb.InferParameter.DESCRIPTOR) == {
        "bool_param": 1, "int64_param": 2, "string_param": 3, "double_param": 4,
        "uint64_param": 5,
    }  # fmt: skip
    assert numbers(pb.ModelStreamInferResponse.DESCRIPTOR) == {
        "error_message": 1,
        "infer_response": 2,
    }


@pytest.mark.parametrize("order", ["naiad_first", "tritonclient_first"])
def test_coexists_with_tritonclient(order: str) -> None:
    """Both register ``inference.*`` names; naiad's private pool keeps them apart.

    A fresh interpreter per order, since the default pool is process-wide.
    """
    pytest.importorskip("tritonclient.grpc")
    first, second = "naiad.frontends.grpc.grpc_service_pb2_grpc", "tritonclient.grpc"
    if order == "tritonclient_first":
        first, second = second, first
    code = (
        f"import {first}, {second}\n"
        "from naiad.frontends.grpc import grpc_service_pb2 as ours\n"
        "from tritonclient.grpc import service_pb2 as theirs\n"
        "r = ours.ModelInferRequest(model_name='m', raw_input_contents=[b'x'])\n"
        "r.parameters['priority'].uint64_param = 3\n"
        "t = theirs.ModelInferRequest.FromString(r.SerializeToString())\n"
        "assert t.model_name == 'm' and t.parameters['priority'].uint64_param == 3\n"
        "assert ours.ModelInferRequest.DESCRIPTOR.full_name == 'inference.ModelInferRequest'\n"
    )
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
