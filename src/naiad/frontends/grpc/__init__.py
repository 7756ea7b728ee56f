"""The gRPC frontend: Triton's ``inference.GRPCInferenceService`` (grpc.md).

``grpc_service.proto`` and its generated modules define the wire format;
``codec`` turns inference messages into core requests and core responses
into messages; ``errors`` maps core error kinds to gRPC status codes.
"""
