"""JSON rendering (§6): Triton's exact output, including its int64 quirks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _corpus_files import CORPUS

from naiad.config import (
    ModelConfig,
    config_to_dict,
    config_to_json,
    fill_platform_and_backend,
    normalize,
    parse_config_text,
)
from naiad.config.render import INT64_AS_NUMBER_PATHS

pytestmark = pytest.mark.unit

DENSENET_JSON = (
    '{"name":"densenet_onnx","platform":"onnxruntime_onnx","backend":"onnxruntime","runtime":"",'
    '"version_policy":{"latest":{"num_versions":1}},"max_batch_size":0,'
    '"input":[{"name":"data_0","data_type":"TYPE_FP32","format":"FORMAT_NONE","dims":[1,3,224,224],'
    '"is_shape_tensor":false,"allow_ragged_batch":false,"optional":false,"is_non_linear_format_io":false}],'
    '"output":[{"name":"fc6_1","data_type":"TYPE_FP32","dims":[1,1000,1,1],"label_filename":"",'
    '"is_shape_tensor":false,"is_non_linear_format_io":false}],'
    '"batch_input":[],"batch_output":[],'
    '"optimization":{"priority":"PRIORITY_DEFAULT","input_pinned_memory":{"enable":true},'
    '"output_pinned_memory":{"enable":true},"gather_kernel_buffer_threshold":0,"eager_batching":false},'
    '"instance_group":[{"name":"densenet_onnx","kind":"KIND_CPU","count":2,"gpus":[],"secondary_devices":[],'
    '"profile":[],"passive":false,"host_policy":""}],'
    '"default_model_filename":"model.onnx","cc_model_filenames":{},"metric_tags":{},"parameters":{},"model_warmup":[]}'
)  # fmt: skip

ADD_SUB_TEXT = """
name: "add_sub"
backend: "python"
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
        { name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
         { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [{ kind: KIND_CPU }]
"""

OPTIMIZATION_DEFAULT = {
    "priority": "PRIORITY_DEFAULT",
    "input_pinned_memory": {"enable": True},
    "output_pinned_memory": {"enable": True},
    "gather_kernel_buffer_threshold": 0,
    "eager_batching": False,
}


def _input(name: str, dims: list[int]) -> dict[str, object]:
    return {"name": name, "data_type": "TYPE_FP32", "format": "FORMAT_NONE", "dims": dims,
            "is_shape_tensor": False, "allow_ragged_batch": False, "optional": False,
            "is_non_linear_format_io": False}  # fmt: skip


def _output(name: str, dims: list[int]) -> dict[str, object]:
    return {"name": name, "data_type": "TYPE_FP32", "dims": dims, "label_filename": "",
            "is_shape_tensor": False, "is_non_linear_format_io": False}  # fmt: skip


def _effective(text: str, tmp_path: Path, *files: str, cpu_count: int | None = None) -> ModelConfig:
    config = parse_config_text(text, "config.pbtxt")
    model_dir = tmp_path / (config.name or "densenet_onnx")
    (model_dir / "1").mkdir(parents=True)
    for file in files:
        (model_dir / "1" / file).write_bytes(b"")
    fill_platform_and_backend(config, model_dir, 1)
    normalize(config, gpus=(), default_cpu_count=cpu_count)
    return config


def _densenet(tmp_path: Path, extra: str = "") -> ModelConfig:
    # What ONNX auto-complete produces for densenet_onnx without a config file.
    text = (
        'input { name: "data_0" data_type: TYPE_FP32 dims: [1, 3, 224, 224] }\n'
        'output { name: "fc6_1" data_type: TYPE_FP32 dims: [1, 1000, 1, 1] }\n' + extra
    )
    return _effective(text, tmp_path, "model.onnx")


def test_densenet_example_exactly(tmp_path: Path) -> None:
    config = _densenet(tmp_path)
    assert config_to_json(config) == DENSENET_JSON
    assert config_to_dict(config) == json.loads(DENSENET_JSON)


def test_dynamic_batching_example(tmp_path: Path) -> None:
    config = _densenet(tmp_path, "max_batch_size: 8\ndynamic_batching {}\n")
    data = config_to_dict(config)
    assert data["max_batch_size"] == 8
    assert data["dynamic_batching"] == {
        "preferred_batch_size": [8], "max_queue_delay_microseconds": 0, "preserve_ordering": False,
        "priority_levels": 0, "default_priority_level": 0, "priority_queue_policy": {},
    }  # fmt: skip
    keys = list(data)
    assert keys.index("optimization") + 1 == keys.index("dynamic_batching")
    assert keys.index("dynamic_batching") + 1 == keys.index("instance_group")
    text = config_to_json(config)
    assert (
        '"dynamic_batching":{"preferred_batch_size":[8],"max_queue_delay_microseconds":0,' in text
    )


def test_add_sub_python_example(tmp_path: Path) -> None:
    config = _effective(ADD_SUB_TEXT, tmp_path, "model.py")
    assert config_to_dict(config) == {
        "name": "add_sub", "platform": "", "backend": "python", "runtime": "",
        "version_policy": {"latest": {"num_versions": 1}}, "max_batch_size": 0,
        "input": [_input("INPUT0", [4]), _input("INPUT1", [4])],
        "output": [_output("OUTPUT0", [4]), _output("OUTPUT1", [4])],
        "batch_input": [], "batch_output": [], "optimization": OPTIMIZATION_DEFAULT,
        "instance_group": [{"name": "add_sub_0", "kind": "KIND_CPU", "count": 1, "gpus": [],
                            "secondary_devices": [], "profile": [], "passive": False,
                            "host_policy": ""}],
        "default_model_filename": "model.py", "cc_model_filenames": {}, "metric_tags": {},
        "parameters": {}, "model_warmup": [],
    }  # fmt: skip


def test_compact_separators() -> None:
    text = config_to_json(ModelConfig(name="m"))
    assert ": " not in text and ", " not in text
    assert text.startswith(
        '{"name":"m","platform":"","backend":"","runtime":"","max_batch_size":0,'
    )


def _corpus(name: str) -> dict:
    path = CORPUS / f"{name}.pbtxt"
    return config_to_dict(parse_config_text(path.read_text(), str(path)))


def test_int64_paths_cover_every_listed_field() -> None:
    assert len(INT64_AS_NUMBER_PATHS) == 16


def test_sequence_rendering_and_initial_state_quirk() -> None:
    sequence = _corpus("sequence_all_controls")["sequence_batching"]
    assert sequence["max_sequence_idle_microseconds"] == 5000000
    assert sequence["direct"] == {
        "max_queue_delay_microseconds": 100,
        "minimum_slot_utilization": 0.5,
    }
    assert "oldest" not in sequence
    assert sequence["control_input"][0] == {
        "name": "START",
        "control": [{"kind": "CONTROL_SEQUENCE_START", "int32_false_true": [],
                     "fp32_false_true": [0.0, 1.0], "bool_false_true": [],
                     "data_type": "TYPE_INVALID"}],
    }  # fmt: skip
    assert sequence["control_input"][2]["control"][0]["bool_false_true"] == [False, True]
    assert sequence["control_input"][3]["control"][0]["data_type"] == "TYPE_UINT64"
    first, second = sequence["state"]
    assert first["dims"] == [-1]
    assert first["initial_state"] == [
        {"data_type": "TYPE_INT32", "dims": ["1"], "zero_data": True, "name": "initial state"}
    ]  # Triton leaves initial_state dims as strings
    assert second["initial_state"][0]["data_file"] == "state2.bin"
    assert "zero_data" not in second["initial_state"][0]
    assert second["use_growable_memory"] is True
    assert sequence["iterative_sequence"] is False


def test_dynamic_batching_priority_rendering() -> None:
    batching = _corpus("dynamic_priority")["dynamic_batching"]
    assert batching["priority_levels"] == 3 and batching["default_priority_level"] == 2
    assert batching["default_queue_policy"] == {
        "timeout_action": "REJECT", "default_timeout_microseconds": 1000000,
        "allow_timeout_override": True, "max_queue_size": 64,
    }  # fmt: skip
    assert batching["priority_queue_policy"] == {
        "1": {"timeout_action": "DELAY", "default_timeout_microseconds": 500,
              "allow_timeout_override": True, "max_queue_size": 0},
        "3": {"timeout_action": "REJECT", "default_timeout_microseconds": 0,
              "allow_timeout_override": False, "max_queue_size": 8},
    }  # fmt: skip


def test_instance_group_and_rate_limiter_rendering() -> None:
    group = _corpus("dynamic_priority")["instance_group"][0]
    assert group["rate_limiter"] == {
        "resources": [{"name": "R1", "global": False, "count": 4},
                      {"name": "R2", "global": True, "count": 2}],
        "priority": 2,
    }  # fmt: skip
    assert group["gpus"] == [0, 1]


def test_optimization_rendering_keeps_graph_spec_and_device_id_strings() -> None:
    data = _corpus("optimization")
    cuda = data["optimization"]["cuda"]
    spec = cuda["graph_spec"][0]
    assert spec["input"] == {"INPUT": {"dim": ["32", "16"]}}
    assert spec["graph_lower_bound"] == {"batch_size": 1, "input": {"INPUT": {"dim": ["1", "16"]}}}
    accelerators = data["optimization"]["execution_accelerators"]
    assert accelerators["gpu_execution_accelerator"][0]["parameters"]["precision_mode"] == "FP16"
    assert accelerators["cpu_execution_accelerator"] == [{"name": "openvino", "parameters": {}}]
    assert data["instance_group"][0]["secondary_devices"] == [
        {"kind": "KIND_NVDLA", "device_id": "1"}
    ]
    assert data["instance_group"][0]["profile"] == ["0", "1"]
    assert data["cc_model_filenames"] == {"7.5": "model_t4.plan", "8.0": "model_a100.plan"}
    assert data["optimization"]["graph"] == {"level": 1}
    assert data["optimization"]["priority"] == "PRIORITY_MAX"


def test_warmup_ensemble_and_version_numbers() -> None:
    warmup = _corpus("warmup")["model_warmup"][0]
    assert warmup["inputs"]["INPUT__1"] == {
        "data_type": "TYPE_INT64",
        "dims": [2],
        "random_data": True,
    }
    assert warmup["inputs"]["INPUT__2"]["input_data_file"] == "raw_string"
    assert (warmup["batch_size"], warmup["count"]) == (4, 2)
    ensemble = _corpus("ensemble_image")["ensemble_scheduling"]
    assert [s["model_version"] for s in ensemble["step"]] == [-1, -1, 3]
    assert ensemble["step"][0]["input_map"] == {"RAW_IMAGE": "IMAGE"}
    assert ensemble["step"][0]["model_namespace"] == ""
    assert ensemble["max_inflight_requests"] == 16
    data = _corpus("everything_else")
    assert data["version_policy"] == {"specific": {"versions": [1, 3]}}
    assert data["input"][0]["reshape"] == {"shape": []}
    assert "reshape" not in data["input"][1]


def test_other_sections_render() -> None:
    data = _corpus("everything_else")
    assert data["parameters"]["EXECUTION_ENV_PATH"] == {
        "string_value": "$$TRITON_MODEL_DIRECTORY/env.tar.gz"
    }
    assert data["metric_tags"] == {"team": "search", "tier": "gold"}
    assert data["model_operations"] == {"op_library_filename": ["libcustom_ops.so"]}
    assert data["model_transaction_policy"] == {"decoupled": False}
    assert data["response_cache"] == {"enable": True}
    assert data["model_repository_agents"]["agents"][0]["name"] == "checksum"
    assert data["model_metrics"] == {
        "metric_control": [
            {"metric_identifier": {"family": "nv_inference_first_response_histogram_ms"},
             "histogram_options": {"buckets": [-5.0, -2.0, 0.0, 3.5, 5.0]}}
        ]
    }  # fmt: skip
    assert data["batch_output"] == [
        {"target_name": ["SCORES"], "kind": "BATCH_SCATTER_WITH_INPUT_SHAPE",
         "source_input": ["IMAGE"]}
    ]  # fmt: skip
    for absent in ("dynamic_batching", "sequence_batching", "ensemble_scheduling", "optimization"):
        assert absent not in data
