"""Residency: which of the repository's models hold memory, under a budget.

With ``--model-memory-budget`` or ``--model-idle-unload-secs`` the server
knows every model of its repositories without loading them all: a model
loads on the first request that needs it (the request waits, it is not
refused), and models are unloaded again, least recently used first, when a
load would pass the budget or when no request has used them for the idle
time.  The rules that keep this safe:

- A model is never unloaded while it has requests queued or running, live
  sequences, requests waiting for its load, or a loaded ensemble that calls
  it; nor while it is pinned (``--model-pin``, the parameter
  ``naiad.pinned``).
- One load per model at a time: the requests that arrive while it loads
  wait for that load, and when it fails each of them gets its error, from
  one attempt.  The model is then tried again only once its files change or
  an explicit load asks.
- A load counts what it is expected to take (the memory it took last time;
  for a model never loaded, its files' size or the mean of the other models'
  figures, whichever is larger) against the budget before it starts, so two
  loads cannot both take the last free memory; once loaded, the measured
  figure replaces the estimate and the budget is checked again.  Until one
  model has been measured, on-demand loads run one at a time.
- Explicit control wins: a model unloaded through the API stays unloaded
  until it is loaded through the API, and an explicit load happens even
  when nothing can be unloaded to make room (the budget is then restored as
  soon as models go idle).

With ``--workers N`` every worker keeps its own models under ``1/N`` of the
budget: on-demand loads and unloads are each worker's own, explicit ones
are every worker's.  Memory is the host memory measured at load
(engine/memory.py); GPU memory is reported, not budgeted.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from naiad import config as cfg
from naiad.core.errors import InvalidArgument, NaiadError
from naiad.core.model_state import ModelState
from naiad.core.signature import Signature
from naiad.engine import memory
from naiad.repository import select_versions
from naiad.repository.base import LocalRepository, Repository
from naiad.repository.fingerprint import ModelFingerprint

if TYPE_CHECKING:
    from naiad.engine.model_control import ModelControl
    from naiad.engine.registry import ModelEntry, ModelRegistry, ModelVersion
    from naiad.options.declarations import ServerOptions
    from naiad.repository import Catalog

log = logging.getLogger("naiad")

PINNED = "naiad.pinned"
#: Why a model was unloaded, as the repository index says it (Triton's "unloaded", detailed).
BUDGET_REASON = "unloaded: least recently used, to fit the memory budget"
IDLE_REASON = "unloaded: idle for {secs:g} s"
#: How long a load waits for busy models to go idle before it passes the budget.
ROOM_WAIT_S = 30.0
_ROOM_POLL_S = 0.05
#: States whose instances hold memory.
_HOLDING = (ModelState.READY, ModelState.LOADING, ModelState.UNLOADING)


@dataclass
class ModelResidency:
    """What residency did to one model: counters for the metrics and the dashboard."""

    loads: int = 0
    load_failures: int = 0
    evictions: Counter[str] = field(default_factory=Counter)  # "budget" / "idle" -> count
    load_waits: int = 0  # requests that waited for a load
    load_wait_ns: int = 0
    loaded_at_ms: int = 0  # wall clock, as the statistics' last_inference


@dataclass(frozen=True)
class Described:
    """A model known without being loaded: its completed config and the versions its
    policy would load (what metadata and config questions need)."""

    config: cfg.ModelConfig
    versions: tuple[int, ...]
    signature: Signature


@dataclass(frozen=True)
class Resident:
    """One row of the residency view."""

    name: str
    state: str  # "loaded", "loading", "unloading", "unloaded", "failed", "not loaded"
    memory: int | None  # host bytes held (None: unknown)
    idle_ms: int | None  # since its last request or its load; None when not loaded
    pinned: bool
    loads: int
    evictions: dict[str, int]
    load_waits: int
    load_wait_ns: int
    reason: str


@dataclass(frozen=True)
class ResidencySnapshot:
    budget: int  # bytes for this process (0: none)
    idle_unload_secs: float
    used: int  # host bytes the loaded models hold
    models: tuple[Resident, ...]


class Residency:
    """One per data plane; on the request path only when a request's model is not loaded."""

    def __init__(self, control: ModelControl, registry: ModelRegistry, options: ServerOptions):
        self.control = control
        self.registry = registry
        self.whole_budget = options.model_memory_budget
        #: This process's share (``--workers``: every worker holds its own models); set
        #: again at start, when the worker knows how many there are.
        self.budget = self.whole_budget
        self.idle_secs = options.model_idle_unload_secs
        self.flag_pinned = frozenset(options.pinned_models)
        self.config_pinned: set[str] = set()  # naiad.pinned read at start
        self.models: dict[str, ModelResidency] = {}
        self._config_name = options.model_config_name
        self._loads: dict[str, asyncio.Task[None]] = {}
        self._waiting: Counter[str] = Counter()  # requests waiting for a load, per model
        self._reserved: dict[str, int] = {}  # loads under way -> bytes expected
        self._evicting: dict[str, asyncio.Event] = {}  # unloads under way -> set when done
        self._failed: dict[str, tuple[ModelFingerprint | None, NaiadError]] = {}
        self._last_cost: dict[str, int] = {}  # memory measured at a model's last load
        self._described: dict[str, Described] = {}  # never loaded, asked about
        self._first = asyncio.Lock()
        self._warned = False
        self._timer: asyncio.Task[None] | None = None

    # -- lifecycle -----------------------------------------------------------------

    async def start(self, workers: int = 1) -> None:
        """Load the pinned models, then watch idleness and the budget."""
        self.budget = self.whole_budget // max(1, workers)
        memory.map_large_blocks()  # an unload must free what the budget counts
        catalog = self.control.catalog
        self.config_pinned = await asyncio.to_thread(self._read_pins, catalog)
        pinned = sorted((self.flag_pinned | self.config_pinned) - set(catalog.duplicates))
        for name in pinned:
            if name not in catalog.models:
                log.warning("--model-pin names '%s', which no repository holds", name)
                continue
            with contextlib.suppress(NaiadError):  # reported by the load, as at start-up
                await self.ensure(name)
        self._timer = asyncio.get_running_loop().create_task(self._watch())

    async def close(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await timer
        for task in list(self._loads.values()):
            with contextlib.suppress(BaseException):
                await task

    def _read_pins(self, catalog: Catalog) -> set[str]:
        """The local models whose config sets naiad.pinned (remote ones: ``--model-pin``)."""
        found = set()
        for name, repo in catalog.models.items():
            if not isinstance(repo, LocalRepository):
                continue
            try:
                config = cfg.read_model_config(repo.path / catalog.folder(name), self._config_name)
            except (NaiadError, OSError):
                continue  # the load will say what is wrong with it
            if config is not None and _pinned_in(config):
                found.add(name)
        return found

    # -- the request path's questions ----------------------------------------------

    def manages(self, name: str) -> bool:
        """Whether a request for ``name`` that found no READY version should wait for a load:
        the repositories hold it, it was not unloaded by request, and nothing of it serves."""
        if name not in self.control.catalog.models or name in self.control.unloaded_by_request:
            return False
        entry = self.registry.models.get(name)
        return entry is None or name in self._evicting or not entry.ready_versions()

    async def describe(self, name: str) -> None:
        """Know ``name``'s config without loading it: read and completed as a load would
        (a broken one raises its error), once.  One that has loaded keeps its own."""
        entry = self.registry.models.get(name)
        if name in self._described or (entry is not None and entry.config is not None):
            return
        repo = self.control.catalog.models.get(name)
        if repo is not None:
            self._described[name] = await asyncio.to_thread(self._prepare, name, repo)

    def _prepare(self, name: str, repo: Repository) -> Described:
        source = repo.fetch(self.control.catalog.folder(name))
        namespace = repo.location if self.control.options.model_namespacing else ""
        source = dataclasses.replace(source, name=name, namespace=namespace)
        config = self.control.loader.prepare_config(source)
        versions = tuple(select_versions(config.version_policy, source.versions()))
        return Described(config, versions, Signature(config))

    def described(self, name: str) -> Described | None:
        """What is known of ``name`` while it is not loaded: its last loaded config, or
        the one :meth:`describe` read; None when neither."""
        entry = self.registry.models.get(name)
        if entry is not None and entry.config is not None:
            found = self._described.pop(name, None)  # it loaded since: its own config now
            versions = tuple(sorted(entry.selected))
            signature = next(
                (mv.signature for mv in entry.versions.values() if mv.signature is not None),
                None,
            ) or (found.signature if found is not None else Signature(entry.config))
            return Described(entry.config, versions, signature)
        return self._described.get(name)

    async def wait(self, name: str) -> None:
        """Until ``name`` is loaded (its load's error when it fails); counted as a load wait.

        The caller admits its request right after this returns, in the same step of
        the event loop, so no unload can come in between.
        """
        started = time.monotonic_ns()
        self._waiting[name] += 1
        try:
            await self.ensure(name)
        finally:
            self._waiting[name] -= 1
            if not self._waiting[name]:
                del self._waiting[name]
            stats = self._stats(name)
            stats.load_waits += 1
            stats.load_wait_ns += time.monotonic_ns() - started

    async def ensure(self, name: str) -> None:
        """Load ``name`` unless it is loaded or loading; one load however many ask."""
        task = self._loads.get(name)
        if task is None:
            failed = self._failed.get(name)
            if failed is not None:
                if await self._unchanged(name, failed[0]):
                    raise failed[1]
                del self._failed[name]
            task = self._loads.get(name)  # another request may have started it meanwhile
        if task is None:
            task = asyncio.get_running_loop().create_task(self._load(name))
            self._loads[name] = task
            task.add_done_callback(self._loaded)
        await asyncio.shield(task)

    def _loaded(self, task: asyncio.Task[None]) -> None:
        name = next(n for n, t in self._loads.items() if t is task)
        del self._loads[name]
        if not task.cancelled():
            task.exception()  # each waiter has it; retrieved here when none waits any more

    async def _unchanged(self, name: str, fingerprint: ModelFingerprint | None) -> bool:
        repo = self.control.catalog.models.get(name)
        if repo is None or fingerprint is None:
            return True
        try:
            folder = self.control.catalog.folder(name)
            return await asyncio.to_thread(repo.fingerprint, folder) == fingerprint
        except (OSError, NaiadError):
            return True

    # -- loading and unloading -----------------------------------------------------

    async def _load(self, name: str) -> None:
        if not self._last_cost:
            async with self._first:  # nothing measured yet: one at a time until one is
                if not self._last_cost:
                    await self._load_counted(name)
                    return
        await self._load_counted(name)

    async def _load_counted(self, name: str) -> None:
        """Load ``name`` with room made for what it is expected to take."""
        expected = self._last_cost.get(name)
        if expected is None:
            on_disk = await asyncio.to_thread(self._disk_size, name)
            costs = list(self._last_cost.values())
            expected = max(on_disk, sum(costs) // len(costs) if costs else 0)
        self._reserved[name] = expected
        try:
            await self._make_room(loading=name)
            await self.control.load(name)
        except NaiadError as exc:
            self._stats(name).load_failures += 1
            self._failed[name] = (self.control.known_fingerprint(name), exc)
            raise
        finally:
            del self._reserved[name]
        stats = self._stats(name)
        stats.loads += 1
        stats.loaded_at_ms = time.time_ns() // 1_000_000
        self._last_cost[name] = self.holding(name)
        log.info("loaded '%s' on demand (%s)", name, _size(self._last_cost[name]))
        await self._make_room()

    def _disk_size(self, name: str) -> int:
        repo = self.control.catalog.models.get(name)
        if not isinstance(repo, LocalRepository):
            return 0
        total = 0
        for root, _, files in os.walk(repo.path / self.control.catalog.folder(name)):
            for file in files:
                with contextlib.suppress(OSError):
                    total += (Path(root) / file).stat().st_size
        return total

    async def _make_room(self, loading: str | None = None) -> None:
        """Unload least recently used idle models until the budget holds.

        Before ``loading`` loads: until what is loaded, and what it and the loads that
        began before it expect to take, fits (first come, first served: a later load
        never takes the room an earlier one counted on).  When no model can be unloaded
        now but one will be (requests running, earlier loads), it waits for that, up to
        :data:`ROOM_WAIT_S`; then, or when nothing ever can be (pinned, in use by
        ensembles, a model bigger than the budget), the load goes ahead over the budget
        and says so.  Without ``loading`` (after a load, and each second): only what is
        loaded must fit.
        """
        waited = 0.0
        while self.budget and self._needed(loading) > self.budget:
            victim = self._least_recently_used(loading)
            if victim is not None:
                await self._evict(victim, "budget")
                continue
            if loading is not None and waited < ROOM_WAIT_S and self._will_free(loading):
                await asyncio.sleep(_ROOM_POLL_S)  # rare: every model busy, none idle yet
                waited += _ROOM_POLL_S
                continue
            if not self._warned:
                log.warning(
                    "models hold %s, over the memory budget of %s, and none can be "
                    "unloaded now (busy, pinned or used by an ensemble)",
                    _size(self._needed(loading)),
                    _size(self.budget),
                )
                self._warned = True
            return
        self._warned = False
        if loading is not None:
            # The room counted what the unloads under way free: the load starts once
            # they have freed it, not while both would be held.
            for done in list(self._evicting.values()):
                await done.wait()

    def _needed(self, loading: str | None) -> int:
        # An unload under way frees what its model still holds: counted as free already,
        # and never twice (what it held leaves ``used`` as its versions go).
        held = sum(
            self.holding(name) for name in self.registry.models if name not in self._evicting
        )
        if loading is None:
            return held
        for name, expected in self._reserved.items():  # in the order the loads began
            held += expected
            if name == loading:
                break
        return held

    def _will_free(self, loading: str) -> bool:
        """Whether a model that cannot be unloaded now will be: busy, or loading before
        ``loading``."""
        for name in self._reserved:
            if name == loading:
                break
            return True
        return any(
            not self.pinned(name) and any(_busy(mv) for mv in entry.versions.values())
            for name, entry in self.registry.models.items()
        ) or any(name != loading for name in self._waiting)

    def used(self) -> int:
        return sum(self.holding(name) for name in self.registry.models)

    def holding(self, name: str) -> int:
        entry = self.registry.models.get(name)
        if entry is None:
            return 0
        return sum(
            usage.byte_size
            for mv in entry.versions.values()
            if mv.state in _HOLDING
            for usage in mv.stats.memory
            if usage.type == "CPU"
        )

    def _least_recently_used(self, loading: str | None) -> str | None:
        candidates = [
            (self.last_used_ms(entry), name)
            for name, entry in self.registry.models.items()
            if name != loading and self._evictable(name, entry)
        ]
        return min(candidates)[1] if candidates else None

    def _evictable(self, name: str, entry: ModelEntry) -> bool:
        if name in self._evicting or name in self._loads or self._waiting[name]:
            return False
        if self.pinned(name) or not entry.ready_versions():
            return False
        if any(_busy(mv) for mv in entry.versions.values()):
            return False
        for ensemble in self.control.loader.dependencies.dependents_of(name):
            if ensemble in self._loads:  # its load needs its steps: making room for it
                return False  # must not unload one (the load would fail, step missing)
            user = self.registry.models.get(ensemble)
            if user is not None and user.ready_versions():
                return False
        return True

    def pinned(self, name: str) -> bool:
        if name in self.flag_pinned or name in self.config_pinned:
            return True
        entry = self.registry.models.get(name)
        return entry is not None and entry.config is not None and _pinned_in(entry.config)

    def last_used_ms(self, entry: ModelEntry) -> int:
        """Its last request's end, or its load when no request came since (wall clock, ms)."""
        stats = self.models.get(entry.name)
        loaded = stats.loaded_at_ms if stats is not None else 0
        return max([loaded, *(mv.stats.last_inference_ms for mv in entry.versions.values())])

    async def _evict(self, name: str, why: str) -> None:
        done = self._evicting[name] = asyncio.Event()
        self._failed.pop(name, None)  # it loaded since (an explicit load): that error is old
        reason = BUDGET_REASON if why == "budget" else IDLE_REASON.format(secs=self.idle_secs)
        try:
            await self.control.evict(name, reason)
        finally:
            del self._evicting[name]
            done.set()
        self._stats(name).evictions[why] += 1
        log.info("unloaded '%s': %s", name, reason.removeprefix("unloaded: "))

    async def _watch(self) -> None:
        """Unload models idle for too long, and restore the budget once models go idle."""
        period = min(self.idle_secs / 4, 1.0) if self.idle_secs else 1.0
        while True:
            await asyncio.sleep(period)  # a period, not a wait for state
            try:
                await self._sweep()
            except Exception:
                log.exception("residency: checking idle models failed")

    async def _sweep(self) -> None:
        if self.idle_secs:
            now_ms = time.time_ns() // 1_000_000
            limit_ms = int(self.idle_secs * 1000)
            for name, entry in list(self.registry.models.items()):
                if self._evictable(name, entry) and now_ms - self.last_used_ms(entry) >= limit_ms:
                    await self._evict(name, "idle")
        await self._make_room()

    def _stats(self, name: str) -> ModelResidency:
        stats = self.models.get(name)
        if stats is None:
            stats = self.models[name] = ModelResidency()
        return stats

    # -- what the dashboard and the metrics read ------------------------------------

    def snapshot(self) -> ResidencySnapshot:
        now_ms = time.time_ns() // 1_000_000
        rows = []
        names = sorted(set(self.control.catalog.models) | set(self.registry.models))
        for name in names:
            entry = self.registry.models.get(name)
            stats = self.models.get(name) or ModelResidency()
            state, reason = self._state(name, entry)
            loaded = state == "loaded"
            rows.append(
                Resident(
                    name,
                    state,
                    self.holding(name) if entry is not None and loaded else None,
                    now_ms - self.last_used_ms(entry) if entry is not None and loaded else None,
                    self.pinned(name),
                    stats.loads,
                    dict(stats.evictions),
                    stats.load_waits,
                    stats.load_wait_ns,
                    reason,
                )
            )
        return ResidencySnapshot(self.budget, self.idle_secs, self.used(), tuple(rows))

    def _state(self, name: str, entry: ModelEntry | None) -> tuple[str, str]:
        if name in self._loads:
            return "loading", ""
        if name in self._evicting:
            return "unloading", ""
        if entry is not None and entry.ready_versions():
            return "loaded", ""
        if name in self._failed:
            return "failed", self._failed[name][1].message.strip()
        if entry is None:
            return "not loaded", ""
        reasons = [mv.reason for mv in entry.versions.values() if mv.reason]
        return "unloaded", (reasons[0] if reasons else entry.reason)


def residency_from_options(
    control: ModelControl, registry: ModelRegistry, options: ServerOptions
) -> Residency | None:
    """The server's residency, None when neither a budget nor an idle time is set."""
    if not options.model_memory_budget and not options.model_idle_unload_secs:
        return None
    if options.model_control_mode == "poll":
        raise InvalidArgument(
            "--model-memory-budget and --model-idle-unload-secs work in model control "
            "modes none and explicit, not poll (docs/residency.md)"
        )
    return Residency(control, registry, options)


def _busy(mv: ModelVersion) -> bool:
    """Requests queued or running, or sequences open (their state would be lost)."""
    scheduler = mv.scheduler
    if mv.stats.pending or (scheduler is not None and scheduler.in_flight):
        return True
    sequences = getattr(scheduler, "sequence_count", None)
    return sequences is not None and sequences() > 0


def _pinned_in(config: cfg.ModelConfig) -> bool:
    value = config.parameters.get(PINNED)
    return value is not None and value.string_value.strip().lower() in ("true", "1", "yes", "on")


def _size(size: int) -> str:
    """A byte count as the log writes it: ``16.0 MiB``."""
    if size < 1024:
        return f"{size} B"
    value = float(size)
    for unit in ("KiB", "MiB", "GiB"):
        value /= 1024
        if value < 1024 or unit == "GiB":
            break
    return f"{value:.1f} {unit}"
