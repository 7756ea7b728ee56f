"""Sequences and the batch slots they hold.

Every instance has a fixed number of slots (Direct: ``max(1, max_batch_size)``,
one per batch row; Oldest: ``max_candidate_sequences``).  A sequence gets a
slot when its first request arrives and keeps it until its END request is
taken into a batch or it has been idle too long, so all its requests reach the
same instance (and, with Direct, the same batch row).  When no slot is free
the sequence waits in a backlog, in arrival order, and takes the next slot
that frees up.
"""

from __future__ import annotations

import collections
import heapq
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from naiad.core.types import CorrelationId, InferenceRequest
    from naiad.scheduling.sequence_state import State

NO_SLOT = -1


class Sequence:
    """One sequence: its queued requests, its slot and its implicit state."""

    __slots__ = ("cid", "instance", "slot", "pending", "busy", "state", "last_ns")

    def __init__(self, cid: CorrelationId, state: State, now_ns: int) -> None:
        self.cid = cid
        self.instance = NO_SLOT
        self.slot = NO_SLOT
        self.pending: collections.deque[InferenceRequest] = collections.deque()
        #: A request of the sequence is executing; the next waits for its state.
        self.busy = False
        self.state = state
        self.last_ns = now_ns

    @property
    def ready(self) -> bool:
        """Whether the sequence's next request may run now."""
        return bool(self.pending) and not self.busy and self.slot != NO_SLOT

    @property
    def idle(self) -> bool:
        return not self.pending and not self.busy

    def __repr__(self) -> str:
        return f"Sequence({self.cid!r}, instance={self.instance}, slot={self.slot})"


class SlotTable:
    """Free slots (lowest slot index first, spreading sequences over instances)."""

    def __init__(self, instances: int, per_instance: int) -> None:
        self.per_instance = per_instance
        self.occupied: list[list[Sequence | None]] = [
            [None] * per_instance for _ in range(instances)
        ]
        self._free = [(s, i) for s in range(per_instance) for i in range(instances)]
        heapq.heapify(self._free)
        self.backlog: collections.deque[Sequence] = collections.deque()

    def place(self, sequence: Sequence) -> None:
        """Give ``sequence`` a slot, or put it in the backlog."""
        if self._free:
            slot, instance = heapq.heappop(self._free)
            self._assign(sequence, instance, slot)
        else:
            self.backlog.append(sequence)

    def _assign(self, sequence: Sequence, instance: int, slot: int) -> None:
        sequence.instance = instance
        sequence.slot = slot
        self.occupied[instance][slot] = sequence

    def release(self, sequence: Sequence) -> None:
        """Free the slot of ``sequence``; the oldest backlogged sequence takes it."""
        if sequence.slot == NO_SLOT:
            try:
                self.backlog.remove(sequence)
            except ValueError:
                pass
            return
        instance, slot = sequence.instance, sequence.slot
        self.occupied[instance][slot] = None
        sequence.instance = sequence.slot = NO_SLOT
        if self.backlog:
            self._assign(self.backlog.popleft(), instance, slot)
        else:
            heapq.heappush(self._free, (slot, instance))

    def sequences(self, instance: int) -> list[Sequence]:
        return [s for s in self.occupied[instance] if s is not None]

    def active(self) -> int:
        """How many sequences hold a slot."""
        return sum(1 for row in self.occupied for s in row if s is not None)
