"""The mypyc build: the listed modules run compiled, or all from source when they must."""

from __future__ import annotations

import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from naiad import _compiled

PACKAGE = Path(_compiled.__file__).parent
NAMES = ["naiad." + m[: -len(".py")].replace("/", ".") for m in _compiled.MODULES]
EXTENSION = tuple(importlib.machinery.EXTENSION_SUFFIXES)

needs_build = pytest.mark.skipif(
    _compiled._built(_compiled._LIBRARY) is None,
    reason="installed without the mypyc build (NAIAD_PURE_PYTHON, or no C compiler)",
)


def _origins(**env: str) -> tuple[dict[str, str], str]:
    """Where each listed module is imported from in a fresh interpreter, and its stderr."""
    code = (
        "import importlib, json, sys\n"
        "print(json.dumps({n: importlib.import_module(n).__file__ for n in sys.argv[1:]}))"
    )
    environ = {k: v for k, v in os.environ.items() if k != "NAIAD_PURE_PYTHON"}
    done = subprocess.run(
        [sys.executable, "-c", code, *NAMES],
        env={**environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout), done.stderr


def test_every_listed_module_is_a_source_file() -> None:
    assert [m for m in _compiled.MODULES if not (PACKAGE / m).is_file()] == []


def test_naiad_pure_python_imports_every_source() -> None:
    origins, _ = _origins(NAIAD_PURE_PYTHON="1")
    assert [n for n, path in origins.items() if not path.endswith(".py")] == []


@needs_build
def test_a_build_runs_every_listed_module_compiled() -> None:
    origins, stderr = _origins()
    not_compiled = [n for n, path in origins.items() if not path.endswith(EXTENSION)]
    assert not_compiled == [], f"rebuild with pip install -e . ?\n{stderr}"


@needs_build
def test_a_source_edited_after_the_build_runs_them_all_from_source() -> None:
    if not (PACKAGE.parent.parent / "pyproject.toml").exists():
        pytest.skip("not a checkout: installed sources do not change")
    source = PACKAGE / _compiled.MODULES[-1]
    before = source.stat()
    built = os.stat(_compiled._built(_compiled._LIBRARY) or "").st_mtime
    os.utime(source, (before.st_atime, built + 60))
    try:
        origins, stderr = _origins()
    finally:
        os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert [n for n, path in origins.items() if not path.endswith(".py")] == []
    assert f"{_compiled.MODULES[-1]} changed after it was compiled" in stderr
