"""The configurations ``naiad analyze`` may try: one value per knob, and the grid of them.

A knob that a configuration makes meaningless (the queue delay and batch size
of a model without dynamic batching) is pinned to one value, so that the grid
holds each distinct server behaviour once and no search measures the same
thing twice under two names.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, fields, replace
from typing import Any

#: The knobs in the order the quick search walks them: the ones that change the most first,
#: and dynamic batching before the batch size and delay it enables.
KNOBS = (
    "instances",
    "dynamic_batching",
    "max_batch_size",
    "max_queue_delay_us",
    "intra_op_threads",
    "inter_op_threads",
)


@dataclass(frozen=True, order=True)
class Candidate:
    """One configuration: what ``naiad analyze`` changes in the model's config."""

    #: ``instance_group[].count``.
    instances: int = 1
    dynamic_batching: bool = False
    #: ``max_batch_size`` (0: the model does not batch).
    max_batch_size: int = 0
    #: ``dynamic_batching.max_queue_delay_microseconds``.
    max_queue_delay_us: int = 0
    #: ONNX Runtime's ``intra_op_thread_count`` parameter; 0 leaves ONNX Runtime's default.
    intra_op_threads: int = 0
    #: ``inter_op_thread_count``; 0 leaves the default.
    inter_op_threads: int = 0

    def describe(self) -> str:
        """A short label, in the words of the progress lines and the report."""
        parts = [f"instances={self.instances}"]
        if self.max_batch_size:
            parts.append(f"batch={self.max_batch_size}")
            parts.append(f"dyn={'on' if self.dynamic_batching else 'off'}")
            if self.dynamic_batching:
                parts.append(f"delay={self.max_queue_delay_us}us")
        if self.intra_op_threads:
            parts.append(f"intra={self.intra_op_threads}")
        if self.inter_op_threads:
            parts.append(f"inter={self.inter_op_threads}")
        return " ".join(parts)

    def with_knob(self, knob: str, value: Any) -> Candidate:
        return replace(self, **{knob: value})


@dataclass(frozen=True)
class Space:
    """The values each knob may take, and the model's own configuration (``start``)."""

    start: Candidate
    instances: tuple[int, ...] = (1,)
    dynamic_batching: tuple[bool, ...] = (False,)
    max_batch_size: tuple[int, ...] = (0,)
    max_queue_delay_us: tuple[int, ...] = (0,)
    intra_op_threads: tuple[int, ...] = (0,)
    inter_op_threads: tuple[int, ...] = (0,)

    @classmethod
    def around(cls, start: Candidate, **values: tuple[Any, ...]) -> Space:
        """A space whose every knob also holds ``start``'s value, so the model's own
        configuration is always one of the grid's (and the baseline of the report)."""
        merged = {
            knob: tuple(sorted(set(values.get(knob, ())) | {getattr(start, knob)}))
            for knob in KNOBS
        }
        return cls(start=start, **merged)

    def values(self, knob: str) -> tuple[Any, ...]:
        return tuple(getattr(self, knob))

    def canonical(self, candidate: Candidate) -> Candidate:
        """``candidate`` with the knobs it makes meaningless pinned: without dynamic
        batching, requests of one item are never combined, so the batch size stays the
        model's own (clients may send batches that big) and the delay is 0."""
        if candidate.dynamic_batching:
            return candidate
        return replace(candidate, max_batch_size=self.start.max_batch_size, max_queue_delay_us=0)

    def grid(self) -> list[Candidate]:
        """Every distinct configuration, the model's own first."""
        found = {self.canonical(self.start): None}
        for combination in itertools.product(*(self.values(k) for k in KNOBS)):
            found.setdefault(self.canonical(Candidate(*combination)), None)
        return list(found)

    def varied(self) -> list[str]:
        """The knobs with more than one value (the report names them)."""
        return [f.name for f in fields(Candidate) if len(self.values(f.name)) > 1]
