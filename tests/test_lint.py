"""The codebase stays lint- and format-clean (ruff) and type-checks (mypy).

Both are configured in pyproject.toml: mypy checks every module of ``src``, and
``naiad.core`` and ``naiad.engine`` strictly.  mypy keeps its cache in
``.mypy_cache``, so a run after the first takes about a second.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    if shutil.which("ruff") is None and not (Path(sys.executable).parent / "ruff").exists():
        pytest.skip("ruff is not installed")
    exe = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    return subprocess.run([exe, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_ruff_check() -> None:
    result = _ruff("check", "src", "tests", "benchmarks", "examples")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    result = _ruff("format", "--check", "src", "tests")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy() -> None:
    if importlib.util.find_spec("mypy") is None:
        pytest.skip(
            "mypy is not installed (the unit and test extras bring it: pip install -e '.[unit]')"
        )
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "src"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
