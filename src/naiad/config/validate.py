"""Validation of a normalised config: Triton's rules (core model_config_utils).

A config is checked after platform filling, auto-complete and
normalisation, exactly where Triton checks it, so rules about defaults
(instance count, resolved KIND_AUTO) hold.  All problems are collected so
``naiad check`` can print every one; :func:`validate` raises the first.
"""

from __future__ import annotations

from collections.abc import Sequence

from naiad.config.errors import ConfigError
from naiad.config.model_config_pb2 import (
    DataType,
    ModelConfig,
    ModelInput,
    ModelInstanceGroup,
    ModelOutput,
)
from naiad.config.platform import ENSEMBLE_PLATFORM, KNOWN_BACKENDS, KNOWN_PLATFORMS
from naiad.config.problems import Problems, element_count, segment_counts
from naiad.config.validate_scheduling import check_scheduling

_KIND = ModelInstanceGroup.Kind
_FORMAT = ModelInput.Format
_TENSORRT = "tensorrt_plan"


def validate(
    config: ModelConfig,
    *,
    path: str = "",
    text: str | None = None,
    gpus: Sequence[int] | None = None,
) -> None:
    """Raise the first problem of :func:`validate_all` as a ConfigError."""
    errors = validate_all(config, path=path, text=text, gpus=gpus)
    if errors:
        raise errors[0]


def validate_all(
    config: ModelConfig,
    *,
    path: str = "",
    text: str | None = None,
    gpus: Sequence[int] | None = None,
) -> list[ConfigError]:
    """Every problem of a normalised config, each naming file, line and field.

    ``text`` (the file's content) lets each error carry the line of its
    field; ``gpus`` (the usable GPU ids), when given, checks KIND_GPU groups
    against the machine.
    """
    problems = Problems()
    _check_identity(config, problems)
    if config.max_batch_size < 0:
        problems.add("max_batch_size", f"must be >= 0, got {config.max_batch_size}")
    _check_io(config, problems)
    _check_batch_io(config, problems)
    check_scheduling(config, problems)
    if config.platform != ENSEMBLE_PLATFORM and not config.HasField("ensemble_scheduling"):
        _check_instance_groups(config, gpus, problems)
        _check_warmup(config, problems)
    _check_misc(config, problems)
    return problems.errors(path, text)


def _check_identity(config: ModelConfig, problems: Problems) -> None:
    if not config.name:
        problems.add("name", "model configuration must specify 'name'")
    platform, backend = config.platform, config.backend
    if not platform and not backend:
        problems.add("backend", "must specify 'platform' or 'backend'")
    elif platform == ENSEMBLE_PLATFORM:
        if backend:
            problems.add(
                "backend",
                f"ensemble model must have platform '{ENSEMBLE_PLATFORM}' and an empty "
                f"backend, got backend '{backend}'",
            )
    elif not backend:
        problems.add("platform", f"unexpected platform type '{platform}' (no backend given)")
    elif KNOWN_PLATFORMS.get(platform) != backend and (
        platform in KNOWN_PLATFORMS or backend in KNOWN_BACKENDS
    ):
        problems.add(
            "platform", f"unexpected 'platform' and 'backend' pair, got: {platform}, {backend}"
        )


def _check_io(config: ModelConfig, problems: Problems) -> None:
    for kind, tensors in (("input", config.input), ("output", config.output)):
        seen: set[str] = set()
        for index, tensor in enumerate(tensors):
            where = f"{kind}[{index}]"
            _check_tensor(config, kind, where, tensor, problems)
            if tensor.name and tensor.name in seen:
                problems.add(f"{where}.name", f"{kind} '{tensor.name}' is specified more than once")
            seen.add(tensor.name)


def _check_tensor(
    config: ModelConfig,
    kind: str,
    where: str,
    tensor: ModelInput | ModelOutput,
    problems: Problems,
) -> None:
    if not tensor.name:
        problems.add(f"{where}.name", f"model {kind} must specify 'name'")
    label = f"model {kind} '{tensor.name}'"
    if tensor.data_type == DataType.TYPE_INVALID:
        problems.add(f"{where}.data_type", f"{label} must specify 'data_type'")
    dims = list(tensor.dims)
    if not dims:
        problems.add(f"{where}.dims", f"{label} must specify 'dims'")
    if any(d < 1 and d != -1 for d in dims):
        problems.add(
            f"{where}.dims",
            f"{label}: dimension must be integer >= 1, or -1 to indicate a variable-size "
            f"dimension, got {dims}",
        )
    if tensor.HasField("reshape"):
        _check_reshape(config, where, label, dims, list(tensor.reshape.shape), problems)
    if isinstance(tensor, ModelInput) and tensor.format in (
        _FORMAT.FORMAT_NHWC,
        _FORMAT.FORMAT_NCHW,
    ):
        if len(dims) != 3:
            problems.add(
                f"{where}.format", f"{label}: NHWC/NCHW format requires 3 dims, got {dims}"
            )
    if tensor.is_shape_tensor and config.platform != _TENSORRT:
        problems.add(f"{where}.is_shape_tensor", "shape tensors are only supported for TensorRT")
    if tensor.is_non_linear_format_io and config.platform != _TENSORRT:
        problems.add(
            f"{where}.is_non_linear_format_io",
            "non-linear IO format is only supported for TensorRT",
        )


def _check_reshape(
    config: ModelConfig,
    where: str,
    label: str,
    dims: list[int],
    shape: list[int],
    problems: Problems,
) -> None:
    if not shape and config.max_batch_size == 0:
        problems.add(
            f"{where}.reshape",
            f"{label}: reshape cannot have empty shape for non-batching model as scalar "
            "tensors are not supported",
        )
    if any(d < 1 and d != -1 for d in shape):
        problems.add(
            f"{where}.reshape.shape",
            f"{label}: reshape dimensions must be integer >= 1, or -1 to indicate a "
            f"variable-size dimension, got {shape}",
        )
        return
    dims_count, shape_count = element_count(dims), element_count(shape)
    if dims_count != shape_count and (shape_count != 0 or dims_count != 1):
        problems.add(
            f"{where}.reshape", f"{label} has different size for dims {dims} and reshape {shape}"
        )
    elif dims_count == -1:
        dim_segments, shape_segments = segment_counts(dims), segment_counts(shape)
        if len(dim_segments) != len(shape_segments):
            problems.add(
                f"{where}.reshape",
                f"{label} has different number of variable-size dimensions for dims {dims} "
                f"and reshape {shape}",
            )
        elif dim_segments != shape_segments:
            problems.add(
                f"{where}.reshape",
                f"{label} has different size for dims {dims} and reshape {shape}",
            )


def _check_batch_io(config: ModelConfig, problems: Problems) -> None:
    inputs = {i.name for i in config.input}
    outputs = {o.name for o in config.output}
    for index, batch_input in enumerate(config.batch_input):
        where = f"batch_input[{index}]"
        kind = type(batch_input).Kind.Name(batch_input.kind)
        if len(batch_input.source_input) != 1:
            problems.add(
                f"{where}.source_input",
                f"batch input kind '{kind}' expects 1 source input, got "
                f"{len(batch_input.source_input)}",
            )
        if batch_input.data_type not in (DataType.TYPE_INT32, DataType.TYPE_FP32):
            problems.add(
                f"{where}.data_type", "batch input data type must be TYPE_INT32 or TYPE_FP32"
            )
        if not batch_input.target_name:
            problems.add(f"{where}.target_name", "batch input must specify 'target_name'")
        for name in batch_input.source_input:
            if name not in inputs:
                problems.add(f"{where}.source_input", f"unknown source input name '{name}'")
    for index, batch_output in enumerate(config.batch_output):
        where = f"batch_output[{index}]"
        if len(batch_output.source_input) != 1:
            problems.add(
                f"{where}.source_input",
                "batch output kind 'BATCH_SCATTER_WITH_INPUT_SHAPE' expects 1 source input, "
                f"got {len(batch_output.source_input)}",
            )
        for name in batch_output.source_input:
            if name not in inputs:
                problems.add(f"{where}.source_input", f"unknown source input name '{name}'")
        for name in batch_output.target_name:
            if name not in outputs:
                problems.add(f"{where}.target_name", f"unknown target output name '{name}'")


def _check_instance_groups(
    config: ModelConfig, gpus: Sequence[int] | None, problems: Problems
) -> None:
    if not config.instance_group:
        problems.add("instance_group", "must specify one or more 'instance_group's")
    for index, group in enumerate(config.instance_group):
        where = f"instance_group[{index}]"
        label = f"instance group '{group.name}'"
        kind = _KIND.Name(group.kind)
        if group.kind == _KIND.KIND_AUTO:
            problems.add(f"{where}.kind", f"{label} has unexpected kind KIND_AUTO")
        elif group.kind in (_KIND.KIND_CPU, _KIND.KIND_MODEL) and group.gpus:
            problems.add(f"{where}.gpus", f"{label} has kind {kind} but specifies one or more GPUs")
        elif group.kind == _KIND.KIND_GPU and gpus is not None:
            if not gpus:
                problems.add(f"{where}.kind", f"{label} has kind KIND_GPU but no GPU is available")
            for gpu in group.gpus:
                if gpu not in gpus:
                    problems.add(
                        f"{where}.gpus",
                        f"{label} specifies invalid or unsupported gpu id {gpu}; "
                        f"available GPUs: {sorted(gpus)}",
                    )
        if group.count < 1:
            problems.add(f"{where}.count", f"{label} must have count >= 1, got {group.count}")
        if group.profile and config.platform != _TENSORRT:
            problems.add(
                f"{where}.profile",
                f"{label} specifies 'profile', which is only supported for TensorRT models",
            )
        for profile in group.profile:
            if not profile.isdigit():
                problems.add(
                    f"{where}.profile",
                    f"{label}: profile '{profile}' must be a non-negative integer",
                )


def _check_warmup(config: ModelConfig, problems: Problems) -> None:
    for index, warmup in enumerate(config.model_warmup):
        where = f"model_warmup[{index}]"
        if not warmup.name:
            problems.add(f"{where}.name", "model warmup must specify 'name'")
        limit = max(config.max_batch_size, 1)
        if warmup.batch_size < 1 or warmup.batch_size > limit:
            problems.add(
                f"{where}.batch_size",
                f"warmup '{warmup.name}': batch_size must be in [1, {limit}], got "
                f"{warmup.batch_size}",
            )
        for name, data in warmup.inputs.items():
            input_where = f'{where}.inputs["{name}"]'
            if data.data_type == DataType.TYPE_INVALID:
                problems.add(
                    f"{input_where}.data_type", f"warmup input '{name}' must specify 'data_type'"
                )
            if data.WhichOneof("input_data_type") is None:
                problems.add(
                    input_where,
                    f"warmup input '{name}' must specify 'zero_data', 'random_data' or "
                    "'input_data_file'",
                )
            if any(d < 0 for d in data.dims):
                problems.add(
                    f"{input_where}.dims",
                    f"warmup input '{name}' must give every dimension (no -1), got {list(data.dims)}",
                )


def _check_misc(config: ModelConfig, problems: Problems) -> None:
    if config.response_cache.enable:
        if config.HasField("sequence_batching"):
            problems.add(
                "response_cache.enable",
                "response cache does not support models with sequence batching",
            )
        if config.model_transaction_policy.decoupled:
            problems.add(
                "response_cache.enable", "response cache does not support decoupled models"
            )
    for index, agent in enumerate(config.model_repository_agents.agents):
        if not agent.name:
            problems.add(
                f"model_repository_agents.agents[{index}].name", "agent must specify 'name'"
            )
    for index, control in enumerate(config.model_metrics.metric_control):
        buckets = list(control.histogram_options.buckets)
        if buckets != sorted(buckets):
            problems.add(
                f"model_metrics.metric_control[{index}].histogram_options.buckets",
                f"histogram buckets must be in ascending order, got {buckets}",
            )
