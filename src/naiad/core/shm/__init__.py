"""Shared memory regions clients register: system (POSIX shm) and CUDA (IPC)."""

from naiad.core.shm.manager import DISABLED, Lease, SharedMemoryManager
from naiad.core.shm.status import CudaRegionStatus, RegionStatus, SystemRegionStatus

__all__ = [
    "DISABLED",
    "CudaRegionStatus",
    "Lease",
    "RegionStatus",
    "SharedMemoryManager",
    "SystemRegionStatus",
]
