"""The non-inference rpcs (grpc.md §3, §5, §7-§9): decode, call the data plane, encode.

Each function takes the request message and returns the response message
(or a coroutine of one); :mod:`naiad.frontends.grpc.handlers` turns a
raised :class:`~naiad.core.errors.NaiadError` into the gRPC status.  The
data plane answers with typed results that :mod:`naiad.frontends.grpc.render`
turns into messages, so every operation and every check lives once, in the
data plane.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from naiad.core.errors import InvalidArgument, NotFound
from naiad.engine.repository_parameters import load_parameters, unload_dependents
from naiad.frontends.grpc import grpc_service_pb2 as pb
from naiad.frontends.grpc import render
from naiad.frontends.grpc.parameters import PROTO_PARAMETERS

if TYPE_CHECKING:
    from naiad.engine.dataplane import DataPlane


# -- health and metadata -------------------------------------------------------------


def server_live(dp: DataPlane, msg: pb.ServerLiveRequest) -> pb.ServerLiveResponse:
    return pb.ServerLiveResponse(live=dp.is_live())


def server_ready(dp: DataPlane, msg: pb.ServerReadyRequest) -> pb.ServerReadyResponse:
    return pb.ServerReadyResponse(ready=dp.is_ready())


def model_ready(dp: DataPlane, msg: pb.ModelReadyRequest) -> pb.ModelReadyResponse:
    # Triton 2.51 answers an unknown model, or a version that is not loaded, with
    # ready=false and OK; only a malformed version string is an error (INVALID_ARGUMENT).
    try:
        return pb.ModelReadyResponse(ready=dp.model_ready(msg.name, msg.version))
    except NotFound:
        return pb.ModelReadyResponse(ready=False)


def server_metadata(dp: DataPlane, msg: pb.ServerMetadataRequest) -> pb.ServerMetadataResponse:
    return render.server_metadata(dp.server_metadata())


async def model_metadata(dp: DataPlane, msg: pb.ModelMetadataRequest) -> pb.ModelMetadataResponse:
    await dp.resident(msg.name)
    return render.model_metadata(dp.model_metadata(msg.name, msg.version))


async def model_config(dp: DataPlane, msg: pb.ModelConfigRequest) -> pb.ModelConfigResponse:
    await dp.resident(msg.name)
    # The core's ModelConfig lives in the same descriptor pool, so it nests directly.
    return pb.ModelConfigResponse(config=dp.model_config(msg.name, msg.version))


async def model_statistics(
    dp: DataPlane, msg: pb.ModelStatisticsRequest
) -> pb.ModelStatisticsResponse:
    return render.statistics(await dp.server_statistics(msg.name, msg.version))


# -- model repository ------------------------------------------------------------------


async def repository_index(
    dp: DataPlane, msg: pb.RepositoryIndexRequest
) -> pb.RepositoryIndexResponse:
    dp.check_repository_name(msg.repository_name)
    return render.repository_index(await dp.repository_index(msg.ready))


async def repository_model_load(
    dp: DataPlane, msg: pb.RepositoryModelLoadRequest
) -> pb.RepositoryModelLoadResponse:
    dp.check_repository_name(msg.repository_name)
    config, files = load_parameters(msg.parameters, PROTO_PARAMETERS)
    await dp.load_model(msg.model_name, config, files)
    return pb.RepositoryModelLoadResponse()


async def repository_model_unload(
    dp: DataPlane, msg: pb.RepositoryModelUnloadRequest
) -> pb.RepositoryModelUnloadResponse:
    dp.check_repository_name(msg.repository_name)
    dependents = unload_dependents(msg.parameters, PROTO_PARAMETERS.flag)
    await dp.unload_model(msg.model_name, dependents)
    return pb.RepositoryModelUnloadResponse()


# -- shared memory -------------------------------------------------------------------------


def system_shm_status(
    dp: DataPlane, msg: pb.SystemSharedMemoryStatusRequest
) -> pb.SystemSharedMemoryStatusResponse:
    return render.system_shm_status(dp.shm_status("system", msg.name))


async def system_shm_register(
    dp: DataPlane, msg: pb.SystemSharedMemoryRegisterRequest
) -> pb.SystemSharedMemoryRegisterResponse:
    dp.check_shm_region_name("system", msg.name)
    await dp.shm_register_system(msg.name, msg.key, msg.offset, msg.byte_size)
    return pb.SystemSharedMemoryRegisterResponse()


async def system_shm_unregister(
    dp: DataPlane, msg: pb.SystemSharedMemoryUnregisterRequest
) -> pb.SystemSharedMemoryUnregisterResponse:
    await dp.shm_unregister("system", msg.name)
    return pb.SystemSharedMemoryUnregisterResponse()


def cuda_shm_status(
    dp: DataPlane, msg: pb.CudaSharedMemoryStatusRequest
) -> pb.CudaSharedMemoryStatusResponse:
    return render.cuda_shm_status(dp.shm_status("cuda", msg.name))


async def cuda_shm_register(
    dp: DataPlane, msg: pb.CudaSharedMemoryRegisterRequest
) -> pb.CudaSharedMemoryRegisterResponse:
    dp.check_shm_region_name("cuda", msg.name)
    if len(msg.raw_handle) != 64:
        raise InvalidArgument("'raw_handle' must be a valid cudaIpcMemHandle_t (64 bytes)")
    await dp.shm_register_cuda(msg.name, msg.raw_handle, msg.device_id, msg.byte_size)
    return pb.CudaSharedMemoryRegisterResponse()


async def cuda_shm_unregister(
    dp: DataPlane, msg: pb.CudaSharedMemoryUnregisterRequest
) -> pb.CudaSharedMemoryUnregisterResponse:
    await dp.shm_unregister("cuda", msg.name)
    return pb.CudaSharedMemoryUnregisterResponse()


# -- trace and log settings ----------------------------------------------------------------


async def trace_setting(dp: DataPlane, msg: pb.TraceSettingRequest) -> pb.TraceSettingResponse:
    changes: dict[str, Any] | None = None
    if msg.settings:
        changes = {}
        for key, setting in msg.settings.items():
            given = list(setting.value)
            if not given:
                changes[key] = None  # zero values: clear (fall back to the global setting)
            elif key == "trace_level":
                changes[key] = given
            elif len(given) > 1:
                raise InvalidArgument(f"expect only 1 value for '{key}'")
            else:
                changes[key] = given[0]
    return render.trace_settings(await dp.trace_setting(msg.model_name, changes))


async def log_settings(dp: DataPlane, msg: pb.LogSettingsRequest) -> pb.LogSettingsResponse:
    changes: dict[str, Any] | None = None
    if msg.settings:
        changes = {key: _log_value(value) for key, value in msg.settings.items()}
    return render.log_settings(await dp.log_setting(changes))


def _log_value(setting: pb.LogSettingsRequest.SettingValue) -> bool | int | str | None:
    """The plain value of a setting; None when no case is set (the Python client's None)."""
    which = setting.WhichOneof("parameter_choice")
    return None if which is None else getattr(setting, which)
