"""What a loaded model version holds in memory (the statistics' ``memory_usage``).

Measured once, when the version loads.  Host memory in one of two ways:

- Instances in the server's process (ONNX Runtime, OpenVINO, PyTorch,
  TensorFlow and FIL sessions, a Python model run in-process): how much the
  server's resident memory grew while they were created.  Loads run side by
  side (``--model-load-thread-count``), so the growth is shared out
  (:class:`Ledger`): what the process gained while one creation ran alone is
  that one's, what it gained while several ran is split evenly among them.
  A model loaded alone (an explicit load, or a thread count of 1) gets an
  exact figure; models loaded together get fair shares of their sum.
- A Python model's stub processes: each one's proportional set size once it
  has loaded: its own pages, plus its share of the pages it shares with
  other processes (numpy's libraries mapped by every stub would otherwise
  count once per stub).

GPU memory, for instances placed on a GPU, as the server's host memory is
measured: the device's used memory (NVML, ``naiad[gpu]``) around their
creation, shared out the same way.

Memory given back while instances are created would hide what they take
(the server's memory would not grow, or grow less), so with residency,
whose budget rests on these figures, releasing a model's instances
(:func:`releasing`) and creating instances in the server never overlap:
each waits for the other to finish.

What a model takes later (caches, arenas grown by a first large batch) is
not in the figures.  Linux only (``/proc``); elsewhere nothing is reported, as
Triton reports nothing for most of its backends.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import itertools
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from naiad.backends.devices import visible_gpus
from naiad.core.statistics import MemoryUsage

T = TypeVar("T")

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def resident_bytes(pid: int | str = "self") -> int | None:
    """A process's resident memory (``/proc/<pid>/statm``); None where unknown."""
    try:
        fields = Path(f"/proc/{pid}/statm").read_text().split()
    except OSError:
        return None
    return int(fields[1]) * _PAGE


def proportional_bytes(pid: int) -> int | None:
    """A process's proportional set size (``smaps_rollup``, Linux 4.14+), else its
    resident memory; None where neither can be read (the process ended)."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return resident_bytes(pid)
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024
    return resident_bytes(pid)


class Ledger:
    """A memory's growth (the server's, or a GPU's), shared out among the creations
    running while it grew.

    Read at every creation's start and end: the growth since the previous
    reading is split evenly among the creations then running (a fall, memory
    given back meanwhile, counts as no growth).
    """

    def __init__(self, read: Callable[[], int | None] = resident_bytes) -> None:
        self._read = read
        self._lock = threading.Lock()
        self._shares: dict[int, int] = {}  # running creation -> bytes so far
        self._tokens = itertools.count()
        self._last = 0

    def begin(self) -> int | None:
        """A creation starts; its token (None: memory cannot be read here)."""
        with self._lock:
            if not self._settle():
                return None
            token = next(self._tokens)
            self._shares[token] = 0
            return token

    def end(self, token: int | None) -> int | None:
        """The creation of ``token`` ended: the bytes that are its share."""
        if token is None:
            return None
        with self._lock:
            self._settle()
            return self._shares.pop(token)

    def _settle(self) -> bool:
        now = self._read()
        if now is None:
            return False
        if self._shares:
            each = max(now - self._last, 0) // len(self._shares)
            for token in self._shares:
                self._shares[token] += each
        self._last = now
        return True


LEDGER = Ledger()


class _Gate:
    """Creations in the server run side by side, releases too, but never the two together."""

    def __init__(self) -> None:
        self._turn = threading.Condition()
        self._running = {"create": 0, "release": 0}

    @contextlib.contextmanager
    def enter(self, kind: str) -> Iterator[None]:
        other = "release" if kind == "create" else "create"
        with self._turn:
            self._turn.wait_for(lambda: not self._running[other])
            self._running[kind] += 1
        try:
            yield
        finally:
            with self._turn:
                self._running[kind] -= 1
                self._turn.notify_all()


_GATE = _Gate()


def map_large_blocks(threshold: int = 1 << 20) -> None:
    """Have glibc map blocks of ``threshold`` bytes and more on their own, for good.

    By default a large block, once freed, raises the size glibc maps on its own,
    and the next ones come from its heaps, where freed memory stays the
    process's: a model's tables would outlive its unload.  Fixed, they go back
    to the system when freed.  Residency turns it on (its budget counts on
    unloads freeing memory); it costs blocks of that size a mapping each.
    """
    mallopt = _libc_function("mallopt")
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, threshold)


def give_back() -> None:
    """Return what an unloaded model freed to the system now.

    Its objects may sit in reference cycles (collected now, not at some later
    full collection), and glibc keeps freed blocks for reuse: a large block
    freed once raises its threshold for mapping blocks of their own, so the
    next model's tables come from the heap and stay there when freed.
    ``malloc_trim`` hands free pages back, so the server's memory falls with an
    unload and grows again with a load, which is what the figures of the next
    loads (and residency's budget) rest on.
    """
    gc.collect()
    trim = _libc_function("malloc_trim")
    if trim is not None:
        trim(0)


_M_MMAP_THRESHOLD = -3  # glibc's malloc.h


@functools.cache
def _libc_function(name: str) -> Callable[..., int] | None:
    """A glibc function, None elsewhere (musl, macOS)."""
    try:
        function: Callable[..., int] = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None
    return function


def releasing() -> contextlib.AbstractContextManager[None]:
    """Around closing a version's instances: waits for creations measured in the server."""
    return _GATE.enter("release")


@dataclass(frozen=True)
class Taken:
    """What one instance's creation took: its share of the server's host memory (None:
    not measured) and of each GPU's memory (device id -> bytes, where it grew)."""

    host: int | None
    gpus: dict[int, int]


def measured_create(
    create: Callable[[], T], in_server: bool, gpu: int | None = None
) -> tuple[T, Taken]:
    """``create()`` and what it took: host memory for an instance in the server's process
    (a stub's is its own, read by :func:`version_memory`), and for an instance placed on
    GPU ``gpu``, that device's (in a stub or not: a GPU's memory is one pool)."""
    ledger = gpu_ledgers().get(gpu) if gpu is not None else None
    with _GATE.enter("create") if in_server else contextlib.nullcontext():
        host = LEDGER.begin() if in_server else None
        token = ledger.begin() if ledger is not None else None
        try:
            made = create()
        finally:
            share = LEDGER.end(host)
            grown = ledger.end(token) if ledger is not None else None
    return made, Taken(share, {gpu: grown} if gpu is not None and grown else {})


def version_memory(
    host: list[int], pids: list[int], gpus: dict[int, int]
) -> tuple[MemoryUsage, ...]:
    """A version's ``memory_usage``: the host memory its instances took in the server
    (as measured) plus its stubs', then each GPU's; host memory is left out when none of
    it could be measured."""
    sizes = host + [size for pid in pids if (size := proportional_bytes(pid)) is not None]
    usage = [MemoryUsage("CPU", 0, sum(sizes))] if sizes else []
    usage += [MemoryUsage("GPU", device, size) for device, size in sorted(gpus.items())]
    return tuple(usage)


# -- GPUs, through NVML (the naiad[gpu] extra) ---------------------------------------------

_gpu_ledgers: dict[int, Ledger] | None = None


def gpu_ledgers() -> dict[int, Ledger]:
    """A ledger per GPU NVML sees, by CUDA's device id (none without ``nvidia-ml-py``, a
    driver or a GPU).  Its readings are the device's used memory, so another process
    allocating on the same GPU during a load counts too."""
    global _gpu_ledgers
    if _gpu_ledgers is None:
        _gpu_ledgers = {}
        try:
            import pynvml

            pynvml.nvmlInit()
            for device in visible_gpus():
                handle = _nvml_handle(pynvml, device)
                _gpu_ledgers[device] = Ledger(functools.partial(_gpu_used, pynvml, handle))
        except Exception:  # no module, no driver, no GPU: no GPU figures
            _gpu_ledgers = {}
    return _gpu_ledgers


def _nvml_handle(nvml: Any, device: int) -> Any:
    """NVML numbers every GPU; CUDA only those CUDA_VISIBLE_DEVICES shows."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return nvml.nvmlDeviceGetHandleByIndex(device)
    entry = visible.split(",")[device].strip()
    if entry.isdigit():
        return nvml.nvmlDeviceGetHandleByIndex(int(entry))
    return nvml.nvmlDeviceGetHandleByUUID(entry)


def _gpu_used(nvml: Any, handle: Any) -> int | None:
    try:
        return int(nvml.nvmlDeviceGetMemoryInfo(handle).used)
    except Exception:
        return None
