"""What a loaded model version holds in host memory (the statistics' ``memory_usage``).

Measured once, when the version loads, in one of two ways:

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

What a model takes later (caches, arenas grown by a first large batch) is
not in the figure.  Linux only (``/proc``); elsewhere nothing is reported, as
Triton reports nothing for most of its backends.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

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
    """The server's memory growth, shared out among the creations running while it grew.

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


def measured_create(create: Callable[[], T], in_server: bool) -> tuple[T, int | None]:
    """``create()`` and its share of the server memory (None: not measured, as for an
    instance in its own process)."""
    token = LEDGER.begin() if in_server else None
    try:
        made = create()
    finally:
        share = LEDGER.end(token)
    return made, share


def version_memory(server_bytes: list[int], pids: list[int]) -> tuple[MemoryUsage, ...]:
    """A version's ``memory_usage``: the server memory its instances took (as measured)
    plus its stubs'; nothing when none of it could be measured."""
    sizes = server_bytes + [size for pid in pids if (size := proportional_bytes(pid)) is not None]
    if not sizes:
        return ()
    return (MemoryUsage("CPU", 0, sum(sizes)),)
