"""Request tracing: Triton's trace file records, sampling rules, OpenTelemetry spans."""

from __future__ import annotations

import asyncio
import json
import time
from types import SimpleNamespace

import numpy as np
import pytest
from metrics.helpers import add_simple, simple_inputs

from naiad.core.stats import ModelStats
from naiad.tracing.settings import TraceSettings
from naiad.tracing.tracer import Tracer

pytestmark = pytest.mark.protocol

ACTIVITIES = [
    "REQUEST_START",
    "QUEUE_START",
    "COMPUTE_START",
    "COMPUTE_INPUT_END",
    "COMPUTE_OUTPUT_START",
    "COMPUTE_END",
    "REQUEST_END",
]


def _traced_server(repo, serve, path, **general: str):
    add_simple(repo)
    config = {"": {"level": "TIMESTAMPS", "rate": "1", **general}, "triton": {"file": str(path)}}
    if "log-frequency" in general:
        config["triton"]["log-frequency"] = config[""].pop("log-frequency")
    return serve(repo, trace_config=config)


def _traces(records: list[dict]) -> dict[int, dict]:
    """Group a trace file's records by trace id: header fields plus timestamps in order."""
    out: dict[int, dict] = {}
    for record in records:
        trace = out.setdefault(record["id"], {"timestamps": [], "tensors": []})
        if "model_name" in record:
            trace.update(record)
        for stamp in record.get("timestamps", []):
            trace["timestamps"].append((stamp["name"], stamp["ns"]))
        if "tensor" in record:
            trace["tensors"].append((record["activity"], record["tensor"]))
    return out


def test_trace_file_has_tritons_records_for_every_sampled_request(repo, serve, tmp_path):
    path = tmp_path / "trace.json"
    server = _traced_server(repo, serve, path)
    for i in range(3):
        server.infer("simple", simple_inputs(), request_id=f"r{i}")
    server.stop()
    raw = path.read_text()
    assert raw.startswith('[{"id":1,"model_name":"simple","model_version":1,"request_id":"r0"}')
    traces = _traces(json.loads(raw))
    assert sorted(traces) == [1, 2, 3]
    for trace_id, trace in traces.items():
        assert trace["model_name"] == "simple"
        assert trace["request_id"] == f"r{trace_id - 1}"
        names = [name for name, _ in trace["timestamps"]]
        assert names == ACTIVITIES
        stamps = [ns for _, ns in trace["timestamps"]]
        assert stamps == sorted(stamps)
        assert all(isinstance(ns, int) and ns > 0 for ns in stamps)


def test_rate_samples_every_nth_request(repo, serve, tmp_path):
    path = tmp_path / "trace.json"
    server = _traced_server(repo, serve, path, rate="2")
    for i in range(5):
        server.infer("simple", simple_inputs(), request_id=str(i))
    server.stop()
    traces = _traces(json.loads(path.read_text()))
    assert [t["request_id"] for t in traces.values()] == ["1", "3"]


def test_log_frequency_writes_indexed_files(repo, serve, tmp_path):
    path = tmp_path / "trace.json"
    server = _traced_server(repo, serve, path, **{"log-frequency": "2"})
    for _ in range(5):
        server.infer("simple", simple_inputs())
    server.stop()
    first = json.loads((tmp_path / "trace.json.0").read_text())
    second = json.loads((tmp_path / "trace.json.1").read_text())
    rest = json.loads((tmp_path / "trace.json.2").read_text())  # the remainder, at shutdown
    assert sorted(_traces(first)) == [1, 2]
    assert sorted(_traces(second)) == [3, 4]
    assert sorted(_traces(rest)) == [5]
    assert not path.exists()


def test_count_limits_the_traces_and_counts_down(repo, serve, tmp_path):
    path = tmp_path / "trace.json"
    server = _traced_server(repo, serve, path, count="2")
    for _ in range(4):
        server.infer("simple", simple_inputs())
    assert server.dataplane.trace_settings.get()["trace_count"] == "0"
    server.stop()
    assert sorted(_traces(json.loads((tmp_path / "trace.json.0").read_text()))) == [1, 2]


def test_tensors_level_records_inputs_and_outputs(repo, serve, tmp_path):
    path = tmp_path / "trace.json"
    server = _traced_server(repo, serve, path, level="TIMESTAMPS,TENSORS")
    data = np.arange(16, dtype=np.float32).reshape(1, 16)
    server.infer("simple", {"INPUT0": data, "INPUT1": data})
    server.stop()
    trace = _traces(json.loads(path.read_text()))[1]
    by_name = {(activity, t["name"]): t for activity, t in trace["tensors"]}
    queued = by_name[("TENSOR_QUEUE_INPUT", "INPUT0")]
    assert queued["dtype"] == "FP32" and queued["shape"] == "1,16"
    assert queued["data"].split(",")[:3] == ["0", "1", "2"]
    out = by_name[("TENSOR_BACKEND_OUTPUT", "OUTPUT0")]
    assert out["data"].split(",")[:3] == ["0", "2", "4"]


def test_settings_updated_at_run_time_take_effect(repo, serve, tmp_path):
    path = tmp_path / "trace.json"
    add_simple(repo)
    server = serve(repo, trace_config={"triton": {"file": str(path)}})
    server.infer("simple", simple_inputs())  # tracing is OFF
    server.dataplane.trace_settings.update({"trace_level": ["TIMESTAMPS"], "trace_rate": "1"})
    server.infer("simple", simple_inputs(), request_id="after")
    server.stop()
    traces = _traces(json.loads(path.read_text()))
    assert [t["request_id"] for t in traces.values()] == ["after"]


def _request(context=None) -> SimpleNamespace:
    now = time.monotonic_ns()
    return SimpleNamespace(
        model_name="m",
        id="req",
        trace_context=context,
        arrival_ns=now,
        queue_start_ns=now + 1000,
        queue_ns=5000,
        inputs=[],
    )


def test_opentelemetry_spans_with_propagated_context():
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    settings = TraceSettings()
    settings.update(
        {"trace_level": ["TIMESTAMPS"], "trace_mode": "opentelemetry", "trace_rate": "0"}
    )
    tracer = Tracer(settings, otel_exporter=exporter)
    stats = ModelStats()
    stats.last_compute = (100, 2000, 300)
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    assert tracer.sample(_request(), 1) is None  # rate 0: only propagated contexts
    request = _request({"traceparent": parent})
    trace = tracer.sample(request, 1)  # a propagated context is always traced
    assert trace is not None
    tracer.finish(trace, request, SimpleNamespace(outputs=[]), stats, time.monotonic_ns() + 10**6)
    asyncio.run(tracer.close())
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert set(spans) == {"InferRequest", "m", "compute"}
    root, model, compute = spans["InferRequest"], spans["m"], spans["compute"]
    assert format(root.context.trace_id, "032x") == "0af7651916cd43dd8448eb211c80319c"
    assert format(root.parent.span_id, "016x") == "b7ad6b7169203331"
    assert model.parent.span_id == root.context.span_id
    assert compute.parent.span_id == model.context.span_id
    assert [e.name for e in model.events] == ["REQUEST_START", "QUEUE_START", "REQUEST_END"]
    assert [e.name for e in compute.events] == ACTIVITIES[2:6]
    assert model.attributes["triton.model_name"] == "m"
    assert model.attributes["triton.model_version"] == 1
    assert compute.end_time - compute.start_time == 2400


def test_untraced_requests_cost_nothing_when_tracing_is_off():
    tracer = Tracer(TraceSettings())
    assert tracer.sample(_request({"traceparent": "x"}), 1) is None
    assert not tracer._enabled
