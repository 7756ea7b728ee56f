"""Validation of the scheduling choice: dynamic batcher, sequence batcher, ensemble."""

from __future__ import annotations

from naiad.config.model_config_pb2 import (
    DataType,
    ModelConfig,
    ModelQueuePolicy,
    ModelSequenceBatching,
)
from naiad.config.platform import ENSEMBLE_PLATFORM
from naiad.config.problems import Problems

_CONTROL = ModelSequenceBatching.Control
_CORRID_TYPES = (
    DataType.TYPE_UINT64,
    DataType.TYPE_INT64,
    DataType.TYPE_UINT32,
    DataType.TYPE_INT32,
    DataType.TYPE_STRING,
)
_VALUE_LISTS = ("int32_false_true", "fp32_false_true", "bool_false_true")


def check_scheduling(config: ModelConfig, problems: Problems) -> None:
    """Add the problems of whichever scheduler the config chose."""
    if config.HasField("dynamic_batching"):
        _check_dynamic(config, problems)
    if config.HasField("sequence_batching"):
        _check_sequence(config, problems)
    _check_ensemble(config, problems)


def _check_preferred(sizes: list[int], max_batch_size: int, field: str, problems: Problems) -> None:
    for size in sizes:
        if size <= 0:
            problems.add(field, f"preferred batch size must be positive, got {size}")
        elif size > max_batch_size:
            problems.add(
                field,
                f"preferred batch size must be <= max_batch_size ({max_batch_size}), got {size}",
            )


def _check_dynamic(config: ModelConfig, problems: Problems) -> None:
    batching = config.dynamic_batching
    prefix = "dynamic_batching"
    _check_preferred(
        list(batching.preferred_batch_size),
        config.max_batch_size,
        f"{prefix}.preferred_batch_size",
        problems,
    )
    levels = batching.priority_levels
    if levels:
        if not 1 <= batching.default_priority_level <= levels:
            problems.add(
                f"{prefix}.default_priority_level",
                f"default priority level must be in range [1, {levels}], got "
                f"{batching.default_priority_level}",
            )
        for level in sorted(batching.priority_queue_policy):
            if not 1 <= level <= levels:
                problems.add(
                    f"{prefix}.priority_queue_policy[{level}]",
                    f"priority queue policy must have priority level in range [1, {levels}], "
                    f"got {level}",
                )
    if batching.preserve_ordering:
        if levels > 1:
            problems.add(
                f"{prefix}.preserve_ordering",
                f"only one priority level is allowed when 'preserve_ordering' is true, got {levels}",
            )
        policies = [(f"{prefix}.default_queue_policy", batching.default_queue_policy)]
        policies += [
            (f"{prefix}.priority_queue_policy[{level}]", policy)
            for level, policy in sorted(batching.priority_queue_policy.items())
        ]
        for where, policy in policies:
            if (
                policy.default_timeout_microseconds
                and policy.timeout_action == ModelQueuePolicy.DELAY
            ):
                problems.add(
                    f"{where}.timeout_action",
                    "queue policy can not have DELAY as timeout action when 'preserve_ordering' "
                    "is true",
                )


def _check_sequence(config: ModelConfig, problems: Problems) -> None:
    sequence = config.sequence_batching
    prefix = "sequence_batching"
    seen: dict[int, str] = {}
    for i, control_input in enumerate(sequence.control_input):
        where = f"{prefix}.control_input[{i}]"
        if not control_input.name:
            problems.add(f"{where}.name", "sequence batching control input must specify 'name'")
        if not control_input.control:
            problems.add(f"{where}.control", f"control input '{control_input.name}' has no control")
        for j, control in enumerate(control_input.control):
            _check_control(control, f"{where}.control[{j}]", seen, problems)
    if sequence.HasField("oldest"):
        _check_preferred(
            list(sequence.oldest.preferred_batch_size),
            config.max_batch_size,
            f"{prefix}.oldest.preferred_batch_size",
            problems,
        )
    if sequence.HasField("direct"):
        utilization = sequence.direct.minimum_slot_utilization
        if not 0.0 <= utilization <= 1.0:
            problems.add(
                f"{prefix}.direct.minimum_slot_utilization",
                f"minimum slot utilization must be in range (0.0, 1.0], got {utilization}",
            )
    for i, state in enumerate(sequence.state):
        _check_state(state, f"{prefix}.state[{i}]", problems)


def _check_control(
    control: ModelSequenceBatching.Control, where: str, seen: dict[int, str], problems: Problems
) -> None:
    kind = _CONTROL.Kind.Name(control.kind)
    if control.kind in seen:
        problems.add(f"{where}.kind", f"sequence batching specifies multiple {kind} tensors")
    seen[control.kind] = where
    given = [name for name in _VALUE_LISTS if len(getattr(control, name))]
    if control.kind == _CONTROL.CONTROL_SEQUENCE_CORRID:
        if given:
            problems.add(f"{where}.{given[0]}", f"{kind} must not specify '{given[0]}'")
        if control.data_type not in _CORRID_TYPES:
            problems.add(
                f"{where}.data_type",
                f"unexpected data type {DataType.Name(control.data_type)} for control {kind}; "
                "allowed data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and "
                "TYPE_STRING",
            )
        return
    if len(given) != 1:
        problems.add(
            where,
            f"sequence batching must specify exactly one of 'int32_false_true', "
            f"'fp32_false_true' or 'bool_false_true' for {kind}",
        )
        return
    values = list(getattr(control, given[0]))
    if len(values) != 2:
        problems.add(
            f"{where}.{given[0]}",
            f"sequence batching control '{given[0]}' must have exactly 2 entries "
            f"[false, true] for {kind}, got {values}",
        )


def _check_state(state: ModelSequenceBatching.State, where: str, problems: Problems) -> None:
    for name in ("input_name", "output_name"):
        if not getattr(state, name):
            problems.add(f"{where}.{name}", f"sequence state must specify '{name}'")
    if state.data_type == DataType.TYPE_INVALID:
        problems.add(f"{where}.data_type", f"state '{state.input_name}' must specify 'data_type'")
    dims = list(state.dims)
    if not dims or any(d < 1 and d != -1 for d in dims):
        problems.add(
            f"{where}.dims",
            f"state '{state.input_name}' dims must be non-empty, each >= 1 or -1, got {dims}",
        )
    for k, initial in enumerate(state.initial_state):
        initial_where = f"{where}.initial_state[{k}]"
        if initial.WhichOneof("state_data") is None:
            problems.add(initial_where, "initial state must specify 'zero_data' or 'data_file'")
        if initial.data_type != state.data_type:
            problems.add(
                f"{initial_where}.data_type",
                f"initial state data type {DataType.Name(initial.data_type)} does not match "
                f"state data type {DataType.Name(state.data_type)}",
            )
        if any(d < 1 for d in initial.dims):
            problems.add(
                f"{initial_where}.dims",
                f"initial state dims must be concrete (>= 1), got {list(initial.dims)}",
            )


def _check_ensemble(config: ModelConfig, problems: Problems) -> None:
    has_scheduling = config.HasField("ensemble_scheduling")
    if config.platform != ENSEMBLE_PLATFORM:
        if has_scheduling:
            problems.add(
                "ensemble_scheduling",
                f"ensemble scheduling cannot be set for a model whose platform is not "
                f"'{ENSEMBLE_PLATFORM}'",
            )
        return
    if not has_scheduling:
        problems.add("platform", "ensemble scheduling must be set for an ensemble model")
        return
    if config.instance_group:
        problems.add("instance_group", "instance group should not be specified for an ensemble")
    if config.model_warmup:
        problems.add("model_warmup", "model_warmup can not be specified for an ensemble")
    if config.HasField("optimization"):
        problems.add("optimization", "optimization should not be specified for an ensemble")
    steps = config.ensemble_scheduling.step
    if not steps:
        problems.add("ensemble_scheduling", "must specify at least one step in an ensemble")
    available = {i.name for i in config.input}
    produced: dict[str, int] = {}
    used: set[str] = set()
    for k, step in enumerate(steps):
        where = f"ensemble_scheduling.step[{k}]"
        for name in ("model_name", "input_map", "output_map"):
            if not getattr(step, name):
                problems.add(
                    f"{where}.{name}", f"must specify '{name}' in step {k} of the ensemble"
                )
        used.update(step.input_map.values())
        for tensor in sorted(step.output_map.values()):
            if tensor in produced:
                problems.add(
                    f"{where}.output_map",
                    f"ensemble tensor '{tensor}' can appear in an output map only once "
                    f"(also step {produced[tensor]})",
                )
            produced.setdefault(tensor, k)
    for k, step in enumerate(steps):
        for tensor in sorted(step.input_map.values()):
            if tensor not in available and tensor not in produced:
                problems.add(
                    f"ensemble_scheduling.step[{k}].input_map",
                    f"ensemble tensor '{tensor}' is neither an ensemble input nor produced by a step",
                )
    for i, output in enumerate(config.output):
        if output.name not in produced:
            problems.add(
                f"output[{i}].name", f"ensemble output '{output.name}' is not produced by any step"
            )
    for i, tensor in enumerate(config.input):
        if tensor.name not in used:
            problems.add(
                f"input[{i}].name", f"ensemble input '{tensor.name}' is not used by any step"
            )
