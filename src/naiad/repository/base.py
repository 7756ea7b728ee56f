"""What a model repository is: one ``--model-repository`` location behind a small interface.

A :class:`Repository` lists model names, fingerprints a model folder and
*fetches* it: a local repository hands out the folder itself, a remote one
(:mod:`naiad.repository.cloud`) syncs the folder into a local cache first.
Backends therefore only ever see local paths, and the loader does not know
which kind it got.
"""

from __future__ import annotations

import abc
import os
from pathlib import Path

from naiad.repository.fingerprint import ModelFingerprint, local_fingerprint
from naiad.repository.local import ModelSource


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
