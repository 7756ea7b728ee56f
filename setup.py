"""The build, as ``pyproject.toml`` declares it, plus mypyc for the request path.

The modules ``src/naiad/_compiled.py`` names are compiled to C extensions
(why: that file's docstring).  Compiling is an optimisation, never a
requirement: ``NAIAD_PURE_PYTHON=1`` skips it, and a machine without a
working C compiler gets the same package as pure Python, with a warning.
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
#: The commands that build extensions.  setuptools runs this file once per step of a
#: build (requirements, metadata, the wheel); only these need mypyc's type check and C.
BUILDS = frozenset(
    {"bdist_wheel", "editable_wheel", "build", "build_ext", "install", "develop", "bdist_egg"}
)


def _warn(message: str) -> None:
    print(f"naiad: {message}; installing the request path as pure Python", file=sys.stderr)


def _remove_extensions(root: Path, keep: frozenset[str] = frozenset()) -> None:
    """Remove the extensions an earlier build left in ``root`` (but ``keep``): beside a
    pure-Python module, or packed beside this build's, they fail at import."""
    for pattern in (
        "naiad__mypyc*",
        "naiad/**/*",
        "triton_python_backend_utils__mypyc*",
        "triton_python_backend_utils/*",
    ):
        for path in root.glob(pattern):
            if path.suffix in (".so", ".pyd") and os.path.realpath(path) not in keep:
                path.unlink()


def _pure_python() -> list[Any]:
    """No extensions, and none left from an earlier build where this one may look."""
    for root in (ROOT / "src", *(ROOT / "build").glob("lib*")):
        _remove_extensions(root)
    return []


def _extensions() -> list[Any]:
    naiad = runpy.run_path(str(ROOT / "src" / "naiad" / "_compiled.py"))
    stub = runpy.run_path(str(ROOT / "src" / "triton_python_backend_utils" / "_compiled.py"))
    if BUILDS.isdisjoint(sys.argv[1:]):
        return []
    if naiad["pure_python_wanted"]():
        return _pure_python()
    try:
        from mypyc.build import mypycify
    except ImportError:
        _warn("mypyc is not available")
        return _pure_python()

    def paths(modules: list[str]) -> list[str]:
        return ["src/" + module.replace(".", "/") + ".py" for module in modules]

    # Two groups, each a shared library beside its package: the stub loads its own by
    # path, in whatever interpreter it runs (triton_python_backend_utils._compiled).
    groups = [(paths(naiad["MODULES"]), "naiad"), (paths(stub["MODULES"]), stub["GROUP"])]
    try:
        # Not the repository's [tool.mypy]: that one lints (and its notes stop mypyc).
        # What mypy finds wrong in the modules these import (whichever versions of
        # numpy, PIL, grpc this machine has) is not the compiler's concern: silent.
        flags = ["--config-file=", "--ignore-missing-imports", "--follow-imports=silent"]
        every = [path for group, _ in groups for path in group]
        return list(mypycify(flags + every, opt_level="3", separate=groups))
    except (Exception, SystemExit) as exc:  # mypy's type errors end in SystemExit
        _warn(f"mypyc could not compile it ({exc!r})")
        return _pure_python()


class OptionalBuildExt(build_ext):
    """Builds the extensions, or none of them: a module compiled without the
    group's shared library would not import."""

    def run(self) -> None:
        built = True
        try:
            super().run()
        except Exception as exc:  # no compiler, missing headers: CompileError and kin
            built = False
            _warn(f"compiling failed ({exc})")
        # Where each extension is now: the source tree for an editable install (there
        # get_outputs() names the temporary build folder it was copied from).
        where = {os.path.realpath(self.get_ext_fullpath(ext.name)) for ext in self.extensions}
        root = Path("src" if self.inplace else self.build_lib)
        _remove_extensions(root, frozenset(where) if built else frozenset())


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
