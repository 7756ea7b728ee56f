"""The protocol-neutral data plane: every operation the frontends offer.

HTTP, gRPC and the embedded API decode their input, call one method here and
encode the result; no operation is implemented twice.  Results are core
values or plain dicts in the REST shape (which the gRPC frontend converts).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

from naiad._version import TRITON_VERSION
from naiad.backends.registry import BackendRegistry
from naiad.config import config_from_json
from naiad.core.errors import InvalidArgument, NaiadError, Unavailable, Unsupported
from naiad.core.outputs import finish_response
from naiad.core.shm import SharedMemoryManager
from naiad.core.stats import OTHER, failure_reason
from naiad.core.types import InferenceRequest, InferenceResponse
from naiad.core.validation import validate_request
from naiad.engine.cache import cache_from_config, uses_cache
from naiad.engine.loader import ModelLoader
from naiad.engine.model_control import ModelControl
from naiad.engine.registry import ModelRegistry, ModelState, ModelVersion, parse_version
from naiad.engine.settings import LogSettings, TraceSettings
from naiad.engine.tracing import Tracer
from naiad.metrics import MetricsConfig, MetricsRegistry, ModelMetrics, SystemMetrics

if TYPE_CHECKING:
    from naiad.config import ModelConfig
    from naiad.engine.options import ServerOptions

log = logging.getLogger("naiad")

EXTENSIONS = (
    "classification",
    "sequence",
    "model_repository",
    "model_repository(unload_dependents)",
    "schedule_policy",
    "model_configuration",
    "system_shared_memory",
    "cuda_shared_memory",
    "binary_tensor_data",
    "parameters",
    "statistics",
    "trace",
    "logging",
)


class DataPlane:
    """One per server: owns the registry, the loader and the settings."""

    def __init__(self, options: ServerOptions, backends: BackendRegistry | None = None) -> None:
        self.options = options
        self.registry = ModelRegistry()
        self.backends = backends or BackendRegistry()
        self.loader = ModelLoader(self.registry, self.backends, options, services=self)
        self.log_settings = LogSettings.from_options(options)
        self.trace_settings = TraceSettings.from_options(options)
        self.tracer = Tracer(self.trace_settings)
        # The server's own metrics registry (custom families: ``metrics.family``).
        self.metrics = MetricsRegistry(MetricsConfig.parse(options.metrics_config))
        self.model_metrics = ModelMetrics(self.registry, self.metrics.config)
        self.system_metrics = SystemMetrics(
            cpu_metrics=options.allow_cpu_metrics,
            gpu_metrics=options.allow_gpu_metrics,
            interval_ms=options.metrics_interval_ms,
            gpus=options.gpus,
        )
        if options.allow_metrics:
            self.metrics.add_collector(self.model_metrics)
            self.metrics.add_collector(self.system_metrics)
        self._per_request_metrics = options.allow_metrics and self.metrics.config.per_request
        self.started = False
        self.stopping = False
        self.event_loop: asyncio.AbstractEventLoop | None = None
        # Start-up loading, explicit load/unload, polling and the repository index.
        self.control = ModelControl(self.registry, self.loader, options)
        self.cache = cache_from_config(options.cache_config)
        self.shm = SharedMemoryManager(allow_client=options.allow_client_shm)

    # -- lifecycle -----------------------------------------------------------

    async def start(self) -> None:
        """Load the start-up models as the model control mode says."""
        # Cached: asyncio.get_running_loop() costs a getpid() system call.
        self.event_loop = asyncio.get_running_loop()
        if self.options.allow_metrics:
            await self.system_metrics.start()
        await self.control.start()
        self.started = True

    async def stop(self, timeout: float | None = None) -> None:
        """Drain in-flight requests (up to ``timeout`` seconds), then unload everything."""
        self.stopping = True
        await self.control.stop_polling()
        drains = [
            asyncio.ensure_future(mv.scheduler.drain())
            for mv in self._versions()
            if mv.scheduler is not None
        ]
        if drains:
            await asyncio.sleep(0)  # idle schedulers are drained at once, even with timeout 0
            _, pending = await asyncio.wait(drains, timeout=timeout)
            if pending:
                log.warning("exit timeout expired with requests still in flight")
                for drain in pending:
                    drain.cancel()
        await self.control.close()  # unloads every model
        self.shm.close()
        await self.system_metrics.close()
        await self.tracer.close()

    def _versions(self) -> list[ModelVersion]:
        return [mv for e in self.registry.models.values() for mv in e.versions.values()]

    def failed_models(self) -> list[tuple[str, str]]:
        """(name, reason) of every model or version that failed to load."""
        failed: list[tuple[str, str]] = []
        for name, paths in self.control.catalog.duplicates.items():
            failed.append((name, "model appears in multiple repositories: " + ", ".join(paths)))
        failed.extend(self.control.startup_failures)
        for entry in self.registry.models.values():
            if entry.state is ModelState.UNAVAILABLE:
                failed.append((entry.name, entry.reason))
            for mv in entry.versions.values():
                if mv.state is ModelState.UNAVAILABLE and mv.reason != "unloaded":
                    failed.append((f"{entry.name} version {mv.version}", mv.reason))
        return failed

    # -- health and metadata ----------------------------------------------------

    def is_live(self) -> bool:
        return not self.stopping

    def is_ready(self) -> bool:
        if not self.started or self.stopping:
            return False
        if self.options.strict_readiness:
            return not self.failed_models()
        return True

    def server_metadata(self) -> dict[str, Any]:
        return {
            "name": self.options.server_id,
            "version": TRITON_VERSION,
            "extensions": list(EXTENSIONS),
        }

    def model_ready(self, name: str, version: str = "") -> bool:
        """Whether that version is READY; raises for unknown models and versions."""
        v = parse_version(version)
        entry = self.registry.entry(name)
        if entry is None:
            self.registry.get(name, v)  # raises NotFound
        assert entry is not None
        if v is None:
            ready = entry.ready_versions()
            if not ready:
                return False
            mv: ModelVersion | None = ready[-1]  # the version requests would reach
        else:
            mv = entry.versions.get(v)
            if mv is None:
                self.registry.get(name, v)  # raises NotFound
        assert mv is not None
        return mv.ready and all(i.is_ready() for i in mv.instances)

    def model_metadata(self, name: str, version: str = "") -> dict[str, Any]:
        v = parse_version(version)
        mv = self.registry.get(name, v)
        cached = mv.extra.get("metadata")
        if cached is None:
            sig = mv.signature
            assert sig is not None
            cached = mv.extra["metadata"] = {
                "platform": sig.platform,
                "inputs": [
                    {
                        "name": s.name,
                        "datatype": s.datatype.name,
                        "shape": s.metadata_shape(sig.max_batch_size),
                    }
                    for s in sig.inputs.values()
                ],
                "outputs": [
                    {
                        "name": s.name,
                        "datatype": s.datatype.name,
                        "shape": s.metadata_shape(sig.max_batch_size),
                    }
                    for s in sig.outputs.values()
                ],
            }
        if v is None:
            versions = [str(x.version) for x in self.registry.models[name].ready_versions()]
        else:
            versions = [str(v)]
        return {"name": name, "versions": versions, **cached}

    def model_config(self, name: str, version: str = "") -> ModelConfig:
        mv = self.registry.get(name, parse_version(version))
        assert mv.config is not None
        return mv.config

    # -- inference ---------------------------------------------------------------

    def _admit(self, request: InferenceRequest) -> ModelVersion:
        if self.stopping:
            raise Unavailable("Server is stopping and not accepting new requests")
        mv = self.registry.get(request.model_name, request.model_version)
        assert mv.signature is not None
        request.arrival_ns = time.monotonic_ns()
        validate_request(request, request.model_name, mv.signature, self.shm.read)
        return mv

    async def infer(
        self, request: InferenceRequest, *, endpoint: str = "This endpoint"
    ) -> InferenceResponse:
        """Run a request of a non-decoupled model; errors are raised as NaiadError.

        ``endpoint`` names the caller in the error for decoupled models, as
        Triton's frontends word it ("HTTP end point", "ModelInfer RPC").
        """
        mv = self._admit(request)
        assert mv.signature is not None
        if mv.signature.decoupled:
            raise Unsupported(
                f"{endpoint} doesn't support models with decoupled transaction policy"
            )
        loop = self.event_loop or asyncio.get_running_loop()
        future: asyncio.Future[InferenceResponse] = loop.create_future()
        request.response_sink = self._completion(request, mv, _resolver(future))
        self._enqueue(mv, request)
        try:
            response = await future
        except asyncio.CancelledError:
            # The caller went away (client disconnect, deadline): work that has
            # not started is dropped by the scheduler.
            request.cancelled = True
            raise
        # The sink holds the request: a cycle only the garbage collector would free.
        request.response_sink = None
        if response.error is not None:
            raise response.error
        return response

    def is_decoupled(self, name: str, version: str = "") -> bool:
        """Whether requests to that model may get several responses (raises if unknown)."""
        signature = self.registry.get(name, parse_version(version)).signature
        return signature is not None and signature.decoupled

    async def infer_stream(
        self, request: InferenceRequest
    ) -> AsyncGenerator[InferenceResponse, None]:
        """Every response of a request (several for decoupled models), errors included.

        Validation errors are raised before the first response.
        """
        mv = self._admit(request)
        queue: asyncio.Queue[InferenceResponse] = asyncio.Queue()
        request.response_sink = self._completion(request, mv, queue.put_nowait)
        self._enqueue(mv, request)
        try:
            while True:
                response = await queue.get()
                if response.final:
                    request.response_sink = None  # a cycle through the request, as in infer
                    yield response
                    return
                yield response
        finally:
            request.cancelled = True

    def _enqueue(self, mv: ModelVersion, request: InferenceRequest) -> None:
        scheduler = mv.scheduler
        if scheduler is None:
            raise Unavailable(f"model '{mv.name}' version {mv.version} has no scheduler")
        request.queue_start_ns = time.monotonic_ns()
        if scheduler.admission is not None:
            scheduler.admission.enter(request)  # UNAVAILABLE at once when full
        # Pending until a scheduler starts it (record_started) or it ends unstarted.
        mv.stats.pending += 1
        cache = self.cache
        if cache is not None:
            use = mv.extra.get("use_cache")
            if use is None:
                use = mv.extra["use_cache"] = mv.config is not None and uses_cache(mv.config)
            if use:
                scheduler.in_flight += 1  # a hit completes through the sink right here
                if cache.answer(mv.name, mv.version, request, mv.stats):
                    return
                scheduler.in_flight -= 1
        try:
            scheduler.enqueue(request)
        except BaseException:
            mv.stats.pending -= 1
            raise

    def _completion(self, request: InferenceRequest, mv: ModelVersion, deliver: Any) -> Any:
        """The sink a scheduler or backend calls with each response of ``request``."""
        signature = mv.signature
        labels = mv.labels
        stats = mv.stats
        name = mv.name
        version = mv.version
        count = [0]
        # Pins the regions the outputs go to until the final response (unregister waits).
        lease = self.shm.lease(request)
        trace = self.tracer.sample(request, version)
        if self._per_request_metrics and stats.latency is None:
            self.model_metrics.attach(mv)
        latency = stats.latency
        ensemble = signature is not None and signature.platform == "ensemble"

        def complete(response: InferenceResponse) -> None:
            reason = -1
            if response.error is None:
                try:
                    finish_response(request, response, signature, labels, lease.write)  # type: ignore[arg-type]  # set at load
                except NaiadError as exc:
                    response = InferenceResponse(error=exc, final=response.final)
                    reason = OTHER
            response.model_name = name
            response.model_version = version
            response.id = request.id
            index = count[0]
            count[0] += 1
            now = time.monotonic_ns()
            if index == 0 and latency is not None:
                latency.on_first_response(now - request.arrival_ns)
            if response.final:
                lease.release()
                if not request.queue_ns:  # never started executing: no longer pending
                    stats.pending -= 1
                if response.error is None:
                    stats.record_success(now - request.arrival_ns, request.queue_ns)
                else:
                    if reason < 0:  # ensembles report every failure as OTHER, as Triton does
                        reason = OTHER if ensemble else failure_reason(response.error)
                    stats.record_failure(now - request.arrival_ns, reason)
                if trace is not None:
                    self.tracer.finish(trace, request, response, stats, now)
                if mv.scheduler is not None:
                    mv.scheduler.request_done()
            if signature is not None and signature.decoupled:
                stats.record_response(
                    index,
                    0,
                    0,
                    ok=response.error is None,
                    empty=not response.outputs and response.error is None,
                )
            deliver(response)

        return complete

    # -- statistics --------------------------------------------------------------

    def statistics(self, name: str = "", version: str = "") -> dict[str, Any]:
        if not name:
            return {
                "model_stats": [
                    mv.stats.to_dict(mv.name, mv.version) for mv in self.registry.all_ready()
                ]
            }
        v = parse_version(version)
        entry = self.registry.entry(name)
        ready = entry.ready_versions() if entry is not None else []
        if v is None:
            if not ready:
                raise InvalidArgument(f"requested model '{name}' is not available")
            chosen = ready
        else:
            chosen = [mv for mv in ready if mv.version == v]
            if not chosen:
                raise InvalidArgument(
                    f"requested model version is not available for model '{name}'"
                )
        return {"model_stats": [mv.stats.to_dict(mv.name, mv.version) for mv in chosen]}

    # -- model repository ---------------------------------------------------------

    async def repository_index(self, ready: bool = False) -> list[dict[str, str]]:
        """Every model the repositories hold, with the states of its known versions."""
        return await self.control.index(ready)

    def _check_model_control(self) -> None:
        if self.options.model_control_mode != "explicit":
            raise Unavailable("explicit model load / unload is not allowed if polling is enabled")

    async def load_model(
        self, name: str, config_json: str | None = None, files: dict[str, bytes] | None = None
    ) -> None:
        """(Re)load ``name``, with a JSON config and ``file:`` contents when given."""
        self._check_model_control()
        override = None if config_json is None else config_from_json(config_json)
        await self.control.load(name, override, files)

    async def unload_model(self, name: str, unload_dependents: bool = False) -> None:
        self._check_model_control()
        await self.control.unload(name, unload_dependents)

    # -- trace settings -----------------------------------------------------------

    def trace_setting(
        self, model: str = "", changes: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The global or one model's trace settings, after applying ``changes`` if given."""
        if model and not self.model_ready(model, ""):
            raise InvalidArgument(f"Request for unknown model : {model}")
        if changes is None:
            return self.trace_settings.get(model)
        return self.trace_settings.update(changes, model)

    # -- shared memory ------------------------------------------------------------

    def shm_status(self, kind: str, name: str = "") -> list[dict[str, Any]]:
        """Regions of ``kind`` ("system" or "cuda") in the REST status shape."""
        return self.shm.status(kind, name)

    def shm_register(self, kind: str, name: str, **fields: Any) -> None:
        """Register a region: ``key, offset, byte_size`` (system) or
        ``raw_handle, device_id, byte_size`` (cuda, ``raw_handle`` the 64 raw bytes)."""
        if kind == "cuda":
            self.shm.register_cuda(
                name, fields["raw_handle"], fields["device_id"], fields["byte_size"]
            )
        else:
            self.shm.register_system(
                name, fields["key"], fields.get("offset", 0), fields["byte_size"]
            )

    def shm_unregister(self, kind: str, name: str = "") -> None:
        """Unregister ``name`` (unknown: no-op), or every region of ``kind`` when empty."""
        self.shm.unregister(kind, name)


def _resolver(future: asyncio.Future[InferenceResponse]) -> Any:
    """Resolve ``future`` with the response unless its waiter was cancelled meanwhile."""

    def deliver(response: InferenceResponse) -> None:
        if not future.done():
            future.set_result(response)

    return deliver
