"""JSON configs (load overrides): protobuf JSON with Triton's leniencies."""

from __future__ import annotations

import json

import pytest

from naiad.config import ConfigError, config_from_json, config_to_dict, parse_config_text
from naiad.core.errors import InvalidArgument

pytestmark = pytest.mark.unit


def test_enum_names_are_case_insensitive():
    config = config_from_json(
        {
            "input": [{"name": "x", "data_type": "type_fp32", "format": "Format_NCHW"}],
            "instance_group": [{"kind": "kind_cpu"}],
            "dynamic_batching": {"priority_queue_policy": {"1": {"timeout_action": "delay"}}},
        }
    )
    assert config.input[0].data_type == 11 and config.input[0].format == 2
    assert config.instance_group[0].kind == 2
    assert config.dynamic_batching.priority_queue_policy[1].timeout_action == 1


def test_int64_as_numbers_or_strings_and_text_input():
    config = config_from_json(
        '{"name": "m", "input": [{"name": "x", "dims": ["-1", 3]}],'
        ' "dynamic_batching": {"max_queue_delay_microseconds": "100"}}'
    )
    assert list(config.input[0].dims) == [-1, 3]
    assert config.dynamic_batching.max_queue_delay_microseconds == 100


def test_camel_case_names_accepted():
    config = config_from_json({"maxBatchSize": 4, "instanceGroup": [{"kind": "KIND_GPU"}]})
    assert config.max_batch_size == 4 and config.instance_group[0].kind == 1


def test_name_is_optional():
    assert config_from_json({"backend": "python"}).name == ""


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"max_batch_sizes": 1}, "max_batch_sizes"),
        ({"input": [{"name": "x", "bogus": 1}]}, "input[0].bogus"),
        (
            {"dynamic_batching": {"preferred_batch_sise": [1]}},
            "dynamic_batching.preferred_batch_sise",
        ),
    ],
)
def test_unknown_fields_rejected_naming_the_field(data, field):
    with pytest.raises(ConfigError) as info:
        config_from_json(data)
    assert isinstance(info.value, InvalidArgument)
    assert info.value.field == field
    assert field.rsplit(".", 1)[-1] in str(info.value)


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"input": [{"data_type": "TYPE_NOPE"}]}, "input[0].data_type"),
        ({"max_batch_size": "eight"}, "max_batch_size"),
        ("{not json", None),
        ("[1, 2]", None),
    ],
)
def test_bad_values_rejected(data, field):
    with pytest.raises(ConfigError) as info:
        config_from_json(data)
    assert info.value.field == field


def test_round_trip_through_rendered_json(tmp_path):
    from _corpus_files import corpus_files

    for path in corpus_files():
        config = parse_config_text(path.read_text(), str(path))
        assert config_from_json(json.dumps(config_to_dict(config))) == config, path.name
