"""Where models come from: local folders or fsspec URLs, behind one small interface.

A :class:`Repository` lists model names, fingerprints a model folder and
*fetches* it: a local repository hands out the folder itself, a remote one
syncs the folder into a local cache first.  Backends therefore only ever see
local paths, and the loader does not know which kind it got.
"""

from __future__ import annotations

import abc
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from naiad.repository.fingerprint import ModelFingerprint, local_fingerprint
from naiad.repository.local import ModelSource

#: ``scheme://`` (at least two letters, so Windows drives are not URLs).
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")
#: The same URL after ``pathlib.Path`` folded its ``//`` into ``/``.
_FOLDED_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):/(?!/)")


class Repository(abc.ABC):
    """One ``--model-repository`` location."""

    location: str

    @abc.abstractmethod
    def exists(self) -> bool:
        """Whether the location can be listed at all."""

    @abc.abstractmethod
    def model_names(self) -> list[str]:
        """Model folders, sorted; hidden names skipped."""

    @abc.abstractmethod
    def fingerprint(self, name: str) -> ModelFingerprint:
        """The fingerprint of one model folder as it is now."""

    @abc.abstractmethod
    def fetch(self, name: str) -> ModelSource:
        """A local folder holding the model as it is now, ready for the loader."""

    def release(self, name: str, in_use: set[Path]) -> None:
        """Drop local copies of ``name`` whose model folder is not in ``in_use``."""
        return None  # local folders are the originals

    def close(self) -> None:
        """Drop local copies (the server has unloaded every model by now)."""
        return None


class LocalRepository(Repository):
    """A folder on this machine: models are served from where they are."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.location = str(path)

    def exists(self) -> bool:
        return self.path.is_dir()

    def model_names(self) -> list[str]:
        try:
            entries = sorted(os.scandir(self.path), key=lambda e: e.name)
        except OSError:
            return []
        return [e.name for e in entries if not e.name.startswith(".") and e.is_dir()]

    def fingerprint(self, name: str) -> ModelFingerprint:
        return local_fingerprint(self.path / name)

    def fetch(self, name: str) -> ModelSource:
        return ModelSource(name, self.path / name, self.path)


@dataclass
class Catalog:
    """Model names across all repositories; a name found in several is a duplicate."""

    models: dict[str, Repository] = field(default_factory=dict)
    duplicates: dict[str, list[str]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)


def is_url(location: str | Path) -> bool:
    """Whether a repository location names a remote (fsspec) repository."""
    text = str(location)
    return bool(_URL.match(text) or _FOLDED_URL.match(text)) and not text.startswith("file:")


def _unfold(location: str | Path) -> str:
    """Undo ``Path("s3://b/p")`` -> ``"s3:/b/p"``, which callers may have done in passing."""
    text = str(location)
    return _FOLDED_URL.sub(r"\1://", text) if isinstance(location, Path) else text


class Repositories:
    """Every configured repository; remote ones share one private cache folder."""

    def __init__(self, locations: tuple[str | Path, ...] | list[str | Path]) -> None:
        self._cache: Path | None = None
        self.repositories: list[Repository] = []
        for location in locations:
            self.repositories.append(self._open(location))

    def _open(self, location: str | Path) -> Repository:
        text = _unfold(location)
        if text.startswith("file://"):
            return LocalRepository(Path(text[len("file://") :]))
        if not is_url(text):
            return LocalRepository(Path(location))
        from naiad.repository.cloud import FsspecRepository

        if self._cache is None:
            self._cache = Path(tempfile.mkdtemp(prefix="naiad-repository-cache-"))
        return FsspecRepository(text, self._cache / str(len(self.repositories)))

    def scan(self) -> Catalog:
        """List every repository (blocking: call it off the event loop)."""
        catalog = Catalog()
        seen: dict[str, list[Repository]] = {}
        for repo in self.repositories:
            if not repo.exists():
                catalog.missing.append(repo.location)
                continue
            for name in repo.model_names():
                seen.setdefault(name, []).append(repo)
        for name, repos in sorted(seen.items()):
            if len(repos) > 1:
                catalog.duplicates[name] = [f"{r.location.rstrip('/')}/{name}" for r in repos]
            else:
                catalog.models[name] = repos[0]
        return catalog

    def close(self) -> None:
        for repo in self.repositories:
            repo.close()
        if self._cache is not None:
            shutil.rmtree(self._cache, ignore_errors=True)
            self._cache = None
