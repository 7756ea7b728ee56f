"""One loaded SavedModel that runs batches through its serving signature.

The instance calls the signature's concrete function: its input signature
is fixed, so a new batch size never retraces it (a ``tf.function`` called
with new shapes would).  Each instance loads its own copy of the model, as
Triton's backend gives each instance its own session.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from naiad.backends.base import InstanceSpec, LoadContext, ModelInstance
from naiad.backends.batching import BatchPlan
from naiad.backends.tensorflow.runtime import apply_threads, tf
from naiad.backends.tensorflow.signature import TF_TYPES, Selection
from naiad.config.model_signature import ModelSignature, TensorSignature
from naiad.config.validate_signature import check_signature
from naiad.core import datatypes
from naiad.core.errors import Internal, InvalidArgument, NaiadError, Unavailable, Unsupported
from naiad.core.types import InferenceRequest, InferenceResponse, OutputTensor

_BY_ENUM = {dt.config_enum: tf_type for tf_type, dt in TF_TYPES.items()}


class TensorFlowInstance(ModelInstance):
    inline_ok = True

    def __init__(
        self,
        ctx: LoadContext,
        spec: InstanceSpec,
        signature: ModelSignature,
        chosen: Selection,
        threads: dict[str, int],
        gpus: int,
    ) -> None:
        config = ctx.config
        self.name = config.name
        check_signature(config, signature)
        if spec.kind == "GPU" and spec.device_id >= gpus:
            raise Unavailable(
                f"instance '{spec.name}' of model '{self.name}' is KIND_GPU on GPU "
                f"{spec.device_id}, but TensorFlow sees "
                + (f"{gpus} GPU(s)" if gpus else "no GPU (tensorflow-cpu, or no CUDA build)")
            )
        self.device = f"/GPU:{spec.device_id}" if spec.kind == "GPU" else "/CPU:0"
        apply_threads(self.name, threads)
        path = ctx.version_dir / (config.default_model_filename or "model.savedmodel")
        try:
            with tf.device(self.device):
                # The loaded object owns the variables: it lives as long as the function.
                self._loaded = tf.saved_model.load(str(path), tags=[chosen.tag])
        except Exception as exc:
            raise InvalidArgument(
                f"unable to load model '{self.name}': failed to load SavedModel '{path}': "
                f"{_first_line(exc)}"
            ) from None
        self._fn = self._loaded.signatures[chosen.signature_key]
        self.plan = BatchPlan(config)
        #: The model's input name -> the TensorFlow dtype its tensor is made with.
        self._input_types = {t.name: _input_type(self.name, t) for t in signature.inputs}
        produced = {t.name: t for t in signature.outputs}
        names = [o.name for o in config.output] or list(produced)
        # The sequence batcher takes the implicit-state outputs back; they are not
        # in the config's output list.
        names += [
            s.output_name for s in config.sequence_batching.state if s.output_name not in names
        ]
        self._outputs = [(n, datatypes.from_config(produced[n].data_type)) for n in names]

    def execute(self, requests: list[InferenceRequest]) -> list[InferenceResponse]:
        t0 = time.monotonic_ns()
        feed = self.plan.gather(requests)
        types = self._input_types
        try:
            with tf.device(self.device):
                tensors = {n: tf.constant(a, types[n]) for n, a in feed.items()}
                t1 = time.monotonic_ns()
                results = self._fn(**tensors)
                arrays = {name: results[name].numpy() for name, _ in self._outputs}
        except NaiadError:
            raise
        except tf.errors.InvalidArgumentError as exc:
            raise InvalidArgument(f"model '{self.name}': {_first_line(exc)}") from None
        except Exception as exc:
            raise Internal(f"tensorflow error in model '{self.name}': {_first_line(exc)}") from None
        t2 = time.monotonic_ns()
        responses: list[InferenceResponse] = []
        for split in self.plan.split(arrays, requests):
            outputs = []
            for name, dt in self._outputs:
                array: np.ndarray = split[name]
                outputs.append(OutputTensor(name, dt, array.shape, array))
            responses.append(InferenceResponse(outputs=outputs))
        t3 = time.monotonic_ns()
        self.compute_ns = (t1 - t0, t2 - t1, t3 - t2)
        return responses

    def close(self) -> None:
        self._fn = None
        self._loaded = None


def _input_type(model: str, tensor: TensorSignature) -> Any:
    found = _BY_ENUM.get(tensor.data_type)
    if found is None:
        raise Unsupported(
            f"unable to load model '{model}': input '{tensor.name}' has TensorFlow type "
            f"'{tensor.type_name}', which has no Triton datatype"
        )
    return found


def _first_line(exc: Any) -> str:
    """TensorFlow's messages name the cause first; op traces and hints follow."""
    text = getattr(exc, "message", None) or str(exc)
    return next((line.strip() for line in text.splitlines() if line.strip()), repr(exc))
