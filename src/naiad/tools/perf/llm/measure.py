"""One level of an LLM sweep: measured in windows until they agree, or for a request count.

Windows as perf measures them (``naiad.tools.perf.measure``): each
``--measurement-interval`` ms (or each ``--measurement-request-count``
requests in count_windows mode), until the last three agree within
``--stability-percentage`` on request throughput and request latency (the
average, or ``--percentile``); the level's figures are those three windows'
generations.  With ``--request-count N`` the level is instead the first N
requests to end of those sent after the warm-up (none begun at an earlier
level), and its seconds run from the first one's start to the last one's
last token, as GenAI-Perf measures a run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from naiad.tools.perf.llm.figures import LevelResult, level_result, span_s
from naiad.tools.perf.llm.load import LlmLoad, Taken
from naiad.tools.perf.llm.settings import LlmSettings
from naiad.tools.perf.settings import PerfError, PerfSettings

_STABLE_WINDOWS = 3
_POLL_S = 0.05

Progress = Callable[[str], None]


@dataclass
class Window:
    seconds: float
    taken: Taken

    def throughput(self) -> float:
        return len(self.taken.generations) / self.seconds if self.seconds else 0.0

    def latency(self, percentile: int) -> float:
        latencies = [g.end_ns - g.start_ns for g in self.taken.generations]
        if not latencies:
            return 0.0
        if percentile:
            return float(np.percentile(latencies, percentile))
        return float(np.mean(latencies))


async def measure_level(
    load: LlmLoad,
    perf: PerfSettings,
    llm: LlmSettings,
    kind: str,
    value: float,
    progress: Progress,
) -> LevelResult:
    if kind == "concurrency":
        await load.set_concurrency(int(value))
    else:
        await load.set_rate(value)
    label = f"{'concurrency' if kind == 'concurrency' else 'request rate'} {value:g}"
    load.take(0, time.perf_counter_ns())  # what came before this level
    if llm.warmup_request_count:
        progress(f"{label}: warming up ({llm.warmup_request_count} requests)")
        await _count(load, llm.warmup_request_count)
    if llm.request_count:
        progress(f"{label}: measuring {llm.request_count} requests")
        taken = await _count(load, llm.request_count, since=time.perf_counter_ns())
        done = sorted(taken.generations, key=lambda g: g.end_ns)[: llm.request_count]
        return level_result(kind, value, done, span_s(done), cpu_s=taken.cpu_s)
    windows: list[Window] = []
    stable = False
    while len(windows) < perf.max_trials:
        windows.append(await _window(load, perf))
        last = windows[-1]
        progress(f"{label}: window {len(windows)}: {last.throughput():.2f} requests/s, "
                 f"latency {last.latency(perf.percentile) / 1e6:.1f} ms")  # fmt: skip
        if len(windows) >= _STABLE_WINDOWS and _stable(windows[-_STABLE_WINDOWS:], perf):
            stable = True
            break
    kept = windows[-_STABLE_WINDOWS:]
    generations = [g for w in kept for g in w.taken.generations]
    if not generations:
        raise PerfError(
            f"no request completed in {sum(w.seconds for w in kept):.1f} s at {label}: the "
            "generations outlast the window (raise --measurement-interval, or use "
            "--request-count)"
        )
    return level_result(kind, value, generations, sum(w.seconds for w in kept), stable=stable,
                        windows=len(windows), cpu_s=sum(w.taken.cpu_s for w in kept))  # fmt: skip


async def _window(load: LlmLoad, perf: PerfSettings) -> Window:
    start = time.perf_counter_ns()
    if perf.measurement_mode == "count_windows":
        taken = await _count(load, perf.measurement_request_count, start)
        end = max((g.end_ns for g in taken.generations), default=time.perf_counter_ns())
    else:
        await asyncio.sleep(perf.measurement_interval_ms / 1000)
        end = time.perf_counter_ns()
        taken = _checked(load.take(start, end))
    return Window((end - start) / 1e9, taken)


async def _count(load: LlmLoad, count: int, start: int | None = None, since: int = 0) -> Taken:
    """Wait until ``count`` more generations ended (of those sent from ``since`` on);
    all that ended meanwhile."""
    taken = Taken()
    mark = time.perf_counter_ns() if start is None else start
    while len(taken.generations) < count:
        await asyncio.sleep(_POLL_S)
        now = time.perf_counter_ns()
        more = _checked(load.take(mark, now))
        more.generations = [g for g in more.generations if g.start_ns >= since]
        taken.extend(more)
        mark = now
    return taken


def _checked(taken: Taken) -> Taken:
    if taken.errors:
        raise PerfError(f"the server answered a request with an error: {taken.errors[0]}")
    return taken


def _stable(windows: list[Window], perf: PerfSettings) -> bool:
    limit = perf.stability_percentage / 100
    for values in ([w.throughput() for w in windows],
                   [w.latency(perf.percentile) for w in windows]):  # fmt: skip
        mean = sum(values) / len(values)
        if mean <= 0 or any(abs(v - mean) / mean > limit for v in values):
            return False
    return True
