"""What a model folder looks like now, cheaply, to tell what changed since last time.

Polling and explicit loads reload only what changed: the model part (config,
labels, anything outside version folders) or single version folders.  A
fingerprint is built from each file's relative path and a stamp (size and
modification time locally, plus a digest of small files such as configs;
ETag or modification time remotely), so it costs one directory listing and
never reads large model files.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path


def is_version_name(name: str) -> bool:
    """Triton's version folders: decimal digits without a leading zero (``0`` allowed)."""
    return name.isdigit() and (name == "0" or not name.startswith("0"))


@dataclass(frozen=True)
class ModelFingerprint:
    """Digest of the model part and of each version folder."""

    model: str
    versions: Mapping[int, str] = field(default_factory=dict)

    def changed_versions(self, other: ModelFingerprint) -> set[int]:
        """Versions whose folder differs from ``other`` (added and removed included)."""
        keys = set(self.versions) | set(other.versions)
        return {v for v in keys if self.versions.get(v) != other.versions.get(v)}

    def unchanged_versions(self, previous: ModelFingerprint | None) -> frozenset[int]:
        """Versions that may keep serving as they are: none when the model part changed."""
        if previous is None or previous.model != self.model:
            return frozenset()
        return frozenset(v for v, d in self.versions.items() if previous.versions.get(v) == d)


def fingerprint_entries(entries: Iterable[tuple[str, str]]) -> ModelFingerprint:
    """A fingerprint from ``(relative posix path, stamp)`` pairs of one model folder.

    A path whose first component is a version folder counts for that version
    (an entry ``"2"`` with any stamp is the folder itself, so an empty new
    version is seen); everything else counts for the model part.
    """
    model = hashlib.sha256()
    versions: dict[int, hashlib._Hash] = {}
    for rel, stamp in sorted(entries):
        head = rel.split("/", 1)[0]
        digest = (
            versions.setdefault(int(head), hashlib.sha256()) if is_version_name(head) else model
        )
        digest.update(f"{rel}\0{stamp}\n".encode())
    return ModelFingerprint(
        model.hexdigest(), {v: d.hexdigest() for v, d in sorted(versions.items())}
    )


#: Files up to this size are also hashed: an edit of a config within one tick of the
#: file system's clock leaves size and mtime alike.
SMALL_FILE = 64 * 1024


def local_entries(model_dir: Path) -> list[tuple[str, str]]:
    """``(relative path, "size:mtime_ns[:digest]")`` of every file and folder below it."""
    out: list[tuple[str, str]] = []
    root = str(model_dir)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        prefix = "" if rel_dir == "." else rel_dir + "/"
        if prefix:
            out.append((rel_dir, "dir"))
        for name in filenames:
            try:
                st = os.stat(os.path.join(dirpath, name))
            except OSError:
                continue  # removed while we looked: the next look sees the rest
            stamp = f"{st.st_size}:{st.st_mtime_ns}"
            if st.st_size <= SMALL_FILE:
                stamp += ":" + _content_digest(os.path.join(dirpath, name))
            out.append((prefix + name, stamp))
    return out


def _content_digest(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()[:16]
    except OSError:
        return ""


def local_fingerprint(model_dir: Path) -> ModelFingerprint:
    return fingerprint_entries(local_entries(model_dir))
