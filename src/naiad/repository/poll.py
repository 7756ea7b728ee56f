"""What one poll of the repositories asks for: the difference of two looks.

Kept apart from the doing (``core.model_control``) so the rules can be read
and tested alone: a new model is loaded, a vanished one unloaded, a changed
one reloaded; when only version folders changed, the other versions keep
serving untouched (their instances are not recreated).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from naiad.repository.fingerprint import ModelFingerprint


@dataclass
class PollPlan:
    #: Models to (re)load (new or changed), with their fingerprint now.
    load: dict[str, ModelFingerprint] = field(default_factory=dict)
    #: Models no longer in any repository (or now found in several).
    unload: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.load or self.unload)


def plan_poll(
    known: Mapping[str, ModelFingerprint], found: Mapping[str, ModelFingerprint]
) -> PollPlan:
    """Changes from ``known`` (what was last loaded or tried) to ``found`` (now)."""
    plan = PollPlan()
    for name, now in sorted(found.items()):
        before = known.get(name)
        if before == now:
            continue
        plan.load[name] = now
    plan.unload = sorted(set(known) - set(found))
    return plan
