"""'Did you mean ...?' for misspelt fields and enum values, in pbtxt and JSON configs."""

from __future__ import annotations

import pytest
from support import onnx_models
from support.onnx_models import write_config

from naiad.config import ConfigError, config_from_json, parse_config_text
from naiad.config.suggest import closest

pytestmark = pytest.mark.protocol


@pytest.mark.parametrize(
    ("text", "line", "hint"),
    [
        ('backend: "onnxruntime"\nmax_batch_sise: 4\n', 2, "max_batch_size"),
        ('input [{ nmae: "a" }]\n', 1, "name"),
        (
            "dynamic_batching {\n  max_queue_delay_microsecond: 100\n}\n",
            2,
            "max_queue_delay_microseconds",
        ),
        ('input [{ name: "a" data_type: TYPE_FP23 dims: [1] }]', 1, "TYPE_FP32"),
        ("instance_group [{ kind: KIND_CPUU }]", 1, "KIND_CPU"),
        ("instance_group [{ kind: kind_gpu }]", 1, "KIND_GPU"),
    ],
)
def test_pbtxt_typos_suggest_the_real_name(text: str, line: int, hint: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config_text(text, "m/config.pbtxt")
    assert info.value.line == line
    assert str(info.value).endswith(f"; did you mean '{hint}'?")
    assert str(info.value).startswith(f"m/config.pbtxt:{line}: ")


def test_no_suggestion_when_nothing_is_close() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config_text("frobnicate: 3", "x")
    assert "did you mean" not in str(info.value)


@pytest.mark.parametrize(
    ("data", "hint"),
    [
        ({"max_batch_sise": 4}, "max_batch_size"),
        ({"input": [{"name": "a", "data_type": "TYPE_FP23"}]}, "TYPE_FP32"),
        ({"instance_group": [{"kind": "KIND_CPUU"}]}, "KIND_CPU"),
    ],
)
def test_json_typos_suggest_the_real_name(data: dict, hint: str) -> None:
    with pytest.raises(ConfigError, match=f"did you mean '{hint}'"):
        config_from_json(data)


def test_closest_ignores_case_and_keeps_the_real_spelling() -> None:
    assert closest("type_fp32", ["TYPE_FP16", "TYPE_FP32"]) == "TYPE_FP32"
    assert closest("zzz", ["TYPE_FP16"]) is None


def test_the_servers_load_error_has_the_same_hint(repo, serve):
    onnx_models.identity(repo / "typo" / "1" / "model.onnx")
    write_config(repo / "typo", 'backend: "onnxruntime"\nmax_batch_sise: 4\n')
    server = serve(repo)
    reason = dict(server.dataplane.failed_models())["typo"]
    assert reason.endswith("did you mean 'max_batch_size'?")
    assert reason.startswith("typo/config.pbtxt:2: ")  # named from the repository's root
