"""Which configuration is best: the highest throughput that meets the constraints,
unless a simpler one is as good within the noise.

A configuration is judged by the best of its sweep: the concurrency at which
it serves most while its p99 latency stays within the budget and its
throughput above the minimum.  A configuration that meets them nowhere still
gets a score, how far its closest point misses, so that a search started
from an infeasible model's own configuration climbs towards feasibility
instead of wandering.

The final choice (:func:`choose`) does not crown a mean that is higher by
less than the noise: every configuration whose best throughput is within
the noise of the highest (see :func:`within_noise`) is as good, and of those
the simplest wins (:func:`simplicity`), then the lowest p99.  A simpler
configuration costs less memory and CPU and is easier to reason about.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from naiad.tools.analyze.results import Point, Trial
from naiad.tools.analyze.space import Candidate

#: (1, throughput) for a configuration that meets the constraints, (0, -miss) for one that
#: does not (miss >= 1: how many times over the budget its closest point is), (-1, 0) for a
#: configuration that failed to load or measure.  Tuples compare in that order.
Score = tuple[int, float]


@dataclass(frozen=True)
class Constraints:
    latency_budget_us: float | None = None  # on p99
    min_throughput: float | None = None

    def meets(self, point: Point) -> bool:
        if self.latency_budget_us is not None and point.p99_us > self.latency_budget_us:
            return False
        return self.min_throughput is None or point.throughput >= self.min_throughput

    def miss(self, point: Point) -> float:
        """How many times over a limit ``point`` is (1.0 or less: within both)."""
        ratios = [1.0]
        if self.latency_budget_us:
            ratios.append(point.p99_us / self.latency_budget_us)
        if self.min_throughput:
            ratios.append(self.min_throughput / max(point.throughput, 1e-9))
        return max(ratios)

    def describe(self) -> str:
        parts = []
        if self.latency_budget_us is not None:
            parts.append(f"p99 <= {self.latency_budget_us / 1000:g} ms")
        if self.min_throughput is not None:
            parts.append(f"throughput >= {self.min_throughput:g} infer/s")
        return ", ".join(parts) or "none (highest throughput)"


def best_point(trial: Trial, constraints: Constraints) -> Point | None:
    """The trial's highest-throughput point within the constraints."""
    fits = [p for p in trial.points if constraints.meets(p)]
    return max(fits, key=lambda p: p.throughput, default=None)


def score(trial: Trial, constraints: Constraints) -> Score:
    if trial.error or not trial.points:
        return (-1, 0.0)
    point = best_point(trial, constraints)
    if point is not None:
        return (1, point.throughput)
    return (0, -min(constraints.miss(p) for p in trial.points))


def ranked(trials: Iterable[Trial], constraints: Constraints) -> list[Trial]:
    """Best first; ties keep the order the trials were measured in."""
    return sorted(trials, key=lambda t: score(t, constraints), reverse=True)


def chosen(trials: Sequence[Trial], constraints: Constraints) -> Trial | None:
    """The chosen trial (see :func:`choose`); None when none meets the constraints."""
    return choose(trials, constraints).trial


def within_noise(a: Point, b: Point) -> bool:
    """Whether two throughputs differ by no more than their combined 95% confidence
    half-widths.  Without repeats (half-widths of 0) only equal figures are."""
    return abs(a.throughput - b.throughput) <= math.hypot(a.throughput_ci, b.throughput_ci)


def simplicity(candidate: Candidate) -> tuple[int, ...]:
    """Smaller is simpler: fewer instances, then no dynamic batching, then a smaller
    max_batch_size and queue delay, then ONNX Runtime's default thread counts (0) or
    fewer threads."""
    c = candidate
    batching = (1, c.max_batch_size, c.max_queue_delay_us) if c.dynamic_batching else (0, 0, 0)
    return (c.instances, *batching, c.intra_op_threads, c.inter_op_threads)


@dataclass(frozen=True)
class Choice:
    """The chosen trial and why: the top one by throughput, those within its noise."""

    trial: Trial | None
    #: The trial with the highest throughput within the constraints.
    top: Trial | None = None
    #: The trials within the noise of ``top`` (``top`` and ``trial`` among them).
    ties: list[Trial] = field(default_factory=list)
    #: Measured trials that meet the constraints at no concurrency.
    excluded: list[Trial] = field(default_factory=list)

    def reason(self, constraints: Constraints) -> str:
        """One sentence on the choice, for the report and the console."""
        if self.trial is None or self.top is None:
            return ""
        mine = best_point(self.trial, constraints)
        assert mine is not None
        if self.trial is self.top:
            others = len(self.ties) - 1
            if others:
                return (f"highest throughput ({_throughput(mine)}); {others} other "
                        "configuration(s) within its noise are not simpler")  # fmt: skip
            return f"highest throughput ({_throughput(mine)}), beyond the noise of the others"
        top = best_point(self.top, constraints)
        assert top is not None
        return (f"within the noise of the highest, #{self.top.number} "
                f"{self.top.candidate.describe()} ({_throughput(top)} against "
                f"{_throughput(mine)}), and simpler")  # fmt: skip


def choose(trials: Sequence[Trial], constraints: Constraints) -> Choice:
    """The simplest of the configurations within the noise of the highest throughput
    that meets the constraints (ties on simplicity: the lowest p99)."""
    measured = [t for t in trials if not t.error and t.points]
    feasible = [(t, p) for t in measured if (p := best_point(t, constraints)) is not None]
    excluded = [t for t in measured if best_point(t, constraints) is None]
    if not feasible:
        return Choice(None, excluded=excluded)
    top, top_point = max(feasible, key=lambda tp: tp[1].throughput)
    ties = [(t, p) for t, p in feasible if within_noise(p, top_point)]
    trial, _ = min(ties, key=lambda tp: (simplicity(tp[0].candidate), tp[1].p99_us))
    return Choice(trial, top, [t for t, _ in ties], excluded)


def _throughput(point: Point) -> str:
    if point.repeats > 1:
        return f"{point.throughput:.1f} ± {point.throughput_ci:.1f} infer/s"
    return f"{point.throughput:.1f} infer/s"


def pareto_front(trials: Iterable[Trial]) -> list[tuple[Trial, Point]]:
    """The points no other point beats on both throughput and p99, by rising throughput."""
    points = sorted(
        ((t, p) for t in trials if not t.error for p in t.points),
        key=lambda tp: (-tp[1].throughput, tp[1].p99_us),
    )
    front: list[tuple[Trial, Point]] = []
    lowest = float("inf")
    for trial, point in points:  # from the highest throughput down: keep each new low p99
        if point.p99_us < lowest:
            front.append((trial, point))
            lowest = point.p99_us
    return front[::-1]
