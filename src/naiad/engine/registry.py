"""What is loaded: models, their versions and each version's state.

The repository says what exists on disk; the registry says what the server
serves.  States are Triton's: LOADING, READY, UNLOADING, UNAVAILABLE (with a
reason).  Look-ups raise the errors Triton answers for unknown models and
versions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from naiad.core.errors import InvalidArgument, NaiadError, NotFound, Unavailable
from naiad.core.model_state import ModelState as ModelState  # re-exported for dataplane
from naiad.core.stats import ModelStats

if TYPE_CHECKING:
    from naiad.backends.base import Backend, LoadContext, ModelInstance
    from naiad.config import ModelConfig
    from naiad.core.signature import Signature
    from naiad.engine.shadow import Shadow
    from naiad.engine.traffic import TrafficSplit
    from naiad.repository import ModelSource
    from naiad.scheduling import Scheduler


class ModelVersion:
    """One version of a model and everything needed to serve it."""

    __slots__ = (
        "name",
        "version",
        "state",
        "reason",
        "config",
        "signature",
        "backend",
        "context",
        "instances",
        "scheduler",
        "stats",
        "labels",
        "extra",
        "shadow",
    )

    def __init__(self, name: str, version: int) -> None:
        self.name = name
        self.version = version
        self.state = ModelState.LOADING
        self.reason = ""
        self.config: ModelConfig | None = None
        self.signature: Signature | None = None
        self.backend: Backend | None = None
        self.context: LoadContext | None = None
        self.instances: list[ModelInstance] = []
        self.scheduler: Scheduler | None = None
        self.stats = ModelStats()
        self.labels: dict[str, list[str]] = {}
        self.extra: dict[str, Any] = {}
        #: the model's shadow (engine/shadow.py), shared by its versions; None: none
        self.shadow: Shadow | None = None

    @property
    def ready(self) -> bool:
        return self.state is ModelState.READY

    def __repr__(self) -> str:
        return f"ModelVersion({self.name!r}, {self.version}, {self.state.value})"


class ModelEntry:
    """A model the server knows of; model-level failures have no version."""

    __slots__ = ("name", "source", "versions", "selected", "state", "reason", "config", "split")

    def __init__(self, name: str, source: ModelSource | None = None) -> None:
        self.name = name
        self.source = source
        #: every version loaded since the server started; those the version policy no
        #: longer selects stay UNAVAILABLE ("unloaded"), as Triton's index lists them
        self.versions: dict[int, ModelVersion] = {}
        #: the versions the last successful config's version policy selected
        self.selected: frozenset[int] = frozenset()
        self.state: ModelState | None = None  # set only for failures before versions exist
        self.reason = ""
        self.config: ModelConfig | None = None
        #: where requests that name no version go (engine/traffic.py); None: the latest
        self.split: TrafficSplit | None = None

    def ready_versions(self) -> list[ModelVersion]:
        return [v for _, v in sorted(self.versions.items()) if v.ready]


class ModelRegistry:
    def __init__(self) -> None:
        self.models: dict[str, ModelEntry] = {}
        #: plain names found in several repositories under ``--model-namespacing``: each
        #: one's models are known by their namespaced names only
        self.ambiguous: frozenset[str] = frozenset()

    def entry(self, name: str) -> ModelEntry | None:
        return self.models.get(name)

    def get(
        self, name: str, version: int | None = None, parameters: Mapping[str, object] | None = None
    ) -> ModelVersion:
        """The READY version to serve a request, or Triton's error for why not.

        Given a request's ``parameters``, a request that names no version goes where the
        model's traffic split sends it (engine/traffic.py), if it has one.
        """
        entry = self.models.get(name)
        if entry is None:
            raise self._unknown(name)
        if version is None and parameters is not None and entry.split is not None:
            version = entry.split.choose([v.version for v in entry.ready_versions()], parameters)
        if version is None:
            best: ModelVersion | None = None
            for v in entry.versions.values():
                if v.state is ModelState.READY and (best is None or v.version > best.version):
                    best = v
            if best is None:
                raise NotFound(f"Request for unknown model: '{name}' has no available versions")
            return best
        found = entry.versions.get(version)
        if found is None:
            raise NotFound(f"Request for unknown model: '{name}' version {version} is not found")
        if found.state is not ModelState.READY:
            raise Unavailable(
                f"Request for unknown model: '{name}' version {version} is not at ready state"
            )
        return found

    def _unknown(self, name: str) -> NaiadError:
        if name in self.ambiguous:  # Triton's words; naiad also takes <repository>/<name>
            return InvalidArgument(
                f"There are multiple identifiers of model '{name}' in global map, model "
                "namespace must be provided to resolve ambiguity."
            )
        return NotFound(f"Request for unknown model: '{name}' is not found")

    def find(self, name: str, version: int | None = None) -> ModelVersion:
        """Like :meth:`get` but also returns versions that are not READY."""
        entry = self.models.get(name)
        if entry is None:
            raise NotFound(f"Request for unknown model: '{name}' is not found")
        if version is None:
            return self.get(name, None)
        found = entry.versions.get(version)
        if found is None:
            raise NotFound(f"Request for unknown model: '{name}' version {version} is not found")
        return found

    def all_ready(self) -> list[ModelVersion]:
        out: list[ModelVersion] = []
        for name in sorted(self.models):
            out.extend(self.models[name].ready_versions())
        return out
