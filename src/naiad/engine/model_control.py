"""Model control: which models are loaded, when, and why.

Three ways in, one path through: start-up (every model, or ``--load-model``
names in explicit mode), explicit load/unload requests, and polling.  Each
(re)load of a name holds that name's lock, so two loads of one model run one
after the other while loads of other models, and inference, go on.  A reload
brings the new versions up before the old ones are drained and dropped (the
loader's order), and versions whose folder did not change keep serving as
they are.  Composing models a model needs (an ensemble's steps) are loaded
first and remembered, so ``unload_dependents`` can drop the ones nobody asked
for by name.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from naiad import config as cfg
from naiad.core.errors import Internal, InvalidArgument, NaiadError
from naiad.core.model_state import ModelState
from naiad.engine.ensembles import not_available
from naiad.engine.registry import ModelEntry, ModelRegistry
from naiad.engine.repository_index import ModelIndex, index_rows
from naiad.repository import Catalog, Repositories, Repository
from naiad.repository.fingerprint import ModelFingerprint
from naiad.repository.local import ModelSource
from naiad.repository.overrides import remove_tree, write_model_files
from naiad.repository.poll import PollPlan, plan_poll
from naiad.repository.sources import namespaced

if TYPE_CHECKING:
    from naiad.config import ModelConfig
    from naiad.engine.loader import ModelLoader
    from naiad.options.declarations import ServerOptions

log = logging.getLogger("naiad")


class ModelControl:
    """One per data plane: start-up loading, explicit load/unload, polling, the index."""

    def __init__(self, registry: ModelRegistry, loader: ModelLoader, options: ServerOptions):
        self.registry = registry
        self.loader = loader
        self.options = options
        self.repositories = Repositories(())
        self.catalog = Catalog()
        #: (name, reason) of start-up loads that failed before reaching the registry.
        self.startup_failures: list[tuple[str, str]] = []
        #: model -> the models it loaded as its dependencies (ensemble steps).
        self.dependencies: dict[str, set[str]] = {}
        self._requested: set[str] = set()  # loaded by name, not only as a dependency
        #: unloaded through the API and not loaded through it since: residency
        #: (engine/residency.py) does not load these on demand
        self.unloaded_by_request: set[str] = set()
        self._known: dict[str, ModelFingerprint] = {}  # last loaded or tried, per model
        self._origins: dict[str, Repository] = {}
        self._scratch: dict[str, list[Path]] = {}  # private folders of file overrides
        self._locks: dict[str, asyncio.Lock] = {}
        self._poll_lock = asyncio.Lock()
        self._poller: asyncio.Task[None] | None = None

    # -- lifecycle ---------------------------------------------------------------

    async def start(self, on_demand: bool = False) -> None:
        """Open the repositories and load the start-up models; start polling in poll mode.

        ``on_demand`` (residency): in mode none, models load on their first request
        instead; explicit mode's ``--load-model`` names still load now.
        """
        locations = tuple(self.options.model_repositories)
        self.repositories = await asyncio.to_thread(Repositories, locations)
        self.catalog = catalog = await self._scan()
        for location in catalog.missing:
            log.error("model repository path does not exist: %s", location)
        for name, paths in catalog.duplicates.items():
            log.error("model '%s' appears in several repositories: %s", name, ", ".join(paths))
        mode = self.options.model_control_mode
        names: list[str] = [] if on_demand and mode == "none" else list(catalog.models)
        if mode == "explicit" and "*" not in self.options.load_models:
            names = list(dict.fromkeys(self.options.load_models))
        await asyncio.gather(*(self._load_at_start(name) for name in names))
        if mode == "poll":
            self._poller = asyncio.get_running_loop().create_task(self._poll_forever())

    async def _load_at_start(self, name: str) -> None:
        try:
            await self.load(name)
        except NaiadError as exc:
            if name not in self.registry.models:  # else failed_models() reports it
                self.startup_failures.append((name, exc.message))

    async def stop_polling(self) -> None:
        """Let a poll in progress finish (no half-loaded model), then stop polling."""
        poller, self._poller = self._poller, None
        if poller is not None:
            async with self._poll_lock:
                poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await poller

    async def close(self) -> None:
        """Stop polling, unload every model, remove override folders and cached copies."""
        await self.stop_polling()
        await asyncio.gather(*(self.loader.unload(n) for n in list(self.registry.models)))
        for roots in self._scratch.values():
            for root in roots:
                remove_tree(root)
        self._scratch.clear()
        await asyncio.to_thread(self.repositories.close)

    # -- load ----------------------------------------------------------------------

    async def load(
        self,
        name: str,
        override: ModelConfig | None = None,
        files: Mapping[str, bytes] | None = None,
        *,
        dependency: bool = False,
        chain: tuple[str, ...] = (),
    ) -> None:
        """(Re)load ``name``; raise Triton's error when it (or a version of it) fails.

        Without an override, a model whose folder did not change since it
        loaded is left alone, and only changed versions are reloaded.
        """
        if name in chain:
            raise InvalidArgument("circular dependency: " + " -> ".join((*chain, name)))
        if files and override is None:
            raise InvalidArgument(
                f"failed to load '{name}': 'file:' parameters need a 'config' parameter"
            )
        if override is not None:
            cfg.check_override(override)
        if name in self.catalog.ambiguous:  # Triton: a load by name loads it everywhere
            for key in self.catalog.ambiguous[name]:
                await self.load(key, override, files, dependency=dependency, chain=chain)
            return
        async with self._lock(name):
            if files:
                model_dir = await asyncio.to_thread(write_model_files, name, files)
                self._scratch.setdefault(name, []).append(model_dir.parent)
                self._origins.pop(name, None)
                source = ModelSource(name, model_dir, model_dir.parent)
                fingerprint, keep = None, frozenset[int]()
            else:
                repo, fingerprint = await self._locate(name)
                previous = self._known.get(name)
                if override is None and previous == fingerprint and self._all_ready(name):
                    if not dependency:
                        self._requested.add(name)
                    return
                # Only READY versions are kept: a version that failed is tried again, and
                # its failure is this load's error.
                keep = (
                    frozenset()
                    if override
                    else fingerprint.unchanged_versions(previous) & self._ready_versions(name)
                )
                source = await asyncio.to_thread(repo.fetch, self.catalog.folder(name))
                namespace = repo.location if self.options.model_namespacing else ""
                source = dataclasses.replace(source, name=name, namespace=namespace)
                self._origins[name] = repo
            config, unreadable = await self._read_config(source, override)
            if config is not None and config.platform == cfg.ENSEMBLE_PLATFORM:
                failed = await self._load_dependencies(
                    name, config, (*chain, name), source.namespace
                )
                if failed:
                    raise self._fail(name, source, not_available(name, failed))
            entry = await self.loader.load(source, override, keep=keep)
            if fingerprint is not None:
                # As in Triton, a later plain load of an unchanged folder keeps what this
                # load made of it, an override's config included.
                self._known[name] = fingerprint
            else:
                self._known.pop(name, None)  # files sent with the request: nothing to compare
            if not dependency:
                self._requested.add(name)
                self.unloaded_by_request.discard(name)
            await self._release(name)
            error = load_error(entry, keep, unreadable)
        if error is not None:
            raise error

    async def _scan(self) -> Catalog:
        """Scan the repositories; the registry learns which plain names are ambiguous."""
        catalog = await asyncio.to_thread(self.repositories.scan, self.options.model_namespacing)
        self.registry.ambiguous = frozenset(catalog.ambiguous)
        return catalog

    def _step_model(self, model: str, namespace: str) -> str:
        """An ensemble step's model, in the ensemble's namespace when it has one there."""
        if namespace:
            key = namespaced(model, namespace)
            if key in self.catalog.models:
                return key
        return model

    async def _locate(self, name: str) -> tuple[Repository, ModelFingerprint]:
        """The repository holding ``name`` now, and the model's fingerprint there."""
        self.catalog = catalog = await self._scan()
        if name in catalog.duplicates:
            raise Internal(
                f"failed to load '{name}', model appears in multiple repositories: "
                + ", ".join(catalog.duplicates[name])
            )
        repo = catalog.models.get(name)
        if repo is None:
            raise Internal(f"failed to load '{name}', failed to poll from model repository")
        return repo, await asyncio.to_thread(repo.fingerprint, catalog.folder(name))

    def _ready_versions(self, name: str) -> frozenset[int]:
        entry = self.registry.models.get(name)
        if entry is None:
            return frozenset()
        return frozenset(v for v, mv in entry.versions.items() if mv.ready)

    def _all_ready(self, name: str) -> bool:
        """Whether every version the model's policy selected is serving."""
        entry = self.registry.models.get(name)
        return bool(
            entry
            and entry.state is None
            and entry.selected
            and all(v in entry.versions and entry.versions[v].ready for v in entry.selected)
        )

    async def _read_config(
        self, source: ModelSource, override: ModelConfig | None
    ) -> tuple[ModelConfig | None, bool]:
        """The config as given (before completion), and whether it could not be read.

        An unreadable config is Triton's "poll" failure (INTERNAL); the loader
        records its reason for the index.
        """
        if override is not None:
            return override, False
        try:
            config = await asyncio.to_thread(
                cfg.read_model_config, source.path, self.options.model_config_name
            )
        except NaiadError:
            return None, True
        return config, False

    async def _load_dependencies(
        self, name: str, config: ModelConfig, chain: tuple[str, ...], namespace: str
    ) -> list[str]:
        """Load the composing models of an ensemble that are not loaded yet.

        Returns the ones that failed (each logged with its own reason).
        """
        steps = config.ensemble_scheduling.step
        needed = list(dict.fromkeys(self._step_model(s.model_name, namespace) for s in steps))
        self.record_dependencies(name, needed)
        failed = []
        for dep in needed:
            entry = self.registry.models.get(dep)
            if entry is None or not entry.ready_versions():
                try:
                    await self.load(dep, dependency=True, chain=chain)
                except NaiadError as exc:
                    log.error("composing model '%s' of '%s': %s", dep, name, exc.message)
                    failed.append(dep)
        return failed

    def _fail(self, name: str, source: ModelSource, reason: str) -> NaiadError:
        """Mark ``name`` UNAVAILABLE with ``reason`` (versions serving go on) and say so."""
        log.error("failed to load '%s': %s", name, reason)
        entry = self.registry.models.get(name)
        if entry is None:
            entry = self.registry.models[name] = ModelEntry(name, source)
        entry.state = ModelState.UNAVAILABLE
        entry.reason = reason
        return InvalidArgument(f"load failed for model '{name}': {reason}\n")

    def record_dependencies(self, name: str, dependencies: list[str] | set[str]) -> None:
        """Hook: ``name`` needs ``dependencies`` (``unload_dependents`` may drop them)."""
        self.dependencies[name] = set(dependencies)

    # -- unload --------------------------------------------------------------------

    async def unload(self, name: str, unload_dependents: bool = False) -> None:
        """Drain and unload every version (a model that is not loaded is fine)."""
        if name in self.catalog.ambiguous:
            for key in self.catalog.ambiguous[name]:
                await self.unload(key, unload_dependents)
            return
        async with self._lock(name):
            await self.loader.unload(name)
            self._requested.discard(name)
            self.unloaded_by_request.add(name)
            self._known.pop(name, None)
            dependencies = self.dependencies.pop(name, set())
            await self._release(name)
        if not unload_dependents:
            return
        for dep in sorted(dependencies):
            needed = any(dep in deps for deps in self.dependencies.values())
            if dep not in self._requested and not needed:
                await self.unload(dep, unload_dependents=True)

    async def evict(self, name: str, reason: str) -> None:
        """Unload ``name`` for residency's ``reason``; it loads again when asked."""
        async with self._lock(name):
            await self.loader.unload(name, reason=reason)
            self._known.pop(name, None)
            await self._release(name)

    def known_fingerprint(self, name: str) -> ModelFingerprint | None:
        """The files ``name`` was last loaded (or tried) from."""
        return self._known.get(name)

    async def _release(self, name: str) -> None:
        """Remove override folders and cached copies no loaded version of ``name`` uses."""
        entry = self.registry.models.get(name)
        in_use = set()
        if entry is not None:
            in_use = {
                mv.context.model_dir
                for mv in entry.versions.values()
                if mv.context is not None and mv.state is not ModelState.UNAVAILABLE
            }
        roots = self._scratch.get(name, [])
        for root in list(roots):
            if not any(path.is_relative_to(root) for path in in_use):
                roots.remove(root)
                await asyncio.to_thread(remove_tree, root)
        origin = self._origins.get(name)
        if origin is not None:
            await asyncio.to_thread(origin.release, self.catalog.folder(name), in_use)

    def _lock(self, name: str) -> asyncio.Lock:
        lock = self._locks.get(name)
        if lock is None:
            lock = self._locks[name] = asyncio.Lock()
        return lock

    # -- index -----------------------------------------------------------------------

    async def index(self, ready: bool = False) -> list[ModelIndex]:
        """The repository index: models on disk or known to the server, with states."""
        fresh = await self._scan()
        return index_rows(fresh, self.registry, ready)

    # -- polling -------------------------------------------------------------------

    async def _poll_forever(self) -> None:
        interval = max(self.options.repository_poll_secs, 0.01)
        while True:
            await asyncio.sleep(interval)  # the poll period itself, not a wait for state
            try:
                await self.poll()
            except Exception:
                log.exception("polling the model repositories failed")

    async def poll(self) -> PollPlan:
        """Look at the repositories once and apply what changed."""
        async with self._poll_lock:
            catalog = await self._scan()
            found = await asyncio.to_thread(self._fingerprints, catalog)
            plan = plan_poll(self._known, found)
            self.catalog = catalog
            await asyncio.gather(
                *(self._poll_load(name) for name in plan.load),
                *(self._forget(name) for name in plan.unload),
            )
        return plan

    def _fingerprints(self, catalog: Catalog) -> dict[str, ModelFingerprint]:
        found: dict[str, ModelFingerprint] = {}
        for name, repo in catalog.models.items():
            try:
                found[name] = repo.fingerprint(catalog.folder(name))
            except (OSError, NaiadError) as exc:
                log.warning("cannot look at model '%s' (%s); keeping it as it is", name, exc)
                if name in self._known:
                    found[name] = self._known[name]
        for name, origin in self._origins.items():  # an unreachable repository is no removal
            if origin.location in catalog.missing and name in self._known:
                found.setdefault(name, self._known[name])
        return found

    async def _poll_load(self, name: str) -> None:
        try:
            await self.load(name)
        except NaiadError as exc:
            log.error("poll: %s", exc.message)

    async def _forget(self, name: str) -> None:
        await self.unload(name)
        self.registry.models.pop(name, None)
        self._origins.pop(name, None)
        log.info("poll: model '%s' is gone from the repositories", name)


def load_error(entry: ModelEntry, keep: frozenset[int], unreadable: bool) -> NaiadError | None:
    """Triton's error for a load that left ``entry`` (or a reloaded version) failed.

    An unreadable config is INTERNAL; a model or version that failed to
    initialize is INVALID_ARG, as Triton answers.
    """
    if entry.state is ModelState.UNAVAILABLE:
        if unreadable:
            return Internal(f"failed to load '{entry.name}': {entry.reason}")
        return InvalidArgument(f"load failed for model '{entry.name}': {entry.reason}\n")
    reasons = []
    for version, mv in sorted(entry.versions.items()):
        reload_error = mv.extra.pop("reload_error", None)
        if version in keep or version not in entry.selected:
            continue  # kept serving (READY versions only), or unloaded by the policy
        if mv.state is ModelState.UNAVAILABLE:
            reasons.append((version, mv.reason))
        elif reload_error is not None:
            reasons.append((version, reload_error))
    if not reasons:
        return None
    text = "".join(f"version {v} is at UNAVAILABLE state: {r};" for v, r in reasons)
    return InvalidArgument(f"load failed for model '{entry.name}': {text}\n")
