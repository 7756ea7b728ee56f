"""The standard gRPC health service, ``grpc.health.v1.Health/Check`` (grpc.md §1).

Triton answers SERVING when the server is ready (not merely live) and
implements ``Check`` only; so does naiad.  The messages are naiad's own
``health.proto`` (generated into naiad's private descriptor pool), so no
``grpcio-health-checking`` is needed: its generated code demands a protobuf
newer than ``tritonclient[all]`` allows in the same environment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import grpc

from naiad.frontends.grpc import health_pb2

if TYPE_CHECKING:
    from naiad.engine.dataplane import DataPlane

SERVICE = "grpc.health.v1.Health"

_SERVING = health_pb2.HealthCheckResponse.SERVING
_NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def handlers(dp: DataPlane) -> dict[str, grpc.RpcMethodHandler]:
    """The health service's method handlers (the requested service name is ignored)."""

    async def check(
        msg: health_pb2.HealthCheckRequest, context: grpc.aio.ServicerContext
    ) -> health_pb2.HealthCheckResponse:
        return health_pb2.HealthCheckResponse(status=_SERVING if dp.is_ready() else _NOT_SERVING)

    return {
        "Check": grpc.unary_unary_rpc_method_handler(
            check,
            request_deserializer=health_pb2.HealthCheckRequest.FromString,
            response_serializer=health_pb2.HealthCheckResponse.SerializeToString,
        )
    }
