"""``file:<version>/<path>`` load overrides, written to a private temporary folder.

The file names come from the network, so each one is checked before anything
is written: relative, no ``..``, no empty or ``.`` parts, no backslashes or
NUL; files are created exclusively and without following links, and the
folder they land in is checked to lie inside the private root.  Remote
repositories reuse :func:`safe_relative` for object keys.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from naiad.core.errors import InvalidArgument

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def safe_relative(path: str) -> PurePosixPath:
    """``path`` as a relative path that stays below its root, or InvalidArgument."""
    if not path or "\\" in path or "\0" in path:
        raise InvalidArgument(f"invalid file path '{path}'")
    pure = PurePosixPath(path)
    if pure.is_absolute() or (len(path) > 1 and path[1] == ":"):
        raise InvalidArgument(f"file path '{path}' must be relative")
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise InvalidArgument(f"file path '{path}' must not contain '..', '.' or empty parts")
    return pure


def check_model_name(name: str) -> None:
    """A model name names a folder: refuse the ones that would leave it."""
    if not name or name in (".", "..") or any(c in name for c in "/\\\0"):
        raise InvalidArgument(f"invalid model name '{name}'")


def write_model_files(name: str, files: Mapping[str, bytes]) -> Path:
    """Write ``files`` (keys ``<version>/<path>``, ``file:`` prefix optional) to a new
    private folder; returns the model folder ``<root>/<name>``.

    The caller owns the root (``result.parent``) and removes it with
    :func:`remove_tree` once no loaded version uses it.
    """
    check_model_name(name)
    relatives = []
    for key in files:
        rel = key[len("file:") :] if key.startswith("file:") else key
        relatives.append((safe_relative(rel), files[key]))
    root = Path(tempfile.mkdtemp(prefix="naiad-override-"))  # mode 0700
    model_dir = root / name
    try:
        model_dir.mkdir()
        base = model_dir.resolve()
        for relative, data in relatives:
            target = model_dir.joinpath(*relative.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.parent.resolve().is_relative_to(base):
                raise InvalidArgument(f"file path '{relative}' leaves the model folder")
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW
            try:
                fd = os.open(target, flags, 0o600)
            except FileExistsError:
                raise InvalidArgument(f"file path '{relative}' is given more than once") from None
            with os.fdopen(fd, "wb") as out:
                out.write(data)
    except BaseException:
        remove_tree(root)
        raise
    return model_dir


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
