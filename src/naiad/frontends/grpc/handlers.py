"""The ``inference.GRPCInferenceService`` method table: rpc name -> handler.

Every rpc other than the two inference ones is a function of
:mod:`naiad.frontends.grpc.service`; this module wraps each once so that a
failure becomes a gRPC status (by :mod:`naiad.frontends.grpc.errors`, the
one table the inference handlers and the stream use too), and with the
restricted-protocol check when one is configured.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import grpc
from google.protobuf.message import Message

from naiad.core.errors import NaiadError
from naiad.frontends.grpc import grpc_service_pb2 as pb
from naiad.frontends.grpc import service
from naiad.frontends.grpc.errors import status_of_failure
from naiad.frontends.grpc.infer import ModelInfer
from naiad.frontends.grpc.restricted import CATEGORIES, Rule, allowed, refusal
from naiad.frontends.grpc.stream import ModelStreamInfer

if TYPE_CHECKING:
    from naiad.engine.dataplane import DataPlane

log = logging.getLogger("naiad.grpc")

SERVICE = "inference.GRPCInferenceService"

Handler = Callable[[Any, grpc.aio.ServicerContext], Any]

#: unary rpc -> (service function, request message, response message)
UNARY: dict[str, tuple[Callable[..., Any], type[Message], type[Message]]] = {
    "ServerLive": (service.server_live, pb.ServerLiveRequest, pb.ServerLiveResponse),
    "ServerReady": (service.server_ready, pb.ServerReadyRequest, pb.ServerReadyResponse),
    "ModelReady": (service.model_ready, pb.ModelReadyRequest, pb.ModelReadyResponse),
    "ServerMetadata": (
        service.server_metadata, pb.ServerMetadataRequest, pb.ServerMetadataResponse
    ),
    "ModelMetadata": (service.model_metadata, pb.ModelMetadataRequest, pb.ModelMetadataResponse),
    "ModelConfig": (service.model_config, pb.ModelConfigRequest, pb.ModelConfigResponse),
    "ModelStatistics": (
        service.model_statistics, pb.ModelStatisticsRequest, pb.ModelStatisticsResponse
    ),
    "RepositoryIndex": (
        service.repository_index, pb.RepositoryIndexRequest, pb.RepositoryIndexResponse
    ),
    "RepositoryModelLoad": (
        service.repository_model_load,
        pb.RepositoryModelLoadRequest,
        pb.RepositoryModelLoadResponse,
    ),
    "RepositoryModelUnload": (
        service.repository_model_unload,
        pb.RepositoryModelUnloadRequest,
        pb.RepositoryModelUnloadResponse,
    ),
    "SystemSharedMemoryStatus": (
        service.system_shm_status,
        pb.SystemSharedMemoryStatusRequest,
        pb.SystemSharedMemoryStatusResponse,
    ),
    "SystemSharedMemoryRegister": (
        service.system_shm_register,
        pb.SystemSharedMemoryRegisterRequest,
        pb.SystemSharedMemoryRegisterResponse,
    ),
    "SystemSharedMemoryUnregister": (
        service.system_shm_unregister,
        pb.SystemSharedMemoryUnregisterRequest,
        pb.SystemSharedMemoryUnregisterResponse,
    ),
    "CudaSharedMemoryStatus": (
        service.cuda_shm_status,
        pb.CudaSharedMemoryStatusRequest,
        pb.CudaSharedMemoryStatusResponse,
    ),
    "CudaSharedMemoryRegister": (
        service.cuda_shm_register,
        pb.CudaSharedMemoryRegisterRequest,
        pb.CudaSharedMemoryRegisterResponse,
    ),
    "CudaSharedMemoryUnregister": (
        service.cuda_shm_unregister,
        pb.CudaSharedMemoryUnregisterRequest,
        pb.CudaSharedMemoryUnregisterResponse,
    ),
    "TraceSetting": (service.trace_setting, pb.TraceSettingRequest, pb.TraceSettingResponse),
    "LogSettings": (service.log_settings, pb.LogSettingsRequest, pb.LogSettingsResponse),
}  # fmt: skip


def build(
    dp: DataPlane,
    restricted: dict[str, Rule] | None,
    forward: re.Pattern[str] | None,
    stream_bytes: int,
) -> dict[str, grpc.RpcMethodHandler]:
    """Every rpc of the service, ready for ``add_registered_method_handlers``;
    ``stream_bytes``: request bytes one ``ModelStreamInfer`` stream may have in the server."""
    restricted = restricted or {}
    table: dict[str, grpc.RpcMethodHandler] = {}
    for name, (func, request, response) in UNARY.items():
        table[name] = grpc.unary_unary_rpc_method_handler(
            _guard(_unary(dp, func), restricted.get(CATEGORIES[name])),
            request_deserializer=request.FromString,
            response_serializer=response.SerializeToString,
        )
    table["ModelInfer"] = grpc.unary_unary_rpc_method_handler(
        _guard(ModelInfer(dp, forward).rpc, restricted.get("inference")),
        request_deserializer=pb.ModelInferRequest.FromString,
        response_serializer=pb.ModelInferResponse.SerializeToString,
    )
    table["ModelStreamInfer"] = grpc.stream_stream_rpc_method_handler(
        _guard(ModelStreamInfer(dp, forward, stream_bytes).rpc, restricted.get("inference")),
        request_deserializer=pb.ModelInferRequest.FromString,
        response_serializer=pb.ModelStreamInferResponse.SerializeToString,
    )
    return table


def _unary(dp: DataPlane, func: Callable[..., Any]) -> Handler:
    """``func(dp, msg)`` as an aio handler; NaiadError -> status, anything else -> INTERNAL."""
    is_async = inspect.iscoroutinefunction(func)

    async def handler(msg: Any, context: grpc.aio.ServicerContext) -> Any:
        try:
            result = func(dp, msg)
            return (await result) if is_async else result
        except Exception as exc:  # a bug must still answer the client
            if not isinstance(exc, NaiadError):
                log.exception("gRPC %s failed", getattr(func, "__name__", func))
            await context.abort(*status_of_failure(exc))

    return handler


def _guard(handler: Handler, rule: Rule | None) -> Handler:
    """``handler`` behind the restricted-protocol check of its category, if any."""
    if rule is None:
        return handler

    async def checked(msg: Any, context: grpc.aio.ServicerContext) -> Any:
        if not allowed(rule, context.invocation_metadata()):
            await context.abort(grpc.StatusCode.UNAVAILABLE, refusal(rule))
        return await handler(msg, context)

    return checked
