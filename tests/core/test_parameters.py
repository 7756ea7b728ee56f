"""The reserved request parameters set request fields; everything else is the wire's."""

from __future__ import annotations

from typing import Any

import pytest

from naiad.core.errors import InvalidArgument
from naiad.core.parameters import RESERVED, forward_header, set_request_parameters
from naiad.core.types import CorrelationId, InferenceRequest

pytestmark = pytest.mark.unit


class Plain:
    """A reader for already-typed values that records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def correlation_id(self, key: str, value: Any) -> CorrelationId:
        self.asked.append(("correlation_id", key))
        return value  # type: ignore[no-any-return]

    def flag(self, key: str, value: Any) -> bool:
        self.asked.append(("flag", key))
        return bool(value)

    def priority(self, key: str, value: Any) -> int:
        self.asked.append(("priority", key))
        return int(value)

    def timeout(self, key: str, value: Any) -> int:
        self.asked.append(("timeout", key))
        return int(value)

    def other(self, request: InferenceRequest, key: str, value: Any) -> None:
        self.asked.append(("other", key))
        request.parameters[key] = value


def test_reserved_parameters_set_the_request_fields() -> None:
    request = InferenceRequest("m")
    reader = Plain()
    params = {"sequence_id": "s-1", "sequence_start": True, "sequence_end": True,
              "priority": 3, "timeout": 500, "custom": 1.5}  # fmt: skip
    set_request_parameters(request, params, reader)
    assert request.correlation_id == "s-1"
    assert request.sequence_start and request.sequence_end
    assert (request.priority, request.timeout_us) == (3, 500)
    assert request.parameters == {"custom": 1.5}  # reserved ones do not travel on
    assert reader.asked == [
        ("correlation_id", "sequence_id"),
        ("flag", "sequence_start"),
        ("flag", "sequence_end"),
        ("priority", "priority"),
        ("timeout", "timeout"),
        ("other", "custom"),
    ]
    assert set(RESERVED) == {key for key in params if key != "custom"}


def test_the_readers_refusal_stops_the_mapping() -> None:
    class Strict(Plain):
        def priority(self, key: str, value: Any) -> int:
            raise InvalidArgument(f"bad '{key}'")

    request = InferenceRequest("m")
    with pytest.raises(InvalidArgument, match="bad 'priority'"):
        set_request_parameters(request, {"priority": -1, "timeout": 5}, Strict())
    assert request.timeout_us == 0


@pytest.mark.parametrize(
    "key", ["sequence_id", "priority", "headers", "binary_data_output", "triton_anything"]
)
def test_reserved_names_are_not_forwarded(key: str) -> None:
    request = InferenceRequest("m")
    with pytest.raises(InvalidArgument, match=f"Header '{key}' is reserved for Triton usage"):
        forward_header(request, key, "1")
    assert request.parameters == {}


def test_forwarded_headers_become_string_parameters() -> None:
    request = InferenceRequest("m")
    forward_header(request, "x-user", "ann")
    forward_header(request, "x-team", b"ops")  # gRPC metadata may hand out bytes
    assert request.parameters == {"x-user": "ann", "x-team": "ops"}
