"""Collecting validation problems with their field paths."""

from __future__ import annotations

from naiad.config.errors import ConfigError
from naiad.config.locate import locate


class Problems:
    """Every problem found in one config, in the order found.

    Each problem is a field path (``input[1].dims``) and a detail; the line
    is looked up in ``text`` (when given) only when errors are built.
    """

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def add(self, field: str, detail: str) -> None:
        self.items.append((field, detail))

    def errors(self, path: str, text: str | None) -> list[ConfigError]:
        return [
            ConfigError(detail, path=path, line=locate(text, field) if text else None, field=field)
            for field, detail in self.items
        ]


def element_count(dims: list[int]) -> int:
    """Triton's GetElementCount: -1 if any dim is variable, 0 for no dims."""
    count = 0
    for index, dim in enumerate(dims):
        if dim == -1:
            return -1
        count = dim if index == 0 else count * dim
    return count


def segment_counts(dims: list[int]) -> list[int]:
    """Element counts of the runs of fixed dims between variable (-1) dims."""
    counts, current = [], 1
    for dim in dims:
        if dim == -1:
            counts.append(current)
            current = 1
        else:
            current *= dim
    counts.append(current)
    return counts
