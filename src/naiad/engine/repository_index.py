"""The repository index (rest.md §8.1): what the repositories hold, in the registry's states.

One row per (model, version) the server knows a state for; a model found in
the repositories but never loaded is listed by name only; a name found in
several repositories is UNAVAILABLE; UNLOADING shows while a version drains.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from naiad.core.model_state import ModelState
from naiad.engine.registry import ModelRegistry

if TYPE_CHECKING:
    from naiad.repository.sources import Catalog

DUPLICATE_REASON = "model appears in multiple repositories"


def index_rows(catalog: Catalog, registry: ModelRegistry, ready: bool) -> list[dict[str, str]]:
    """Rows sorted by name and version; ``ready`` keeps only READY versions."""
    names = set(catalog.models) | set(catalog.duplicates) | set(registry.models)
    out: list[dict[str, str]] = []
    for name in sorted(names):
        entry = registry.entry(name)
        if name in catalog.duplicates:
            if not ready:
                state = ModelState.UNAVAILABLE.value
                out.append({"name": name, "state": state, "reason": DUPLICATE_REASON})
            continue
        if entry is None or (not entry.versions and entry.state is None):
            if not ready:
                out.append({"name": name})
            continue
        if not entry.versions:
            assert entry.state is not None
            if not ready:
                item = {"name": name, "state": entry.state.value}
                if entry.reason:
                    item["reason"] = entry.reason
                out.append(item)
            continue
        for version, mv in sorted(entry.versions.items()):
            if ready and not mv.ready:
                continue
            item = {"name": name, "version": str(version), "state": mv.state.value}
            if mv.reason:
                item["reason"] = mv.reason
            out.append(item)
    return out
