"""What is on disk: model folders in one or more local repositories.

The repository only finds models and their versions; which of them are
loaded, and in which state, is the registry's business.  Later sources
(cloud storage, polling) produce the same :class:`ModelSource` values.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from naiad.core.errors import InvalidArgument, NotFound


@dataclass(frozen=True)
class ModelSource:
    """A model folder: ``<repository>/<name>/``."""

    name: str
    path: Path
    repository: Path
    #: with ``--model-namespacing``: the repository's location, where an ensemble's
    #: steps are looked for first ("" without namespacing)
    namespace: str = ""

    def versions(self) -> list[int]:
        """Numeric version sub-folders, ascending; other names are ignored as in Triton."""
        found: list[int] = []
        try:
            entries = list(os.scandir(self.path))
        except OSError:
            return []
        for entry in entries:
            name = entry.name
            if entry.is_dir() and name.isdigit() and (name == "0" or not name.startswith("0")):
                found.append(int(name))
        return sorted(found)


@dataclass
class RepositoryScan:
    """Models found across all repositories; a name in several is a duplicate."""

    models: dict[str, ModelSource] = field(default_factory=dict)
    duplicates: dict[str, list[Path]] = field(default_factory=dict)
    missing: list[Path] = field(default_factory=list)


def scan(repositories: list[Path]) -> RepositoryScan:
    """Find every model folder of ``repositories`` (hidden folders skipped)."""
    result = RepositoryScan()
    seen: dict[str, list[Path]] = {}
    for repo in repositories:
        if not repo.is_dir():
            result.missing.append(repo)
            continue
        for entry in sorted(os.scandir(repo), key=lambda e: e.name):
            if entry.name.startswith(".") or not entry.is_dir():
                continue
            seen.setdefault(entry.name, []).append(Path(entry.path))
            if entry.name not in result.models:
                result.models[entry.name] = ModelSource(entry.name, Path(entry.path), repo)
    for name, paths in seen.items():
        if len(paths) > 1:
            result.duplicates[name] = paths
            del result.models[name]
    return result


def check_repositories(repositories: list[Path]) -> None:
    """Refuse a repository path that does not exist, as Triton does at start-up."""
    for repo in repositories:
        if not repo.exists():
            raise NotFound(f"failed to stat file {repo}")
        if not repo.is_dir():
            raise InvalidArgument(f"model repository path is not a directory: {repo}")


def select_versions(policy: object, available: list[int]) -> list[int]:
    """Versions a ``ModelVersionPolicy`` serves out of ``available`` (ascending).

    As in Triton, ``specific`` versions that are not on disk are left out (a
    policy that selects none fails the load).
    """
    which = policy.WhichOneof("policy_choice")  # type: ignore[attr-defined]
    if which == "all":
        return list(available)
    if which == "specific":
        wanted = set(policy.specific.versions)  # type: ignore[attr-defined]
        return [v for v in available if v in wanted]
    n = policy.latest.num_versions if which == "latest" else 1  # type: ignore[attr-defined]
    return available[-n:] if n > 0 else []  # latest { num_versions: 0 } selects nothing


def read_labels(model_dir: Path, filename: str) -> list[str]:
    """Labels file of a classification output: one label per line."""
    path = model_dir / filename
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidArgument(f"unable to read label file '{path}': {exc.strerror}") from None
    return text.splitlines()
