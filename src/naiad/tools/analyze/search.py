"""The two ways through a :class:`~.space.Space`: the whole grid, or a climb.

Both call ``evaluate`` once per configuration they want measured and never
twice for the same one; what ``evaluate`` does (load a config into a server
and sweep it, or look a number up in a table) is the caller's, which keeps
the search testable without a server.

``quick`` is coordinate ascent from the model's own configuration, as Model
Analyzer's quick search climbs from its defaults: along one knob at a time,
try that knob's every value with the others held, move to the best, and
walk the knobs again until a whole walk moves nothing.  Knobs here have a
handful of values each and interact mostly through dynamic batching (which
is walked before the batch size and delay it enables), so one or two walks
find the best or come close.  It stops at a budget of a third of the grid,
so it never costs more than that fraction of ``brute``.
"""

from __future__ import annotations

from collections.abc import Callable

from naiad.tools.analyze.objective import Score
from naiad.tools.analyze.results import Trial
from naiad.tools.analyze.space import KNOBS, Candidate, Space

Evaluate = Callable[[Candidate], Trial]
Scorer = Callable[[Trial], Score]

SEARCHES = ("quick", "brute")


def planned_trials(space: Space, search: str) -> int:
    """How many trials ``search`` may take (the progress line's total)."""
    size = len(space.grid())
    return size if search == "brute" else quick_budget(size)


def quick_budget(grid_size: int) -> int:
    """A third of the grid, at least one trial (the model's own configuration)."""
    return max(1, grid_size // 3)


def brute(space: Space, evaluate: Evaluate) -> None:
    for candidate in space.grid():
        evaluate(candidate)


def quick(space: Space, evaluate: Evaluate, scorer: Scorer) -> None:
    budget = quick_budget(len(space.grid()))
    seen: dict[Candidate, Score] = {}

    def measured(candidate: Candidate) -> Score | None:
        """Its score, measuring it first if need be; None once the budget is spent."""
        if candidate not in seen:
            if len(seen) >= budget:
                return None
            seen[candidate] = scorer(evaluate(candidate))
        return seen[candidate]

    current = space.canonical(space.start)
    if measured(current) is None:
        return
    moved = True
    while moved:
        moved = False
        for knob in KNOBS:
            best = current
            for value in _nearest_first(space.values(knob), getattr(current, knob)):
                candidate = space.canonical(current.with_knob(knob, value))
                found = measured(candidate)
                if found is None:
                    return
                if found > seen[best]:
                    best = candidate
            if best != current:
                current, moved = best, True


def _nearest_first(values: tuple[object, ...], current: object) -> list[object]:
    """A knob's values, those next to the current one first: if the budget runs out
    mid-knob, the steps most likely to help were taken."""
    if current not in values:
        return list(values)
    at = values.index(current)
    return sorted(values, key=lambda v: abs(values.index(v) - at))
