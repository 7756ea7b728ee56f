"""What a process tree spent, read from /proc: CPU time, context switches, threads, syscalls.

The accounting benchmark snapshots a server and its children (naiad's stub
processes, Triton's ``triton_python_backend_stub``) before and after a
perf_analyzer run and divides the difference by the requests answered.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

TICK_US = 1_000_000 / os.sysconf("SC_CLK_TCK")


@dataclass
class Usage:
    """Totals of one group of processes (the server, or its stubs) at one moment."""

    cpu_us: float = 0.0
    voluntary: int = 0
    involuntary: int = 0
    threads: list[int] = field(default_factory=list)

    def __sub__(self, before: Usage) -> Usage:
        return Usage(
            self.cpu_us - before.cpu_us,
            self.voluntary - before.voluntary,
            self.involuntary - before.involuntary,
            self.threads,
        )


def children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (the stubs are children, or grandchildren, of the server)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
    found, frontier = [], [pid]
    while frontier:
        kids = [p for p, parent in parents.items() if parent in frontier]
        found += kids
        frontier = kids
    return found


def usage(pids: list[int]) -> Usage:
    """CPU time (utime + stime), context switches summed over every thread, thread counts."""
    total = Usage()
    for pid in pids:
        stat = Path(f"/proc/{pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2 :].split()
        total.cpu_us += (int(fields[11]) + int(fields[12])) * TICK_US
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
        total.threads.append(len(tasks))
        for task in tasks:
            try:
                status = (task / "status").read_text()
            except OSError:
                continue  # the thread ended between the listing and the read
            total.voluntary += int(re.search(r"^voluntary_ctxt_switches:\s*(\d+)", status, re.M)[1])  # type: ignore[index]
            total.involuntary += int(
                re.search(r"^nonvoluntary_ctxt_switches:\s*(\d+)", status, re.M)[1]
            )  # type: ignore[index]
    return total


class Strace:
    """``strace -c -f`` attached to ``pids`` (every thread) for the ``with`` block: counts
    syscalls by kind. Its overhead distorts timing, so only the counts are read."""

    def __init__(self, pids: list[int], out: Path) -> None:
        self.pids, self.out = pids, out
        self.calls: dict[str, int] = {}

    def __enter__(self) -> Strace:
        attach = [a for pid in self.pids for a in ("-p", str(pid))]
        self._proc = subprocess.Popen(
            ["strace", "-c", "-f", "-o", str(self.out), *attach], stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 30
        while not all(traced(pid) for pid in self.pids):
            if time.monotonic() > deadline or self._proc.poll() is not None:
                raise RuntimeError(f"strace did not attach to {self.pids}")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self._proc.send_signal(signal.SIGINT)
        self._proc.wait(60)
        for line in self.out.read_text().splitlines():
            parts = line.split()
            # "% time  seconds  usecs/call  calls  [errors]  syscall"
            if len(parts) >= 5 and parts[0][0].isdigit() and parts[-1] != "total":
                self.calls[parts[-1]] = int(parts[3])


def traced(pid: int) -> bool:
    """Whether every thread of ``pid`` has a tracer attached."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            status = (task / "status").read_text()
        except OSError:
            continue
        if re.search(r"^TracerPid:\s*0$", status, re.M):
            return False
    return True
