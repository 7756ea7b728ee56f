"""Core normalisation (§5.4)."""

from __future__ import annotations

import pytest

from naiad.config import ModelConfig, normalize, parse_config_text
from naiad.config.model_config_pb2 import ModelInstanceGroup

pytestmark = pytest.mark.unit


def _normalized(text: str, **kwargs) -> ModelConfig:
    config = parse_config_text(text, "config.pbtxt")
    normalize(config, **kwargs)
    return config


def _groups(config: ModelConfig) -> list[tuple[str, str, int, list[int]]]:
    kind = ModelInstanceGroup.Kind.Name
    return [(g.name, kind(g.kind), g.count, list(g.gpus)) for g in config.instance_group]


def test_version_policy_default():
    config = _normalized('name: "m" backend: "python"')
    assert config.version_policy.WhichOneof("policy_choice") == "latest"
    assert config.version_policy.latest.num_versions == 1
    kept = _normalized('name: "m" version_policy { all {} }')
    assert kept.version_policy.WhichOneof("policy_choice") == "all"


def test_preferred_batch_size_defaults():
    config = _normalized('name: "m" max_batch_size: 8 dynamic_batching {}')
    assert list(config.dynamic_batching.preferred_batch_size) == [8]
    kept = _normalized('name: "m" max_batch_size: 8 dynamic_batching { preferred_batch_size: 2 }')
    assert list(kept.dynamic_batching.preferred_batch_size) == [2]
    unbatched = _normalized('name: "m" dynamic_batching {}')
    assert list(unbatched.dynamic_batching.preferred_batch_size) == []


def test_sequence_defaults():
    config = _normalized('name: "m" max_batch_size: 4 sequence_batching { oldest {} }')
    assert config.sequence_batching.max_sequence_idle_microseconds == 1_000_000
    assert list(config.sequence_batching.oldest.preferred_batch_size) == [4]
    direct = _normalized('name: "m" sequence_batching { max_sequence_idle_microseconds: 5 }')
    assert direct.sequence_batching.max_sequence_idle_microseconds == 5
    assert not direct.sequence_batching.HasField("oldest")


def test_pinned_memory_defaults_but_not_for_ensembles():
    config = _normalized('name: "m" optimization { input_pinned_memory { enable: false } }')
    assert config.optimization.input_pinned_memory.enable is False
    assert config.optimization.output_pinned_memory.enable is True
    ensemble = _normalized('name: "e" platform: "ensemble" ensemble_scheduling { step {} }')
    assert not ensemble.HasField("optimization")
    assert len(ensemble.instance_group) == 0


def test_cpu_only_onnx_without_config():
    config = _normalized('name: "m" backend: "onnxruntime"', gpus=(), default_cpu_count=2)
    assert _groups(config) == [("m", "KIND_CPU", 2, [])]


def test_cpu_only_onnx_backend_default_count_without_hint():
    config = _normalized('name: "m" backend: "onnxruntime"')
    assert _groups(config) == [("m", "KIND_CPU", 2, [])]
    tensorflow = _normalized('name: "m" backend: "tensorflow"')
    assert _groups(tensorflow) == [("m", "KIND_CPU", 2, [])]


def test_cpu_only_python_model():
    assert _groups(_normalized('name: "m" backend: "python"')) == [("m", "KIND_CPU", 1, [])]
    listed = _normalized('name: "m" backend: "python" instance_group [{ kind: KIND_CPU }]')
    assert _groups(listed) == [("m_0", "KIND_CPU", 1, [])]


def test_gpu_machine_default_group():
    config = _normalized('name: "m" backend: "onnxruntime"', gpus=[0, 1], default_cpu_count=2)
    assert _groups(config) == [("m", "KIND_GPU", 1, [0, 1])]
    cpu_pref = _normalized('name: "m" backend: "onnxruntime"', gpus=[0], preferred_kind="KIND_CPU")
    assert _groups(cpu_pref) == [("m", "KIND_CPU", 2, [])]


def test_group_names_kinds_and_counts():
    text = """
    name: "m" backend: "python"
    instance_group [
      { count: 3 kind: KIND_GPU },
      { name: "named" kind: KIND_AUTO },
      { kind: KIND_AUTO gpus: [ 5 ] },
      { kind: KIND_MODEL },
      { kind: KIND_GPU gpus: [ 1 ] count: 0 }
    ]
    """
    config = _normalized(text, gpus=[0, 1])
    assert _groups(config) == [
        ("m_0", "KIND_GPU", 3, [0, 1]),
        ("named", "KIND_GPU", 1, [0, 1]),
        ("m_2", "KIND_CPU", 1, [5]),  # a listed GPU is missing -> CPU (validation rejects gpus)
        ("m_3", "KIND_MODEL", 1, []),
        ("m_4", "KIND_GPU", 1, [1]),
    ]


def test_auto_without_gpus_is_cpu():
    config = _normalized('name: "m" backend: "x" instance_group [{ kind: KIND_AUTO }]')
    assert _groups(config) == [("m_0", "KIND_CPU", 1, [])]


def test_normalize_is_idempotent():
    config = _normalized('name: "m" max_batch_size: 2 dynamic_batching {} backend: "onnxruntime"')
    again = ModelConfig()
    again.CopyFrom(config)
    normalize(again)
    assert again == config
