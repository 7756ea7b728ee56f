"""The repository index (rest.md §8.1): what the repositories hold, in the registry's states.

One row per (model, version) the server knows a state for; a model found in
the repositories but never loaded is listed by name only; a name found in
several repositories is UNAVAILABLE; UNLOADING shows while a version drains.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from naiad.core.model_state import ModelState
from naiad.engine.registry import ModelRegistry

if TYPE_CHECKING:
    from naiad.repository.sources import Catalog

DUPLICATE_REASON = "model appears in multiple repositories"


@dataclass(frozen=True, slots=True)
class ModelIndex:
    """One row of the index (Triton's ``RepositoryIndexResponse.ModelIndex``).

    An empty field is one the row does not have: a model never loaded has no
    version and no state, a state without trouble no reason.
    """

    name: str
    version: str = ""
    state: str = ""
    reason: str = ""


def index_rows(catalog: Catalog, registry: ModelRegistry, ready: bool) -> list[ModelIndex]:
    """Rows sorted by name and version; ``ready`` keeps only READY versions."""
    names = set(catalog.models) | set(catalog.duplicates) | set(registry.models)
    out: list[ModelIndex] = []
    for name in sorted(names):
        entry = registry.entry(name)
        if name in catalog.duplicates:
            if not ready:
                state = ModelState.UNAVAILABLE.value
                out.append(ModelIndex(name, state=state, reason=DUPLICATE_REASON))
            continue
        if entry is None or (not entry.versions and entry.state is None):
            if not ready:
                out.append(ModelIndex(name))
            continue
        if not entry.versions:
            assert entry.state is not None
            if not ready:
                out.append(ModelIndex(name, state=entry.state.value, reason=entry.reason))
            continue
        for version, mv in sorted(entry.versions.items()):
            if ready and not mv.ready:
                continue
            out.append(ModelIndex(name, str(version), mv.state.value, mv.reason))
    return out
