"""Build naiad with the modules every request runs through compiled by mypyc.

Everything else about the package is in ``pyproject.toml``.  The modules below
are ordinary typed Python; mypyc (the compiler black and mypy ship with) turns
them into C extensions that cost about half the instructions per request (see
``benchmarks/README.md``).  The ``.py`` files stay the source of truth:

- ``NAIAD_PURE_PYTHON=1 pip install ...`` skips compiling;
- a machine without a C compiler gets the pure-Python package, with a warning
  from setuptools (the extensions are optional);
- at run time ``NAIAD_PURE_PYTHON=1`` imports the ``.py`` files even where the
  extensions are built (``naiad/__init__.py``).
"""

from __future__ import annotations

import ast
import os

from setuptools import setup
from setuptools.command.build_ext import build_ext


def compiled_modules() -> tuple[str, ...]:
    """``naiad._compiled.MODULES``, read without importing the package."""
    with open(os.path.join("src", "naiad", "_compiled.py"), encoding="utf-8") as source:
        tree = ast.parse(source.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "MODULES":
            return ast.literal_eval(node.value)
    raise RuntimeError("src/naiad/_compiled.py defines no MODULES")


def ext_modules() -> list:
    if os.environ.get("NAIAD_PURE_PYTHON", "") not in ("", "0"):
        return []
    from mypyc.build import mypycify

    extensions = mypycify(
        [os.path.join("src", "naiad", path) for path in compiled_modules()],
        opt_level="3",
        debug_level="0",
        group_name="naiad",
    )
    for extension in extensions:
        extension.optional = True  # no compiler: install the .py files alone
    return extensions


class BuildExt(build_ext):
    """Stamp what it builds with the time of the build.

    ``naiad._compiled`` compares that time with the sources' to tell an
    editable install whose sources changed since; an extension that was up to
    date, or copied from ``build/``, would otherwise keep an older time.
    """

    def run(self) -> None:
        super().run()
        for extension in self.extensions:
            path = self.get_ext_fullpath(extension.name)  # in place when --inplace / editable
            if os.path.exists(path):
                os.utime(path)


setup(ext_modules=ext_modules(), cmdclass={"build_ext": BuildExt})
