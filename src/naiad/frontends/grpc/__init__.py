"""The gRPC frontend: Triton's ``inference.GRPCInferenceService`` (grpc.md).

``grpc_service.proto`` and its generated modules define the wire format;
``codec`` turns inference messages into core requests and core responses
into messages; ``errors`` maps core error kinds to gRPC status codes;
``service``, ``infer`` and ``stream`` implement the rpcs over the data
plane; ``handlers`` and ``health`` build the method tables; ``http2`` is
the transport that serves them (``grpc.aio`` on request); ``server``
starts and stops it.
"""

from naiad.frontends.grpc.server import GrpcFrontend, start

__all__ = ["GrpcFrontend", "start"]
