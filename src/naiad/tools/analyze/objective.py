"""Which configuration is best: the highest throughput that meets the constraints.

A configuration is judged by the best of its sweep: the concurrency at which
it serves most while its p99 latency stays within the budget and its
throughput above the minimum.  A configuration that meets them nowhere still
gets a score, how far its closest point misses, so that a search started
from an infeasible model's own configuration climbs towards feasibility
instead of wandering.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from naiad.tools.analyze.results import Point, Trial

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
    """The best trial that meets the constraints somewhere; None when none does."""
    for trial in ranked(trials, constraints):
        return trial if score(trial, constraints)[0] == 1 else None
    return None


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
