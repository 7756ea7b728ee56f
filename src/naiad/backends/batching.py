"""Batch tensors, not payloads: concatenate requests along the batch dimension.

Framework backends run one session call per batch.  Inputs of the batch's
requests are concatenated along axis 0 and outputs split back by the
recorded row counts, which must add up.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from naiad.core.errors import Internal
from naiad.core.types import InferenceRequest


def gather_inputs(requests: Sequence[InferenceRequest], batching: bool) -> dict[str, np.ndarray]:
    """The feed of one execution: each input of a lone request, or the concatenation."""
    if len(requests) == 1 or not batching:
        return {t.name: t.array() for t in requests[0].inputs}
    feed: dict[str, np.ndarray] = {}
    for tensor in requests[0].inputs:
        name = tensor.name
        parts = [r.input(name) for r in requests]
        arrays = [p.array() for p in parts if p is not None]
        first = arrays[0].shape[1:]
        if any(a.shape[1:] != first for a in arrays):
            # A ragged input (allow_ragged_batch): the data end to end, as Triton feeds it.
            arrays = [a.reshape(-1) for a in arrays]
        feed[name] = np.concatenate(arrays, axis=0)
    return feed


def split_outputs(
    outputs: dict[str, np.ndarray], rows: Sequence[int], batching: bool
) -> list[dict[str, np.ndarray]]:
    """Per-request slices of batch outputs (views, no copies)."""
    if len(rows) == 1 or not batching:
        return [outputs]
    total = sum(rows)
    per_request: list[dict[str, np.ndarray]] = [{} for _ in rows]
    for name, array in outputs.items():
        if array.ndim == 0 or array.shape[0] != total:
            raise Internal(
                f"output '{name}' has batch size {array.shape[0] if array.ndim else 0} "
                f"but the batch has {total} rows"
            )
        start = 0
        for i, n in enumerate(rows):
            per_request[i][name] = array[start : start + n]
            start += n
    return per_request
