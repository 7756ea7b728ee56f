"""One loaded scikit-learn object, running a batch of rows through its methods.

Each output is the method of its name applied to the batch's rows; only the
outputs some request of the batch asked for are computed.  A value the
estimator refuses (a category it never saw, text where it wants numbers)
fails only the request that sent it: a batch that fails is run again one
request at a time, so the others still get their answers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from naiad.backends.base import InstanceSpec, LoadContext
from naiad.backends.batching import BatchPlan
from naiad.backends.each_alone import RowsInstance, first_line, responses
from naiad.backends.sklearn.loading import load_estimator
from naiad.backends.sklearn.rows import Rows
from naiad.backends.sklearn.signature import dense
from naiad.config import ModelConfig
from naiad.core import datatypes
from naiad.core.errors import Internal, InvalidArgument, Unavailable
from naiad.core.types import InferenceRequest, InferenceResponse


class SklearnInstance(RowsInstance):
    inline_ok = True

    def __init__(self, ctx: LoadContext, spec: InstanceSpec) -> None:
        config = ctx.config
        if spec.kind == "GPU":
            raise Unavailable(
                f"model '{config.name}': instance '{spec.name}' is KIND_GPU, but scikit-learn "
                "runs on the CPU only; use KIND_CPU (or KIND_AUTO)"
            )
        self.estimator = load_estimator(config, ctx.model_dir, ctx.version, ctx.options)
        self.rows = self.check(config, self.estimator)
        self.where = f"model '{config.name}'"
        self.outputs = {
            o.name: (datatypes.from_config(o.data_type), tuple(o.dims)) for o in config.output
        }
        self.plan = BatchPlan(config)

    @staticmethod
    def check(config: ModelConfig, estimator: Any) -> Rows:
        """The object has every method the outputs name, and takes the config's inputs."""
        for output in config.output:
            if not hasattr(estimator, output.name):
                raise InvalidArgument(
                    f"model '{config.name}': output '{output.name}' names a method the "
                    f"{type(estimator).__name__} does not have"
                )
        return Rows(config, estimator)

    def _run(self, requests: list[InferenceRequest]) -> list[InferenceResponse]:
        x = self.rows(self.plan.gather(requests))
        count = sum(r.batch_size for r in requests) or _row_count(x)
        results = {name: self._call(name, x, count) for name in self._wanted(requests)}
        types = {name: spec[0] for name, spec in self.outputs.items()}
        return responses(self.plan.split(results, requests), types)

    def _wanted(self, requests: list[InferenceRequest]) -> list[str]:
        asked: set[str] = set()
        for request in requests:
            if not request.outputs:
                return list(self.outputs)
            asked.update(o.name for o in request.outputs)
        return [name for name in self.outputs if name in asked]

    def _call(self, name: str, x: Any, rows: int) -> np.ndarray:
        datatype, dims = self.outputs[name]
        try:
            result = dense(getattr(self.estimator, name)(x))
        except (ValueError, TypeError, KeyError) as exc:
            text = str(exc).strip().splitlines()
            raise InvalidArgument(
                f"{self.where}: {name}() refused the input: {text[0] if text else exc!r}"
            ) from None
        except Exception as exc:
            raise Internal(f"{self.where}: {name}() failed: {first_line(exc)}") from None
        result = result.astype(object) if datatype.is_bytes else result.astype(datatype.numpy)
        try:
            return result.reshape((rows, *dims))
        except ValueError:
            raise Internal(
                f"{self.where}: {name}() gave shape {list(result.shape)}, which is not "
                f"[{rows}] + the output's dims {list(dims)}"
            ) from None


def _row_count(x: Any) -> int:
    return int(x.shape[0])
