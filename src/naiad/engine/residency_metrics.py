"""The ``naiad_model_residency_*``, load and eviction metrics (engine/residency.py).

Present only when residency is on.  The budget and the memory the loaded
models hold are gauges (with ``--workers``, each worker's share: the
metrics port sums them to the server's); loads made on demand, their
failures, unloads by reason, and the requests that waited for a load with
their summed wait are counters per model, as Triton's duration counters
are read (rate the wait against the count).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from naiad.metrics.exposition import FamilySnapshot, Sample, sorted_labels

if TYPE_CHECKING:
    from naiad.engine.residency import ModelResidency, Residency

#: (name, help, value) of the per-model counters.
_COUNTERS: tuple[tuple[str, str, Callable[[ModelResidency], float]], ...] = (
    ("naiad_model_load_count", "Loads of the model made by residency: on demand, or pinned at start-up",
     lambda s: s.loads),
    ("naiad_model_load_failure_count", "On-demand loads of the model that failed",
     lambda s: s.load_failures),
    ("naiad_model_load_wait_count", "Requests that waited for the model to load",
     lambda s: s.load_waits),
    ("naiad_model_load_wait_duration_us",
     "Cumulative time requests waited for the model to load, in microseconds",
     lambda s: s.load_wait_ns // 1000),
)  # fmt: skip

_EVICTIONS = "naiad_model_eviction_count"


class ResidencyMetrics:
    """The collector over one server's residency."""

    names = frozenset(
        [name for name, *_ in _COUNTERS]
        + [_EVICTIONS, "naiad_model_residency_budget_bytes", "naiad_model_residency_bytes"]
    )

    def __init__(self, residency: Residency) -> None:
        self.residency = residency

    def collect(self) -> list[FamilySnapshot]:
        residency = self.residency
        models = sorted(residency.models.items())
        families = [
            FamilySnapshot(
                "naiad_model_residency_budget_bytes",
                "Host memory the loaded models may hold (--model-memory-budget; 0: none)",
                "gauge",
                [Sample("", (), residency.budget)],
            ),
            FamilySnapshot(
                "naiad_model_residency_bytes",
                "Host memory the loaded models hold, as measured when each loaded",
                "gauge",
                [Sample("", (), residency.used())],
            ),
        ]
        families += [
            FamilySnapshot(
                name,
                text,
                "counter",
                [Sample("", sorted_labels({"model": m}), read(s)) for m, s in models],
            )
            for name, text, read in _COUNTERS
        ]
        evictions = [
            Sample("", sorted_labels({"model": m, "reason": why}), count)
            for m, s in models
            for why, count in sorted(s.evictions.items())
        ]
        families.append(
            FamilySnapshot(
                _EVICTIONS,
                "Unloads of the model by residency, by reason (budget, idle)",
                "counter",
                evictions,
            )
        )
        return families
