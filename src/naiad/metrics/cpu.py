"""CPU utilisation and memory from Linux ``/proc``, as Triton computes them."""

from __future__ import annotations

from pathlib import Path

PROC = Path("/proc")


def read_cpu_times(proc: Path = PROC) -> tuple[int, int] | None:
    """(busy, total) jiffies over all cores from the aggregate ``cpu`` line, or None.

    Idle time is ``idle + iowait``; ``guest`` times are already inside ``user``.
    """
    try:
        with open(proc / "stat", encoding="ascii") as f:
            line = f.readline()
    except OSError:
        return None
    parts = line.split()
    if not parts or parts[0] != "cpu":
        return None
    values = [int(v) for v in parts[1:9]]  # user nice system idle iowait irq softirq steal
    values += [0] * (8 - len(values))
    idle = values[3] + values[4]
    total = sum(values)
    return total - idle, total


def utilization(before: tuple[int, int], after: tuple[int, int]) -> float:
    """Busy fraction of all cores between two :func:`read_cpu_times` samples."""
    busy = after[0] - before[0]
    total = after[1] - before[1]
    if total <= 0:
        return 0.0
    return min(1.0, max(0.0, busy / total))


def read_memory(proc: Path = PROC) -> tuple[int, int] | None:
    """(total, used) bytes: ``MemTotal`` and ``MemTotal - MemAvailable``, or None."""
    info: dict[str, int] = {}
    try:
        with open(proc / "meminfo", encoding="ascii") as f:
            for line in f:
                name, _, rest = line.partition(":")
                fields = rest.split()
                if fields:
                    info[name] = int(fields[0]) * 1024
    except (OSError, ValueError):
        return None
    total, available = info.get("MemTotal"), info.get("MemAvailable")
    if total is None or available is None or available > total:
        return None
    return total, total - available
