"""OpenTelemetry export of sampled requests (the ``naiad[otel]`` extra).

Spans follow Triton's: a root ``InferRequest`` span (a child of the
client's span when the request carried a W3C ``traceparent``), a span named
after the model with the REQUEST_START / QUEUE_START / REQUEST_END events,
and a ``compute`` span with the COMPUTE_* events.  Timestamps are the same
monotonic instants as the trace file's, moved onto the wall clock.
Export runs on the SDK's batch span processor thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

log = logging.getLogger("naiad")

DEFAULT_URL = "http://localhost:4318/v1/traces"


def _resource_attributes(config: Mapping[str, str]) -> dict[str, str]:
    attributes = {"service.name": "triton-inference-server"}
    for item in config.get("resource", "").split(","):
        key, eq, value = item.partition("=")
        if eq and key.strip():
            attributes[key.strip()] = value.strip()
    return attributes


class OtelExporter:
    """Turns finished traces into spans; ``exporter`` overrides OTLP/HTTP (tests)."""

    def __init__(self, config: Mapping[str, str], exporter: Any = None) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        if exporter is None:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            url = config.get("url", DEFAULT_URL)
            exporter = OTLPSpanExporter(endpoint=url if "://" in url else "http://" + url)
        self._provider = TracerProvider(resource=Resource.create(_resource_attributes(config)))
        self._provider.add_span_processor(
            BatchSpanProcessor(
                exporter,
                max_queue_size=int(config.get("bsp_max_queue_size", 2048)),
                schedule_delay_millis=float(config.get("bsp_schedule_delay", 5000)),
                max_export_batch_size=int(config.get("bsp_max_export_batch_size", 512)),
            )
        )
        self._tracer = self._provider.get_tracer("triton-server")
        self._propagator = TraceContextTextMapPropagator()
        self._offset = time.time_ns() - time.monotonic_ns()

    def export(
        self,
        trace_id: int,
        model_name: str,
        model_version: int,
        request_id: str,
        stamps: Sequence[tuple[str, int]],
        context: Mapping[str, str] | None,
    ) -> None:
        """Emit the spans of one trace (``stamps`` are monotonic ns, in time order)."""
        from opentelemetry.trace import SpanKind, set_span_in_context

        if not stamps:
            return
        wall = {name: ns + self._offset for name, ns in stamps}
        first, last = stamps[0][1] + self._offset, stamps[-1][1] + self._offset
        parent = self._propagator.extract(carrier=dict(context)) if context else None
        root = self._tracer.start_span(
            "InferRequest", context=parent, kind=SpanKind.SERVER, start_time=first
        )
        start = wall.get("REQUEST_START", first)
        request_span = self._tracer.start_span(
            model_name, context=set_span_in_context(root), kind=SpanKind.SERVER, start_time=start
        )
        request_span.set_attribute("triton.model_name", model_name)
        request_span.set_attribute("triton.model_version", model_version)
        request_span.set_attribute("triton.trace_id", trace_id)
        request_span.set_attribute("triton.trace_parent_id", 0)
        if request_id:
            request_span.set_attribute("triton.request_id", request_id)
        compute = None
        for name, _ in stamps:
            ns = wall[name]
            if name == "COMPUTE_START":
                compute = self._tracer.start_span(
                    "compute",
                    context=set_span_in_context(request_span),
                    kind=SpanKind.SERVER,
                    start_time=ns,
                )
            if name.startswith("COMPUTE_") and compute is not None:
                compute.add_event(name, timestamp=ns)
                if name == "COMPUTE_END":
                    compute.end(end_time=ns)
                    compute = None
            elif name in ("REQUEST_START", "QUEUE_START", "REQUEST_END"):
                request_span.add_event(name, timestamp=ns)
            else:
                root.add_event(name, timestamp=ns)
        if compute is not None:
            compute.end(end_time=last)
        request_span.end(end_time=wall.get("REQUEST_END", last))
        root.end(end_time=last)

    def close(self) -> None:
        """Flush and stop the span processor (blocking)."""
        self._provider.shutdown()
