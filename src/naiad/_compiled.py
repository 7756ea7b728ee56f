"""Which modules ``setup.py`` compiles with mypyc, and importing their sources instead.

The compiled modules form one mypyc group: they call each other's C code
directly, so they are used all together or not at all.  The ``.py`` files are
imported instead (every one of them) when ``NAIAD_PURE_PYTHON`` is set, or,
in a checkout, when any of them is newer than the compiled library: an
editable install whose sources were edited after the build must run the
edits, not stale C.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import warnings
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

#: Relative to the package directory; ``setup.py`` reads this tuple.
MODULES = (
    "frontends/http/protocol.py",
    "frontends/http/app.py",
    "frontends/http/infer.py",
    "frontends/http/codec.py",
    "frontends/http/encode.py",
    "core/validation.py",
    "core/outputs.py",
    "core/stats.py",
    "scheduling/base.py",
    "scheduling/default.py",
    "scheduling/dynamic.py",
    "scheduling/sequence.py",
    "scheduling/ensemble.py",
    "backends/onnxruntime.py",
)

_PACKAGE = os.path.dirname(os.path.abspath(__file__))
#: mypyc's shared library for the group ``naiad``: the compiled code of every module.
_LIBRARY = os.path.join(os.path.dirname(_PACKAGE), "naiad__mypyc")


def _built(stem: str) -> str | None:
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        if os.path.exists(stem + suffix):
            return stem + suffix
    return None


class _SourceFinder:
    """A meta path finder that imports the named modules from their ``.py`` files."""

    def __init__(self, sources: dict[str, str]) -> None:
        self.sources = sources

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        source = self.sources.get(fullname)
        return None if source is None else importlib.util.spec_from_file_location(fullname, source)


def prefer_sources() -> bool:
    """Install the finder when the sources must win; say whether it was installed."""
    library = _built(_LIBRARY)
    if library is None:
        return False  # a pure-Python install
    sources = {"naiad." + m[:-3].replace("/", "."): os.path.join(_PACKAGE, m) for m in MODULES}
    if os.environ.get("NAIAD_PURE_PYTHON", "") in ("", "0"):
        # Only a checkout (an editable install) has sources that change after the build.
        if not os.path.exists(os.path.join(_PACKAGE, "..", "..", "pyproject.toml")):
            return False
        built = os.stat(library).st_mtime  # setup.py stamps it when it builds
        stale = [path for path in sources.values() if os.stat(path).st_mtime > built]
        if not stale:
            return False
        warnings.warn(
            f"naiad: {os.path.relpath(stale[0], _PACKAGE)} changed after it was compiled; "
            "running every compiled module from its source (rebuild: pip install -e .)",
            stacklevel=2,
        )
    sys.meta_path.insert(0, _SourceFinder(sources))
    return True
