"""The codebase stays lint- and format-clean (ruff, configured in pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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
