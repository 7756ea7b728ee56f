"""Triton's TensorFlow auto-complete: a config filled from the SavedModel's signature.

The rules are tensorflow_backend's (``AutoCompleteHelper``), not ONNX
Runtime's: a config's listed inputs and outputs keep what they give and get
what they lack (data type, dims), model inputs the config does not list are
added, outputs are added only when the config lists none, and the dims a
config does give hint whether it means the model to batch.
"""

from __future__ import annotations

import logging
from typing import Any

from naiad.backends.autocomplete import DEFAULT_MAX_BATCH_SIZE, default_dynamic_batching
from naiad.config.model_config_pb2 import DataType, ModelConfig
from naiad.config.model_signature import ModelSignature, TensorSignature
from naiad.core.errors import InvalidArgument

log = logging.getLogger("naiad")

#: max_batch_size for a model that can batch and whose config gives none (Triton's
#: ``default-max-batch-size``; naiad's ONNX Runtime backend uses the same).


def complete(config: ModelConfig, signature: ModelSignature) -> None:
    """Fill ``config`` in place from ``signature``."""
    batching = _fix_batching(config, signature)
    skip = 1 if batching else 0
    known = {t.name: t for t in signature.inputs}
    not_listed = dict(known)
    for entry in config.input:
        found = not_listed.pop(entry.name, None)
        if found is not None:
            _fill(config, entry, found, skip)
    # Tensors the server makes itself: no config input for them.
    for name in [n for b in config.batch_input for n in b.target_name]:
        not_listed.pop(name, None)
    for control in config.sequence_batching.control_input:
        not_listed.pop(control.name, None)
    for state in config.sequence_batching.state:
        not_listed.pop(state.input_name, None)
    for tensor in not_listed.values():
        _fill(config, config.input.add(), tensor, skip)

    outputs = {t.name: t for t in signature.outputs}
    if len(config.output) == 0:
        states = {s.output_name for s in config.sequence_batching.state}
        for tensor in signature.outputs:
            if tensor.name not in states:
                _fill(config, config.output.add(), tensor, skip)
        return
    for entry in config.output:
        found = outputs.get(entry.name)
        if found is not None:
            _fill(config, entry, found, skip)


def _fix_batching(config: ModelConfig, signature: ModelSignature) -> bool:
    """Set max_batch_size (and dynamic batching) as Triton does; whether the model batches."""
    tensors = signature.inputs + signature.outputs
    can_batch = all(len(t.shape) >= 1 and t.shape[0] == -1 for t in tensors)
    if not can_batch and config.max_batch_size > 0:
        raise InvalidArgument(
            f"unable to autofill for '{config.name}', configuration specified max-batch "
            f"{config.max_batch_size} but model signature does not support batching"
        )
    if config.max_batch_size == 0 and can_batch and _config_hints_batching(config, signature):
        config.max_batch_size = DEFAULT_MAX_BATCH_SIZE
        log.info(
            "autofilled max_batch_size to %d for model '%s': its signature can batch and "
            "its config gives no max_batch_size",
            DEFAULT_MAX_BATCH_SIZE,
            config.name,
        )
    default_dynamic_batching(config)
    return config.max_batch_size > 0


def _config_hints_batching(config: ModelConfig, signature: ModelSignature) -> bool:
    """Whether the tensors a config lists mean a batching model (no tensors: yes).

    dims one shorter than the model's rank leave room for a batch dimension;
    dims of the full rank mean the config has none.  A ragged input is a
    sure sign of batching.
    """
    listed: list[tuple[Any, dict[str, TensorSignature]]] = [
        (entry, {t.name: t for t in signature.inputs}) for entry in config.input
    ] + [(entry, {t.name: t for t in signature.outputs}) for entry in config.output]
    if not listed:
        return True
    explicit: bool | None = None
    hint = False
    for entry, model in listed:
        if getattr(entry, "allow_ragged_batch", False):
            return True
        found = model.get(entry.name)
        if found is None or not found.shape:
            continue
        dims = list(entry.reshape.shape) if entry.HasField("reshape") else list(entry.dims)
        if not dims:
            hint = hint or explicit is None
            continue
        says = len(dims) == len(found.shape) - 1
        if explicit is not None and explicit != says:
            raise InvalidArgument(
                f"unable to autofill for '{config.name}', model tensor configurations are "
                "contradicting each other in terms of whether batching is supported"
            )
        explicit = hint = says
    return hint


def _fill(config: ModelConfig, entry: Any, tensor: TensorSignature, skip: int) -> None:
    """Give one config input or output the name, data type and dims it lacks."""
    entry.name = tensor.name
    if entry.data_type == DataType.TYPE_INVALID:
        if tensor.data_type == DataType.TYPE_INVALID:
            raise InvalidArgument(
                f"unable to autofill for '{config.name}': tensor '{tensor.name}' has "
                f"TensorFlow type '{tensor.type_name}', which has no Triton datatype"
            )
        entry.data_type = tensor.data_type
    if len(entry.dims) == 0:
        dims = list(tensor.shape[skip:])
        if dims:
            entry.dims.extend(dims)
        else:  # a scalar per request: one element on the wire, none in the model
            entry.dims.append(1)
            if not entry.HasField("reshape"):
                entry.reshape.SetInParent()
