"""Request tracing: sampling, Triton's timestamps, and where finished traces go.

The core samples a request when it is admitted (``Tracer.sample``) and
finishes the trace with its final response (``Tracer.finish``); the
timestamps come from instants the core and schedulers record anyway
(arrival, queue start, queue time, the execution's compute phases), so an
untraced request costs two attribute checks.

Frontends hand W3C trace-context headers to the core as
``request.trace_context`` (a dict of lower-case header names, e.g.
``{"traceparent": ..., "tracestate": ...}``, or None).  In OpenTelemetry
mode a request with a ``traceparent`` is always traced, as in Triton.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from naiad.tracing.file import TraceFile, TraceWriter, trace_records

if TYPE_CHECKING:
    from naiad.core.stats import ModelStats
    from naiad.core.types import InferenceRequest, InferenceResponse
    from naiad.tracing.otel import OtelExporter
    from naiad.tracing.settings import TraceSettings

log = logging.getLogger("naiad")


class Trace:
    """One sampled request.  ``capture`` adds a frontend timestamp (monotonic ns)."""

    __slots__ = (
        "id",
        "model_name",
        "model_version",
        "request_id",
        "parent_id",
        "context",
        "stamps",
        "setting",
    )

    def __init__(
        self,
        trace_id: int,
        model_name: str,
        model_version: int,
        request_id: str,
        context: dict[str, str] | None,
        setting: TraceSetting,
    ) -> None:
        self.id = trace_id
        self.model_name = model_name
        self.model_version = model_version
        self.request_id = request_id
        self.parent_id = 0
        self.context = context
        self.stamps: list[tuple[str, int]] = []
        self.setting = setting

    def capture(self, name: str, ns: int) -> None:
        self.stamps.append((name, ns))


class TraceSetting:
    """The effective settings of the global scope or of one model, with its counters."""

    def __init__(
        self, values: dict[str, Any], count_owner: dict[str, Any] | None, file: TraceFile | None
    ) -> None:
        levels = set(values.get("trace_level", ["OFF"]))
        self.timestamps = "TIMESTAMPS" in levels
        self.tensors = "TENSORS" in levels
        self.rate = int(values.get("trace_rate", "1000"))
        self.count = int(values.get("trace_count", "-1"))
        self.log_frequency = int(values.get("log_frequency", "0"))
        self.mode = str(values.get("trace_mode", "triton"))
        self.file = file
        self._count_owner = count_owner
        # Sampling needs a level, a rate and (triton mode) a file; a request with a
        # propagated OpenTelemetry context is traced whenever a level is on, even at rate 0.
        self.valid = (self.timestamps or self.tensors) and (
            self.mode != "triton" or file is not None
        )
        self._sampled = 0
        self._created = 0
        self._collected = 0
        self.buffer: list[str] = []

    def take(self, forced: bool) -> bool:
        """Whether the next request is traced (every ``rate``-th, while ``count`` lasts)."""
        if not self.valid:
            return False
        if forced:
            self._created += 1
            return True
        if self.count == 0 or self.rate <= 0:
            return False
        self._sampled += 1
        if self._sampled % self.rate:
            return False
        if self.count > 0:
            self.count -= 1
            if self._count_owner is not None:
                self._count_owner["trace_count"] = str(self.count)
        self._created += 1
        return True

    def collect(self, records: list[str]) -> list[str] | None:
        """Buffer one trace's records; returns a chunk due for an indexed file."""
        if self.buffer:
            self.buffer.append(",".join(records))
        else:
            self.buffer = [",".join(records)]
        self._collected += 1
        full = self.log_frequency and len(self.buffer) >= self.log_frequency
        done = self.count == 0 and self._collected == self._created
        if full or done:
            chunk, self.buffer = self.buffer, []
            return chunk
        return None


class Tracer:
    """Samples and finishes traces by one server's :class:`TraceSettings`."""

    def __init__(self, settings: TraceSettings, *, otel_exporter: Any = None) -> None:
        self.settings = settings
        self._generation = -1
        self._global: TraceSetting | None = None
        self._models: dict[str, TraceSetting] = {}
        self._enabled = False
        self._next_id = 1
        self._writer = TraceWriter()
        self._otel: OtelExporter | None = None
        self._otel_exporter = otel_exporter
        self._otel_failed = False

    # -- settings -------------------------------------------------------------

    def _refresh(self) -> None:
        """Re-read the settings after an update (counters restart, as in Triton)."""
        self._flush_all()
        settings = self.settings
        self._generation = settings.generation
        self._global = self._setting(settings.values, settings.values)
        self._models = {}
        for model, override in settings.models.items():
            if override:
                owner = override if "trace_count" in override else None
                self._models[model] = self._setting(settings.get(model), owner)
        self._enabled = self._global.valid or any(s.valid for s in self._models.values())

    def _setting(self, values: dict[str, Any], owner: dict[str, Any] | None) -> TraceSetting:
        path = str(values.get("trace_file", ""))
        file = self._writer.file(path) if path else None
        return TraceSetting(values, owner, file)

    # -- the hot path -------------------------------------------------------------

    def sample(self, request: InferenceRequest, model_version: int) -> Trace | None:
        """A trace for ``request`` if it is sampled, else None (cheap when tracing is off)."""
        if self.settings.generation != self._generation:
            self._refresh()
        if not self._enabled:
            return None
        setting = self._models.get(request.model_name, self._global)
        assert setting is not None
        context = request.trace_context
        forced = (
            context is not None and "traceparent" in context and setting.mode == "opentelemetry"
        )
        if not setting.take(forced):
            return None
        trace = Trace(
            self._next_id, request.model_name, model_version, request.id, context, setting
        )
        self._next_id += 1
        return trace

    def finish(
        self,
        trace: Trace,
        request: InferenceRequest,
        response: InferenceResponse,
        stats: ModelStats,
        end_ns: int,
    ) -> None:
        """Record the request's timestamps and hand the trace to its file or exporter."""
        setting = trace.setting
        stamps = trace.stamps
        stamps.append(("REQUEST_START", request.arrival_ns))
        stamps.append(("QUEUE_START", request.queue_start_ns))
        if request.queue_ns:  # it executed: the scheduler's compute phases
            start = request.queue_start_ns + request.queue_ns
            input_ns, infer_ns, output_ns = stats.last_compute
            stamps.append(("COMPUTE_START", start))
            stamps.append(("COMPUTE_INPUT_END", start + input_ns))
            stamps.append(("COMPUTE_OUTPUT_START", start + input_ns + infer_ns))
            stamps.append(("COMPUTE_END", start + input_ns + infer_ns + output_ns))
        stamps.append(("REQUEST_END", end_ns))
        stamps.sort(key=lambda s: s[1])
        if setting.mode == "opentelemetry":
            self._export_otel(trace)
            return
        if setting.file is None:
            return
        tensors: list[tuple[str, str, Any, str]] = []
        if setting.tensors:
            tensors = [
                ("TENSOR_QUEUE_INPUT", t.name, t.data, t.datatype.name) for t in request.inputs
            ]
            tensors += [
                ("TENSOR_BACKEND_OUTPUT", t.name, t.data, t.datatype.name) for t in response.outputs
            ]
        records = trace_records(
            trace.id,
            trace.model_name,
            trace.model_version,
            trace.request_id,
            trace.parent_id,
            stamps if setting.timestamps else [],
            tensors,
        )
        chunk = setting.collect(records)
        if chunk is not None:
            self._writer.submit(setting.file, chunk, indexed=True)

    def _export_otel(self, trace: Trace) -> None:
        if self._otel is None:
            if self._otel_failed:
                return
            try:
                from naiad.tracing.otel import OtelExporter

                self._otel = OtelExporter(self.settings.opentelemetry, self._otel_exporter)
            except ImportError as exc:
                self._otel_failed = True
                log.error("OpenTelemetry tracing needs naiad[otel]: %s", exc)
                return
        self._otel.export(
            trace.id,
            trace.model_name,
            trace.model_version,
            trace.request_id,
            trace.stamps,
            trace.context,
        )

    # -- shutdown --------------------------------------------------------------------

    def _flush_all(self) -> None:
        for setting in [self._global, *self._models.values()]:
            if setting is not None and setting.buffer and setting.file is not None:
                chunk, setting.buffer = setting.buffer, []
                self._writer.submit(setting.file, chunk, indexed=setting.log_frequency != 0)

    async def close(self) -> None:
        """Write what is buffered, close the files, flush OpenTelemetry."""
        self._flush_all()
        await asyncio.to_thread(self._writer.close)
        if self._otel is not None:
            otel, self._otel = self._otel, None
            await asyncio.to_thread(otel.close)
