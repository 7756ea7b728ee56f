"""Competition for the cores, as servers meet it in production: busy neighbours and CPU quotas.

:class:`BusyLoad` starts N processes that spin for as long as it is open (other
tenants of the node); :class:`CpuQuota` is a cgroup v1 ``cpu`` child with a CFS quota
(what a Kubernetes CPU limit sets) that a server is started inside, with its whole
process tree (its stubs inherit the cgroup when they are forked).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

CGROUP_CPU = Path("/sys/fs/cgroup/cpu")
PERIOD_US = 100_000


class BusyLoad:
    """``count`` busy-looping processes for the time the ``with`` block runs."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._procs: list[subprocess.Popen] = []

    def __enter__(self) -> BusyLoad:
        spin = "while True:\n    pass"
        self._procs = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(self.count)]
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for proc in self._procs:
            proc.kill()
        for proc in self._procs:
            proc.wait()


class QuotaUnavailable(RuntimeError):
    """This machine cannot make a cgroup with a CPU quota (no cgroup v1 ``cpu``, not root)."""


class CpuQuota:
    """A ``cpu`` cgroup allowing ``cpus`` cores' worth of time per 100 ms period."""

    def __init__(self, cpus: float, name: str = "") -> None:
        self.cpus = cpus
        self.path = CGROUP_CPU / (name or f"naiad-bench-{os.getpid()}")

    def __enter__(self) -> CpuQuota:
        if not (CGROUP_CPU / "cpu.cfs_quota_us").exists():
            raise QuotaUnavailable(f"no cgroup v1 cpu controller at {CGROUP_CPU}")
        try:
            self.path.mkdir(exist_ok=True)
            (self.path / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (self.path / "cpu.cfs_quota_us").write_text(str(int(self.cpus * PERIOD_US)))
        except OSError as exc:
            raise QuotaUnavailable(f"cannot make {self.path} with a quota: {exc}") from None
        return self

    def prefix(self) -> list[str]:
        """A command prefix that joins the cgroup and then execs the rest: the server's
        pid, and every process it forks, is inside from its first instruction."""
        procs = self.path / "cgroup.procs"
        return ["sh", "-c", f'echo $$ > {procs} && exec "$@"', "sh"]

    def throttled(self) -> dict[str, int]:
        """The cgroup's ``cpu.stat``: periods, throttled periods, throttled time (ns)."""
        lines = (self.path / "cpu.stat").read_text().split("\n")
        return {k: int(v) for k, v in (line.split() for line in lines if line)}

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        # The servers were stopped; a straggler still inside keeps the directory busy.
        deadline = time.monotonic() + 10
        while True:
            try:
                self.path.rmdir()
                return
            except OSError:
                if time.monotonic() > deadline:
                    print(f"warning: {self.path} left behind (processes still in it)")
                    return
                time.sleep(0.2)
