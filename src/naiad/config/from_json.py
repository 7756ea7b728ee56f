"""Configs given as JSON (the ``config`` parameter of a load request).

protobuf's JSON parser does the work (unknown fields rejected, int64 as
numbers or strings, camelCase or proto names); Triton additionally accepts
enum names in any case (``"kind": "kind_cpu"``), which protobuf does not,
so enum strings are upper-cased first when that names a real value.
"""

from __future__ import annotations

import json
import re
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from naiad.config.errors import ConfigError
from naiad.config.model_config_pb2 import ModelConfig
from naiad.config.suggest import with_hint

_UNKNOWN_FIELD = re.compile(r'has no field named "([^"]+)" at "([^"]*)"')
_FAILED_FIELD = re.compile(r"Failed to parse (\w+) field: ")
_AT_PATH = re.compile(r'\s+at "?ModelConfig\.([\w\[\].]+?)"?\.?$')


def config_from_json(data: str | bytes | dict[str, Any], path: str = "") -> ModelConfig:
    """Parse a JSON config (text or decoded object) into a :class:`ModelConfig`.

    Raises ConfigError (INVALID_ARG) naming the offending field.
    """
    if isinstance(data, (str, bytes)):
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise ConfigError(f"invalid JSON: {exc}", path=path) from None
    if not isinstance(data, dict):
        raise ConfigError("model configuration JSON must be an object", path=path)
    data = _upper_enums(data, ModelConfig.DESCRIPTOR)
    config = ModelConfig()
    try:
        json_format.ParseDict(data, config)
    except json_format.ParseError as exc:
        raise _error(str(exc), path) from None
    return config


def _error(message: str, path: str) -> ConfigError:
    match = _UNKNOWN_FIELD.search(message)
    if match:
        name, where = match.groups()
        prefix = where.partition(".")[2] if "." in where else ""
        field = f"{prefix}.{name}" if prefix else name
        return ConfigError(with_hint(f"unknown field '{name}'", message), path=path, field=field)
    detail = message.splitlines()[0].rstrip(".")
    fields: list[str] = []
    while (prefix := _FAILED_FIELD.match(detail)) is not None:
        fields.append(prefix.group(1))
        detail = detail[prefix.end() :]
    field = ".".join(fields) or None
    at = _AT_PATH.search(detail)
    if at is not None:
        field = at.group(1)
        detail = detail[: at.start()]
    return ConfigError(with_hint(detail.rstrip("."), message), path=path, field=field)


def _field(descriptor: Descriptor, key: str) -> FieldDescriptor | None:
    field = descriptor.fields_by_name.get(key)
    if field is None:
        field = next((f for f in descriptor.fields if f.json_name == key), None)
    return field


def _upper_enums(value: Any, descriptor: Descriptor) -> Any:
    """A copy of a JSON object with enum names normalised to their declared case."""
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        field = _field(descriptor, key)
        out[key] = item if field is None else _convert(item, field)
    return out


def _convert(item: Any, field: FieldDescriptor) -> Any:
    message = field.message_type
    if message is not None and message.GetOptions().map_entry:
        value_field = message.fields_by_name["value"]
        if isinstance(item, dict):
            return {k: _single(v, value_field) for k, v in item.items()}
        return item
    if _is_repeated(field) and isinstance(item, list):
        return [_single(v, field) for v in item]
    return _single(item, field)


def _is_repeated(field: FieldDescriptor) -> bool:
    is_repeated = getattr(field, "is_repeated", None)
    if is_repeated is not None:  # protobuf >= 6 (label is deprecated)
        return bool(is_repeated)
    return field.label == FieldDescriptor.LABEL_REPEATED


def _single(item: Any, field: FieldDescriptor) -> Any:
    if field.enum_type is not None and isinstance(item, str):
        upper = item.upper()
        if item not in field.enum_type.values_by_name and upper in field.enum_type.values_by_name:
            return upper
        return item
    if field.message_type is not None:
        return _upper_enums(item, field.message_type)
    return item
