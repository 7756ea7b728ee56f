"""Original against candidate, served side by side by an in-process naiad server.

Requests go through :class:`naiad.Server`'s embedded API, so the numbers
include what serving adds (validation, scheduling, batching as configured)
and nothing of a network.  The two versions take turns request by request,
in rounds (see :mod:`.speed`): a machine that gets busier or warmer halfway
through weighs on both alike, and the rounds show how noisy it is.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from naiad.config import ModelConfig
from naiad.core import datatypes
from naiad.tools.console import duration
from naiad.tools.optimize.errors import OptimizeError
from naiad.tools.optimize.graph import first_line
from naiad.tools.optimize.inputs import InputSpec, Sample
from naiad.tools.optimize.speed import Round, Timing, spread
from naiad.tools.optimize.staging import CANDIDATE, ORIGINAL

#: Requests per version before timing starts (sessions allocate on first use).
WARMUP = 5


@dataclass(frozen=True)
class Latency:
    """One version's request latencies."""

    requests: int
    p50_us: float
    p99_us: float
    #: Inferences (batch items) per second, one request at a time.
    throughput: float
    #: The relative standard deviation of the throughput across rounds.
    spread: float = 0.0

    @staticmethod
    def of(durations_ns: Sequence[int], batch_items: int, spread: float = 0.0) -> Latency:
        us = np.asarray(durations_ns, dtype=np.float64) / 1e3
        total_s = float(us.sum()) / 1e6
        return Latency(
            requests=len(us),
            p50_us=float(np.percentile(us, 50)) if len(us) else 0.0,
            p99_us=float(np.percentile(us, 99)) if len(us) else 0.0,
            throughput=batch_items / total_s if total_s > 0 else 0.0,
            spread=spread,
        )


@dataclass
class Drift:
    """How far the candidate's outputs are from the original's, over every sample."""

    max_abs_diff: dict[str, float] = field(default_factory=dict)
    #: The original's largest absolute output value: the scale a difference is read against.
    max_abs_value: dict[str, float] = field(default_factory=dict)
    #: (rows, rows whose arg-max agrees) of the outputs that look like class scores.
    top1_rows: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def top1_agreement(self) -> dict[str, float]:
        """Share of rows whose predicted class is the same."""
        return {name: agree / rows for name, (rows, agree) in self.top1_rows.items() if rows}

    @property
    def worst(self) -> float:
        return max(self.max_abs_diff.values(), default=0.0)

    def add(self, name: str, expected: np.ndarray, got: np.ndarray) -> None:
        """Fold one output of one sample in."""
        diff = output_difference(expected, got)
        self.max_abs_diff[name] = max(self.max_abs_diff.get(name, 0.0), diff)
        if expected.dtype.kind in "biuf" and expected.size:
            scale = float(np.abs(expected.astype(np.float64)).max())
            self.max_abs_value[name] = max(self.max_abs_value.get(name, 0.0), scale)
        counts = top1(expected, got)
        if counts is not None:
            rows, agree = self.top1_rows.get(name, (0, 0))
            self.top1_rows[name] = (rows + counts[0], agree + counts[1])


@dataclass(frozen=True)
class Comparison:
    inputs: list[InputSpec]
    samples: int
    drift: Drift
    before: Latency
    after: Latency
    timing: Timing


def input_specs(config: ModelConfig) -> list[InputSpec]:
    """The inputs a request carries, from the served (auto-completed) config."""
    return [
        InputSpec(
            t.name,
            datatypes.from_config(t.data_type),
            tuple(int(d) for d in t.dims),
            config.max_batch_size > 0,
        )
        for t in config.input
        if not t.optional
    ]


def compare(
    repository: Path,
    name: str,
    make_samples: Callable[[list[InputSpec]], list[Sample]],
    *,
    requests: int,
    rounds: int,
    say: Callable[[str], None] = lambda _: None,
) -> Comparison:
    """Serve ``repository`` in-process, check drift on the samples, time both versions
    in ``rounds`` rounds of ``requests // rounds`` requests each.

    Ctrl-C during the rounds ends them: the comparison holds those that finished
    and says it was interrupted.  Before the rounds it raises KeyboardInterrupt.
    """
    from naiad.core.errors import NaiadError
    from naiad.server import Server

    server = Server(model_repository=repository, log_info=False, log_warning=False)
    say("loading both versions into an in-process naiad server")
    try:
        server.start()
    except NaiadError as exc:
        raise OptimizeError(f"naiad could not serve the model: {first_line(exc)}") from None
    try:
        for version in (ORIGINAL, CANDIDATE):
            if not _ready(server, name, version):
                reasons = [r for n, r in server.dataplane.failed_models() if n.startswith(name)]
                which = "original" if version == ORIGINAL else "optimised"
                why = first_line(Exception(reasons[0])) if reasons else "not ready"
                raise OptimizeError(f"the {which} model does not load in naiad: {why}")
        specs = input_specs(server.dataplane.model_config(name, str(ORIGINAL)))
        samples = make_samples(specs)
        if not samples:
            raise OptimizeError("no sample inputs to compare the models on")

        def infer(version: int, sample: Sample) -> dict[str, np.ndarray]:
            try:
                return server.infer(name, sample, version=version)
            except NaiadError as exc:
                which = "original" if version == ORIGINAL else "optimised"
                raise OptimizeError(f"the {which} model failed: {first_line(exc)}") from None

        say(f"checking the outputs on {len(samples)} samples")
        drift = Drift()
        for sample in samples:
            _add_drift(drift, infer(ORIGINAL, sample), infer(CANDIDATE, sample))
        for i in range(WARMUP):
            for version in (ORIGINAL, CANDIDATE):
                infer(version, samples[i % len(samples)])
        timing = Timing(planned=rounds, requests_per_round=max(requests // rounds, 1))
        try:
            for number in range(rounds):
                timing.rounds.append(
                    _round(infer, samples, specs, timing.requests_per_round, number)
                )
                done = timing.rounds[-1]
                before, after = (duration(statistics.median(ns) / 1e3)
                                 for ns in (done.before_ns, done.after_ns))  # fmt: skip
                say(f"round {number + 1}/{rounds}: median latency {before} original, {after} "
                    f"copy ({done.speedup:.2f}x)")  # fmt: skip
        except KeyboardInterrupt:
            timing.interrupted = True
        items = timing.items()
        return Comparison(
            inputs=specs,
            samples=len(samples),
            drift=drift,
            before=Latency.of(timing.before_ns(), items, spread(timing.throughputs("before"))),
            after=Latency.of(timing.after_ns(), items, spread(timing.throughputs("after"))),
            timing=timing,
        )
    finally:
        server.stop()


def _round(
    infer: Callable[[int, Sample], object], samples: Sequence[Sample],
    specs: Sequence[InputSpec], requests: int, number: int,
) -> Round:  # fmt: skip
    """One round: each request goes to both versions in turn, the first alternating so
    that neither always meets the caches the other warmed."""
    durations: dict[int, list[int]] = {ORIGINAL: [], CANDIDATE: []}
    items = 0
    for i in range(requests):
        sample = samples[(number * requests + i) % len(samples)]
        items += _batch_items(sample, specs)
        order = (ORIGINAL, CANDIDATE) if (number + i) % 2 == 0 else (CANDIDATE, ORIGINAL)
        for version in order:
            start = time.perf_counter_ns()
            infer(version, sample)
            durations[version].append(time.perf_counter_ns() - start)
    return Round(tuple(durations[ORIGINAL]), tuple(durations[CANDIDATE]), items)


def _ready(server: Any, name: str, version: int) -> bool:
    from naiad.core.errors import NaiadError

    try:
        return bool(server.model_ready(name, str(version)))
    except NaiadError:  # a version that never got as far as the registry
        return False


def _batch_items(sample: Sample, specs: Sequence[InputSpec]) -> int:
    for spec in specs:
        if spec.batched:
            return int(sample[spec.name].shape[0])
    return 1


def _add_drift(drift: Drift, before: dict[str, np.ndarray], after: dict[str, np.ndarray]) -> None:
    for name, expected in before.items():
        got = after.get(name)
        if got is None or got.shape != expected.shape:
            shape = None if got is None else list(got.shape)
            raise OptimizeError(
                f"output '{name}' changed shape: {list(expected.shape)} before, {shape} after"
            )
        drift.add(name, expected, got)


def output_difference(expected: np.ndarray, got: np.ndarray) -> float:
    """The largest absolute difference; for non-numbers, 1.0 where anything differs."""
    if expected.dtype.kind in "biuf" and got.dtype.kind in "biuf":
        if expected.size == 0:
            return 0.0
        diff = np.abs(expected.astype(np.float64) - got.astype(np.float64))
        return float(np.nan_to_num(diff, nan=np.inf).max())
    return 0.0 if np.array_equal(expected, got) else 1.0


def top1(expected: np.ndarray, got: np.ndarray) -> tuple[int, int] | None:
    """(rows, rows whose arg-max agrees) when the output looks like class scores."""
    if expected.dtype.kind != "f" or expected.ndim == 0 or expected.shape[-1] <= 1:
        return None
    a = expected.reshape(-1, expected.shape[-1]).argmax(axis=-1)
    b = got.reshape(-1, got.shape[-1]).argmax(axis=-1)
    return len(a), int((a == b).sum())
