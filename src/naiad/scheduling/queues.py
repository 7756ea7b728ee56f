"""The dynamic batcher's queues: one per priority level, each with its queue policy.

A level holds its waiting requests in arrival order, plus (for the ``DELAY``
timeout action) the requests whose timeout expired, which run only after the
level's other requests, as in Triton.  Removal is lazy: an entry that leaves
(taken into a batch, rejected at its deadline, moved to the delayed queue)
changes state and is dropped when it reaches the head, so every operation is
O(1) apart from the walk that forms a batch.
"""

from __future__ import annotations

import collections
import heapq
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from naiad.config import ModelConfig
    from naiad.core.types import InferenceRequest

REJECT = 0
DELAY = 1

QUEUED = 0
GONE = 1  # taken, rejected, or moved to the delayed queue


@dataclass(frozen=True)
class QueuePolicy:
    """``ModelQueuePolicy`` with microseconds as Triton names them."""

    timeout_action: int = REJECT
    default_timeout_microseconds: int = 0
    allow_timeout_override: bool = False
    max_queue_size: int = 0

    @staticmethod
    def from_config(policy: object) -> QueuePolicy:
        return QueuePolicy(
            timeout_action=policy.timeout_action,  # type: ignore[attr-defined]
            default_timeout_microseconds=policy.default_timeout_microseconds,  # type: ignore[attr-defined]
            allow_timeout_override=policy.allow_timeout_override,  # type: ignore[attr-defined]
            max_queue_size=policy.max_queue_size,  # type: ignore[attr-defined]
        )

    def timeout_us(self, requested_us: int) -> int:
        """The queue timeout of a request: the request's own only shortens the default."""
        default = self.default_timeout_microseconds
        if self.allow_timeout_override and 0 < requested_us < default:
            return requested_us
        return default


class Entry:
    """A queued request with what the batcher needs to know about it."""

    __slots__ = ("request", "level", "deadline_ns", "shape_key", "state")

    def __init__(
        self, request: InferenceRequest, level: int, deadline_ns: int, shape_key: object
    ) -> None:
        self.request = request
        self.level = level
        self.deadline_ns = deadline_ns
        self.shape_key = shape_key
        self.state = QUEUED


class _Level:
    __slots__ = ("policy", "waiting", "delayed", "size")

    def __init__(self, policy: QueuePolicy) -> None:
        self.policy = policy
        self.waiting: collections.deque[Entry] = collections.deque()
        self.delayed: collections.deque[Entry] = collections.deque()
        self.size = 0


class PriorityQueues:
    """Levels 1..n (1 drains first); a single level when priorities are off."""

    def __init__(
        self,
        levels: int = 0,
        default_level: int = 0,
        default_policy: QueuePolicy | None = None,
        level_policies: dict[int, QueuePolicy] | None = None,
    ) -> None:
        default_policy = default_policy or QueuePolicy()
        policies = level_policies or {}
        self.levels = [_Level(policies.get(i + 1, default_policy)) for i in range(max(levels, 1))]
        self.priority_levels = levels
        self.default_index = max(default_level, 1) - 1
        self.size = 0
        self._deadlines: list[tuple[int, int, Entry]] = []
        self._seq = itertools.count()

    @staticmethod
    def from_config(config: ModelConfig) -> PriorityQueues:
        batching = config.dynamic_batching
        return PriorityQueues(
            batching.priority_levels,
            batching.default_priority_level,
            QueuePolicy.from_config(batching.default_queue_policy),
            {k: QueuePolicy.from_config(v) for k, v in batching.priority_queue_policy.items()},
        )

    def level_index(self, priority: int) -> int:
        """Priority 0, or beyond the levels, means the default level (no error)."""
        if 0 < priority <= self.priority_levels:
            return priority - 1
        return self.default_index if self.priority_levels else 0

    def policy(self, index: int) -> QueuePolicy:
        return self.levels[index].policy

    def is_full(self, index: int) -> bool:
        level = self.levels[index]
        return 0 < level.policy.max_queue_size <= level.size

    def push(self, entry: Entry) -> None:
        level = self.levels[entry.level]
        level.waiting.append(entry)
        level.size += 1
        self.size += 1
        if entry.deadline_ns:
            heapq.heappush(self._deadlines, (entry.deadline_ns, next(self._seq), entry))

    def __iter__(self) -> Iterator[Entry]:
        """Queued entries in the order they are served."""
        for level in self.levels:
            if not level.size:
                continue
            for queue in (level.waiting, level.delayed):
                while queue and queue[0].state != QUEUED:
                    queue.popleft()
                for entry in queue:
                    if entry.state == QUEUED:
                        yield entry

    def remove(self, entry: Entry) -> None:
        """``entry`` leaves the queue (taken into a batch or rejected)."""
        entry.state = GONE
        self.levels[entry.level].size -= 1
        self.size -= 1

    def compact(self) -> None:
        """Drop departed entries from the heads, so no request outlives its answer here."""
        for level in self.levels:
            for queue in (level.waiting, level.delayed):
                while queue and queue[0].state != QUEUED:
                    queue.popleft()

    def next_deadline(self) -> int:
        """The earliest deadline of a queued entry, 0 if none."""
        heap = self._deadlines
        while heap and heap[0][2].state != QUEUED:
            heapq.heappop(heap)
        return heap[0][0] if heap else 0

    def expire(self, now_ns: int) -> list[Entry]:
        """Apply the timeout action to every entry due by ``now_ns``; return the rejected."""
        rejected: list[Entry] = []
        heap = self._deadlines
        while heap and heap[0][0] <= now_ns:
            _, _, entry = heapq.heappop(heap)
            if entry.state != QUEUED:
                continue
            level = self.levels[entry.level]
            if level.policy.timeout_action == DELAY:
                entry.state = GONE
                moved = Entry(entry.request, entry.level, 0, entry.shape_key)
                entry.request = None  # type: ignore[assignment]
                level.delayed.append(moved)
            else:
                self.remove(entry)
                rejected.append(entry)
        return rejected
