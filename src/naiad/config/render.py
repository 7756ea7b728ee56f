"""The JSON form of a config (§6), byte-for-byte what Triton serves.

Triton prints the config with protobuf's JSON printer (proto field names,
every no-presence field, enums as names) and then turns a fixed list of
64-bit integer fields into JSON numbers; a few 64-bit fields stay strings.
Clients such as perf_analyzer read these, so the list below is Triton's
list, not "every int64".
"""

from __future__ import annotations

import inspect
import json
from typing import Any

from google.protobuf import json_format, text_format
from google.protobuf.descriptor import Descriptor

from naiad.config.model_config_pb2 import ModelConfig

# Paths of the int64/uint64 fields Triton prints as numbers.  ``[]`` walks
# every element of a list, ``*`` every value of a map.  Fields missing from
# a rendering (unset messages) are skipped.
INT64_AS_NUMBER_PATHS: tuple[str, ...] = (
    "input[].dims",
    "input[].reshape.shape",
    "output[].dims",
    "output[].reshape.shape",
    "version_policy.specific.versions",
    "dynamic_batching.max_queue_delay_microseconds",
    "dynamic_batching.priority_levels",
    "dynamic_batching.default_priority_level",
    "dynamic_batching.default_queue_policy.default_timeout_microseconds",
    "dynamic_batching.priority_queue_policy.*.default_timeout_microseconds",
    "sequence_batching.max_sequence_idle_microseconds",
    "sequence_batching.direct.max_queue_delay_microseconds",
    "sequence_batching.oldest.max_queue_delay_microseconds",
    "sequence_batching.state[].dims",
    "ensemble_scheduling.step[].model_version",
    "model_warmup[].inputs.*.dims",
)


def config_to_dict(config: ModelConfig) -> dict[str, Any]:
    """The config as Triton's JSON object (a fresh dict; safe to mutate)."""
    data = json_format.MessageToDict(config, **_PRINT_OPTIONS)
    for path in _PARSED_PATHS:
        _numbers_at(data, path)
    return _in_declaration_order(data, config.DESCRIPTOR)


def config_to_json(config: ModelConfig) -> str:
    """Compact JSON text of :func:`config_to_dict` (the HTTP config body)."""
    return json.dumps(config_to_dict(config), separators=(",", ":"))


def config_to_pbtxt(config: ModelConfig) -> str:
    """The config as protobuf text, the form of a config.pbtxt file (the dashboard shows it)."""
    return text_format.MessageToString(config)


def _print_options() -> dict[str, bool]:
    """MessageToDict flags for Triton's printer settings on this protobuf version.

    protobuf >= 5.26 renamed ``including_default_value_fields`` to
    ``always_print_fields_with_no_presence`` (same meaning for proto3 here).
    """
    names = inspect.signature(json_format.MessageToDict).parameters
    flag = (
        "always_print_fields_with_no_presence"
        if "always_print_fields_with_no_presence" in names
        else "including_default_value_fields"
    )
    return {"preserving_proto_field_name": True, flag: True}


_PRINT_OPTIONS = _print_options()


def _in_declaration_order(data: dict[str, Any], descriptor: Descriptor) -> dict[str, Any]:
    """Keys in proto declaration order, as Triton's (C++) printer emits them.

    Python's printer puts set fields first and defaulted ones after.
    """
    ordered: dict[str, Any] = {}
    for field in descriptor.fields:
        if field.name not in data:
            continue
        value = data[field.name]
        message = field.message_type
        if message is not None and message.GetOptions().map_entry:
            value_type = message.fields_by_name["value"].message_type
            if value_type is not None:
                value = {k: _in_declaration_order(v, value_type) for k, v in value.items()}
        elif message is not None and isinstance(value, list):
            value = [_in_declaration_order(v, message) for v in value]
        elif message is not None and isinstance(value, dict):
            value = _in_declaration_order(value, message)
        ordered[field.name] = value
    return ordered


def _split(path: str) -> tuple[str, ...]:
    steps: list[str] = []
    for part in path.split("."):
        if part.endswith("[]"):
            steps += [part[:-2], "[]"]
        else:
            steps.append(part)
    return tuple(steps)


_PARSED_PATHS = tuple(_split(p) for p in INT64_AS_NUMBER_PATHS)


def _numbers_at(node: Any, steps: tuple[str, ...]) -> None:
    """Convert the string leaf (or list of strings) at ``steps`` to ints, in place."""
    if not steps or not isinstance(node, dict):
        return
    step, rest = steps[0], steps[1:]
    if step == "*":
        children = list(node.values())
    elif step in node:
        if not rest:
            node[step] = _to_number(node[step])
            return
        children = [node[step]]
    else:
        return
    for child in children:
        if rest and rest[0] == "[]":
            if isinstance(child, list):
                for item in child:
                    _numbers_at(item, rest[1:])
        elif rest:
            _numbers_at(child, rest)


def _to_number(value: Any) -> Any:
    if isinstance(value, list):
        return [int(v) if isinstance(v, str) else v for v in value]
    return int(value) if isinstance(value, str) else value
