"""Core normalisation (§5.4): the defaults Triton writes into every config.

Runs after the backend's auto-complete and before validation, always, so
the rendered config (``GET .../config``, ``args["model_config"]``) shows
the values the server really uses.
"""

from __future__ import annotations

from collections.abc import Sequence

from naiad.config.model_config_pb2 import ModelConfig, ModelInstanceGroup
from naiad.config.platform import ENSEMBLE_PLATFORM

DEFAULT_MAX_SEQUENCE_IDLE_MICROSECONDS = 1_000_000

# Backends whose CPU instances default to two (Triton's SetDefaultInstanceCount).
_TWO_CPU_INSTANCE_BACKENDS = frozenset({"onnxruntime", "tensorflow"})

_KIND = ModelInstanceGroup.Kind


def normalize(
    config: ModelConfig,
    *,
    gpus: Sequence[int] = (),
    preferred_kind: str = "KIND_GPU",
    default_cpu_count: int | None = None,
) -> None:
    """Fill server defaults in place.

    ``gpus`` are the usable GPU ids (empty on a CPU-only machine);
    ``preferred_kind`` is the backend's preferred instance kind, used only
    when the config has no ``instance_group`` (a GPU preference is skipped
    without GPUs); ``default_cpu_count`` is the count of a KIND_CPU group
    that gives none (None: 2 for onnxruntime/tensorflow, else 1, as Triton).
    """
    if not config.HasField("version_policy"):
        config.version_policy.latest.num_versions = 1

    scheduling = config.WhichOneof("scheduling_choice")
    if scheduling == "dynamic_batching":
        batching = config.dynamic_batching
        if not batching.preferred_batch_size and config.max_batch_size > 0:
            batching.preferred_batch_size.append(config.max_batch_size)
    elif scheduling == "sequence_batching":
        sequence = config.sequence_batching
        if sequence.max_sequence_idle_microseconds == 0:
            sequence.max_sequence_idle_microseconds = DEFAULT_MAX_SEQUENCE_IDLE_MICROSECONDS
        if sequence.HasField("oldest"):
            oldest = sequence.oldest
            if not oldest.preferred_batch_size and config.max_batch_size > 0:
                oldest.preferred_batch_size.append(config.max_batch_size)

    if scheduling == "ensemble_scheduling" or config.platform == ENSEMBLE_PLATFORM:
        return  # no pinned-memory defaults and no instance groups for ensembles

    optimization = config.optimization
    if not optimization.HasField("input_pinned_memory"):
        optimization.input_pinned_memory.enable = True
    if not optimization.HasField("output_pinned_memory"):
        optimization.output_pinned_memory.enable = True

    _normalize_instance_groups(config, list(gpus), preferred_kind, default_cpu_count)


def _normalize_instance_groups(
    config: ModelConfig, gpus: list[int], preferred_kind: str, default_cpu_count: int | None
) -> None:
    if not config.instance_group:
        group = config.instance_group.add(name=config.name)
        kind = _KIND.Value(preferred_kind)
        if not (kind == _KIND.KIND_GPU and not gpus):
            group.kind = kind  # otherwise stays KIND_AUTO and resolves to CPU below

    available = set(gpus)
    for index, group in enumerate(config.instance_group):
        if not group.name:
            group.name = f"{config.name}_{index}"
        if group.kind == _KIND.KIND_AUTO:
            usable = bool(available) and all(g in available for g in group.gpus)
            group.kind = _KIND.KIND_GPU if usable else _KIND.KIND_CPU
        if group.kind == _KIND.KIND_GPU and not group.gpus:
            group.gpus.extend(sorted(available))
        if group.count < 1:
            group.count = _default_count(config.backend, group.kind, default_cpu_count)


def _default_count(backend: str, kind: int, default_cpu_count: int | None) -> int:
    if kind != _KIND.KIND_CPU:
        return 1
    if default_cpu_count is not None:
        return default_cpu_count
    return 2 if backend in _TWO_CPU_INSTANCE_BACKENDS else 1
