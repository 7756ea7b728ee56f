"""The non-inference rpcs (grpc.md §3, §5, §7-§9): decode, call the data plane, encode.

Each function takes the request message and returns the response message
(or a coroutine of one); :mod:`naiad.frontends.grpc.handlers` turns a
raised :class:`~naiad.core.errors.NaiadError` into the gRPC status.  The
data plane answers in the REST shape; converting that shape into messages
here keeps every operation implemented once, in the core.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from google.protobuf import json_format

from naiad.core.errors import InvalidArgument, NotFound, Unsupported
from naiad.frontends.grpc import grpc_service_pb2 as pb

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
    meta = dp.server_metadata()
    return pb.ServerMetadataResponse(
        name=meta["name"], version=meta["version"], extensions=meta["extensions"]
    )


def model_metadata(dp: DataPlane, msg: pb.ModelMetadataRequest) -> pb.ModelMetadataResponse:
    meta = dp.model_metadata(msg.name, msg.version)
    out = pb.ModelMetadataResponse(
        name=meta["name"], versions=meta["versions"], platform=meta["platform"]
    )
    for field in ("inputs", "outputs"):
        tensors = getattr(out, field)
        for spec in meta[field]:
            tensors.add(name=spec["name"], datatype=spec["datatype"], shape=spec["shape"])
    return out


def model_config(dp: DataPlane, msg: pb.ModelConfigRequest) -> pb.ModelConfigResponse:
    # The core's ModelConfig lives in the same descriptor pool, so it nests directly.
    return pb.ModelConfigResponse(config=dp.model_config(msg.name, msg.version))


def model_statistics(dp: DataPlane, msg: pb.ModelStatisticsRequest) -> pb.ModelStatisticsResponse:
    # Queried twice per perf_analyzer window, never per request: ParseDict is cheap enough
    # and keeps one rendering of the counters (the core's REST dict).
    return json_format.ParseDict(
        dp.statistics(msg.name, msg.version),
        pb.ModelStatisticsResponse(),
        ignore_unknown_fields=True,
    )


# -- model repository ------------------------------------------------------------------


def _no_repository_name(name: str) -> None:
    if name:
        raise Unsupported("'repository_name' specification is not supported")


async def repository_index(
    dp: DataPlane, msg: pb.RepositoryIndexRequest
) -> pb.RepositoryIndexResponse:
    _no_repository_name(msg.repository_name)
    out = pb.RepositoryIndexResponse()
    for item in await dp.repository_index(msg.ready):
        out.models.add(
            name=item["name"],
            version=item.get("version", ""),
            state=item.get("state", ""),
            reason=item.get("reason", ""),
        )
    return out


async def repository_model_load(
    dp: DataPlane, msg: pb.RepositoryModelLoadRequest
) -> pb.RepositoryModelLoadResponse:
    _no_repository_name(msg.repository_name)
    config: str | None = None
    files: dict[str, bytes] = {}
    for key, param in msg.parameters.items():
        which = param.WhichOneof("parameter_choice")
        if key == "config":
            if which != "string_param":
                raise InvalidArgument(
                    f"invalid value type for load parameter '{key}', expected string_param."
                )
            config = param.string_param
        elif key.startswith("file:"):
            if which != "bytes_param":
                raise InvalidArgument(
                    f"invalid value type for load parameter '{key}', expected bytes_param."
                )
            files[key[len("file:") :]] = param.bytes_param  # raw bytes, not base64 (grpc.md §7)
        else:
            raise InvalidArgument(f"unrecognized load parameter '{key}'.")
    await dp.load_model(msg.model_name, config, files or None)
    return pb.RepositoryModelLoadResponse()


async def repository_model_unload(
    dp: DataPlane, msg: pb.RepositoryModelUnloadRequest
) -> pb.RepositoryModelUnloadResponse:
    _no_repository_name(msg.repository_name)
    dependents = False
    for key, param in msg.parameters.items():
        if key == "unload_dependents":
            if param.WhichOneof("parameter_choice") != "bool_param":
                raise InvalidArgument(
                    "invalid value type for 'unload_dependents' parameter, expected bool_param."
                )
            dependents = param.bool_param
    await dp.unload_model(msg.model_name, dependents)
    return pb.RepositoryModelUnloadResponse()


# -- shared memory -------------------------------------------------------------------------


def system_shm_status(
    dp: DataPlane, msg: pb.SystemSharedMemoryStatusRequest
) -> pb.SystemSharedMemoryStatusResponse:
    out = pb.SystemSharedMemoryStatusResponse()
    for region in dp.shm_status("system", msg.name):
        out.regions[region["name"]].CopyFrom(
            pb.SystemSharedMemoryStatusResponse.RegionStatus(
                name=region["name"],
                key=region["key"],
                offset=region.get("offset", 0),
                byte_size=region["byte_size"],
            )
        )
    return out


def _region_name(name: str, kind: str) -> None:
    # Same refusal as HTTP's register endpoint (the core takes any name).
    if not name:
        raise InvalidArgument(f"'region name' is necessary to register {kind} shared memory region")


def system_shm_register(
    dp: DataPlane, msg: pb.SystemSharedMemoryRegisterRequest
) -> pb.SystemSharedMemoryRegisterResponse:
    _region_name(msg.name, "system")
    dp.shm_register("system", msg.name, key=msg.key, offset=msg.offset, byte_size=msg.byte_size)
    return pb.SystemSharedMemoryRegisterResponse()


def system_shm_unregister(
    dp: DataPlane, msg: pb.SystemSharedMemoryUnregisterRequest
) -> pb.SystemSharedMemoryUnregisterResponse:
    dp.shm_unregister("system", msg.name)
    return pb.SystemSharedMemoryUnregisterResponse()


def cuda_shm_status(
    dp: DataPlane, msg: pb.CudaSharedMemoryStatusRequest
) -> pb.CudaSharedMemoryStatusResponse:
    out = pb.CudaSharedMemoryStatusResponse()
    for region in dp.shm_status("cuda", msg.name):
        out.regions[region["name"]].CopyFrom(
            pb.CudaSharedMemoryStatusResponse.RegionStatus(
                name=region["name"],
                device_id=region.get("device_id", 0),
                byte_size=region["byte_size"],
            )
        )
    return out


def cuda_shm_register(
    dp: DataPlane, msg: pb.CudaSharedMemoryRegisterRequest
) -> pb.CudaSharedMemoryRegisterResponse:
    _region_name(msg.name, "cuda")
    if len(msg.raw_handle) != 64:
        raise InvalidArgument("'raw_handle' must be a valid cudaIpcMemHandle_t (64 bytes)")
    dp.shm_register(
        "cuda",
        msg.name,
        raw_handle=msg.raw_handle,
        device_id=msg.device_id,
        byte_size=msg.byte_size,
    )
    return pb.CudaSharedMemoryRegisterResponse()


def cuda_shm_unregister(
    dp: DataPlane, msg: pb.CudaSharedMemoryUnregisterRequest
) -> pb.CudaSharedMemoryUnregisterResponse:
    dp.shm_unregister("cuda", msg.name)
    return pb.CudaSharedMemoryUnregisterResponse()


# -- trace and log settings ----------------------------------------------------------------

_SINGLE_VALUED = ("trace_rate", "trace_count", "log_frequency", "trace_file", "trace_mode")


def trace_setting(dp: DataPlane, msg: pb.TraceSettingRequest) -> pb.TraceSettingResponse:
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
    out = pb.TraceSettingResponse()
    for key, value in dp.trace_setting(msg.model_name, changes).items():
        out.settings[key].value.extend(value if isinstance(value, list) else [str(value)])
    return out


def log_settings(dp: DataPlane, msg: pb.LogSettingsRequest) -> pb.LogSettingsResponse:
    if msg.settings:
        changes = {key: _log_value(value) for key, value in msg.settings.items()}
        values: Mapping[str, Any] = dp.log_settings.update(changes)
    else:
        values = dp.log_settings.to_dict()
    out = pb.LogSettingsResponse()
    for key, value in values.items():
        target = out.settings[key]
        if isinstance(value, bool):
            target.bool_param = value
        elif isinstance(value, int):
            target.uint32_param = value
        else:
            target.string_param = str(value)
    return out


def _log_value(setting: pb.LogSettingsRequest.SettingValue) -> bool | int | str | None:
    """The plain value of a setting; None when no case is set (the Python client's None)."""
    which = setting.WhichOneof("parameter_choice")
    return None if which is None else getattr(setting, which)
