"""Validation: each rule with a bad file, errors naming file, line and field.

In each case the line the error must point at is marked with ``# <--``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _corpus_files import corpus_files

from naiad.config import (
    ConfigError,
    fill_platform_and_backend,
    normalize,
    parse_config_text,
    validate,
    validate_all,
)

pytestmark = pytest.mark.unit

PATH = "/repo/m/config.pbtxt"
IO = """
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] } ]
"""


def _errors(text: str, gpus=None) -> list[ConfigError]:
    config = parse_config_text(text, PATH)
    normalize(config)
    return validate_all(config, path=PATH, text=text, gpus=gpus)


CASES = {
    "negative_max_batch_size": (
        'name: "m"\nbackend: "python"\nmax_batch_size: -1  # <--\n' + IO,
        "max_batch_size", "must be >= 0, got -1"),
    "duplicate_input": ("""name: "m"
backend: "python"
input [
  { name: "A" data_type: TYPE_FP32 dims: [ 1 ] },
  {
    name: "A"  # <--
    data_type: TYPE_FP32
    dims: [ 1 ]
  }
]""", "input[1].name", "more than once"),
    "input_without_name": (
        'name: "m"\nbackend: "python"\ninput {\n  data_type: TYPE_FP32\n  dims: [ 1 ]\n}\n'
        'input {\n  dims: [ 2 ]\n  data_type: TYPE_FP32\n  name: ""  # <--\n}\n',
        "input[1].name", "must specify 'name'"),
    "missing_data_type": ("""name: "m"
backend: "python"
input [
  {
    name: "X"
    dims: [ 1 ]
  }
]
output [
  {  # <--
    name: "Y"
    dims: [ 1 ]
  }
]""", "output[0].data_type", "must specify 'data_type'"),
    "empty_dims": ("""name: "m"
backend: "python"
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 1 ] } ]
input [
  { name: "X" data_type: TYPE_FP32 dims: [ 1 ] },
  { name: "Z" data_type: TYPE_FP32 }  # <--
]""", "input[1].dims", "must specify 'dims'"),
    "zero_dim": ("""name: "m"
backend: "python"
input {
  name: "X"
  data_type: TYPE_FP32
  dims: [ 4, 0 ]  # <--
}""", "input[0].dims", "dimension must be integer >= 1, or -1"),
    "reshape_size": ("""name: "m"
backend: "python"
max_batch_size: 2
input {
  name: "X"
  data_type: TYPE_FP32
  dims: [ 4, 4 ]
  reshape: { shape: [ 8 ] }  # <--
}""", "input[0].reshape", "different size for dims"),
    "reshape_variable_dims": ("""name: "m"
backend: "python"
output {
  name: "X"
  data_type: TYPE_FP32
  dims: [ -1, 4 ]
  reshape { shape: [ -1, 2, -1 ] }  # <--
}""", "output[0].reshape", "different number of variable-size dimensions"),
    "empty_reshape_without_batching": ("""name: "m"
backend: "python"
input {
  name: "X"
  data_type: TYPE_FP32
  dims: [ 1 ]
  reshape: { shape: [ ] }  # <--
}""", "input[0].reshape", "scalar tensors are not supported"),
    "nhwc_needs_three_dims": ("""name: "m"
backend: "python"
input {
  name: "X"
  data_type: TYPE_UINT8
  format: FORMAT_NHWC  # <--
  dims: [ 224, 224 ]
}""", "input[0].format", "requires 3 dims"),
    "shape_tensor_not_trt": ("""name: "m"
platform: "onnxruntime_onnx"
backend: "onnxruntime"
input {
  name: "X"
  data_type: TYPE_INT32
  dims: [ 2 ]
  is_shape_tensor: true  # <--
}""", "input[0].is_shape_tensor", "TensorRT"),
    "platform_backend_pair": ('name: "m"\nplatform: "onnxruntime_onnx"  # <--\nbackend: "python"\n',
                              "platform", "unexpected 'platform' and 'backend' pair"),
    "nothing_given": ('name: "m"\n', "backend", "must specify 'platform' or 'backend'"),
    "preferred_too_large": ("""name: "m"
backend: "python"
max_batch_size: 4
dynamic_batching {
  preferred_batch_size: [ 2, 8 ]  # <--
}""", "dynamic_batching.preferred_batch_size", "<= max_batch_size (4), got 8"),
    "preferred_not_positive": ("""name: "m"
backend: "python"
max_batch_size: 4
dynamic_batching {
  max_queue_delay_microseconds: 100
  preferred_batch_size: 0  # <--
}""", "dynamic_batching.preferred_batch_size", "must be positive"),
    "default_priority_level": ("""name: "m"
backend: "python"
max_batch_size: 4
dynamic_batching {
  priority_levels: 2
  default_priority_level: 3  # <--
}""", "dynamic_batching.default_priority_level", "range [1, 2], got 3"),
    "priority_queue_policy_key": ("""name: "m"
backend: "python"
max_batch_size: 4
dynamic_batching {
  priority_levels: 2
  default_priority_level: 1
  priority_queue_policy { key: 1 value { max_queue_size: 4 } }
  priority_queue_policy {
    key: 5  # <--
    value { max_queue_size: 4 }
  }
}""", "dynamic_batching.priority_queue_policy[5]", "priority level in range [1, 2], got 5"),
    "preserve_ordering_levels": ("""name: "m"
backend: "python"
max_batch_size: 4
dynamic_batching {
  preserve_ordering: true  # <--
  priority_levels: 2
  default_priority_level: 1
}""", "dynamic_batching.preserve_ordering", "only one priority level"),
    "preserve_ordering_delay": ("""name: "m"
backend: "python"
max_batch_size: 4
dynamic_batching {
  preserve_ordering: true
  default_queue_policy {
    default_timeout_microseconds: 100
    timeout_action: DELAY  # <--
  }
}""", "dynamic_batching.default_queue_policy.timeout_action", "DELAY"),
    "control_values": ("""name: "m"
backend: "python"
max_batch_size: 1
sequence_batching {
  control_input [
    {
      name: "START"
      control [
        {
          kind: CONTROL_SEQUENCE_START
          int32_false_true: [ 0, 1, 2 ]  # <--
        }
      ]
    }
  ]
}""", "sequence_batching.control_input[0].control[0].int32_false_true", "exactly 2 entries"),
    "control_without_values": ("""name: "m"
backend: "python"
sequence_batching {
  control_input {
    name: "READY"
    control {  # <--
      kind: CONTROL_SEQUENCE_READY
    }
  }
}""", "sequence_batching.control_input[0].control[0]", "exactly one of 'int32_false_true'"),
    "corrid_type": ("""name: "m"
backend: "python"
sequence_batching {
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START bool_false_true: [ false, true ] } ] },
    {
      name: "CORRID"
      control [
        {
          kind: CONTROL_SEQUENCE_CORRID
          data_type: TYPE_FP32  # <--
        }
      ]
    }
  ]
}""", "sequence_batching.control_input[1].control[0].data_type", "TYPE_UINT64"),
    "duplicate_control": ("""name: "m"
backend: "python"
sequence_batching {
  control_input { name: "S1" control { kind: CONTROL_SEQUENCE_START fp32_false_true: [0, 1] } }
  control_input {
    name: "S2"
    control {
      kind: CONTROL_SEQUENCE_START  # <--
      fp32_false_true: [ 0, 1 ]
    }
  }
}""", "sequence_batching.control_input[1].control[0].kind", "multiple CONTROL_SEQUENCE_START"),
    "slot_utilization": ("""name: "m"
backend: "python"
sequence_batching {
  direct {
    minimum_slot_utilization: 1.5  # <--
  }
}""", "sequence_batching.direct.minimum_slot_utilization", "(0.0, 1.0]"),
    "initial_state_data": ("""name: "m"
backend: "python"
sequence_batching {
  state {
    input_name: "IN_STATE"
    output_name: "OUT_STATE"
    data_type: TYPE_INT32
    dims: [ 1 ]
    initial_state {  # <--
      data_type: TYPE_INT32
      dims: [ 1 ]
    }
  }
}""", "sequence_batching.state[0].initial_state[0]", "'zero_data' or 'data_file'"),
    "cache_with_sequence": ('name: "m"\nbackend: "python"\nsequence_batching {}\n'
                            "response_cache {\n  enable: true  # <--\n}\n",
                            "response_cache.enable", "sequence batching"),
    "cache_with_decoupled": ('name: "m"\nbackend: "python"\nmodel_transaction_policy { decoupled: true }\n'
                             "response_cache { enable: true }  # <--\n",
                             "response_cache.enable", "decoupled"),
    "cpu_group_with_gpus": ("""name: "m"
backend: "python"
instance_group [
  { kind: KIND_CPU },
  {
    kind: KIND_CPU
    gpus: [ 0 ]  # <--
  }
]""", "instance_group[1].gpus", "KIND_CPU but specifies one or more GPUs"),
    "profile_not_trt": ("""name: "m"
backend: "python"
instance_group {
  kind: KIND_CPU
  profile: "0"  # <--
}""", "instance_group[0].profile", "only supported for TensorRT"),
    "warmup_batch_size": ("""name: "m"
backend: "python"
model_warmup [
  {
    name: "w"
    batch_size: 0  # <--
    inputs { key: "IN" value { data_type: TYPE_FP32 dims: [ 4 ] zero_data: true } }
  }
]""", "model_warmup[0].batch_size", "batch_size must be in [1, 1], got 0"),
    "warmup_input_data": ("""name: "m"
backend: "python"
model_warmup {
  name: "w"
  batch_size: 1
  inputs {
    key: "IN"  # <--
    value { data_type: TYPE_FP32 dims: [ 4 ] }
  }
}""", 'model_warmup[0].inputs["IN"]', "'zero_data', 'random_data' or 'input_data_file'"),
    "batch_input_source": ("""name: "m"
backend: "python"
max_batch_size: 4
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1 ] allow_ragged_batch: true } ]
batch_input [
  {
    kind: BATCH_ELEMENT_COUNT
    target_name: "COUNT"
    data_type: TYPE_FP32
    source_input: "INN"  # <--
  }
]""", "batch_input[0].source_input", "unknown source input name 'INN'"),
    "ensemble_instance_group": ("""name: "m"
platform: "ensemble"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] } ]
ensemble_scheduling {
  step [ { model_name: "a" model_version: -1 input_map { key: "x" value: "IN" }
           output_map { key: "y" value: "OUT" } } ]
}
instance_group [ { kind: KIND_CPU } ]  # <--
""", "instance_group", "should not be specified for an ensemble"),
    "ensemble_step_model_name": ("""name: "m"
platform: "ensemble"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] } ]
ensemble_scheduling {
  step [
    { model_name: "a" input_map { key: "x" value: "IN" } output_map { key: "y" value: "T" } },
    {  # <--
      input_map { key: "x" value: "T" }
      output_map { key: "y" value: "OUT" }
    }
  ]
}""", "ensemble_scheduling.step[1].model_name", "must specify 'model_name' in step 1"),
    "ensemble_with_backend": ('name: "m"\nplatform: "ensemble"\nbackend: "python"  # <--\n'
                              "ensemble_scheduling { step { model_name: \"a\" } }\n",
                              "backend", "empty backend"),
    "ensemble_output_unproduced": ("""name: "m"
platform: "ensemble"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [
  { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "EXTRA" data_type: TYPE_FP32 dims: [ 4 ] }  # <--
]
ensemble_scheduling {
  step [ { model_name: "a" input_map { key: "x" value: "IN" } output_map { key: "y" value: "OUT" } } ]
}""", "output[1].name", "not produced by any step"),
    "ensemble_scheduling_missing": ('name: "m"\nplatform: "ensemble"  # <--\n',
                                    "platform", "ensemble scheduling must be set"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_rule(case: str) -> None:
    text, field, fragment = CASES[case]
    marked = [n for n, line in enumerate(text.splitlines(), 1) if "# <--" in line]
    expected_line = marked[0] if marked else None  # a field absent from the text has no line
    errors = _errors(text)
    matching = [e for e in errors if e.field == field]
    assert matching, f"no error on {field}; got {[str(e) for e in errors]}"
    error = matching[0]
    assert fragment in error.detail
    assert (error.path, error.line) == (PATH, expected_line), str(error)
    where = f"{PATH}:{expected_line}" if expected_line else PATH
    assert str(error).startswith(f"{where}: field '{field}': ")


def test_gpu_ids_checked_when_gpus_are_known() -> None:
    text = 'name: "m"\nbackend: "python"\ninstance_group {\n  kind: KIND_GPU\n  gpus: [ 3 ]\n}\n'
    assert _errors(text) == []
    errors = _errors(text, gpus=[0, 1])
    assert [(e.field, e.line) for e in errors] == [("instance_group[0].gpus", 5)]
    no_gpu = _errors('name: "m"\nbackend: "python"\ninstance_group { kind: KIND_GPU }\n', gpus=[])
    assert [e.field for e in no_gpu] == ["instance_group[0].kind"]


def test_validate_raises_the_first_and_validate_all_lists_all() -> None:
    text = 'name: "m"\nbackend: "python"\nmax_batch_size: -1\ninput { name: "X" dims: [0] }\n'
    config = parse_config_text(text, PATH)
    normalize(config)
    errors = validate_all(config, path=PATH, text=text)
    assert [e.field for e in errors] == ["max_batch_size", "input[0].data_type", "input[0].dims"]
    with pytest.raises(ConfigError) as info:
        validate(config, path=PATH, text=text)
    assert str(info.value) == f"{PATH}:3: field 'max_batch_size': must be >= 0, got -1"


def test_without_text_there_is_no_line() -> None:
    config = parse_config_text('name: "m" backend: "python" max_batch_size: -1', PATH)
    normalize(config)
    with pytest.raises(ConfigError) as info:
        validate(config, path=PATH)
    assert info.value.line is None
    assert str(info.value) == f"{PATH}: field 'max_batch_size': must be >= 0, got -1"


def test_unnormalized_instance_group_is_reported() -> None:
    config = parse_config_text('name: "m" backend: "python" instance_group {}', PATH)
    errors = validate_all(config, path=PATH)
    assert {e.field for e in errors} == {"instance_group[0].kind", "instance_group[0].count"}


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.stem)
def test_corpus_is_valid_after_normalisation(path: Path, tmp_path: Path) -> None:
    text = path.read_text()
    config = parse_config_text(text, str(path))
    model_dir = tmp_path / config.name
    (model_dir / "1").mkdir(parents=True)
    fill_platform_and_backend(config, model_dir, 1)
    normalize(config, gpus=[0, 1])
    assert [str(e) for e in validate_all(config, path=str(path), text=text, gpus=[0, 1])] == []
