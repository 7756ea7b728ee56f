"""Remote repositories (``s3://``, ``gs://``, ``as://``, any fsspec URL) synced to a local cache.

Each fetch downloads a model folder into a fresh *snapshot* folder named by
its fingerprint, so a reload never rewrites files under a version that is
still serving; files whose stamp did not change are hard-linked from the
previous snapshot instead of downloaded again.  Snapshots no loaded version
uses are dropped on :meth:`FsspecRepository.release`.

URL forms follow Triton: ``s3://bucket/path``, ``s3://host:port/bucket/path``
(optionally ``s3://https://host:port/...``; plain ``host:port`` means http),
``gs://bucket/path``, ``as://account/container/path``.  Credentials come from
each filesystem's usual sources (``AWS_*`` variables, gcloud, Azure settings).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from naiad.core.errors import InvalidArgument, Unavailable
from naiad.repository.base import Repository
from naiad.repository.fingerprint import ModelFingerprint, fingerprint_entries
from naiad.repository.local import ModelSource
from naiad.repository.overrides import safe_relative

#: The naiad extra that installs each protocol's fsspec filesystem.
EXTRAS = {
    "s3": "s3", "s3a": "s3",
    "gs": "gcs", "gcs": "gcs",
    "abfs": "azure", "abfss": "azure", "az": "azure", "adl": "azure",
}  # fmt: skip


@dataclass(frozen=True)
class RemoteLocation:
    """An fsspec protocol, the root path inside it and the filesystem's options."""

    protocol: str
    root: str
    options: dict[str, Any] = field(default_factory=dict)


def parse_location(url: str) -> RemoteLocation:
    """Triton's repository URL forms, as fsspec arguments."""
    scheme, _, rest = url.partition("://")
    scheme = scheme.lower()
    rest = rest.strip("/")
    if scheme in ("s3", "s3a"):
        endpoint_scheme = ""
        for prefix in ("http://", "https://"):
            if rest.startswith(prefix):
                endpoint_scheme, rest = prefix[:-3], rest[len(prefix) :]
        host, _, path = rest.partition("/")
        if endpoint_scheme or ":" in host:
            return RemoteLocation(
                "s3", path.strip("/"), {"endpoint_url": f"{endpoint_scheme or 'http'}://{host}"}
            )
        return RemoteLocation("s3", rest)
    if scheme == "as":
        account, _, path = rest.partition("/")
        return RemoteLocation("abfs", path.strip("/"), {"account_name": account})
    return RemoteLocation(scheme, rest)


def open_filesystem(url: str, location: RemoteLocation) -> Any:
    """The fsspec filesystem of ``location``; a missing package names the extra to install."""
    extra = EXTRAS.get(location.protocol)
    hint = f"pip install 'naiad[{extra}]'" if extra else "install the fsspec filesystem package"
    try:
        import fsspec
    except ImportError:
        raise Unavailable(f"model repository '{url}' needs fsspec: {hint}") from None
    try:
        return fsspec.filesystem(location.protocol, skip_instance_cache=True, **location.options)
    except ImportError as exc:
        raise Unavailable(
            f"model repository '{url}' needs the filesystem package for "
            f"'{location.protocol}://' ({exc}): {hint}"
        ) from None
    except ValueError as exc:
        raise InvalidArgument(f"model repository '{url}': {exc}") from None


class FsspecRepository(Repository):
    """A repository behind an fsspec URL; models are served from local snapshots."""

    def __init__(self, url: str, cache_dir: Path, fs: Any = None) -> None:
        self.location = url
        self.remote = parse_location(url)
        self.fs = fs if fs is not None else open_filesystem(url, self.remote)
        self.root = self.remote.root
        self.cache_dir = cache_dir
        #: snapshot folder -> {relative path: stamp}, to reuse unchanged files.
        self._manifests: dict[Path, dict[str, str]] = {}
        self._latest: dict[str, Path] = {}

    # -- listing -------------------------------------------------------------------

    def _path(self, *parts: str) -> str:
        return "/".join(p for p in (self.root, *parts) if p)

    def exists(self) -> bool:
        self.fs.invalidate_cache()
        try:
            return bool(self.fs.isdir(self._path()))
        except (OSError, ValueError):
            return False

    def model_names(self) -> list[str]:
        self.fs.invalidate_cache()
        try:
            entries = self.fs.ls(self._path(), detail=True)
        except FileNotFoundError:
            return []
        names = {
            str(e["name"]).rstrip("/").rsplit("/", 1)[-1]
            for e in entries
            if e.get("type") == "directory"
        }
        return sorted(n for n in names if n and not n.startswith("."))

    def _listing(self, name: str) -> dict[str, tuple[str, str]]:
        """``{relative path: (remote path, stamp)}`` of one model folder."""
        self.fs.invalidate_cache()
        base = self._path(name)
        found = self.fs.find(base, withdirs=True, detail=True)
        prefix = self.fs._strip_protocol(base).rstrip("/") + "/"
        out: dict[str, tuple[str, str]] = {}
        for path, info in found.items():
            stripped = self.fs._strip_protocol(path)
            if not stripped.startswith(prefix):
                continue
            rel = stripped[len(prefix) :].rstrip("/")
            if not rel or any(p.startswith(".") for p in rel.split("/")):
                continue
            safe_relative(rel)  # an object key with '..' must not leave the snapshot
            if info.get("type") == "directory":
                out[rel] = (path, "dir")
                continue
            for part in _parents(rel):
                out.setdefault(part, (part, "dir"))
            changed = info.get("ETag") or info.get("mtime") or info.get("LastModified") or ""
            out[rel] = (path, f"{info.get('size')}:{changed}")
        return out

    def fingerprint(self, name: str) -> ModelFingerprint:
        return fingerprint_entries((rel, stamp) for rel, (_, stamp) in self._listing(name).items())

    # -- local snapshots -------------------------------------------------------------

    def fetch(self, name: str) -> ModelSource:
        listing = self._listing(name)
        if not listing:
            raise Unavailable(f"model '{name}' has no files in '{self.location}'")
        stamps = {rel: stamp for rel, (_, stamp) in listing.items()}
        digest = hashlib.sha256(repr(sorted(stamps.items())).encode()).hexdigest()[:16]
        snapshot = self.cache_dir / name / digest
        if snapshot in self._manifests:
            self._latest[name] = snapshot
            return ModelSource(name, snapshot / name, snapshot)
        partial = self.cache_dir / name / f".{digest}.{uuid.uuid4().hex}"
        try:
            self._download(name, listing, partial / name)
            partial.rename(snapshot)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        self._manifests[snapshot] = stamps
        self._latest[name] = snapshot
        return ModelSource(name, snapshot / name, snapshot)

    def _download(self, name: str, listing: dict[str, tuple[str, str]], dest: Path) -> None:
        previous = self._latest.get(name)
        old = self._manifests.get(previous, {}) if previous is not None else {}
        dest.mkdir(parents=True)
        for rel, (remote, stamp) in sorted(listing.items()):
            target = dest.joinpath(*rel.split("/"))
            if stamp == "dir":
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if previous is not None and old.get(rel) == stamp:
                source = previous / name / rel
                try:
                    os.link(source, target)
                    continue
                except OSError:
                    pass  # another filesystem, or gone: download it again
            self.fs.get_file(remote, str(target))

    def release(self, name: str, in_use: set[Path]) -> None:
        keep = {p.parent for p in in_use} | {self._latest.get(name)}
        for snapshot in list(self._manifests):
            if snapshot.parent.name == name and snapshot not in keep:
                shutil.rmtree(snapshot, ignore_errors=True)
                del self._manifests[snapshot]

    def close(self) -> None:
        shutil.rmtree(self.cache_dir, ignore_errors=True)
        self._manifests.clear()
        self._latest.clear()


def _parents(rel: str) -> list[str]:
    """``"1/sub/model.onnx"`` -> ``["1", "1/sub"]``: folders an object store leaves implicit."""
    parts = rel.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]
