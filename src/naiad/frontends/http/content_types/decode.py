"""The content pass: a decoded request's typed inputs become the model's tensors.

It runs in the HTTP frontend, after the wire is decoded and before the data
plane sees the request, only for a request that names a content type or whose
model declares one.  Its result also says how the response's outputs are
written (:func:`output_codecs`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import numpy as np

from naiad.core import datatypes
from naiad.core.types import InferenceRequest, InferInput, OutputTensor
from naiad.frontends.http.content_types.frame import frame_inputs
from naiad.frontends.http.content_types.hinted import Hinted, RawJson
from naiad.frontends.http.content_types.image import decode_images
from naiad.frontends.http.content_types.plan import KINDS, ModelPlan, TensorPlan
from naiad.frontends.http.content_types.shapes import fit_shape
from naiad.frontends.http.content_types.values import (
    OUTPUTS,
    bad,
    base64_input,
    byte_elements,
    datetime_input,
    json_input,
    unbase64,
)

#: output name -> (its content type, the writer of its JSON ``data``)
OutputCodecs = dict[str, tuple[str, Callable[[OutputTensor], list[Any]]]]
#: Images up to this many bytes in all are decoded on the event loop; larger, on a thread.
_ON_LOOP = 64 << 10


def _kind(value: Any, where: str) -> str:
    if not isinstance(value, str) or value.lower() not in KINDS:
        raise bad(where, f"unknown content type {value!r}; they are {', '.join(sorted(KINDS))}")
    return value.lower()


async def decode_content(request: InferenceRequest, plan: ModelPlan) -> OutputCodecs | None:
    """Convert ``request``'s inputs in place; the codecs of its content-typed outputs."""
    ctx = request.context
    if isinstance(ctx, Hinted):
        request.context = ctx.binary
    request_kind = request.parameters.pop("content_type", None)
    if request_kind is not None:
        request_kind = _kind(request_kind, "parameters.content_type")
    inputs = request.inputs
    if request_kind == "pd" or (
        "pd" in plan.declared_inputs.values() and not any(t.name in plan.inputs for t in inputs)
    ):
        inputs = frame_inputs(inputs, plan)
        request_kind = None
    changed = inputs is not request.inputs
    out: list[InferInput] = []
    for tensor in inputs:
        params = tensor.parameters
        hint = params.get("content_type") if params else None
        spec = plan.inputs.get(tensor.name)
        if hint is not None:
            kind = _kind(hint, tensor.name)
        elif request_kind is not None:
            kind = request_kind
        else:
            kind = spec.kind if spec is not None else "np"
        if kind in ("np", "pd", "str") and not isinstance(tensor.data, RawJson):
            # a plain tensor, or strings: only the shape may need fitting
            if spec is not None and tensor.datatype.is_bytes and spec.datatype.is_bytes:
                shape = fit_shape(tensor.shape, datatypes.element_count(tensor.shape), spec.shape)
                if shape != tensor.shape:
                    tensor = InferInput(tensor.name, tensor.datatype, shape, tensor.data)
                    changed = True
            out.append(tensor)
            continue
        converted = await _convert(tensor, kind, spec, plan)
        changed = changed or converted is not tensor
        out.append(converted)
    if changed:
        request.inputs = out
        request.template = None  # its validation plan was for the wire's tensors
    return output_codecs(request, plan)


async def _convert(
    tensor: InferInput, kind: str, spec: TensorPlan | None, plan: ModelPlan
) -> InferInput:
    name = tensor.name
    if tensor.shm is not None:
        return tensor  # shared memory holds the model's tensor already
    count = datatypes.element_count(tensor.shape)
    target = spec.datatype if spec is not None else tensor.datatype
    full = spec.shape if spec is not None else tensor.shape
    if kind == "image":
        if spec is None:
            raise bad(name, f"model '{plan.model}' has no input '{name}' to take the image")
        if not tensor.datatype.is_bytes:
            return tensor  # the picture as a tensor already
        files = byte_elements(tensor, count)
        assert files is not None
        if isinstance(tensor.data, np.ndarray):  # JSON: base64 strings or data URLs
            files = [unbase64(name, f, i) for i, f in enumerate(files)]
        options = plan.image_options(spec)
        if sum(len(f) for f in files) <= _ON_LOOP:
            batch = decode_images(name, files, options)
        else:
            batch = await asyncio.to_thread(decode_images, name, files, options)
        shape = batch.shape if plan.batched else batch.shape[1:]
        if len(shape) < batch.ndim and batch.shape[0] != 1:
            raise bad(name, f"model '{plan.model}' does not batch: send one image")
        return InferInput(name, target, tuple(shape), batch.reshape(shape))
    if kind == "json":
        values = json_input(tensor, count)
    elif isinstance(tensor.data, RawJson):  # JSON kept for "json", read as the request says
        from naiad.frontends.http.codec import json_to_array

        array = json_to_array(tensor.data.value, tensor.datatype, count, name)
        return InferInput(name, tensor.datatype, tensor.shape, array, None, tensor.parameters)
    elif kind == "base64":
        decoded = base64_input(tensor, count)
        if decoded is None:
            return tensor
        values = decoded
    elif kind == "datetime":
        if not tensor.datatype.is_bytes:
            return tensor
        micros = datetime_input(tensor, count, target.name)
        if micros is None:
            return tensor
        shape = fit_shape(tensor.shape, micros.size, full)
        return InferInput(name, target, shape, micros.reshape(shape))
    else:
        return tensor
    array = np.empty(len(values), dtype=np.object_)
    array[:] = values
    shape = fit_shape(tensor.shape if len(values) == count else (len(values),), len(values), full)
    return InferInput(name, datatypes.from_name("BYTES"), shape, array.reshape(shape))


def output_codecs(request: InferenceRequest, plan: ModelPlan) -> OutputCodecs | None:
    """How each content-typed output is written as JSON: declared, or asked for in the
    request's ``outputs`` (``"parameters": {"content_type": ...}``)."""
    kinds = dict(plan.declared_outputs)
    for out in request.outputs:
        params = out.parameters
        if out.classification:
            kinds.pop(out.name, None)  # the classification extension writes its own strings
        elif params and "content_type" in params:
            kinds[out.name] = _kind(params["content_type"], out.name)
    codecs = {name: (kind, OUTPUTS[kind]) for name, kind in kinds.items() if kind in OUTPUTS}
    return codecs or None
