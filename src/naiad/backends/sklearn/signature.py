"""What a fitted scikit-learn object says about its inputs and outputs.

A fitted estimator knows how many features it takes (``n_features_in_``)
and, when it was fitted on a pandas DataFrame, their names
(``feature_names_in_``); it does not keep their dtypes.  Those are read from
the encoders that will meet the columns (a ``OneHotEncoder`` or
``OrdinalEncoder`` whose categories are strings takes strings) and are
otherwise numbers (FP64, what scikit-learn computes in).  Outputs are the
estimator's methods, named as MLServer names them (``predict``,
``predict_proba``, ``transform``...): their shape and datatype come from
calling the method on one made-up row (a probe), or, where the probe
fails, from ``classes_``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from naiad.core import datatypes
from naiad.core.datatypes import DataType

#: The methods a model's outputs may be named after, as MLServer's sklearn runtime.
METHODS = ("predict", "predict_proba", "predict_log_proba", "decision_function", "transform")
#: The input of an estimator that has no feature names: one row of features per item.
INPUT = "input"


@dataclass(frozen=True)
class Feature:
    name: str
    datatype: DataType
    #: A value of the right kind, for the probe.
    example: Any


@dataclass(frozen=True)
class Output:
    name: str
    datatype: DataType
    #: Per item, without the batch dimension.
    dims: tuple[int, ...]


def final_step(estimator: Any) -> Any:
    """The estimator at the end of a pipeline (the one with ``classes_``, ``n_outputs_``)."""
    while hasattr(estimator, "steps"):
        estimator = estimator.steps[-1][1]
    return estimator


def feature_names(estimator: Any) -> list[str] | None:
    names = getattr(estimator, "feature_names_in_", None)
    return None if names is None else [str(n) for n in names]


def features(estimator: Any) -> list[Feature]:
    """Named features with the datatype each needs (strings for string categories)."""
    names = feature_names(estimator) or []
    kinds = _categories_by_column(estimator)
    found = []
    for name in names:
        categories = kinds.get(name)
        if categories is not None and len(categories) and categories.dtype.kind in "OSU":
            found.append(Feature(name, datatypes.BYTES, str(categories[0])))
        elif categories is not None and len(categories) and categories.dtype.kind in "iu":
            found.append(Feature(name, datatypes.INT64, categories[0]))
        else:
            found.append(Feature(name, datatypes.FP64, 0.0))
    return found


def _categories_by_column(estimator: Any) -> dict[str, np.ndarray]:
    """Column name -> the categories an encoder first meeting that column knows."""
    head = estimator.steps[0][1] if hasattr(estimator, "steps") else estimator
    found: dict[str, np.ndarray] = {}
    parts = getattr(head, "transformers_", None)
    if parts is None:
        parts = [("", head, feature_names(head) or [])]
    for _, transformer, columns in parts:
        if isinstance(transformer, str) or not isinstance(columns, (list, tuple, np.ndarray)):
            continue
        first = transformer.steps[0][1] if hasattr(transformer, "steps") else transformer
        categories = getattr(first, "categories_", None)
        if categories is None:
            continue
        for column, values in zip(columns, categories, strict=False):
            found[str(column)] = np.asarray(values)
    return found


def default_method(estimator: Any) -> str:
    return "predict" if hasattr(estimator, "predict") else "transform"


def default_outputs(estimator: Any, method: str) -> list[str]:
    """``predict`` with ``predict_proba`` beside it for a classifier, else the one method."""
    if method == "predict" and hasattr(estimator, "predict_proba"):
        return ["predict", "predict_proba"]
    return [method]


def outputs(estimator: Any, names: list[str], probe: Any) -> list[Output]:
    """Each named method's datatype and per-item shape, by probing or from ``classes_``."""
    found = []
    for name in names:
        result = None
        if probe is not None:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    result = dense(getattr(estimator, name)(probe))
            except Exception:  # a made-up row a model refuses: fall back on its metadata
                result = None
        found.append(_from_result(name, result) if result is not None else _guess(estimator, name))
    return found


def _from_result(name: str, result: np.ndarray) -> Output:
    dims = tuple(int(d) for d in result.shape[1:]) or (1,)
    return Output(name, datatype_of(result.dtype), dims)


def _guess(estimator: Any, name: str) -> Output:
    last = final_step(estimator)
    classes = getattr(last, "classes_", None)
    if name == "predict":
        outputs = int(getattr(last, "n_outputs_", 1))
        if classes is not None and not isinstance(classes, list):
            return Output(name, datatype_of(np.asarray(classes).dtype), (outputs,))
        return Output(name, datatypes.FP64, (outputs,))
    if name in ("predict_proba", "predict_log_proba") and classes is not None:
        return Output(name, datatypes.FP64, (len(classes),))
    return Output(name, datatypes.FP64, (-1,))


def datatype_of(dtype: np.dtype) -> DataType:
    """The datatype a result travels as: strings and objects as BYTES."""
    if dtype.kind in "OSU":
        return datatypes.BYTES
    return datatypes.from_numpy(dtype)


def dense(result: Any) -> np.ndarray:
    """A method's result as a numpy array (a sparse transform made dense)."""
    if hasattr(result, "toarray"):
        result = result.toarray()
    return np.asarray(result)
