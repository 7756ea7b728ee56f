"""One loaded MLflow python_function model, predicting a batch at a time.

The batch's inputs become what the model's signature asks for: a pandas
DataFrame with one column per named input (text decoded, datetimes parsed)
for a column schema, a dict of numpy arrays (or the one array) for a tensor
schema.  What ``predict`` returns (a DataFrame, a Series, an array, a dict of
arrays) is split into the config's outputs.  A batch that fails is run again
one request at a time, so a bad row fails only the request that sent it.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from mlflow.exceptions import MlflowException

from naiad.backends.base import InstanceSpec, LoadContext
from naiad.backends.batching import BatchPlan
from naiad.backends.each_alone import RowsInstance, first_line, responses
from naiad.backends.mlflow import schema
from naiad.backends.pickles import check_pickles_allowed, pickle_in_repository
from naiad.core import datatypes
from naiad.core.errors import Internal, InvalidArgument, Unavailable
from naiad.core.types import InferenceRequest, InferenceResponse

BACKEND = "mlflow"


class MlflowInstance(RowsInstance):
    def __init__(self, ctx: LoadContext, spec: InstanceSpec, folder: Path) -> None:
        config = ctx.config
        self.where = where = f"model '{config.name}'"
        if spec.kind == "GPU":
            raise Unavailable(
                f"{where}: instance '{spec.name}' is KIND_GPU; naiad's mlflow backend runs "
                "models on the CPU (their own code may still use a GPU): use KIND_CPU"
            )
        check_pickles_allowed(
            BACKEND, where, folder, ctx.options, "an MLflow model (its flavours are pickles)"
        )
        resolved = pickle_in_repository(where, folder, ctx.model_dir)
        try:
            with warnings.catch_warnings():  # MLflow's hints to the model's author
                warnings.simplefilter("ignore", UserWarning)
                self.model = _pyfunc().load_model(str(resolved))
        except Exception as exc:
            raise InvalidArgument(
                f"{where}: mlflow.pyfunc.load_model('{folder}') failed: {first_line(exc)}"
            ) from None
        self.inputs = [(i.name, tuple(i.dims)) for i in config.input]
        self.outputs = {
            o.name: (datatypes.from_config(o.data_type), tuple(o.dims)) for o in config.output
        }
        self.batching = config.max_batch_size > 0
        signature = self.model.metadata.signature
        if signature is not None and signature.inputs is not None:
            read = schema.read(where, signature)
            self.columns, self.positional = read.columns, read.positional
            self.kinds = {t.name: t.column_type for t in read.inputs}
        else:
            self.columns = all(dims == (1,) for _, dims in self.inputs)
            self.positional, self.kinds = False, {}
        self.plan = BatchPlan(config)

    def _run(self, requests: list[InferenceRequest]) -> list[InferenceResponse]:
        feed = self.plan.gather(requests)
        rows = sum(r.batch_size for r in requests)
        try:
            result = self.model.predict(self._data(feed))
        except MlflowException as exc:
            raise InvalidArgument(f"{self.where}: {first_line(exc)}") from None
        except (ValueError, TypeError, KeyError) as exc:
            message = f"{self.where}: predict() refused the input: {first_line(exc)}"
            raise InvalidArgument(message) from None
        except Exception as exc:
            raise Internal(f"{self.where}: predict() failed: {first_line(exc)}") from None
        produced = {name: self._output(name, result, rows) for name in self.outputs}
        types = {name: spec[0] for name, spec in self.outputs.items()}
        return responses(self.plan.split(produced, requests), types)

    def _data(self, feed: dict[str, np.ndarray]) -> Any:
        if not self.columns:
            if len(self.inputs) == 1 and self.inputs[0][0] == schema.INPUT:
                return feed[schema.INPUT]
            return {name: feed[name] for name, _ in self.inputs}
        if self.positional:
            array = feed[self.inputs[0][0]]
            return pd.DataFrame(_decoded(array.reshape(array.shape[0], -1)))
        return pd.DataFrame(
            {name: self._column(name, feed[name]) for name, _ in self.inputs},
            columns=[name for name, _ in self.inputs],
        )

    def _column(self, name: str, array: np.ndarray) -> Any:
        values = array.reshape(-1)
        kind = self.kinds.get(name, "")
        if kind == "datetime":
            return pd.to_datetime(_decoded(values))
        if kind == "binary":
            return values
        return _decoded(values) if values.dtype == object else values

    def _output(self, name: str, result: Any, rows: int) -> np.ndarray:
        datatype, dims = self.outputs[name]
        if isinstance(result, pd.DataFrame):
            value = result[name] if name in result.columns else result
        elif isinstance(result, dict):
            if name not in result:
                raise Internal(f"{self.where}: predict() gave no '{name}' ({list(result)})")
            value = result[name]
        else:
            value = result
        array = np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value)
        try:
            array = array.astype(object) if datatype.is_bytes else array.astype(datatype.numpy)
            return array.reshape((rows, *dims) if self.batching else dims)
        except (ValueError, TypeError) as exc:
            raise Internal(
                f"{self.where}: predict() gave {array.dtype} of shape {list(array.shape)} for "
                f"output '{name}' ({datatype}, dims {list(dims)}): {first_line(exc)}; "
                "declare the output in config.pbtxt as the model gives it"
            ) from None


def _pyfunc() -> Any:
    """``mlflow.pyfunc``, imported without the UserWarnings MLflow 3 gives on import (about
    its own agent types' hints): a server's warnings are about the server's models."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        import mlflow.pyfunc

    return mlflow.pyfunc


def _decoded(values: np.ndarray) -> np.ndarray:
    if values.dtype != object:
        return values
    return np.vectorize(
        lambda v: v.decode("utf-8", "replace") if isinstance(v, bytes) else v, otypes=[object]
    )(values)
