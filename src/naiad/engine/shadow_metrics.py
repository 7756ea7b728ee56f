"""The ``naiad_shadow_*`` metrics: what each model's shadow (engine/shadow.py) has seen.

One series per model with a shadow, labelled ``model`` and ``shadow`` (the
candidate, ``model:version``); they appear when the model loads with a
shadow and go with it.  Counters for requests, failures and both sides'
summed latency (rate them against each other, as Triton's duration
counters are read); gauges for the largest output differences and the
share of class-axis rows on which both picked the same class.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from naiad.engine.shadow import loaded_shadows
from naiad.metrics.exposition import FamilySnapshot, Sample, sorted_labels

if TYPE_CHECKING:
    from naiad.engine.registry import ModelRegistry
    from naiad.engine.shadow import ShadowStats

#: (name, kind, help, value)
_FAMILIES: tuple[tuple[str, str, str, Callable[[ShadowStats], float]], ...] = (
    ("naiad_shadow_request_count", "counter",
     "Requests also sent to the model's shadow", lambda s: s.requests),
    ("naiad_shadow_failure_count", "counter",
     "Shadow requests that failed on the shadow", lambda s: s.failures),
    ("naiad_shadow_skipped_count", "counter",
     "Requests due for the shadow while the model or the shadow was busy, not sent", lambda s: s.skipped),
    ("naiad_shadow_served_duration_us", "counter",
     "Cumulative latency of the served version on the requests both answered, in microseconds",
     lambda s: s.served_ns // 1000),
    ("naiad_shadow_duration_us", "counter",
     "Cumulative latency of the shadow on the requests both answered, in microseconds",
     lambda s: s.shadow_ns // 1000),
    ("naiad_shadow_max_abs_diff", "gauge",
     "Largest absolute difference between a served output and the shadow's", lambda s: s.max_abs_diff),
    ("naiad_shadow_max_rel_diff", "gauge",
     "Largest relative difference between a served output and the shadow's", lambda s: s.max_rel_diff),
    ("naiad_shadow_agreement_ratio", "gauge",
     "Share of class-axis output rows on which the served version and the shadow pick the same class",
     lambda s: s.agreeing / s.rows if s.rows else 1.0),
)  # fmt: skip


class ShadowMetrics:
    """The collector over one server's models."""

    names = frozenset(name for name, *_ in _FAMILIES)

    def __init__(self, models: ModelRegistry) -> None:
        self.models = models

    def collect(self) -> list[FamilySnapshot]:
        shadows = [
            (sorted_labels({"model": name, "shadow": s.label}), s.stats)
            for name, s in loaded_shadows(self.models)
        ]
        return [
            FamilySnapshot(name, text, kind, [Sample("", lb, read(stats)) for lb, stats in shadows])
            for name, kind, text, read in _FAMILIES
        ]
