"""Loading and unloading model versions: config, backend, instances, scheduler.

Everything slow (file I/O, auto-complete, framework sessions, processes)
runs in a worker thread; only the registry and scheduler wiring happen on
the event loop.  A model that fails is UNAVAILABLE with the reason, and the
others load regardless.  As in Triton, at most ``--model-load-thread-count``
versions start their instances at a time, and a version whose instances
fail is started afresh up to ``--model-load-retry-count`` more times.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from naiad import config as cfg
from naiad.backends.base import Backend, LoadContext, instance_specs
from naiad.backends.devices import visible_gpus
from naiad.core.errors import NaiadError
from naiad.core.model_state import ModelState
from naiad.core.signature import Signature
from naiad.engine import memory, shadow, traffic
from naiad.engine.ensembles import (
    EnsembleDependencies,
    EnsembleReadiness,
    composing_decoupled,
    not_available,
)
from naiad.engine.registry import ModelEntry, ModelRegistry, ModelVersion
from naiad.engine.warmup import warm_up
from naiad.repository import ModelSource, read_labels, select_versions
from naiad.repository.sources import namespaced
from naiad.scheduling import (
    AdmissionControl,
    RateLimiter,
    ResourceLimit,
    ServerLoad,
    make_scheduler,
)
from naiad.scheduling.ensemble_graph import EnsembleGraph

if TYPE_CHECKING:
    from naiad.backends.base import ServerCalls
    from naiad.backends.registry import BackendRegistry
    from naiad.config import ModelConfig
    from naiad.options.declarations import ServerOptions

log = logging.getLogger("naiad")


@dataclass
class PreparedConfig:
    """A completed config with where it came from (for errors with file and line)."""

    config: ModelConfig
    model_dir: Path
    path: str  # the model's config.pbtxt (whether or not it exists)
    text: str | None  # its content, when the config was read from it
    backend: Backend | None  # None for ensembles


def output_labels(config: ModelConfig, model_dir: Path) -> dict[str, list[str]]:
    """Each output's labels (``label_filename``); a file that cannot be read fails the load
    (and ``naiad check``)."""
    return {
        output.name: read_labels(model_dir, output.label_filename)
        for output in config.output
        if output.label_filename
    }


def hide_paths(reason: str, source: ModelSource | None) -> str:
    """A load failure as clients read it: files named from the repository's root,
    never where the repository lives on the server (the full text is logged)."""
    if source is None:
        return reason
    roots = {str(source.repository), str(Path(source.repository).resolve())}
    for root in sorted(roots, key=len, reverse=True):
        reason = reason.replace(root.rstrip("/") + "/", "")
    return reason


class ModelLoader:
    """Reads, completes, validates and loads models into a registry."""

    def __init__(
        self,
        registry: ModelRegistry,
        backends: BackendRegistry,
        options: ServerOptions,
        services: ServerCalls | None = None,
    ) -> None:
        self.registry = registry
        self.backends = backends
        self.options = options
        self.services = services
        #: The GPUs instance groups may name: the embedded API's, else the machine's.
        self.gpus = options.gpus or visible_gpus()
        # Server-wide scheduling state, shared by every model this loader loads.
        self.rate_limiter = (
            RateLimiter(ResourceLimit.parse(r) for r in options.rate_limit_resources)
            if options.rate_limit == "execution_count"
            else None
        )
        self.admission = AdmissionControl(options.max_queued_requests)
        self.server_load = ServerLoad()
        #: Which ensembles call which models (unloading a composing model).
        self.dependencies = EnsembleDependencies()
        #: --model-load-thread-count: versions whose instances load at the same time
        #: (Triton's load thread pool; 0 counts as 1, as there).
        #: With residency (engine/residency.py), one at a time: each version's memory is
        #: then measured alone, exactly, which the budget rests on; an unload waits for
        #: creations in the server (what it frees would hide what they take) and hands
        #: its memory back at once.  Without residency, neither: an unload would wait for
        #: a long load, and a full collection costs each unload ~90 ms with torch around.
        self._residency = bool(options.model_memory_budget or options.model_idle_unload_secs)
        slots = 1 if self._residency else max(1, options.model_load_thread_count)
        self._load_slots = asyncio.Semaphore(slots)

    # -- configuration -----------------------------------------------------

    def prepare_config(
        self, source: ModelSource, override: ModelConfig | None = None
    ) -> ModelConfig:
        """The effective config of a model: read, filled, auto-completed, normalised, valid."""
        prepared = self.complete_config(source, override)
        problems = self.config_problems(prepared)
        if problems:
            raise problems[0]
        return prepared.config

    def complete_config(
        self, source: ModelSource, override: ModelConfig | None = None
    ) -> PreparedConfig:
        """A model's config read, filled, auto-completed and normalised, not yet validated.

        Raises for what stops a config before validation: a file that does
        not parse, a backend that cannot be found or auto-complete failing.
        """
        versions = source.versions()
        first = versions[0] if versions else None
        text: str | None = None
        path = str(source.path / "config.pbtxt")
        if override is not None:
            config = cfg.ModelConfig()
            config.CopyFrom(override)
        else:
            read = cfg.read_model_config(source.path, self.options.model_config_name)
            if read is None:
                config = cfg.ModelConfig()
            else:
                config = read
                try:
                    text = Path(path).read_text(encoding="utf-8")
                except OSError:
                    text = None
        cfg.check_file_names_first(config, path=path, text=text)  # before any file is opened
        cfg.fill_platform_and_backend(config, source.path, first)
        backend_name = config.backend
        if config.platform == "ensemble":
            backend = None
            self._resolve_steps(config, source.namespace)
        else:
            backend = self.backends.get(backend_name)
            if not self.options.disable_auto_complete_config and first is not None:
                settings = self.options.backend_config.get(backend_name, {})
                backend.auto_complete_with_options(config, source.path, first, settings)
        cfg.normalize(
            config,
            gpus=self.gpus,
            preferred_kind=backend.preferred_instance_kind() if backend else "KIND_CPU",
            default_cpu_count=backend.default_cpu_instance_count() if backend else 1,
        )
        return PreparedConfig(config, source.path, path, text, backend)

    def _resolve_steps(self, config: ModelConfig, namespace: str) -> None:
        """With ``--model-namespacing``, a step names the model of the ensemble's own
        repository where its name is found in several (Triton sets ``model_namespace``)."""
        if not namespace:
            return
        for step in config.ensemble_scheduling.step:
            if not step.model_namespace and namespaced(step.model_name, namespace) in (
                self.registry.models
            ):
                step.model_namespace = namespace

    def config_problems(self, prepared: PreparedConfig) -> list[NaiadError]:
        """Every rule a completed config breaks (Triton's, then its backend's)."""
        config = prepared.config
        problems: list[NaiadError] = list(
            cfg.validate_all(config, path=prepared.path, text=prepared.text, gpus=self.gpus)
        )
        if prepared.backend is not None:
            try:
                prepared.backend.validate(config, prepared.model_dir)
            except NaiadError as exc:
                problems.append(exc)
        return problems

    # -- load / unload -------------------------------------------------------

    async def load(
        self,
        source: ModelSource,
        override: ModelConfig | None = None,
        keep: Collection[int] = (),
    ) -> ModelEntry:
        """Load every version the policy selects; failures are recorded, not raised.

        READY versions listed in ``keep`` (unchanged on disk, same config) stay
        as they are instead of being reloaded.  A failed reload of a version
        that keeps serving leaves its reason in ``extra["reload_error"]``.
        """
        entry = self.registry.models.get(source.name)
        if entry is None:
            entry = self.registry.models[source.name] = ModelEntry(source.name, source)
        same_files = entry.source is not None and entry.source.path == source.path
        entry.source = source
        entry.state = ModelState.LOADING
        entry.reason = ""
        try:
            config = await asyncio.to_thread(self.prepare_config, source, override)
        except NaiadError as exc:
            self._fail_entry(entry, exc.message)
            return entry
        except Exception as exc:  # unexpected: still only this model fails
            log.exception("loading model '%s' failed", source.name)
            self._fail_entry(entry, f"{type(exc).__name__}: {exc}")
            return entry
        wanted = select_versions(config.version_policy, source.versions())
        if not wanted:
            self._fail_entry(  # versions serving now go on serving, as in Triton
                entry,
                f"at least one version must be available under the version "
                f"policy of model '{source.name}'",
            )
            return entry
        try:
            split = traffic.split_of(config, wanted)
            candidate = shadow.shadow_of(config, source.name, wanted)
        except NaiadError as exc:
            self._fail_entry(entry, exc.message)
            return entry
        if (
            override is not None
            and same_files
            and entry.config is not None
            and config != entry.config
            and traffic.same_but_routing(entry.config, config)
        ):
            # A load API call that changes only where requests go (a split, a shadow): the
            # versions run on, with the new config.
            keep = set(keep) | set(wanted)
            for v in wanted:
                if v in entry.versions and entry.versions[v].ready:
                    entry.versions[v].config = config
        entry.config = config
        entry.split = split
        entry.state = None
        entry.selected = frozenset(wanted)
        old = [mv for v, mv in entry.versions.items() if v not in wanted]
        kept = {v for v in keep if v in entry.versions and entry.versions[v].ready}
        await asyncio.gather(
            *(self._load_version(entry, config, v) for v in wanted if v not in kept)
        )
        for mv in entry.versions.values():
            mv.shadow = candidate
        # Versions the policy no longer selects are unloaded but stay listed (UNAVAILABLE,
        # "unloaded") in the repository index, as Triton lists them.
        await asyncio.gather(*(self.unload_version(mv) for mv in old))
        return entry

    def _fail_entry(self, entry: ModelEntry, reason: str) -> None:
        log.error("failed to load '%s': %s", entry.name, reason)
        entry.state = ModelState.UNAVAILABLE
        entry.reason = hide_paths(reason, entry.source)

    async def _load_version(self, entry: ModelEntry, config: ModelConfig, version: int) -> None:
        previous = entry.versions.get(version)
        assert entry.source is not None
        started = time.monotonic()
        # An ensemble has no instances; it waits for its composing models, so it must
        # not hold a slot they may need.
        slot: contextlib.AbstractAsyncContextManager[object] = (
            self._load_slots if config.platform != "ensemble" else contextlib.nullcontext()
        )
        if previous is None:  # LOADING while it waits for a slot, as in Triton
            waiting = entry.versions[version] = ModelVersion(entry.name, version)
            waiting.config = config
        async with slot:
            mv = await self._try_version(entry, config, version, previous)
        if mv.state is ModelState.UNAVAILABLE:
            mv.reason = hide_paths(mv.reason, entry.source)
            if previous is not None and previous.ready:
                previous.extra["reload_error"] = mv.reason
                return  # a failed reload keeps the old version serving
            entry.versions[version] = mv
            return
        entry.versions[version] = mv
        if previous is not None and previous is not mv:
            await self.unload_version(previous)
        log.info(
            "successfully loaded '%s' version %d in %.2fs",
            entry.name,
            version,
            time.monotonic() - started,
        )

    async def _try_version(
        self,
        entry: ModelEntry,
        config: ModelConfig,
        version: int,
        previous: ModelVersion | None,
    ) -> ModelVersion:
        """Start the version, and as Triton does, start it afresh up to
        ``--model-load-retry-count`` more times while it fails; the last try."""
        assert entry.source is not None
        tries = 1 + self.options.model_load_retry_count
        for attempt in range(1, tries + 1):
            mv = ModelVersion(entry.name, version)
            if previous is None:  # listed as LOADING meanwhile
                entry.versions[version] = mv
            ctx = LoadContext(
                name=entry.name,
                version=version,
                model_dir=entry.source.path,
                config=config,
                services=self.services,
                options=self.options.backend_config.get(config.backend, {}),
            )
            mv.context = ctx
            mv.config = config
            log.info("loading '%s' version %d", entry.name, version)
            try:
                await self._start_version(mv, ctx)
            except NaiadError as exc:
                mv.state = ModelState.UNAVAILABLE
                mv.reason = exc.status_text()  # Triton's version reason names the kind
            except Exception as exc:
                log.exception("loading model '%s' version %d failed", entry.name, version)
                mv.state = ModelState.UNAVAILABLE
                mv.reason = f"Internal: {type(exc).__name__}: {exc}"
            if mv.state is not ModelState.UNAVAILABLE:
                return mv
            log.error("failed to load '%s' version %d: %s", entry.name, version, mv.reason)
            if attempt < tries:
                log.warning(
                    "loading '%s' version %d again (retry %d of %d, --model-load-retry-count)",
                    entry.name,
                    version,
                    attempt,
                    tries - 1,
                )
        return mv

    async def _start_version(self, mv: ModelVersion, ctx: LoadContext) -> None:
        config = ctx.config
        mv.signature = Signature(config)
        mv.labels = await asyncio.to_thread(output_labels, config, ctx.model_dir)
        if config.platform == "ensemble":
            await self._start_ensemble(mv, ctx)
            return
        backend = self.backends.get(config.backend)
        mv.backend = backend
        specs = instance_specs(config)
        in_server = backend.runs_in_server(ctx)
        host: list[int] = []  # the server memory each instance took, where measured
        gpus: dict[int, int] = {}
        try:  # whatever fails, the instances already loaded are closed
            for spec in specs:
                instance, taken = await asyncio.to_thread(
                    memory.measured_create,
                    functools.partial(backend.create_instance, ctx, spec),
                    in_server,
                    spec.device_id if spec.kind == "GPU" else None,
                )
                mv.instances.append(instance)
                if taken.host is not None:
                    host.append(taken.host)
                for device, size in taken.gpus.items():
                    gpus[device] = gpus.get(device, 0) + size
            pids = [i.pid for i in mv.instances if i.pid is not None]
            mv.stats.memory = await asyncio.to_thread(memory.version_memory, host, pids, gpus)
            pairs = [(i, s) for i, s in zip(mv.instances, specs, strict=True) if not s.passive]
            pairs = pairs or list(zip(mv.instances, specs, strict=True))
            if config.model_warmup:  # every instance, before the version is READY
                await warm_up(config, mv.signature, ctx.model_dir, mv.instances)
            mv.scheduler = make_scheduler(
                config,
                [i for i, _ in pairs],
                [s for _, s in pairs],
                mv.stats,
                decoupled=mv.signature.decoupled,
                rate_limiter=self.rate_limiter,
                admission=self.admission,
                load=self.server_load,
                model_dir=ctx.model_dir,
            )
        except BaseException:
            await self.unload_version(mv, reason="failed to load")
            raise
        mv.stats.record_load()
        mv.state = ModelState.READY

    async def unload_version(self, mv: ModelVersion, *, reason: str = "unloaded") -> None:
        """Stop taking requests, finish the in-flight ones, release the instances."""
        if mv.state is ModelState.UNAVAILABLE and not mv.instances:
            return
        mv.state = ModelState.UNLOADING
        scheduler = mv.scheduler
        if scheduler is not None:
            await scheduler.drain()
            scheduler.close()
        # Nothing may keep the instances alive once closed: an unloaded version stays
        # listed (the index), and its memory must go (residency counts on it).
        mv.scheduler = scheduler = None
        instances, mv.instances = mv.instances, []
        backend, ctx = mv.backend, mv.context

        def close_all() -> None:
            with memory.releasing() if self._residency else contextlib.nullcontext():
                while instances:  # each one dropped as soon as it is closed
                    try:
                        instances.pop().close()
                    except Exception:
                        log.exception("closing an instance of '%s' failed", mv.name)
                if backend is not None and ctx is not None:
                    backend.unload(ctx)
                if self._residency:
                    memory.give_back()

        await asyncio.to_thread(close_all)
        mv.state = ModelState.UNAVAILABLE
        mv.reason = reason
        log.info("successfully unloaded '%s' version %d", mv.name, mv.version)

    async def unload(self, name: str, reason: str = "unloaded") -> None:
        entry = self.registry.models.get(name)
        if entry is None:
            return
        versions = list(entry.versions.values())
        await asyncio.gather(*(self.unload_version(mv, reason=reason) for mv in versions))
        if entry.state is not None:
            entry.state = ModelState.UNAVAILABLE
            entry.reason = reason
        await self._unload_ensembles_of(name)

    # -- ensembles ---------------------------------------------------------------

    async def _start_ensemble(self, mv: ModelVersion, ctx: LoadContext) -> None:
        """Wire an ensemble: its composing models READY first, no instances of its own."""
        config = ctx.config
        graph = EnsembleGraph(config)
        composing = graph.composing()
        self.dependencies.record(mv.name, {name for name, _ in composing})
        # Model control loads composing models first; this waits for concurrent loads.
        await self.dependencies.require(mv.name, composing, self.registry)
        if composing_decoupled(self.registry, graph) and not (
            mv.signature is not None and mv.signature.decoupled
        ):
            # A decoupled step makes the ensemble decoupled (as Triton completes it).
            config.model_transaction_policy.decoupled = True
            mv.signature = Signature(config)
        assert mv.signature is not None
        mv.instances = [EnsembleReadiness(self.registry, graph)]
        mv.scheduler = make_scheduler(
            config,
            [],
            [],
            mv.stats,
            decoupled=mv.signature.decoupled,
            admission=self.admission,
            ensemble=graph,
            services=self.services,
        )
        mv.state = ModelState.READY

    async def _unload_ensembles_of(self, name: str) -> None:
        """Unloading a composing model makes the ensembles that call it unavailable."""
        for ensemble in self.dependencies.dependents_of(name):
            entry = self.registry.models.get(ensemble)
            if entry is None:
                continue
            reason = not_available(ensemble, [name])
            versions = [mv for mv in entry.versions.values() if mv.ready]
            await asyncio.gather(*(self.unload_version(mv, reason=reason) for mv in versions))
