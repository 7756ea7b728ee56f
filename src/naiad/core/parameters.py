"""Triton's reserved request parameters and the request fields they set (grpc.md §4.4).

Which parameter sets which :class:`InferenceRequest` field is Triton's rule
and is written here once.  How a value is typed is the wire's: JSON and
protobuf's ``InferParameter`` accept different types and each of Triton's
frontends words its refusals its own way, so every frontend passes a
:class:`ParameterReader` that turns one wire value into the field's value
(or refuses it) and decides what to do with the keys that are not reserved.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, TypeVar

from naiad.core.errors import InvalidArgument
from naiad.core.types import CorrelationId, InferenceRequest

V_contra = TypeVar("V_contra", contravariant=True)

#: Request parameters that set fields of the request rather than travel with it.
RESERVED = ("sequence_id", "sequence_start", "sequence_end", "priority", "timeout")

#: Names a forwarded header may not take: the reserved parameters and the
#: ones the frontends give a meaning of their own.
_NOT_FORWARDED = frozenset((*RESERVED, "headers", "binary_data_output"))


class ParameterReader(Protocol[V_contra]):
    """One wire's typing of request parameter values; each method raises its refusal."""

    def correlation_id(self, key: str, value: V_contra) -> CorrelationId: ...

    def flag(self, key: str, value: V_contra) -> bool: ...

    def priority(self, key: str, value: V_contra) -> int: ...

    def timeout(self, key: str, value: V_contra) -> int:
        """Microseconds."""
        ...

    def other(self, request: InferenceRequest, key: str, value: V_contra) -> None:
        """A key that is not reserved: a custom parameter, a ``triton_`` one, the wire's own."""
        ...


def set_request_parameters(
    request: InferenceRequest, params: Mapping[str, V_contra], reader: ParameterReader[V_contra]
) -> None:
    """Set the fields the reserved parameters in ``params`` name; hand the rest to ``reader``."""
    for key, value in params.items():
        if key == "sequence_id":
            request.correlation_id = reader.correlation_id(key, value)
        elif key == "sequence_start":
            request.sequence_start = reader.flag(key, value)
        elif key == "sequence_end":
            request.sequence_end = reader.flag(key, value)
        elif key == "priority":
            request.priority = reader.priority(key, value)
        elif key == "timeout":
            request.timeout_us = reader.timeout(key, value)
        else:
            reader.other(request, key, value)


def forward_header(request: InferenceRequest, key: str, value: str | bytes) -> None:
    """A header the forwarding pattern matched becomes a string request parameter.

    ``--http-header-forward-pattern`` and ``--grpc-header-forward-pattern``
    may not reach the reserved names, nor any ``triton_`` one.  A value that
    arrives as bytes (gRPC metadata) is decoded once it may be forwarded.
    """
    if key in _NOT_FORWARDED or key.startswith("triton_"):
        raise InvalidArgument(
            f"Header '{key}' is reserved for Triton usage and cannot be forwarded."
        )
    request.parameters[key] = value if isinstance(value, str) else value.decode()
