"""The data plane's answers as ``grpc_service.proto`` messages (grpc.md §3, §5-§9).

Each function turns one typed result into its response message, field by
field: the result types carry the proto's names.  Every statistics
sub-message is set even when its counts are zero, as Triton sends them
(and as clients index them).
"""

from __future__ import annotations

from naiad.core.shm import CudaRegionStatus, RegionStatus, SystemRegionStatus
from naiad.core.statistics import (
    InferBatchStatistics,
    InferResponseStatistics,
    InferStatistics,
    ModelStatistics,
    StatisticDuration,
)
from naiad.engine.log_settings import LogSettingValues
from naiad.engine.metadata import ModelMetadata, ServerMetadata, TensorMetadata
from naiad.engine.repository_index import ModelIndex
from naiad.frontends.grpc import grpc_service_pb2 as pb
from naiad.tracing.settings import TraceSettingValues


def server_metadata(meta: ServerMetadata) -> pb.ServerMetadataResponse:
    return pb.ServerMetadataResponse(
        name=meta.name, version=meta.version, extensions=meta.extensions
    )


def model_metadata(meta: ModelMetadata) -> pb.ModelMetadataResponse:
    return pb.ModelMetadataResponse(
        name=meta.name,
        versions=meta.versions,
        platform=meta.platform,
        inputs=[_tensor(t) for t in meta.inputs],
        outputs=[_tensor(t) for t in meta.outputs],
    )


def _tensor(tensor: TensorMetadata) -> pb.ModelMetadataResponse.TensorMetadata:
    return pb.ModelMetadataResponse.TensorMetadata(
        name=tensor.name, datatype=tensor.datatype, shape=tensor.shape
    )


# -- statistics -------------------------------------------------------------------------


def statistics(stats: list[ModelStatistics]) -> pb.ModelStatisticsResponse:
    return pb.ModelStatisticsResponse(model_stats=[_model(s) for s in stats])


def _model(s: ModelStatistics) -> pb.ModelStatistics:
    return pb.ModelStatistics(
        name=s.name,
        version=s.version,
        last_inference=s.last_inference,
        inference_count=s.inference_count,
        execution_count=s.execution_count,
        inference_stats=_infer(s.inference_stats),
        batch_stats=[_batch(b) for b in s.batch_stats],
        memory_usage=[
            pb.MemoryUsage(type=m.type, id=m.id, byte_size=m.byte_size) for m in s.memory_usage
        ],
        response_stats={key: _response(r) for key, r in s.response_stats.items()},
    )


def _duration(d: StatisticDuration) -> pb.StatisticDuration:
    return pb.StatisticDuration(count=d.count, ns=d.ns)


def _infer(s: InferStatistics) -> pb.InferStatistics:
    return pb.InferStatistics(
        success=_duration(s.success),
        fail=_duration(s.fail),
        queue=_duration(s.queue),
        compute_input=_duration(s.compute_input),
        compute_infer=_duration(s.compute_infer),
        compute_output=_duration(s.compute_output),
        cache_hit=_duration(s.cache_hit),
        cache_miss=_duration(s.cache_miss),
    )


def _batch(b: InferBatchStatistics) -> pb.InferBatchStatistics:
    return pb.InferBatchStatistics(
        batch_size=b.batch_size,
        compute_input=_duration(b.compute_input),
        compute_infer=_duration(b.compute_infer),
        compute_output=_duration(b.compute_output),
    )


def _response(s: InferResponseStatistics) -> pb.InferResponseStatistics:
    return pb.InferResponseStatistics(
        compute_infer=_duration(s.compute_infer),
        compute_output=_duration(s.compute_output),
        success=_duration(s.success),
        fail=_duration(s.fail),
        empty_response=_duration(s.empty_response),
        cancel=_duration(s.cancel),
    )


# -- repository, shared memory, settings -------------------------------------------------


def repository_index(rows: list[ModelIndex]) -> pb.RepositoryIndexResponse:
    return pb.RepositoryIndexResponse(
        models=[
            pb.RepositoryIndexResponse.ModelIndex(
                name=row.name, version=row.version, state=row.state, reason=row.reason
            )
            for row in rows
        ]
    )


def system_shm_status(regions: list[RegionStatus]) -> pb.SystemSharedMemoryStatusResponse:
    out = pb.SystemSharedMemoryStatusResponse()
    for r in regions:
        assert isinstance(r, SystemRegionStatus)
        out.regions[r.name].CopyFrom(
            pb.SystemSharedMemoryStatusResponse.RegionStatus(
                name=r.name, key=r.key, offset=r.offset, byte_size=r.byte_size
            )
        )
    return out


def cuda_shm_status(regions: list[RegionStatus]) -> pb.CudaSharedMemoryStatusResponse:
    out = pb.CudaSharedMemoryStatusResponse()
    for r in regions:
        assert isinstance(r, CudaRegionStatus)
        out.regions[r.name].CopyFrom(
            pb.CudaSharedMemoryStatusResponse.RegionStatus(
                name=r.name, device_id=r.device_id, byte_size=r.byte_size
            )
        )
    return out


def trace_settings(values: TraceSettingValues) -> pb.TraceSettingResponse:
    out = pb.TraceSettingResponse()
    settings = out.settings
    settings["trace_level"].value.extend(values.trace_level)
    settings["trace_rate"].value.append(values.trace_rate)
    settings["trace_count"].value.append(values.trace_count)
    settings["log_frequency"].value.append(values.log_frequency)
    settings["trace_file"].value.append(values.trace_file)
    settings["trace_mode"].value.append(values.trace_mode)
    for key, value in values.opentelemetry:
        settings[key].value.append(value)
    return out


def log_settings(values: LogSettingValues) -> pb.LogSettingsResponse:
    out = pb.LogSettingsResponse()
    settings = out.settings
    settings["log_file"].string_param = values.log_file
    settings["log_info"].bool_param = values.log_info
    settings["log_warning"].bool_param = values.log_warning
    settings["log_error"].bool_param = values.log_error
    settings["log_verbose_level"].uint32_param = values.log_verbose_level
    settings["log_format"].string_param = values.log_format
    return out
