"""Where a request waits: the kernel scheduler's own account of who ran, and who slept.

CPU time per request (``procstat``) says what each process spent, not
whether a request sat still.  ``perf sched record`` traces the scheduler on
every CPU; summed by role over a short window while perf_analyzer drives the
server, and divided by the requests answered in it, its events show a
request's cycle at concurrency 1: what ran in turn (the server, its stubs,
the client), how often each went to sleep, and what no one did (the CPUs'
idle time, while a wake-up was on its way).

Run time comes from ``sched_stat_runtime``, the scheduler's own accounting,
not from pairing switch events: on this VM a vCPU leaving idle records no
switch in, and ``perf sched timehist``, which pairs them, counts a task on
that CPU as running through its sleeps.  Sleeps are switches out in state
S or D, which are recorded on every CPU.

Needs ``perf`` and the kernel's scheduler tracepoints (root).  Tracing every
switch slows the switches themselves, and more for a server that switches
more: compare servers traced in the same run, by shape more than totals.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROLES = ("server", "stub", "client", "other")
#: ``perf script -F comm,pid,tid,cpu,time,event,trace`` lines of the two events read.
_EVENT = re.compile(
    r"^\s*(?P<comm>.+?)\s+(?P<pid>\d+)/(?P<tid>\d+)\s+\[\d+\]\s+(?P<time>[\d.]+):\s+"
    r"sched:(?:sched_stat_runtime:.*runtime=(?P<ns>\d+)|sched_switch:.*prev_state=(?P<state>\S+))"
)


@dataclass
class Runs:
    """Run time (µs) and sleeps by role over ``span_us`` of trace, and the time (µs) no
    role ran of every CPU's."""

    span_us: float = 0.0
    idle_us: float = 0.0
    run_us: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    sleeps: dict[str, float] = field(default_factory=lambda: defaultdict(float))

    def per(self, requests: float) -> Runs:
        """The same figures per request."""
        out = Runs(self.span_us / requests, self.idle_us / requests)
        for role in ROLES:
            out.run_us[role] = self.run_us[role] / requests
            out.sleeps[role] = self.sleeps[role] / requests
        return out


def available() -> str | None:
    """None when ``perf sched`` can trace here, else why not."""
    if shutil.which("perf") is None:
        return "perf is not installed"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "probe.data"
        with recording(out):
            time.sleep(0.2)
        if not out.exists() or not out.stat().st_size:
            return "perf sched record traced nothing here: it needs root and tracefs"
    return None


@contextmanager
def recording(out: Path) -> Iterator[None]:
    """Trace every CPU's switches into ``out`` during the ``with`` block.  perf writes
    the trace out after it, taking a CPU for a while: count what the block measures
    inside it."""
    proc = subprocess.Popen(
        ["perf", "sched", "record", "-o", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(120)


def runs(data: Path, server: int, stubs: list[int], client: str = "perf_analyzer") -> Runs:
    """Sum ``data``'s run time and sleeps by role: the ``server`` process, its ``stubs``,
    the ``client`` (by command name), and anything else."""
    text = subprocess.run(
        ["perf", "script", "-i", str(data), "-F", "comm,pid,tid,cpu,time,event,trace"],
        check=True, capture_output=True, text=True, timeout=600,
    ).stdout  # fmt: skip
    total = Runs()
    first = last = None
    for line in text.splitlines():
        event = _EVENT.match(line)
        if event is None:
            continue
        stamp = float(event["time"])
        first = stamp if first is None else first
        last = stamp
        role = _role(event["comm"], int(event["pid"]), server, stubs, client)
        if event["ns"] is not None:
            total.run_us[role] += int(event["ns"]) / 1000
        elif event["state"][0] in "SD":
            total.sleeps[role] += 1
    if first is not None and last is not None:
        total.span_us = (last - first) * 1_000_000
    total.idle_us = max(total.span_us * (os.cpu_count() or 1) - sum(total.run_us.values()), 0.0)
    return total


def _role(comm: str, pid: int, server: int, stubs: list[int], client: str) -> str:
    if pid == server:
        return "server"
    if pid in stubs:
        return "stub"
    return "client" if comm.startswith(client) else "other"
