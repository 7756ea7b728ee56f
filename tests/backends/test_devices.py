"""Which GPUs instance groups may name (backends/devices.py): the driver's count, narrowed
and renumbered by CUDA_VISIBLE_DEVICES as CUDA does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from naiad.backends import devices

pytestmark = pytest.mark.unit


@pytest.fixture
def driver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A driver folder listing two GPUs, in place of /proc/driver/nvidia/gpus."""
    for bus in ("0000:17:00.0", "0000:65:00.0"):
        (tmp_path / bus).mkdir()
    monkeypatch.setattr(devices, "_DRIVER", tmp_path)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    devices.visible_gpus.cache_clear()
    yield tmp_path
    devices.visible_gpus.cache_clear()


@pytest.mark.parametrize(
    ("visible", "expected"),
    [
        (None, (0, 1)),
        ("1", (0,)),  # CUDA renumbers what it shows from 0
        ("1,0", (0, 1)),
        ("", ()),
        ("0,7,1", (0,)),  # CUDA stops at the first entry that names no device
        ("GPU-ef0d3f05-6806-164c-47f3-28be3d1fcbc3", (0,)),
    ],
)
def test_cuda_visible_devices_narrows_the_drivers_gpus(
    driver: Path, monkeypatch: pytest.MonkeyPatch, visible: str | None, expected: tuple[int, ...]
) -> None:
    if visible is not None:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert devices.visible_gpus() == expected
