"""How many intra-op threads a batch computes with: one while it is short, else the team.

torch's CPU pool is libgomp's, and libgomp keeps a team of workers per
calling thread.  naiad calls a model from two threads: its instance's own
and whichever thread runs the event loop's turn (an embedded caller's
too).  Two teams are more threads than the cores, and then
libgomp's workers spin only briefly before they sleep, so every parallel
region pays a futex wake.  On the project's 2-core VM a batch-1 call of the
``benchmarks/backend_overhead.py`` MLP took 22-33 µs with one team alive and
55-61 µs with two; with one intra-op thread it took 21 µs whatever teams
were alive, as it wakes none.  A batch that short gains nothing from a team
(torch splits an operator's work only above ~32k elements).  A long one
does: a 512-row batch took 383-437 µs with a team, 747-877 µs alone.

So a batch computes with one intra-op thread when batches of its size are
known to be short with it, and with the team otherwise.  torch keeps the
count per calling thread (``torch.set_num_threads`` sets the calling
thread's, 0.2 µs), so each thread is set as its batch needs.
"""

from __future__ import annotations

import logging
import threading

import torch

from naiad.backends.pytorch.parameters import TorchOptions

log = logging.getLogger("naiad")

#: torch's own intra-op count (the cores, or ``OMP_NUM_THREADS``), before any model set one.
_DEFAULT_TEAM = torch.get_num_threads()

_lock = threading.Lock()
#: The process-wide thread counts set so far (parameter -> count), first model first.
_counts: dict[str, int] = {}

#: ``count``: the calling thread's intra-op count, once naiad has set it.
_current = threading.local()


def apply_thread_counts(model: str, options: TorchOptions) -> None:
    """Set torch's thread pools once per process, as Triton does (the first model wins).

    torch sizes its inter-op pool only before its first parallel work and
    raises afterwards; then the model still loads and the count is logged
    as not applied.
    """
    settings = (
        ("INTRA_OP_THREAD_COUNT", options.intra_op_threads, torch.set_num_threads),
        ("INTER_OP_THREAD_COUNT", options.inter_op_threads, torch.set_num_interop_threads),
    )
    with _lock:
        for key, count, setter in settings:
            if count <= 0:
                continue
            first = _counts.get(key)
            if first is None:
                try:
                    setter(count)
                except RuntimeError as exc:
                    log.warning("model '%s': %s %d not applied: %s", model, key, count, exc)
                    continue
                _counts[key] = count
            elif first != count:
                log.warning(
                    "model '%s': %s %d ignored: torch's pools are process-wide and an earlier "
                    "model set %d",
                    model,
                    key,
                    count,
                    first,
                )


def team_size() -> int:
    """The intra-op threads a long batch computes with (fixed once a model has loaded)."""
    return _counts.get("INTRA_OP_THREAD_COUNT", _DEFAULT_TEAM)


def compute_with(count: int) -> None:
    """Set the calling thread's intra-op count, where it is not ``count`` already."""
    if getattr(_current, "count", 0) != count:
        torch.get_num_threads()  # torch's first use on a thread resets its count: have it now
        torch.set_num_threads(count)
        _current.count = count


class IntraOpThreads:
    """The intra-op threads for each size of an instance's batches, judged by their times.

    Sizes are input elements by powers of two, as a dynamic batcher's
    batches vary with load.  A size computes with the team until its calls
    with the team are known; where they are short enough to try, a few
    calls on one thread follow, and from then on the faster way is kept (one
    thread where it is within ``SHORT_NS`` anyway).  Each way is judged by
    its fastest call, not an average: a TorchScript module's first calls
    are slow while it profiles them, a team's calls pay its wake-ups, and
    one preemption must not decide.
    """

    #: Calls not counted, per size and way: TorchScript profiles its first ones.
    WARMUP = 2
    #: A size whose team calls take up to this long is tried on one thread
    #: (its trial costs at most this times the team's threads, a few times).
    TRIAL_NS = 1_000_000
    #: A call this short on one thread stays there: a team would gain nothing.
    SHORT_NS = 100_000

    def __init__(self, team: int) -> None:
        self.team = team
        #: (size, on one thread) -> [calls seen, fastest time after the warm-up (ns)]
        self._calls: dict[tuple[int, bool], list[int]] = {}

    def threads_for(self, elements: int) -> int:
        if self.team == 1:
            return 1
        size = elements.bit_length()
        team = self._fastest(size, False)
        alone = self._fastest(size, True)
        if alone is not None:
            return 1 if alone <= max(team or 0, self.SHORT_NS) else self.team
        return 1 if team is not None and team <= self.TRIAL_NS else self.team

    def record(self, elements: int, threads: int, ns: int) -> None:
        calls = self._calls.setdefault((elements.bit_length(), threads == 1), [0, ns])
        calls[0] += 1
        calls[1] = ns if calls[0] == self.WARMUP + 1 else min(calls[1], ns)

    def _fastest(self, size: int, alone: bool) -> int | None:
        calls = self._calls.get((size, alone))
        return calls[1] if calls is not None and calls[0] > self.WARMUP else None
