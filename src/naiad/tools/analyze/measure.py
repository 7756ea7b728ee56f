"""One trial for real: load a configuration into the server, sweep it with naiad
perf's engine (``--repeats`` times, back to back), and read the server
process's CPU time and memory.

Each point is the mean of its repeats, with the 95% confidence interval of
its throughput: a second configuration whose throughput is within that
noise is not better, whatever its mean says.

CPU time is read with psutil before and after each concurrency step (the
process and its children, such as Python-backend stubs): it covers the whole
step, its windows and their ramp-up alike, which is close to the windows'
own share since a step is nothing but windows.  Without psutil, or with a
server on another host, those columns stay empty.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from naiad.config import ModelConfig
from naiad.tools.analyze.model import AnalyzedModel
from naiad.tools.analyze.results import Point, Trial
from naiad.tools.analyze.server import LoadFailed, Server
from naiad.tools.analyze.space import Candidate
from naiad.tools.confidence import mean_interval
from naiad.tools.perf.settings import PerfError, PerfSettings


def config_json(config: ModelConfig) -> str:
    """The JSON the load API takes: the fields set, as protobuf prints them."""
    from google.protobuf import json_format

    return json_format.MessageToJson(config, preserving_proto_field_name=True, indent=None)


@dataclass
class Measurer:
    """Measures candidates one after another on ``server``; call it with a candidate."""

    server: Server
    model: AnalyzedModel
    #: The sweep of every trial; model and url are filled in here.
    settings: PerfSettings
    trials: int = 0
    #: Sweeps per configuration: their spread is the noise of its throughput.
    repeats: int = 1
    _usage: Any = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.settings = replace(
            self.settings, model=self.model.name, url=self.server.measure_address
        )
        self._usage = ProcessUsage.of(self.server.pid)

    def __call__(self, candidate: Candidate) -> Trial:
        self.trials += 1
        trial = Trial(self.trials, candidate)
        try:
            self.server.load(self.model.name, config_json(self.model.config_for(candidate)))
        except LoadFailed as exc:
            trial.error = f"does not load: {exc}"
            return trial
        usage = self._usage
        if usage is not None:
            usage.mark()
        sweeps: dict[int, list[Point]] = {}

        def on_result(result: Any) -> None:
            cpu, rss = usage.step() if usage is not None else (None, None)
            sweeps.setdefault(int(result.value), []).append(
                Point(
                    concurrency=int(result.value),
                    throughput=result.throughput,
                    p50_us=result.p50_us,
                    p90_us=result.p90_us,
                    p99_us=result.p99_us,
                    server_cpu_percent=cpu,
                    rss_mb=rss,
                    stable=result.stable,
                )
            )

        try:
            for _ in range(self.repeats):
                sweep(self.settings, on_result)
        except PerfError as exc:
            trial.error = str(exc)
            return trial
        trial.points = [combined(points) for points in sweeps.values()]
        return trial


def combined(points: Sequence[Point]) -> Point:
    """One concurrency's repeats as one point: the means, and the throughput's 95%
    confidence interval (the noise a rival configuration must beat)."""
    throughput, half = mean_interval([p.throughput for p in points])
    cpu = [p.server_cpu_percent for p in points if p.server_cpu_percent is not None]
    rss = [p.rss_mb for p in points if p.rss_mb is not None]
    return Point(
        concurrency=points[0].concurrency,
        throughput=throughput,
        p50_us=statistics.fmean(p.p50_us for p in points),
        p90_us=statistics.fmean(p.p90_us for p in points),
        p99_us=statistics.fmean(p.p99_us for p in points),
        server_cpu_percent=statistics.fmean(cpu) if cpu else None,
        rss_mb=max(rss) if rss else None,
        stable=all(p.stable for p in points),
        repeats=len(points),
        throughput_ci=half,
    )


def sweep(settings: PerfSettings, on_result: Callable[[Any], None]) -> None:
    """naiad perf's sweep on a loop of its own, which a Ctrl-C cancels cleanly
    (see :mod:`naiad.tools.interrupt`)."""
    from naiad.tools.interrupt import run_cancellable
    from naiad.tools.perf.api import run_sweep

    run_cancellable(run_sweep(settings, on_result=on_result))


class ProcessUsage:
    """The CPU time and resident memory of a process and its children, step by step."""

    def __init__(self, process: Any, errors: type[Exception]) -> None:
        self.process = process
        #: psutil.Error: the process (or a child) ended or cannot be read.
        self.errors = errors
        self._cpu_s = 0.0
        self._wall_s = 0.0

    @classmethod
    def of(cls, pid: int | None) -> ProcessUsage | None:
        if pid is None:
            return None
        try:
            import psutil
        except ImportError:  # the columns stay empty (naiad[tools] brings psutil)
            return None
        try:
            return cls(psutil.Process(pid), psutil.Error)
        except psutil.Error:
            return None

    def mark(self) -> None:
        self._cpu_s, self._wall_s = self._cpu(), time.monotonic()

    def step(self) -> tuple[float | None, float | None]:
        """(CPU percent of one core since the last mark, RSS in MiB now); marks again."""
        try:
            cpu, wall = self._cpu(), time.monotonic()
            rss = sum(p.memory_info().rss for p in self._family()) / (1024 * 1024)
        except self.errors:  # the server went away mid-step: the trial's error says why
            return None, None
        # A child that ended during the step takes its CPU time with it: never below 0.
        spent = max(cpu - self._cpu_s, 0.0)
        percent = 100 * spent / (wall - self._wall_s) if wall > self._wall_s else 0.0
        self._cpu_s, self._wall_s = cpu, wall
        return percent, rss

    def _family(self) -> list[Any]:
        try:
            return [self.process, *self.process.children(recursive=True)]
        except self.errors:
            return [self.process]

    def _cpu(self) -> float:
        total = 0.0
        for process in self._family():
            try:
                times = process.cpu_times()
            except self.errors:  # a child that ended between listing and reading
                continue
            total += times.user + times.system
        return total
