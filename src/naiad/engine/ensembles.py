"""Ensembles and the models they compose: loading order, readiness, what depends on what.

Loading an ensemble needs its composing models READY.  Model control
(``naiad.engine.model_control``) loads them before the ensemble; one that is
still loading when the ensemble gets here (a load that did not go through
model control) is waited for.  Waiting polls the registry with a short
back-off rather than hooking every exit of the loader's ``load``; a cycle
of ensembles waiting on each other is refused instead of waiting forever.

The dependencies are recorded here so that unloading a composing model can
make its ensembles unavailable (as Triton does, with its wording) and so that
``unload_dependents`` can find the models an ensemble brought in.  An
ensemble's readiness and whether it streams follow its composing models'
(:class:`EnsembleReadiness`, :func:`composing_decoupled`); running its steps
is the scheduler's (:mod:`naiad.scheduling.ensemble`).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from naiad.backends.base import ModelInstance
from naiad.core.errors import InvalidArgument, NaiadError, Unavailable
from naiad.core.model_state import ModelState

if TYPE_CHECKING:
    from naiad.core.types import InferenceRequest, InferenceResponse
    from naiad.engine.registry import ModelRegistry, ModelVersion
    from naiad.scheduling.ensemble_graph import EnsembleGraph

#: The loader's ``LOADING`` check: first and longest poll interval, in seconds.
_FIRST_POLL_S = 0.001
_MAX_POLL_S = 0.05


def not_available(ensemble: str, models: list[str]) -> str:
    return f"ensemble {ensemble} contains models that are not available: {', '.join(models)}"


class EnsembleDependencies:
    """Who composes whom, and which ensembles are waiting for which models."""

    def __init__(self) -> None:
        #: ensemble -> the model names its steps call.
        self.composing: dict[str, set[str]] = {}
        self._waiting: dict[str, set[str]] = {}

    def record(self, ensemble: str, models: set[str]) -> None:
        self.composing[ensemble] = set(models)

    def forget(self, ensemble: str) -> None:
        self.composing.pop(ensemble, None)

    def composing_of(self, ensemble: str) -> set[str]:
        """The models ``ensemble`` calls (for ``unload_dependents``)."""
        return set(self.composing.get(ensemble, ()))

    def dependents_of(self, model: str) -> list[str]:
        """The ensembles that call ``model``."""
        return sorted(e for e, models in self.composing.items() if model in models)

    def _reaches(self, start: str, target: str) -> bool:
        todo, seen = [start], set()
        while todo:
            name = todo.pop()
            if name == target:
                return True
            if name not in seen:
                seen.add(name)
                todo.extend(self._waiting.get(name, ()))
        return False

    async def require(
        self, ensemble: str, wanted: list[tuple[str, int | None]], registry: ModelRegistry
    ) -> None:
        """Return once every (model, version) is READY; raise INVALID_ARG if one is not."""
        missing: list[str] = []
        for name, version in wanted:
            if self._reaches(name, ensemble):
                raise InvalidArgument(
                    f"circular dependency between ensembles '{ensemble}' and '{name}'"
                )
            self._waiting.setdefault(ensemble, set()).add(name)
            try:
                await _settled(registry, name)
            finally:
                self._waiting.get(ensemble, set()).discard(name)
            if _ready(registry, name, version) is None:
                missing.append(name if version is None else f"{name} version {version}")
        self._waiting.pop(ensemble, None)
        if missing:
            raise InvalidArgument(not_available(ensemble, missing))


def _loading(registry: ModelRegistry, name: str) -> bool:
    entry = registry.entry(name)
    if entry is None:
        return False
    if entry.state is ModelState.LOADING:
        return True
    return any(v.state is ModelState.LOADING for v in entry.versions.values())


async def _settled(registry: ModelRegistry, name: str) -> None:
    delay = _FIRST_POLL_S
    while _loading(registry, name):
        await asyncio.sleep(delay)
        delay = min(delay * 2, _MAX_POLL_S)


def _ready(registry: ModelRegistry, name: str, version: int | None) -> ModelVersion | None:
    try:
        return registry.get(name, version)
    except Exception:
        return None


class EnsembleReadiness(ModelInstance):
    """Stands for the ensemble's instances: ready while every composing model is."""

    def __init__(self, registry: ModelRegistry, graph: EnsembleGraph) -> None:
        self.registry = registry
        self.composing = graph.composing()

    def is_ready(self) -> bool:
        for name, version in self.composing:
            try:
                mv = self.registry.get(name, version)
            except NaiadError:
                return False
            if not all(instance.is_ready() for instance in mv.instances):
                return False
        return True

    def execute(self, requests: list[InferenceRequest]) -> list[InferenceResponse]:
        raise Unavailable("an ensemble has no instances to execute on")


def composing_decoupled(registry: ModelRegistry, graph: EnsembleGraph) -> bool:
    """Mark the decoupled steps (composing models are loaded); True if any is."""
    for step in graph.steps:
        mv = registry.get(step.model, step.version)
        step.decoupled = bool(mv.signature is not None and mv.signature.decoupled)
    return any(step.decoupled for step in graph.steps)
