"""Windows, stability and the result of one step, as perf_analyzer measures them.

A step (one concurrency or one request rate) is measured in windows of
``--measurement-interval`` ms (or until ``--measurement-request-count``
requests completed, in count_windows mode) until the last three agree: their
throughput and their latency (the average, or the ``--percentile``) each
within ``--stability-percentage`` of the three's mean.  The step's figures
are those of the three windows together; after ``--max-trials`` windows
without agreement the last three are reported and the step marked unstable.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from naiad.tools.perf.load import Sample
from naiad.tools.perf.procs import Group, Processes
from naiad.tools.perf.settings import PerfError, PerfSettings
from naiad.tools.perf.stats import ServerStats
from naiad.tools.perf.targets import Target

_STABLE_WINDOWS = 3


@dataclass
class Window:
    seconds: float
    sample: Sample
    server: ServerStats

    def throughput(self, batch: int) -> float:
        return len(self.sample.latencies) * batch / self.seconds if self.seconds else 0.0

    def latency(self, percentile: int) -> float:
        if not self.sample.latencies:
            return 0.0
        if percentile:
            return float(np.percentile(self.sample.latencies, percentile))
        return float(np.mean(self.sample.latencies))


@dataclass
class StepResult:
    """One row of the report; times in microseconds."""

    kind: str  # concurrency | rate | intervals
    value: float
    throughput: float
    requests: int
    avg_us: float
    p50_us: float
    p90_us: float
    p95_us: float
    p99_us: float
    std_us: float
    client_send_us: float
    client_recv_us: float
    server: ServerStats
    client_cpu_percent: float
    processes: int
    stable: bool
    windows: int
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def network_us(self) -> float:
        """perf_analyzer's "Network+Server Send/Recv": what the client waited beyond the
        server's queue and compute times."""
        server = sum(self.server.per_request_us(n) for n in
                     ("queue_ns", "compute_input_ns", "compute_infer_ns", "compute_output_ns"))  # fmt: skip
        return max(self.avg_us - self.client_send_us - self.client_recv_us - server, 0.0)


Progress = Callable[[str], None]


async def measure_step(
    group: Group | Processes,
    target: Target,
    settings: PerfSettings,
    kind: str,
    value: float,
    progress: Progress,
) -> StepResult:
    if kind == "concurrency":
        await group.set_concurrency(int(value))
    else:
        await group.set_rate(value, settings.request_intervals_us)
    label = {"concurrency": "concurrency", "rate": "request rate", "intervals": "intervals"}[kind]
    windows: list[Window] = []
    await group.take(0, time.perf_counter_ns())  # what came before this step
    stable = False
    while len(windows) < settings.max_trials:
        windows.append(await _window(group, target, settings))
        errors = windows[-1].sample.errors
        if errors:
            raise PerfError(f"the server answered a request with an error: {errors[0]}")
        last = windows[-1]
        progress(
            f"{label} {value:g}: window {len(windows)}: "
            f"{last.throughput(settings.batch_size):.1f} infer/s, "
            f"latency {last.latency(settings.percentile) / 1000:.0f} usec"
        )
        if len(windows) >= _STABLE_WINDOWS and _stable(windows[-_STABLE_WINDOWS:], settings):
            stable = True
            break
    return _result(kind, value, windows[-_STABLE_WINDOWS:], settings, stable, len(windows),
                   group.processes)  # fmt: skip


async def _window(group: Group | Processes, target: Target, settings: PerfSettings) -> Window:
    before = await target.statistics()
    start = time.perf_counter_ns()
    if settings.measurement_mode == "count_windows":
        sample = Sample()
        mark = start
        while len(sample.latencies) < settings.measurement_request_count:
            await asyncio.sleep(0.05)
            now = time.perf_counter_ns()
            sample.extend(await group.take(mark, now))
            mark = now
        end = mark
    else:
        await asyncio.sleep(settings.measurement_interval_ms / 1000)
        end = time.perf_counter_ns()
        sample = await group.take(start, end)
    after = await target.statistics()
    return Window((end - start) / 1e9, sample, after - before)


def _stable(windows: list[Window], settings: PerfSettings) -> bool:
    limit = settings.stability_percentage / 100
    for values in ([w.throughput(settings.batch_size) for w in windows],
                   [w.latency(settings.percentile) for w in windows]):  # fmt: skip
        mean = sum(values) / len(values)
        if mean <= 0 or any(abs(v - mean) / mean > limit for v in values):
            return False
    return True


def _result(
    kind: str,
    value: float,
    windows: list[Window],
    settings: PerfSettings,
    stable: bool,
    trials: int,
    processes: int,
) -> StepResult:
    latencies = np.array([x for w in windows for x in w.sample.latencies], dtype=np.float64)
    seconds = sum(w.seconds for w in windows)
    requests = len(latencies)
    server = ServerStats()
    for w in windows:
        server = server + w.server
    if not requests:
        raise PerfError(
            f"no request completed in {seconds:.1f} s at {kind} {value:g}: the server is too "
            "slow for the measurement window (raise --measurement-interval)"
        )
    p50, p90, p95, p99 = (float(v) / 1000 for v in np.percentile(latencies, [50, 90, 95, 99]))
    return StepResult(
        kind=kind,
        value=value,
        throughput=requests * settings.batch_size / seconds,
        requests=requests,
        avg_us=float(latencies.mean()) / 1000,
        p50_us=p50,
        p90_us=p90,
        p95_us=p95,
        p99_us=p99,
        std_us=float(latencies.std()) / 1000,
        client_send_us=sum(w.sample.send_ns for w in windows) / requests / 1000,
        client_recv_us=sum(w.sample.recv_ns for w in windows) / requests / 1000,
        server=server,
        client_cpu_percent=100 * sum(w.sample.cpu_s for w in windows) / seconds,
        processes=processes,
        stable=stable,
        windows=trials,
    )
