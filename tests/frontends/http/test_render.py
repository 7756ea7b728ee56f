"""The data plane's results as Triton's JSON documents, keys in Triton's order."""

from __future__ import annotations

import pytest

from naiad.core.shm import CudaRegionStatus, SystemRegionStatus
from naiad.core.stats import ModelStats
from naiad.engine.log_settings import LogSettings
from naiad.engine.metadata import ModelMetadata, ServerMetadata, TensorMetadata
from naiad.engine.repository_index import ModelIndex
from naiad.frontends.http import render
from naiad.frontends.http.encode import dumps
from naiad.tracing.settings import TraceSettings

pytestmark = pytest.mark.unit


def test_metadata() -> None:
    server = ServerMetadata("triton", "2.51.0", ("sequence", "statistics"))
    assert dumps(render.server_metadata(server)) == (
        b'{"name":"triton","version":"2.51.0","extensions":["sequence","statistics"]}'
    )
    model = ModelMetadata(
        "m", ("1", "2"), "onnxruntime_onnx",
        (TensorMetadata("IN", "FP32", (-1, 16)),), (TensorMetadata("OUT", "INT64", (3,)),),
    )  # fmt: skip
    assert dumps(render.model_metadata(model)) == (
        b'{"name":"m","versions":["1","2"],"platform":"onnxruntime_onnx",'
        b'"inputs":[{"name":"IN","datatype":"FP32","shape":[-1,16]}],'
        b'"outputs":[{"name":"OUT","datatype":"INT64","shape":[3]}]}'
    )


def test_statistics_have_every_field() -> None:
    stats = ModelStats()
    stats.record_execution(2, 1, 10, 20, 30)
    stats.record_response(0, 5, 6, ok=True, empty=False)
    doc = render.statistics([stats.snapshot("m", 1)])
    [model] = doc["model_stats"]
    assert list(model) == [
        "name", "version", "last_inference", "inference_count", "execution_count",
        "inference_stats", "response_stats", "batch_stats", "memory_usage",
    ]  # fmt: skip
    assert list(model["inference_stats"]) == [
        "success", "fail", "queue", "compute_input", "compute_infer", "compute_output",
        "cache_hit", "cache_miss",
    ]  # fmt: skip
    assert model["inference_stats"]["compute_infer"] == {"count": 1, "ns": 20}
    assert model["batch_stats"] == [
        {"batch_size": 2, "compute_input": {"count": 1, "ns": 10},
         "compute_infer": {"count": 1, "ns": 20}, "compute_output": {"count": 1, "ns": 30}}
    ]  # fmt: skip
    assert list(model["response_stats"]["0"]) == [
        "compute_infer", "compute_output", "success", "fail", "empty_response", "cancel",
    ]  # fmt: skip
    assert model["memory_usage"] == []


def test_index_rows_leave_out_what_they_do_not_have() -> None:
    rows = [ModelIndex("a", "1", "READY"), ModelIndex("b"),
            ModelIndex("c", state="UNAVAILABLE", reason="broken")]  # fmt: skip
    assert render.repository_index(rows) == [
        {"name": "a", "version": "1", "state": "READY"},
        {"name": "b"},
        {"name": "c", "state": "UNAVAILABLE", "reason": "broken"},
    ]


def test_shared_memory_status_by_kind() -> None:
    regions = [SystemRegionStatus("s", "/k", 8, 64), CudaRegionStatus("g", 1, 32)]
    assert render.shm_status(regions) == [
        {"name": "s", "key": "/k", "offset": 8, "byte_size": 64},
        {"name": "g", "device_id": 1, "byte_size": 32},
    ]


def test_settings() -> None:
    trace = TraceSettings()
    trace.values["trace_mode"] = "opentelemetry"
    trace.opentelemetry = {"url": "http://collector"}
    assert render.trace_settings(trace.snapshot()) == {
        "trace_level": ["OFF"], "trace_rate": "1000", "trace_count": "-1",
        "log_frequency": "0", "trace_file": "", "trace_mode": "opentelemetry",
        "url": "http://collector",
    }  # fmt: skip
    assert render.log_settings(LogSettings(log_verbose_level=2).snapshot()) == {
        "log_file": "", "log_info": True, "log_warning": True, "log_error": True,
        "log_verbose_level": 2, "log_format": "default",
    }  # fmt: skip
