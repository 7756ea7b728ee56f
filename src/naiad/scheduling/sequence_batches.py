"""How the sequence batcher forms one instance's next batch, per strategy.

Both strategies take at most one request per sequence (the next one needs
the state this one produces) and only requests whose input shapes agree.

Direct: row ``k`` of the batch is slot ``k``; slots without a ready request
below the highest ready one become filler rows (READY false), so a model
that keeps per-row state sees every sequence in its own row.  A model
without a READY control could not tell a filler from a request, so its
ready rows are packed instead (Triton pads regardless).  With
``max_queue_delay_microseconds`` the batch waits until
``minimum_slot_utilization`` of the slots are ready or the oldest request
has waited that long.

Oldest: the ready sequences' head requests, oldest first, up to
``max_batch_size``; sent at once when the batch is full (or reaches the
largest preferred size, or holds every sequence the instance has while none
wait for a slot), otherwise when the oldest request has waited
``max_queue_delay_microseconds``, cut to the largest preferred size that fits.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from naiad.core.types import InferenceRequest
    from naiad.scheduling.sequence_slots import Sequence

#: Batch rows: a sequence whose head request runs, or None for a filler row.
Rows = list["Sequence | None"]


def shape_key(request: InferenceRequest) -> tuple[tuple[str, tuple[int, ...]], ...]:
    return tuple(sorted((t.name, tuple(t.shape)) for t in request.inputs))


def _head(sequence: Sequence) -> InferenceRequest:
    return sequence.pending[0]


class DirectPolicy:
    def __init__(self, slots: int, delay_us: int, utilization: float, pad: bool) -> None:
        self.pad = pad
        self.delay_ns = delay_us * 1000
        self.needed = max(1, math.ceil(utilization * slots)) if utilization > 0 else 1

    def form(self, row: list[Sequence | None], now_ns: int, backlog: bool) -> tuple[Rows, int]:
        """(rows to run, 0) or ([], deadline to look again at, 0 for never)."""
        ready = [s for s in row if s is not None and s.ready]
        if not ready:
            return [], 0
        if self.delay_ns and len(ready) < self.needed:
            oldest = min(_head(s).queue_start_ns for s in ready)
            deadline = oldest + self.delay_ns
            if now_ns < deadline:
                return [], deadline
        key = shape_key(_head(ready[0]))
        if not self.pad:
            return [s for s in ready if shape_key(_head(s)) == key], 0
        chosen = {id(s) for s in ready if shape_key(_head(s)) == key}
        last = max(s.slot for s in ready if id(s) in chosen)
        rows: Rows = []
        for slot in range(last + 1):
            sequence = row[slot]
            rows.append(sequence if sequence is not None and id(sequence) in chosen else None)
        return rows, 0


class OldestPolicy:
    def __init__(self, max_rows: int, preferred: list[int], delay_us: int) -> None:
        self.max_rows = max_rows
        self.preferred = sorted(p for p in preferred if 0 < p <= max_rows)
        self.target = self.preferred[-1] if self.preferred else max_rows
        self.delay_ns = delay_us * 1000

    def form(self, row: list[Sequence | None], now_ns: int, backlog: bool) -> tuple[Rows, int]:
        ready = [s for s in row if s is not None and s.ready]
        if not ready:
            return [], 0
        ready.sort(key=lambda s: _head(s).queue_start_ns)
        key = shape_key(_head(ready[0]))
        picked: Rows = [s for s in ready if shape_key(_head(s)) == key]
        del picked[self.max_rows :]
        count = len(picked)
        if not self.delay_ns or count >= self.target:
            return picked, 0
        held = sum(1 for s in row if s is not None)
        if count == held and not backlog:
            return picked, 0  # no other sequence could join
        deadline = _head(ready[0]).queue_start_ns + self.delay_ns
        if now_ns < deadline:
            return [], deadline
        fitting = [p for p in self.preferred if p <= count]
        return picked[: fitting[-1]] if fitting else picked, 0
