"""Fixtures for the config tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def model_dir(tmp_path: Path):
    """Factory: a model directory ``<tmp>/<name>`` with a version dir holding ``files``."""

    def make(name: str, *files: str, version: int = 1, dirs: tuple[str, ...] = ()) -> Path:
        root = tmp_path / name
        version_dir = root / str(version)
        version_dir.mkdir(parents=True)
        for file in files:
            (version_dir / file).write_bytes(b"")
        for directory in dirs:
            (version_dir / directory).mkdir()
        return root

    return make
