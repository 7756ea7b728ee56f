"""Turn what a backend produced into what the client asked for.

Runs per request after execution: keep the requested outputs, undo an
output ``reshape``, apply the classification extension, and write outputs
that go to shared memory.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from naiad.core import datatypes
from naiad.core.errors import InvalidArgument
from naiad.core.signature import Signature
from naiad.core.types import (
    InferenceRequest,
    InferenceResponse,
    OutputTensor,
    RequestedOutput,
    SharedMemoryRef,
)

ShmWriter = Callable[[SharedMemoryRef, OutputTensor], None]


def finish_response(
    request: InferenceRequest,
    response: InferenceResponse,
    signature: Signature,
    labels: dict[str, list[str]],
    write_shm: ShmWriter | None = None,
) -> None:
    """Shape ``response`` for ``request`` in place (no-op for error responses)."""
    if response.error is not None:
        return
    outputs = response.outputs
    wanted = request.outputs
    if wanted and not _plain_match(wanted, outputs):
        by_name = {o.name: o for o in outputs}
        kept: list[OutputTensor] = []
        for requested in wanted:
            tensor = by_name.get(requested.name)
            if tensor is None:
                continue
            if requested.classification > 0:
                tensor = classify(
                    tensor,
                    requested.classification,
                    signature.max_batch_size > 0,
                    labels.get(tensor.name),
                )
            if requested.shm is not None:
                if write_shm is None:
                    raise InvalidArgument("shared memory is not available on this server")
                write_shm(requested.shm, tensor)
                tensor = OutputTensor(
                    tensor.name, tensor.datatype, tensor.shape, None, requested.shm
                )
            kept.append(tensor)
        # Triton returns outputs in the order the model produced them.
        order = {o.name: i for i, o in enumerate(outputs)}
        kept.sort(key=lambda t: order.get(t.name, 0))
        response.outputs = kept
    specs = signature.outputs
    for tensor in response.outputs:
        spec = specs.get(tensor.name)
        if spec is not None and spec.reshape is not None and tensor.data is not None:
            _undo_reshape(tensor, spec.dims, signature.max_batch_size > 0)


def _plain_match(wanted: list[RequestedOutput], outputs: list[OutputTensor]) -> bool:
    """Whether the request asked for exactly the produced outputs, in their order, as they are.

    The common case (perf_analyzer and most clients name every output): nothing to filter.
    """
    if len(wanted) != len(outputs):
        return False
    # Lengths checked: zip's strict= would cost a keyword parse per call.
    for requested, tensor in zip(wanted, outputs):  # noqa: B905
        if requested.name != tensor.name or requested.classification or requested.shm is not None:
            return False
    return True


def _undo_reshape(tensor: OutputTensor, dims: tuple[int, ...], batching: bool) -> None:
    if list(dims).count(-1) > 1:
        return
    assert tensor.data is not None
    target = ((tensor.data.shape[0],) if batching and tensor.data.ndim else ()) + dims
    try:
        tensor.data = tensor.data.reshape(target)
    except ValueError:
        return
    tensor.shape = tuple(tensor.data.shape)


def _format_value(value: object, is_float: bool) -> str:
    return f"{float(value):f}" if is_float else str(int(value))  # type: ignore[arg-type,call-overload]


def classify(
    tensor: OutputTensor,
    k: int,
    batching: bool,
    labels: list[str] | None,
) -> OutputTensor:
    """Top-``k`` classification strings ``"<value>:<index>[:<label>]"`` as BYTES."""
    data = tensor.data
    if data is None:
        raise InvalidArgument(f"cannot classify output '{tensor.name}' without data")
    dt = tensor.datatype
    if dt.is_bytes or dt.name in ("FP16", "BF16", "BOOL"):
        raise InvalidArgument(
            f"class result not available for output '{tensor.name}' due to unsupported type '{dt}'"
        )
    is_float = dt.name in ("FP32", "FP64")
    rows = data.reshape(data.shape[0], -1) if batching and data.ndim > 0 else data.reshape(1, -1)
    count = min(k, rows.shape[1])
    result: np.ndarray = np.empty((rows.shape[0], count), dtype=np.object_)
    for r, row in enumerate(rows):
        order = np.argsort(-row.astype(np.float64), kind="stable")[:count]
        for c, idx in enumerate(order):
            text = f"{_format_value(row[idx], is_float)}:{idx}"
            if labels is not None and idx < len(labels):
                text += f":{labels[idx]}"
            result[r, c] = text.encode()
    if not (batching and data.ndim > 0):
        result = result.reshape(count)
    return OutputTensor(tensor.name, datatypes.BYTES, tuple(result.shape), result)
