"""``--model-memory-budget`` sizes (options/values.py) and where residency may run."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from naiad import Server
from naiad.core.errors import InvalidArgument
from naiad.options.values import machine_memory, memory_size

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("1073741824", 1 << 30),
        ("8GiB", 8 << 30),
        ("8gb", 8 << 30),
        ("512MiB", 512 << 20),
        ("1.5G", 3 << 29),
        ("64 KiB", 64 << 10),
        ("0", 0),
    ],
)
def test_sizes_are_counted_in_powers_of_1024(text: str, size: int) -> None:
    assert memory_size(text) == size


def test_a_percentage_is_a_share_of_the_machine() -> None:
    assert memory_size("50%") == machine_memory() // 2
    assert memory_size("100%") == machine_memory()


@pytest.mark.parametrize("text", ["8XB", "GiB", "-1GiB", "0%", "150%", "lots"])
def test_a_bad_size_is_a_usage_error_that_shows_the_syntax(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="8GiB|1% to 100%|above 0"):
        memory_size(text)


def test_residency_is_refused_in_poll_mode(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="modes none and explicit, not poll"):
        Server(tmp_path, model_control_mode="poll", model_memory_budget=1 << 30)
