"""The protocol-neutral data plane: every operation the frontends offer.

HTTP, gRPC and the embedded API decode their input, call one method here and
encode the result; no operation is implemented twice, and neither is any
check that does not depend on the wire.  Results are typed values (core
responses, :mod:`naiad.engine.metadata`, :mod:`naiad.core.statistics`,
:class:`~naiad.engine.repository_index.ModelIndex`, shared-memory and
settings snapshots) that each frontend renders in its own encoding.

The class reads as the request path; the health and metadata questions
(:mod:`naiad.engine.metadata_verbs`), the statistics operations
(:mod:`naiad.engine.statistics_verbs`) and the operations that change the
server's state (:mod:`naiad.engine.state_changes`: model control, log
settings, shared memory, each a typed change of :mod:`naiad.engine.changes`)
are inherited from modules of their own.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Any

from naiad.backends.registry import BackendRegistry
from naiad.core.errors import InvalidArgument, NaiadError, NotFound, Unavailable, Unsupported
from naiad.core.raw_input import raw_input
from naiad.core.shm import SharedMemoryManager
from naiad.core.types import Buffer, InferenceRequest, InferenceResponse, ResponseSink
from naiad.core.validation import validate_request
from naiad.core.versions import parse_version
from naiad.engine.cache import cache_from_config, uses_cache
from naiad.engine.changes import UpdateTraceSettings
from naiad.engine.completion import Completion, Deliver
from naiad.engine.loader import ModelLoader
from naiad.engine.log_settings import LogSettings
from naiad.engine.metadata_verbs import MetadataVerbs
from naiad.engine.model_control import ModelControl
from naiad.engine.model_metrics import ModelMetrics
from naiad.engine.registry import ModelRegistry, ModelState, ModelVersion
from naiad.engine.repository_index import ModelIndex
from naiad.engine.residency import residency_from_options
from naiad.engine.residency_metrics import ResidencyMetrics
from naiad.engine.shadow_metrics import ShadowMetrics
from naiad.engine.state_changes import StateChanges
from naiad.engine.statistics_verbs import StatisticsVerbs
from naiad.metrics import MetricsConfig, MetricsRegistry, SystemMetrics
from naiad.options import triton_flags
from naiad.tracing.settings import TraceSettings, TraceSettingValues
from naiad.tracing.tracer import Tracer

if TYPE_CHECKING:
    from naiad.engine.shadow import Shadow
    from naiad.engine.workers import Workers
    from naiad.options.declarations import ServerOptions

log = logging.getLogger("naiad")


class DataPlane(MetadataVerbs, StatisticsVerbs, StateChanges):
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
        #: With ``--workers``: where sequences are routed and state changes broadcast.
        self.workers: Workers | None = None
        self.system_metrics = SystemMetrics(
            cpu_metrics=options.allow_cpu_metrics,
            gpu_metrics=options.allow_gpu_metrics,
            interval_ms=options.metrics_interval_ms,
            gpus=options.gpus,
        )
        if options.allow_metrics:
            self.metrics.add_collector(self.model_metrics)
            self.metrics.add_collector(ShadowMetrics(self.registry))
            self.metrics.add_collector(self.system_metrics)
        self._per_request_metrics = options.allow_metrics and self.metrics.config.per_request
        self.started = False
        #: shadow requests under way (engine/shadow.py), held so they are not collected
        self._shadows: set[asyncio.Task[None]] = set()
        self.stopping = False
        self.failed_at_start: list[tuple[str, str]] = []
        #: When the server was created (wall clock, seconds): its uptime starts here.
        self.start_time = time.time()
        #: Where each frontend listens ("http" -> "0.0.0.0:8000"), set as each one opens.
        self.endpoints: dict[str, str] = {}
        self.event_loop: asyncio.AbstractEventLoop | None = None
        # Start-up loading, explicit load/unload, polling and the repository index.
        self.control = ModelControl(self.registry, self.loader, options)
        self.cache = cache_from_config(options.cache_config)
        #: Models loaded on demand and unloaded to fit (engine/residency.py); None: all
        #: of them stay loaded, as in Triton.
        self.residency = residency_from_options(self.control, self.registry, options)
        if options.allow_metrics and self.residency is not None:
            self.metrics.add_collector(ResidencyMetrics(self.residency))
        self.shm = SharedMemoryManager(allow_client=options.allow_client_shm)

    # -- lifecycle -----------------------------------------------------------

    async def start(self) -> None:
        """Load the start-up models as the model control mode says."""
        # Cached: asyncio.get_running_loop() costs a getpid() system call.
        self.event_loop = asyncio.get_running_loop()
        if self.workers is None or self.workers.index == 0:  # once, not once per worker
            for warning in triton_flags.warnings(self.options.triton_flags_without_effect):
                log.warning("%s", warning)
        if self.workers is not None:  # before loading: no change the others make is missed
            await self.workers.start()
        if self.options.allow_metrics:
            await self.system_metrics.start()
        await self.control.start(on_demand=self.residency is not None)
        if self.residency is not None:
            await self.residency.start(self.workers.count if self.workers is not None else 1)
        # What --exit-on-error judges: the start-up loads, not a restarted worker's replay
        # of the loads the other workers made at run time, which never stop a server.
        self.failed_at_start = self.failed_models()
        if self.workers is not None:  # a restarted worker: as the others are, before it serves
            await self.workers.catch_up()
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
        if self.residency is not None:
            await self.residency.close()
        await self.control.close()  # unloads every model
        if self.workers is not None:
            await self.workers.close()
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
                if mv.state is ModelState.UNAVAILABLE and not mv.reason.startswith("unloaded"):
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

    # -- inference ---------------------------------------------------------------

    def raw_binary_request(self, name: str, version: str, data: Buffer) -> InferenceRequest:
        """A request whose only content is ``data``, the single input's (shape deduced)."""
        v = parse_version(version)
        signature = self.signature(name, v)
        return InferenceRequest(name, [raw_input(name, signature, data)], model_version=v)

    def _admit(self, request: InferenceRequest, validated: bool = False) -> ModelVersion:
        """The version that runs ``request``, validated unless another worker did."""
        if self.stopping:
            raise Unavailable("Server is stopping and not accepting new requests")
        mv = self.registry.get(request.model_name, request.model_version, request.parameters)
        assert mv.signature is not None
        request.arrival_ns = time.monotonic_ns()
        if not validated:
            validate_request(request, request.model_name, mv.signature, self.shm.read)
        return mv

    async def _admit_when_loaded(
        self, request: InferenceRequest, forwarded: bool, missing: NaiadError
    ) -> ModelVersion:
        """Admit a request whose model is not loaded, once residency has loaded it; raise
        the look-up's error, ``missing``, when residency does not manage that model (or is
        off).

        The wait counts in the request's latency and queue time, as Triton counts a
        request's wait for its model.
        """
        residency = self.residency
        if residency is None or self.stopping or not residency.manages(request.model_name):
            raise missing
        started = time.monotonic_ns()
        await residency.wait(request.model_name)
        mv = self._admit(request, validated=forwarded)
        request.arrival_ns = started
        return mv

    async def resident(self, name: str) -> None:
        """Before a metadata or config question: with residency, know a model that is not
        loaded from its config (read, not loaded), so the answer needs no load."""
        if not self.stopping and self.will_load(name):
            assert self.residency is not None
            await self.residency.describe(name)

    async def infer(
        self,
        request: InferenceRequest,
        *,
        endpoint: str = "This endpoint",
        forwarded: bool = False,
    ) -> InferenceResponse:
        """Run a request of a non-decoupled model; errors are raised as NaiadError.

        ``endpoint`` names the caller in the error for decoupled models, as
        Triton's frontends word it ("HTTP end point", "ModelInfer RPC").
        ``forwarded``: a sequence's request that the worker which took it
        validated and passed to this one, its owner (``--workers``).
        """
        try:
            mv = self._admit(request, validated=forwarded)
            waited = 0
        except (NotFound, Unavailable) as missing:
            mv = await self._admit_when_loaded(request, forwarded, missing)
            waited = request.arrival_ns
        assert mv.signature is not None
        if mv.signature.decoupled:
            raise Unsupported(
                f"{endpoint} doesn't support models with decoupled transaction policy"
            )
        if self.workers is not None and not forwarded:
            owner = self._sequence_owner(mv, request)
            if owner is not None:
                return await self.workers.infer(owner, request)
        loop = self.event_loop or asyncio.get_running_loop()
        future: asyncio.Future[InferenceResponse] = loop.create_future()
        request.response_sink = self._sink(request, mv, _resolver(future))
        self._enqueue(mv, request, waited)
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
        candidate = mv.shadow
        if candidate is not None:
            busy = mv.scheduler is not None and mv.scheduler.in_flight > 0
            if candidate.wants(request, mv.version, busy):
                served_ns = time.monotonic_ns() - request.arrival_ns
                go = functools.partial(self._shadow, candidate, request, response, served_ns)
                candidate.when_idle(loop, mv, go)
        return response

    def _shadow(
        self,
        candidate: Shadow,
        request: InferenceRequest,
        served: InferenceResponse,
        served_ns: int,
    ) -> None:
        """Run ``request`` again on ``candidate`` (its model has been idle a while: see
        :meth:`Shadow.when_idle`), and record how the two compare (engine/shadow.py)."""
        if self.stopping:
            candidate.running = False
            candidate.stats.skipped += 1
            return
        copy = candidate.copy(request)

        async def run() -> None:
            start = time.monotonic_ns()
            try:
                answer: InferenceResponse | None = await self.infer(copy, endpoint="A shadow")
            except NaiadError:
                answer = None
            finally:
                candidate.running = False
            candidate.record(served, served_ns, answer, time.monotonic_ns() - start)

        task = asyncio.get_running_loop().create_task(run())
        self._shadows.add(task)
        task.add_done_callback(self._shadows.discard)

    def is_decoupled(self, name: str, version: str = "") -> bool:
        """Whether requests to that model may get several responses (raises if unknown;
        with residency, a model not loaded is known once :meth:`resident` has run)."""
        return self.signature(name, parse_version(version)).decoupled

    def will_load(self, name: str) -> bool:
        """Whether a request for ``name``, which is not loaded, would wait for its load."""
        return self.residency is not None and self.residency.manages(name)

    async def infer_stream(
        self, request: InferenceRequest, *, forwarded: bool = False
    ) -> AsyncGenerator[InferenceResponse, None]:
        """Every response of a request (several for decoupled models), errors included.

        Validation errors are raised before the first response.  ``forwarded`` as
        in :meth:`infer`.
        """
        try:
            mv = self._admit(request, validated=forwarded)
            waited = 0
        except (NotFound, Unavailable) as missing:
            mv = await self._admit_when_loaded(request, forwarded, missing)
            waited = request.arrival_ns
        if self.workers is not None and not forwarded:
            owner = self._sequence_owner(mv, request)
            if owner is not None:
                async for response in self.workers.infer_stream(owner, request):
                    yield response
                return
        queue: asyncio.Queue[InferenceResponse] = asyncio.Queue()
        request.response_sink = self._sink(request, mv, queue.put_nowait)
        self._enqueue(mv, request, waited)
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

    def _sequence_owner(self, mv: ModelVersion, request: InferenceRequest) -> int | None:
        """The other worker that holds ``request``'s sequence, or None to run it here."""
        assert self.workers is not None and mv.signature is not None
        if not mv.signature.sequence or not request.correlation_id:
            return None  # the sequence batcher refuses it wherever it runs
        owner = self.workers.owner(request.correlation_id)
        return None if owner == self.workers.index else owner

    def _enqueue(self, mv: ModelVersion, request: InferenceRequest, waited: int = 0) -> None:
        """Hand ``request`` to its scheduler; ``waited``: since when it waited for its model's
        load (0: it did not)."""
        scheduler = mv.scheduler
        if scheduler is None:
            raise Unavailable(f"model '{mv.name}' version {mv.version} has no scheduler")
        request.queue_start_ns = waited or time.monotonic_ns()
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
                scheduler.admit()  # a hit completes through the sink right here
                if cache.answer(mv.name, mv.version, request, mv.stats):
                    return
                scheduler.withdraw()
        try:
            scheduler.enqueue(request)
        except BaseException:
            mv.stats.pending -= 1
            raise

    def _sink(self, request: InferenceRequest, mv: ModelVersion, deliver: Deliver) -> ResponseSink:
        """What the scheduler calls with each response of ``request`` (see Completion)."""
        lease = self.shm.lease(request)  # refuses bad output regions before the model runs
        trace = self.tracer.sample(request, mv.version)
        if self._per_request_metrics and mv.stats.latency is None:
            self.model_metrics.attach(mv)
        return Completion(request, mv, deliver, lease, trace, self.tracer).complete

    # -- model repository ---------------------------------------------------------

    def check_repository_name(self, repository: str) -> None:
        """naiad serves its repositories as one: a request may not name one.

        A frontend calls it before it reads the rest of the request, where
        Triton checks it; Triton's HTTP index ignores the name (rest.md §1.1).
        """
        if repository:
            raise Unsupported("'repository_name' specification is not supported")

    async def repository_index(self, ready: bool = False) -> list[ModelIndex]:
        """Every model the repositories hold, with the states of its known versions."""
        return await self.control.index(ready)

    # -- trace settings -----------------------------------------------------------

    async def trace_setting(
        self, model: str = "", changes: Mapping[str, Any] | None = None
    ) -> TraceSettingValues:
        """The global or one model's trace settings, after applying ``changes`` if given."""
        if model and not self.model_ready(model, ""):
            raise InvalidArgument(f"Request for unknown model : {model}")
        if changes is not None:
            await self.change(UpdateTraceSettings(model, dict(changes)))
        return self.trace_settings.snapshot(model)


def _resolver(future: asyncio.Future[InferenceResponse]) -> Deliver:
    """Resolve ``future`` with the response unless its waiter was cancelled meanwhile."""

    def deliver(response: InferenceResponse) -> None:
        if not future.done():
            future.set_result(response)

    return deliver
