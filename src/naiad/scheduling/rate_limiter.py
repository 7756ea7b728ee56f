"""Triton's rate limiter: instances execute only when their resources are free.

With ``--rate-limit execution_count`` every instance of every model needs its
group's ``rate_limiter.resources`` before it may run a batch.  Resources form
one server-wide pool: a resource is counted per device (the instance's GPU,
or the host for CPU instances) unless it is ``global``.  A pool's size is the
``--rate-limit-resource`` count where given, else the largest count any
registered instance needs (so every instance can run alone), as in Triton.

Waiting instances are served in the order of ``priority * (grants + 1)``:
an instance of priority 2 gets half the chances of one of priority 1.  A
waiter that does not fit reserves what it needs, so a large request is not
starved by a stream of small ones.  Everything runs on the event loop; a
grant calls the waiter's callback directly, after the pool is updated.  A
release grants on the next loop iteration, so that the instance which just
finished can queue again and compete by priority instead of always yielding.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

#: A resource pool: (resource name, device id or None for global resources).
PoolKey = tuple[str, "int | None"]

HOST_DEVICE = -1


@dataclass(frozen=True)
class ResourceLimit:
    """A ``--rate-limit-resource=<name>:<count>[:<device>]`` entry."""

    name: str
    count: int
    device: int | None = None  # None: every device

    @staticmethod
    def parse(text: str) -> ResourceLimit:
        parts = text.split(":")
        if len(parts) not in (2, 3) or not parts[0]:
            raise ValueError(f"expected <name>:<count>[:<device>], got '{text}'")
        try:
            count = int(parts[1])
            device = int(parts[2]) if len(parts) == 3 else None
        except ValueError:
            raise ValueError(f"expected <name>:<count>[:<device>], got '{text}'") from None
        if count < 0:
            raise ValueError(f"resource count must be >= 0, got '{text}'")
        return ResourceLimit(parts[0], count, device)


class RateLimiter:
    """The server-wide resource pool and the queue of instances waiting for it."""

    def __init__(self, limits: Iterable[ResourceLimit] = ()) -> None:
        self._explicit: dict[tuple[str, int | None], int] = {}
        for limit in limits:
            self._explicit[(limit.name, limit.device)] = limit.count
        self._slots: set[InstanceSlot] = set()
        self._in_use: dict[PoolKey, int] = {}
        self._waiting: list[InstanceSlot] = []
        self._seq = itertools.count()
        self._grant_soon = False

    def slot(
        self, needs: Iterable[tuple[str, bool, int]], device: int, priority: int = 0
    ) -> InstanceSlot:
        """Register an instance needing ``(name, global, count)`` resources on ``device``."""
        required: dict[PoolKey, int] = {}
        for name, is_global, count in needs:
            if count <= 0:
                continue
            key: PoolKey = (name, None if is_global else device)
            required[key] = required.get(key, 0) + count
        slot = InstanceSlot(self, required, max(priority, 1))
        slot.grants = min((s.grants for s in self._slots), default=0)
        self._slots.add(slot)
        return slot

    def capacity(self, key: PoolKey) -> int:
        """How many units of a pool exist (explicit, else the largest need)."""
        name, device = key
        explicit = self._explicit.get((name, device))
        if explicit is None and device is not None:
            explicit = self._explicit.get((name, None))
        if explicit is not None:
            return explicit
        return max((s.required.get(key, 0) for s in self._slots), default=0)

    def available(self, key: PoolKey) -> int:
        return self.capacity(key) - self._in_use.get(key, 0)

    # -- called by slots ---------------------------------------------------------

    def _request(self, slot: InstanceSlot) -> None:
        slot.seq = next(self._seq)
        self._waiting.append(slot)
        self._grant()

    def _release(self, slot: InstanceSlot) -> None:
        for key, count in slot.required.items():
            self._in_use[key] -= count
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._grant()
            return
        if not self._grant_soon:
            self._grant_soon = True
            loop.call_soon(self._deferred_grant)

    def _deferred_grant(self) -> None:
        self._grant_soon = False
        self._grant()

    def _forget(self, slot: InstanceSlot) -> None:
        self._slots.discard(slot)
        if slot in self._waiting:
            self._waiting.remove(slot)
        self._grant()

    def _grant(self) -> None:
        if not self._waiting:
            return
        self._waiting.sort(key=lambda s: (s.priority * (s.grants + 1), s.seq))
        free: dict[PoolKey, int] = {}
        granted: list[InstanceSlot] = []
        for slot in self._waiting:
            fits = True
            for key, count in slot.required.items():
                if key not in free:
                    free[key] = self.available(key)
                if free[key] < count:
                    fits = False
            for key, count in slot.required.items():
                free[key] -= count  # a waiter that does not fit reserves its share
            if fits:
                granted.append(slot)
        if not granted:
            return
        for slot in granted:
            self._waiting.remove(slot)
            for key, count in slot.required.items():
                self._in_use[key] = self._in_use.get(key, 0) + count
            slot.grants += 1
            slot.holding = True
        for slot in granted:
            callback, slot.callback = slot.callback, None
            if callback is not None:
                callback()


class InstanceSlot:
    """One instance's place in the rate limiter: acquire before a batch, release after."""

    __slots__ = ("limiter", "required", "priority", "grants", "seq", "callback", "holding")

    def __init__(self, limiter: RateLimiter, required: dict[PoolKey, int], priority: int) -> None:
        self.limiter = limiter
        self.required = required
        self.priority = priority
        self.grants = 0
        self.seq = 0
        self.callback: Callable[[], None] | None = None
        self.holding = False

    def acquire(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (maybe at once) once this instance holds its resources."""
        assert self.callback is None and not self.holding, "one acquisition at a time"
        self.callback = callback
        self.limiter._request(self)

    def release(self) -> None:
        if self.holding:
            self.holding = False
            self.limiter._release(self)

    def close(self) -> None:
        """Leave the pool (model unloaded): pending acquisitions are dropped."""
        self.callback = None
        self.release()
        self.limiter._forget(self)
