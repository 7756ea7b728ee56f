"""Shared memory regions clients register: system (POSIX shm) and CUDA (IPC)."""

from naiad.core.shm.manager import DISABLED, Lease, SharedMemoryManager

__all__ = ["DISABLED", "Lease", "SharedMemoryManager"]
