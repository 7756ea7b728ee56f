"""Where models come from: every ``--model-repository`` location, opened and scanned together."""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from naiad.repository.base import LocalRepository, Repository

#: ``scheme://`` (at least two letters, so Windows drives are not URLs).
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")
#: The same URL after ``pathlib.Path`` folded its ``//`` into ``/``.
_FOLDED_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):/(?!/)")


@dataclass
class Catalog:
    """Model names across all repositories; a name found in several is a duplicate.

    With namespacing (``--model-namespacing``), a name found in several
    repositories is no duplicate: each repository's model is known by its
    namespaced name (:func:`namespaced`), and the plain name is ambiguous.
    """

    models: dict[str, Repository] = field(default_factory=dict)
    duplicates: dict[str, list[str]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    #: namespaced name -> the model's folder name in its repository
    folders: dict[str, str] = field(default_factory=dict)
    #: a plain name found in several repositories -> its namespaced names
    ambiguous: dict[str, list[str]] = field(default_factory=dict)

    def folder(self, name: str) -> str:
        """The folder of model ``name`` (namespaced or not) in its repository."""
        return self.folders.get(name, name)


def namespaced(name: str, location: str) -> str:
    """A model's name in its repository's namespace: ``<repository>/<name>`` (a model's
    folder name never holds a ``/``, so it cannot clash with a plain name)."""
    return f"{location.rstrip('/')}/{name}"


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

    def scan(self, namespacing: bool = False) -> Catalog:
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
            if len(repos) == 1:
                catalog.models[name] = repos[0]
            elif namespacing:
                keys = catalog.ambiguous[name] = [namespaced(name, r.location) for r in repos]
                for key, repo in zip(keys, repos, strict=True):
                    catalog.models[key] = repo
                    catalog.folders[key] = name
            else:
                catalog.duplicates[name] = [namespaced(name, r.location) for r in repos]
        return catalog

    def close(self) -> None:
        for repo in self.repositories:
            repo.close()
        if self._cache is not None:
            shutil.rmtree(self._cache, ignore_errors=True)
            self._cache = None
