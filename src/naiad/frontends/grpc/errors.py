"""Core error kinds as gRPC status codes (grpc.md §2): the gRPC frontend's one table.

Triton maps ``TRITONSERVER_Error_Code`` to a gRPC status in one switch
(``GrpcStatusUtil::CodeToStatus``); clients see the code and the core's
message as the status details, so this table and :func:`status_of` are all
the gRPC frontend needs to report a :class:`~naiad.core.errors.NaiadError`.
"""

from __future__ import annotations

import grpc

from naiad.core.errors import Kind, NaiadError

STATUS_CODES: dict[Kind, grpc.StatusCode] = {
    Kind.UNKNOWN: grpc.StatusCode.UNKNOWN,
    Kind.INTERNAL: grpc.StatusCode.INTERNAL,
    Kind.NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    Kind.INVALID_ARG: grpc.StatusCode.INVALID_ARGUMENT,
    Kind.UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
    Kind.UNSUPPORTED: grpc.StatusCode.UNIMPLEMENTED,
    Kind.ALREADY_EXISTS: grpc.StatusCode.ALREADY_EXISTS,
    Kind.CANCELLED: grpc.StatusCode.CANCELLED,
}


def status_of(error: NaiadError) -> tuple[grpc.StatusCode, str]:
    """The gRPC status code and details message that report ``error``."""
    return STATUS_CODES.get(error.kind, grpc.StatusCode.UNKNOWN), error.message


def status_of_failure(exc: Exception) -> tuple[grpc.StatusCode, str]:
    """The status that answers a handler's failure: a core error by the
    table, anything else (a bug) as INTERNAL naming it, so the client still
    gets an answer."""
    if isinstance(exc, NaiadError):
        return status_of(exc)
    return grpc.StatusCode.INTERNAL, f"{type(exc).__name__}: {exc}"


__all__ = ["STATUS_CODES", "status_of", "status_of_failure"]
