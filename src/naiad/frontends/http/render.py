"""The data plane's answers as Triton's JSON documents (rest.md §3, §6-§9, §11-§12).

Each function turns one typed result into the plain dicts and lists that
``dumps`` writes, with Triton's keys in Triton's order: clients and tests
compare bodies, and the runner's embedded mode hands out these same
documents, as ``tritonclient.http`` would.
"""

from __future__ import annotations

from typing import Any

from naiad.core.shm import RegionStatus, SystemRegionStatus
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
from naiad.tracing.settings import TraceSettingValues

Json = dict[str, Any]


def server_metadata(meta: ServerMetadata) -> Json:
    return {"name": meta.name, "version": meta.version, "extensions": list(meta.extensions)}


def model_metadata(meta: ModelMetadata) -> Json:
    return {
        "name": meta.name,
        "versions": list(meta.versions),
        "platform": meta.platform,
        "inputs": [_tensor(t) for t in meta.inputs],
        "outputs": [_tensor(t) for t in meta.outputs],
    }


def _tensor(tensor: TensorMetadata) -> Json:
    return {"name": tensor.name, "datatype": tensor.datatype, "shape": list(tensor.shape)}


# -- statistics -------------------------------------------------------------------------


def statistics(stats: list[ModelStatistics]) -> Json:
    return {"model_stats": [model_statistics(s) for s in stats]}


def model_statistics(stats: ModelStatistics) -> Json:
    return {
        "name": stats.name,
        "version": stats.version,
        "last_inference": stats.last_inference,
        "inference_count": stats.inference_count,
        "execution_count": stats.execution_count,
        "inference_stats": _infer(stats.inference_stats),
        "response_stats": {key: _response(r) for key, r in stats.response_stats.items()},
        "batch_stats": [_batch(b) for b in stats.batch_stats],
        "memory_usage": [
            {"type": m.type, "id": m.id, "byte_size": m.byte_size} for m in stats.memory_usage
        ],
    }


def _duration(d: StatisticDuration) -> Json:
    return {"count": d.count, "ns": d.ns}


def _infer(s: InferStatistics) -> Json:
    return {
        "success": _duration(s.success),
        "fail": _duration(s.fail),
        "queue": _duration(s.queue),
        "compute_input": _duration(s.compute_input),
        "compute_infer": _duration(s.compute_infer),
        "compute_output": _duration(s.compute_output),
        "cache_hit": _duration(s.cache_hit),
        "cache_miss": _duration(s.cache_miss),
    }


def _response(s: InferResponseStatistics) -> Json:
    return {
        "compute_infer": _duration(s.compute_infer),
        "compute_output": _duration(s.compute_output),
        "success": _duration(s.success),
        "fail": _duration(s.fail),
        "empty_response": _duration(s.empty_response),
        "cancel": _duration(s.cancel),
    }


def _batch(b: InferBatchStatistics) -> Json:
    return {
        "batch_size": b.batch_size,
        "compute_input": _duration(b.compute_input),
        "compute_infer": _duration(b.compute_infer),
        "compute_output": _duration(b.compute_output),
    }


# -- repository, shared memory, settings -------------------------------------------------


def repository_index(rows: list[ModelIndex]) -> list[Json]:
    """Rows without the fields they do not have (rest.md §8.1)."""
    out: list[Json] = []
    for row in rows:
        item: Json = {"name": row.name}
        if row.version:
            item["version"] = row.version
        if row.state:
            item["state"] = row.state
        if row.reason:
            item["reason"] = row.reason
        out.append(item)
    return out


def shm_status(regions: list[RegionStatus]) -> list[Json]:
    return [_region(r) for r in regions]


def _region(r: RegionStatus) -> Json:
    if isinstance(r, SystemRegionStatus):
        return {"name": r.name, "key": r.key, "offset": r.offset, "byte_size": r.byte_size}
    return {"name": r.name, "device_id": r.device_id, "byte_size": r.byte_size}


def trace_settings(values: TraceSettingValues) -> Json:
    out: Json = {
        "trace_level": list(values.trace_level),
        "trace_rate": values.trace_rate,
        "trace_count": values.trace_count,
        "log_frequency": values.log_frequency,
        "trace_file": values.trace_file,
        "trace_mode": values.trace_mode,
    }
    out.update(values.opentelemetry)
    return out


def log_settings(values: LogSettingValues) -> Json:
    return {
        "log_file": values.log_file,
        "log_info": values.log_info,
        "log_warning": values.log_warning,
        "log_error": values.log_error,
        "log_verbose_level": values.log_verbose_level,
        "log_format": values.log_format,
    }
