"""The data plane's results as gRPC messages: what the JSON documents say, field by field."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from naiad.core.shm import CudaRegionStatus, SystemRegionStatus
from naiad.core.stats import ModelStats
from naiad.engine.log_settings import LogSettings
from naiad.engine.metadata import ModelMetadata, ServerMetadata, TensorMetadata
from naiad.engine.repository_index import ModelIndex
from naiad.frontends.grpc import grpc_service_pb2 as pb
from naiad.frontends.grpc import render
from naiad.frontends.http import render as json_render
from naiad.tracing.settings import TraceSettings

pytestmark = pytest.mark.unit


def same(message: Message, doc: Any) -> None:
    """``message`` is what the JSON document parses to, byte for byte."""
    expected = json_format.ParseDict(doc, type(message)(), ignore_unknown_fields=True)
    wire = message.SerializeToString(deterministic=True)
    assert wire == expected.SerializeToString(deterministic=True)


def test_metadata() -> None:
    server = ServerMetadata("triton", "2.51.0", ("sequence",))
    same(render.server_metadata(server), json_render.server_metadata(server))
    model = ModelMetadata("m", ("1",), "python", (TensorMetadata("IN", "FP32", (-1, 4)),), ())
    same(render.model_metadata(model), json_render.model_metadata(model))


def test_statistics_keep_zero_counts_as_messages() -> None:
    stats = ModelStats()
    stats.record_execution(2, 1, 10, 20, 30)
    stats.record_response(0, 5, 6, ok=False, empty=False)
    snapshots = [stats.snapshot("m", 1), ModelStats().snapshot("n", 2)]
    message = render.statistics(snapshots)
    same(message, json_render.statistics(snapshots))
    untouched = message.model_stats[1].inference_stats
    assert untouched.HasField("cache_hit") and untouched.cache_hit.count == 0


def test_repository_index() -> None:
    rows = [ModelIndex("a", "1", "READY"), ModelIndex("b"), ModelIndex("c", "", "UNAVAILABLE", "x")]
    same(render.repository_index(rows), {"models": json_render.repository_index(rows)})


def test_shared_memory_status() -> None:
    system = [SystemRegionStatus("s", "/k", 8, 64)]
    cuda = [CudaRegionStatus("g", 1, 32)]
    expected = pb.SystemSharedMemoryStatusResponse()
    expected.regions["s"].CopyFrom(
        pb.SystemSharedMemoryStatusResponse.RegionStatus(name="s", key="/k", offset=8, byte_size=64)
    )
    assert render.system_shm_status(system) == expected
    assert render.cuda_shm_status(cuda).regions["g"].device_id == 1


def test_settings() -> None:
    trace = render.trace_settings(TraceSettings().snapshot())
    assert list(trace.settings["trace_level"].value) == ["OFF"]
    assert list(trace.settings["trace_file"].value) == [""]
    log = render.log_settings(LogSettings(log_info=False, log_verbose_level=3).snapshot())
    assert log.settings["log_info"].WhichOneof("parameter_choice") == "bool_param"
    assert not log.settings["log_info"].bool_param
    assert log.settings["log_verbose_level"].uint32_param == 3
    assert log.settings["log_format"].string_param == "default"
