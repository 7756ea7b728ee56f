"""The stub's plumbing compiled to C by mypyc, where the stub's interpreter can load it.

What a stub does for a batch besides the model's own ``execute`` (read the
frame, build the requests, encode the responses, send them) is Python, and
at concurrency 1 it is a large part of what a stub model waits for
(``benchmarks/README.md``, "The stub's plumbing compiled").  The classes a
model builds and reads (``Tensor``, ``InferenceRequest``,
``InferenceResponse``) are compiled with it, so that the plumbing, and the
server's in-process Python backend, reach their fields natively; they are
marked ``allow_interpreted_subclasses`` (:func:`mypyc_attr`), as a model may
subclass them, as it may Triton's pybind11 classes, and their arguments
are ``Any`` where Triton converts what it is given.  ``setup.py``
compiles :data:`MODULES` as it compiles naiad's request path
(``naiad._compiled``, whose docstring says what compiled code asks of its
source), into a group of their own: their shared library :data:`LIBRARY`
lies beside this package, each module's extension beside its ``.py``.

A stub may run in another interpreter than the server's (a model's
``EXECUTION_ENV_PATH``), whose ``sys.path`` does not reach the server's
packages; it loads this package by its path.  So :func:`prepare`, which the
package's ``__init__`` calls before anything imports a listed module, loads
:data:`LIBRARY` by its path too.  Where the library is missing or does not
load, or ``NAIAD_PURE_PYTHON`` is set, the listed modules import from their
``.py`` (another Python version does not even look at these extensions).

Imports nothing but the standard library: ``setup.py`` reads this file
before anything is installed, and naiad's ``_compiled`` shares its finder.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Collection, Sequence
from types import ModuleType
from typing import Any

try:
    from mypy_extensions import mypyc_attr
except ImportError:  # only mypyc reads it; where mypy is not installed it changes nothing

    def mypyc_attr(*attrs: str, **kwattrs: object) -> Any:  # type: ignore[misc]
        return lambda cls: cls


MODULES = (
    "triton_python_backend_utils._arena",
    "triton_python_backend_utils._channel",
    "triton_python_backend_utils._link",
    "triton_python_backend_utils._request",
    "triton_python_backend_utils._response",
    "triton_python_backend_utils._runner",
    "triton_python_backend_utils._stub",
    "triton_python_backend_utils._stub_host",
    "triton_python_backend_utils._tensor",
    "triton_python_backend_utils._wire",
)
#: The group's shared library (mypyc names it ``<group>__mypyc``).
GROUP = "triton_python_backend_utils"
LIBRARY = f"{GROUP}__mypyc"

EXTENSIONS = tuple(importlib.machinery.EXTENSION_SUFFIXES)


def pure_python_wanted() -> bool:
    """``NAIAD_PURE_PYTHON`` set (and not 0), as ``naiad._compiled`` reads it: a stub
    inherits the server's environment."""
    return os.environ.get("NAIAD_PURE_PYTHON", "") not in ("", "0")


def prepare() -> None:
    """Make the listed modules importable: compiled where :data:`LIBRARY` loads, else
    from their source."""
    if LIBRARY in sys.modules:
        return
    if not pure_python_wanted() and _load_library():
        return
    use_source(MODULES)


def _load_library() -> bool:
    beside = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for suffix in EXTENSIONS:
        path = os.path.join(beside, LIBRARY + suffix)
        if not os.path.exists(path):
            continue
        spec = importlib.util.spec_from_file_location(LIBRARY, path)
        if spec is None or spec.loader is None:
            return False
        module = importlib.util.module_from_spec(spec)
        sys.modules[LIBRARY] = module
        try:
            spec.loader.exec_module(module)
        except ImportError:  # built for another interpreter of the same tag
            del sys.modules[LIBRARY]
            return False
        return True
    return False


def use_source(modules: Collection[str]) -> None:
    """Import ``modules`` from their ``.py`` from now on (before any of them is imported)."""
    sys.meta_path.insert(0, SourceFirst(modules))


def source_beside(extension: str, module: str) -> str:
    """The ``.py`` a module's extension was compiled from: the build keeps it beside."""
    return os.path.join(os.path.dirname(extension), module.rpartition(".")[2] + ".py")


class SourceFirst(importlib.abc.MetaPathFinder):
    """Finds a listed module's source where the path finder would take its extension."""

    def __init__(self, modules: Collection[str]) -> None:
        self.modules = frozenset(modules)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.modules:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        origin = spec.origin if spec is not None else None
        if origin is None or not origin.endswith(EXTENSIONS):
            return spec
        return importlib.util.spec_from_file_location(fullname, source_beside(origin, fullname))
