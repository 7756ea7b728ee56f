"""Is the copy faster?  Rounds of paired measurements and a verdict beyond noise.

A single before/after timing cannot tell a real gain from the machine's
mood: another process, a frequency change or a cache warming up moves a
run by more than many optimisations gain.  So the versions are timed in
rounds, taking turns request by request inside each round (who goes first
alternates), and every round gives one *paired* speed-up: the original's
time for its requests over the copy's time for the same requests, measured
in the same seconds.  Drift that lasts longer than a round weighs on both
sides of a ratio alike; what is left shows as a spread across rounds.

The rule: the copy is **faster beyond noise** when the 95% confidence
interval of the speed-up (Student's t over the rounds' log ratios) lies
wholly above 1; **slower beyond noise** when it lies wholly below 1; else
the difference is within noise.  Only the first is written without
``--force``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from naiad.tools.confidence import mean_interval

FASTER = "faster beyond noise"
SLOWER = "slower beyond noise"
WITHIN = "within noise"


@dataclass(frozen=True)
class Round:
    """One round: the durations of each version's requests, in nanoseconds."""

    before_ns: tuple[int, ...]
    after_ns: tuple[int, ...]
    #: Batch items in the round's requests (each version served the same ones).
    items: int

    @property
    def speedup(self) -> float:
        """How many times faster the copy served the same requests (above 1: faster)."""
        after = statistics.median(self.after_ns) if self.after_ns else 0
        return statistics.median(self.before_ns) / after if after else math.inf


@dataclass(frozen=True)
class Verdict:
    #: The geometric mean of the rounds' speed-ups.
    speedup: float
    #: The 95% confidence interval of the speed-up (both 0 with fewer than two rounds).
    low: float
    high: float
    rounds: int

    @property
    def word(self) -> str:
        if self.rounds >= 2 and self.low > 1:
            return FASTER
        if self.rounds >= 2 and self.high < 1:
            return SLOWER
        return WITHIN

    @property
    def faster(self) -> bool:
        return self.word == FASTER

    def describe(self) -> str:
        if self.rounds < 2:
            return f"speed-up {self.speedup:.3f}x from {self.rounds} round, no noise estimate"
        return (f"speed-up {self.speedup:.3f}x, 95% interval {self.low:.3f}x to "
                f"{self.high:.3f}x over {self.rounds} rounds")  # fmt: skip


def verdict(speedups: Sequence[float]) -> Verdict:
    """The speed-up and its 95% interval from the rounds' paired speed-ups."""
    logs = [math.log(s) for s in speedups if 0 < s < math.inf]
    if not logs:
        return Verdict(1.0, 0.0, 0.0, 0)
    mean, half = mean_interval(logs)
    if len(logs) < 2:
        return Verdict(math.exp(mean), 0.0, 0.0, 1)
    return Verdict(math.exp(mean), math.exp(mean - half), math.exp(mean + half), len(logs))


@dataclass
class Timing:
    """The rounds measured so far, of those planned."""

    planned: int
    requests_per_round: int
    rounds: list[Round] = field(default_factory=list)
    #: Ctrl-C stopped the rounds before all were measured.
    interrupted: bool = False

    def before_ns(self) -> list[int]:
        return [d for r in self.rounds for d in r.before_ns]

    def after_ns(self) -> list[int]:
        return [d for r in self.rounds for d in r.after_ns]

    def items(self) -> int:
        return sum(r.items for r in self.rounds)

    def verdict(self) -> Verdict:
        return verdict([r.speedup for r in self.rounds])

    def throughputs(self, side: str) -> list[float]:
        """Each round's inferences per second of one side, ``before`` or ``after``."""
        found = []
        for r in self.rounds:
            seconds = sum(r.before_ns if side == "before" else r.after_ns) / 1e9
            found.append(r.items / seconds if seconds > 0 else 0.0)
        return found


def spread(per_round: Sequence[float]) -> float:
    """The rounds' relative standard deviation (0 with fewer than two rounds)."""
    n = len(per_round)
    if n < 2:
        return 0.0
    mean = sum(per_round) / n
    if mean <= 0:
        return 0.0
    return math.sqrt(sum((v - mean) ** 2 for v in per_round) / (n - 1)) / mean
