"""Batch tensors, not payloads: how requests become one feed and outputs go back.

Framework backends run one session call per batch.  Inputs of the batch's
requests are concatenated along axis 0 and outputs split back by the
recorded row counts, which must add up.  Ragged inputs
(``allow_ragged_batch``) travel as one flat tensor, their data end to end;
the config's ``batch_input`` entries give the model what it needs to find
each request in it (element counts, offsets, item shapes), and its
``batch_output`` entries scatter a flat output back by a source input's
shape.  This is what Triton's framework backends do (ragged_batching.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod

import numpy as np

from naiad.config import ModelConfig
from naiad.config.model_config_pb2 import BatchInput, DataType
from naiad.core.errors import Internal
from naiad.core.types import InferenceRequest
from naiad.core.validation import dims_text, shape_matches

_Shapes = list[tuple[int, ...]]


def _element_counts(shapes: _Shapes) -> np.ndarray:
    return np.array([prod(s) for s in shapes], dtype=np.int64)


def _with_zero(shapes: _Shapes) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(_element_counts(shapes))])


def _max_as_shape(shapes: _Shapes) -> np.ndarray:
    # Only the shape carries information; Triton leaves the data uninitialised.
    return np.zeros(int(_element_counts(shapes).max(initial=0)))


def _item_shapes(shapes: _Shapes) -> np.ndarray:
    rows = [s[1:] for s in shapes for _ in range(s[0] if s else 0)]
    return np.array(rows, dtype=np.int64).reshape(len(rows), len(shapes[0]) - 1)


#: batch_input kind -> the tensor, from each request's shape of the source input.
_BATCH_INPUTS: dict[int, Callable[[_Shapes], np.ndarray]] = {
    BatchInput.BATCH_ELEMENT_COUNT: _element_counts,
    BatchInput.BATCH_ACCUMULATED_ELEMENT_COUNT: lambda s: np.cumsum(_element_counts(s)),
    BatchInput.BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO: _with_zero,
    BatchInput.BATCH_MAX_ELEMENT_COUNT_AS_SHAPE: _max_as_shape,
    BatchInput.BATCH_ITEM_SHAPE: _item_shapes,
    BatchInput.BATCH_ITEM_SHAPE_FLATTEN: lambda s: _item_shapes(s).reshape(-1),
}


class BatchPlan:
    """One model's rules for gathering a batch's inputs and splitting its outputs."""

    def __init__(self, config: ModelConfig) -> None:
        self.batching = config.max_batch_size > 0
        self.ragged = frozenset(i.name for i in config.input if i.allow_ragged_batch)
        self.batch_inputs = [
            (
                _BATCH_INPUTS[b.kind],
                np.float32 if b.data_type == DataType.TYPE_FP32 else np.int32,
                b.source_input[0],
                list(b.target_name),
            )
            for b in config.batch_input
        ]
        #: output name -> the input whose shapes it is scattered by
        self.scatter = {
            name: b.source_input[0] for b in config.batch_output for name in b.target_name
        }
        self._simple = not (self.ragged and self.batching) and not config.batch_input
        batch = (-1,) if self.batching else ()
        #: output name -> the shape the model must give it, -1 for any size (its
        #: reshape when it has one, batch dimension first); batch outputs are flat.
        self.output_shapes: dict[str, tuple[int, ...]] = {
            o.name: batch + tuple(o.reshape.shape if o.HasField("reshape") else o.dims)
            for o in config.output
            if o.name not in self.scatter
        }
        for state in config.sequence_batching.state:
            self.output_shapes[state.output_name] = batch + tuple(state.dims)

    @property
    def target_names(self) -> list[str]:
        """The model inputs the backend creates (not sent by clients)."""
        return [name for *_, names in self.batch_inputs for name in names]

    def gather(self, requests: Sequence[InferenceRequest]) -> dict[str, np.ndarray]:
        """The feed of one execution: each input of a lone request, or the concatenation."""
        if self._simple and (len(requests) == 1 or not self.batching):
            return {t.name: t.array() for t in requests[0].inputs}
        feed: dict[str, np.ndarray] = {}
        for tensor in requests[0].inputs:
            name = tensor.name
            arrays = [p.array() for r in requests if (p := r.input(name)) is not None]
            if name in self.ragged and self.batching:
                arrays = [a.reshape(-1) for a in arrays]
            feed[name] = arrays[0] if len(arrays) == 1 else np.concatenate(arrays, axis=0)
        for make, dtype, source, targets in self.batch_inputs:
            value = make(_shapes(requests, source)).astype(dtype)
            for target in targets:
                feed[target] = value
        return feed

    def check_shapes(self, outputs: dict[str, np.ndarray]) -> None:
        """Refuse outputs whose shape is not the configuration's.

        Frameworks that declare no shapes (TorchScript) would otherwise hand
        clients whatever the model made, under a config that says otherwise.
        """
        for name, array in outputs.items():
            expected = self.output_shapes.get(name)
            if expected is not None and not shape_matches(expected, array.shape):
                raise Internal(
                    f"configuration expects shape {dims_text(expected)} for output '{name}', "
                    f"model provides {dims_text(array.shape)}"
                )

    def split(
        self, outputs: dict[str, np.ndarray], requests: Sequence[InferenceRequest]
    ) -> list[dict[str, np.ndarray]]:
        """Per-request slices of batch outputs (views, no copies)."""
        whole = len(requests) == 1 or not self.batching  # one request owns each output
        if whole and not self.scatter:
            return [outputs]
        rows = [r.batch_size for r in requests]
        total = sum(rows)
        per_request: list[dict[str, np.ndarray]] = [{} for _ in requests]
        for name, array in outputs.items():
            source = self.scatter.get(name)
            if source is not None:
                self._scatter(name, array, _shapes(requests, source), per_request)
                continue
            if whole:
                per_request[0][name] = array
                continue
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

    @staticmethod
    def _scatter(
        name: str, array: np.ndarray, shapes: _Shapes, per_request: list[dict[str, np.ndarray]]
    ) -> None:
        flat = array.reshape(-1)
        counts = _element_counts(shapes)
        if flat.size != counts.sum():
            raise Internal(
                f"batch output '{name}' has {flat.size} elements but the shapes of its source "
                f"input add up to {int(counts.sum())}"
            )
        start = 0
        for i, (shape, n) in enumerate(zip(shapes, counts.tolist(), strict=True)):
            per_request[i][name] = flat[start : start + n].reshape(shape)
            start += n


def _shapes(requests: Sequence[InferenceRequest], source: str) -> _Shapes:
    shapes = []
    for request in requests:
        tensor = request.input(source)
        shapes.append(tuple(tensor.shape) if tensor is not None else (0,))
    return shapes
