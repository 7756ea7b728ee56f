"""The dashboard's files, read once from the package into memory.

A handful of small files: holding them costs less than a file read per
request, and a path outside the folder cannot be asked for (only names found
at start-up are served).
"""

from __future__ import annotations

import sys
from importlib import resources

if sys.version_info >= (3, 11):
    from importlib.resources.abc import Traversable
else:  # importlib.abc's is deprecated from 3.12 and gone in 3.14
    from importlib.abc import Traversable

TYPES = {
    ".html": b"text/html; charset=utf-8",
    ".js": b"text/javascript; charset=utf-8",
    ".css": b"text/css; charset=utf-8",
    ".svg": b"image/svg+xml",
    ".png": b"image/png",
    ".ico": b"image/x-icon",
    ".json": b"application/json",
    ".txt": b"text/plain; charset=utf-8",
}


def load() -> dict[str, tuple[bytes, bytes]]:
    """``{"pages/models.js": (content, content type)}`` for every servable file."""
    files: dict[str, tuple[bytes, bytes]] = {}
    root = resources.files(__package__).joinpath("static")
    if root.is_dir():
        _walk(root, "", files)
    return files


def _walk(folder: Traversable, prefix: str, files: dict[str, tuple[bytes, bytes]]) -> None:
    for item in folder.iterdir():
        name = prefix + item.name
        if item.is_dir():
            _walk(item, name + "/", files)
            continue
        suffix = "." + item.name.rpartition(".")[2]
        kind = TYPES.get(suffix)
        if kind is not None and not item.name.startswith("."):
            files[name] = (item.read_bytes(), kind)
