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


__all__ = ["STATUS_CODES", "status_of"]
