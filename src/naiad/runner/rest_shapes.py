"""gRPC answers in the REST shapes, so every runner mode answers alike.

``tritonclient.grpc`` hands out protobuf messages (or protobuf's JSON, with
64-bit numbers as strings); ``tritonclient.http`` hands out the server's
JSON.  These functions turn the first into the second.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

from naiad.config import ModelConfig, config_to_dict


def plain(message: Message) -> dict[str, Any]:
    """Every field of ``message`` as plain Python values (numbers stay numbers)."""
    out: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            out[field.name] = {key: _value(item) for key, item in value.items()}
        elif field.is_repeated:
            out[field.name] = [_value(item) for item in value]
        elif field.enum_type is not None:
            out[field.name] = field.enum_type.values_by_number[value].name
        else:
            out[field.name] = _value(value)
    return out


def _value(value: Any) -> Any:
    return plain(value) if isinstance(value, Message) else value


def model_metadata(message: Message) -> dict[str, Any]:
    return plain(message)


def model_config(message: Message) -> dict[str, Any]:
    """The ``config`` of a ModelConfigResponse, as the HTTP endpoint renders it."""
    config = ModelConfig.FromString(message.config.SerializeToString())  # type: ignore[attr-defined]
    return config_to_dict(config)


def repository_index(message: Message) -> list[dict[str, Any]]:
    """Rows without empty fields, as the REST index has them."""
    return [
        {key: value for key, value in plain(row).items() if value or key == "name"}
        for row in message.models  # type: ignore[attr-defined]
    ]


def system_shm_status(message: Message) -> list[dict[str, Any]]:
    return [plain(region) for region in message.regions.values()]  # type: ignore[attr-defined]


def trace_settings(message: Message) -> dict[str, Any]:
    """``trace_level`` stays a list; every other setting is its one string."""
    out: dict[str, Any] = {}
    for key, setting in message.settings.items():  # type: ignore[attr-defined]
        values = list(setting.value)
        out[key] = values if key == "trace_level" else (values[0] if values else "")
    return out


def log_settings(message: Message) -> dict[str, Any]:
    return {
        key: getattr(setting, setting.WhichOneof("parameter_choice"))
        for key, setting in message.settings.items()  # type: ignore[attr-defined]
    }


def parameters(params: Any) -> dict[str, Any]:
    """A protobuf map of ``InferParameter`` as plain values."""
    out: dict[str, Any] = {}
    for key, param in params.items():
        which = param.WhichOneof("parameter_choice")
        if which is not None:
            out[key] = getattr(param, which)
    return out
