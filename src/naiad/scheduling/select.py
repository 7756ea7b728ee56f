"""Which scheduler a model version gets, with its rate-limiter slots and admission gate."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from naiad.core.errors import Internal
from naiad.scheduling.default import DefaultScheduler
from naiad.scheduling.dynamic import DynamicBatcher
from naiad.scheduling.ensemble import EnsembleScheduler
from naiad.scheduling.rate_limiter import HOST_DEVICE
from naiad.scheduling.sequence import SequenceBatcher

if TYPE_CHECKING:
    from pathlib import Path

    from naiad.backends.base import InstanceSpec, ModelInstance, ServerCalls
    from naiad.config import ModelConfig
    from naiad.core.stats import ModelStats
    from naiad.scheduling.admission import AdmissionControl
    from naiad.scheduling.base import Scheduler, ServerLoad
    from naiad.scheduling.ensemble_graph import EnsembleGraph
    from naiad.scheduling.rate_limiter import InstanceSlot, RateLimiter


def make_scheduler(
    config: ModelConfig,
    instances: Sequence[ModelInstance],
    specs: Sequence[InstanceSpec],
    stats: ModelStats,
    *,
    decoupled: bool = False,
    rate_limiter: RateLimiter | None = None,
    admission: AdmissionControl | None = None,
    load: ServerLoad | None = None,
    model_dir: Path | None = None,
    ensemble: EnsembleGraph | None = None,
    services: ServerCalls | None = None,
) -> Scheduler:
    """The dynamic batcher when configured, else the default scheduler.

    ``instances`` and ``specs`` are the active (non-passive) instances, in the
    same order.  A model with ``dynamic_batching`` and ``max_batch_size: 0``
    still gets the batcher, for its priorities and queue policies.  The
    sequence batcher reads initial state files under ``model_dir``; an
    ensemble (no instances) runs ``ensemble`` through ``services`` (the core).
    """
    slots = _slots(config, specs, rate_limiter) if rate_limiter is not None else None
    gate = admission.for_model(config.name, config) if admission is not None else None
    kwargs: dict[str, Any] = {
        "decoupled": decoupled,
        "slots": slots,
        "admission": gate,
        "load": load,
    }
    if ensemble is not None:
        if services is None:
            raise Internal(f"ensemble '{config.name}' needs the server to run its steps")
        return EnsembleScheduler(
            stats, graph=ensemble, services=services, decoupled=decoupled, admission=gate
        )
    if config.HasField("sequence_batching"):
        return SequenceBatcher(list(instances), stats, config=config, model_dir=model_dir, **kwargs)
    if config.HasField("dynamic_batching"):
        return DynamicBatcher(list(instances), stats, config=config, **kwargs)
    return DefaultScheduler(list(instances), stats, **kwargs)


def _slots(
    config: ModelConfig, specs: Sequence[InstanceSpec], limiter: RateLimiter
) -> list[InstanceSlot | None]:
    groups = {g.name: g for g in config.instance_group}
    slots: list[InstanceSlot | None] = []
    for spec in specs:
        group = groups.get(spec.group)
        if group is None or not group.HasField("rate_limiter"):
            slots.append(None)
            continue
        rl = group.rate_limiter
        needs = [(r.name, getattr(r, "global"), r.count) for r in rl.resources]
        device = spec.device_id if spec.kind == "GPU" else HOST_DEVICE
        slots.append(limiter.slot(needs, device, rl.priority))
    return slots
