"""The corpus of real-world config.pbtxt files (a module, so tests can import it)."""

from __future__ import annotations

from pathlib import Path

CORPUS = Path(__file__).parent / "corpus"


def corpus_files() -> list[Path]:
    return sorted(CORPUS.glob("*.pbtxt"))
