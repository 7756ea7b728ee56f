"""What a registered region reports to a status request (rest.md §7, grpc.md §8).

Frozen values with the fields of Triton's ``RegionStatus`` messages, one
type per kind, so that each frontend renders them without knowing how the
manager keeps its regions.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SystemRegionStatus:
    """A system (POSIX) region: ``byte_size`` bytes at ``offset`` of the object ``key``."""

    name: str
    key: str
    offset: int
    byte_size: int


@dataclass(frozen=True, slots=True)
class CudaRegionStatus:
    """A CUDA region: ``byte_size`` bytes of device memory on ``device_id``."""

    name: str
    device_id: int
    byte_size: int


RegionStatus = SystemRegionStatus | CudaRegionStatus
