"""Shared helpers for the config tests: the corpus and model directories."""

from __future__ import annotations

from pathlib import Path

import pytest

CORPUS = Path(__file__).parent / "corpus"


def corpus_files() -> list[Path]:
    return sorted(CORPUS.glob("*.pbtxt"))


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
