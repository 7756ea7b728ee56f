"""The committed model_config_pb2 matches model_config.proto, and coexists with tritonclient."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

import naiad.config.model_config_pb2 as committed

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CONFIG_DIR = ROOT / "src" / "naiad" / "config"


def _load_gen_protos():
    spec = importlib.util.spec_from_file_location("gen_protos", ROOT / "scripts" / "gen_protos.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_descriptor_matches_proto(tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools")
    out = tmp_path / "model_config.desc"
    gen_protos = _load_gen_protos()
    proto = str(CONFIG_DIR / "model_config.proto")
    assert gen_protos.run_protoc([f"-I{CONFIG_DIR}", f"--descriptor_set_out={out}", proto]) == 0
    fresh = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file[0]
    ours = descriptor_pb2.FileDescriptorProto.FromString(committed.DESCRIPTOR.serialized_pb)
    _drop_json_names(fresh)  # protoc's python plugin embeds descriptors without json_name
    _drop_json_names(ours)
    assert ours == fresh, "model_config_pb2.py is stale: run scripts/gen_protos.py"


def _drop_json_names(message: descriptor_pb2.FileDescriptorProto) -> None:
    def strip(types) -> None:
        for message_type in types:
            for field in message_type.field:
                field.ClearField("json_name")
            strip(message_type.nested_type)

    strip(message.message_type)


def test_regenerated_python_is_identical_with_same_protoc(tmp_path: Path) -> None:
    """Byte equality only holds for the protoc version that wrote the committed file."""
    pytest.importorskip("grpc_tools")
    gen_protos = _load_gen_protos()
    written = gen_protos.generate(tmp_path)
    fresh = next(p for p in written if p.name == "model_config_pb2.py").read_text()
    current = (CONFIG_DIR / "model_config_pb2.py").read_text()
    header = [line for line in current.splitlines() if "Protobuf Python Version" in line]
    if header and header[0] not in fresh:
        pytest.skip(f"installed protoc differs from the one that generated {header[0]!r}")
    assert fresh == current
    assert "_descriptor_pool.Default()" not in fresh  # generated into naiad's own pool


@pytest.mark.parametrize("order", ["naiad_first", "tritonclient_first"])
def test_coexists_with_tritonclient(order: str) -> None:
    """tritonclient registers inference.ModelConfig in the default pool; both must import."""
    pytest.importorskip("tritonclient.grpc")
    first, second = "naiad.config.model_config_pb2", "tritonclient.grpc.model_config_pb2"
    if order == "tritonclient_first":
        first, second = second, first
    code = (
        f"import {first}, {second}\n"
        "from naiad.config.model_config_pb2 import ModelConfig as Ours\n"
        "from tritonclient.grpc.model_config_pb2 import ModelConfig as Theirs\n"
        "c = Ours(name='m', max_batch_size=4)\n"
        "c.input.add(name='x', data_type=11, dims=[-1, 3])\n"
        "t = Theirs.FromString(c.SerializeToString())\n"
        "assert (t.name, t.max_batch_size, list(t.input[0].dims)) == ('m', 4, [-1, 3])\n"
        "assert Ours.DESCRIPTOR.full_name == Theirs.DESCRIPTOR.full_name == 'inference.ModelConfig'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_full_names_and_field_numbers_match_triton_wire_format() -> None:
    config = committed.ModelConfig.DESCRIPTOR
    assert committed.DESCRIPTOR.package == "inference"
    assert committed.DESCRIPTOR.name == "model_config.proto"
    numbers = {f.name: f.number for f in config.fields}
    assert numbers == {
        "name": 1, "platform": 2, "backend": 17, "runtime": 25, "version_policy": 3,
        "max_batch_size": 4, "input": 5, "output": 6, "batch_input": 20, "batch_output": 21,
        "optimization": 12, "dynamic_batching": 11, "sequence_batching": 13,
        "ensemble_scheduling": 15, "instance_group": 7, "default_model_filename": 8,
        "cc_model_filenames": 9, "metric_tags": 10, "parameters": 14, "model_warmup": 16,
        "model_operations": 18, "model_transaction_policy": 19, "model_repository_agents": 23,
        "response_cache": 24, "model_metrics": 26,
    }  # fmt: skip
    assert [f.name for f in config.oneofs_by_name["scheduling_choice"].fields] == [
        "dynamic_batching",
        "sequence_batching",
        "ensemble_scheduling",
    ]
