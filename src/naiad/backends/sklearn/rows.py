"""A batch's input tensors as the ``X`` a fitted scikit-learn object takes.

An estimator fitted on a DataFrame checks the column names it is given (and
warns on a plain array), so where it knows ``feature_names_in_`` the rows
become a DataFrame with those columns: from one input per column (what
auto-complete writes), or from one 2-D input whose columns are the features
in order (a config may declare that instead).  Otherwise ``X`` is the one
2-D input as numpy.  BYTES values become ``str``, as they were when fitted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from naiad.backends.sklearn.signature import Feature, feature_names
from naiad.config import ModelConfig
from naiad.core.errors import InvalidArgument, Unavailable


class Rows:
    """One model's rule for building ``X``, checked against its config once."""

    def __init__(self, config: ModelConfig, estimator: Any) -> None:
        where = f"model '{config.name}'"
        self.names = feature_names(estimator)
        given = [i.name for i in config.input]
        names = self.names or []
        self.columns = bool(names) and not (len(given) == 1 and given[0] not in names)
        if self.columns:
            missing = [n for n in names if n not in given]
            extra = [n for n in given if n not in names]
            if missing or extra:
                raise InvalidArgument(
                    f"{where}: the estimator takes the columns {self.names}, but the config's "
                    f"inputs are {given}: give one input per column, or one 2-D input"
                )
            _pandas(where)
        elif len(given) != 1:
            raise InvalidArgument(
                f"{where}: the estimator takes one 2-D array (it has no feature names), but the "
                f"config has {len(given)} inputs {given}"
            )
        self.single = given[0] if given else ""
        self.where = where

    def __call__(self, feed: dict[str, np.ndarray]) -> Any:
        if self.columns:
            assert self.names is not None
            pd = _pandas(self.where)
            return pd.DataFrame({n: _column(feed[n]) for n in self.names}, columns=self.names)
        array = feed[self.single]
        rows = array.reshape(array.shape[0], -1) if array.ndim != 2 else array
        if rows.dtype == object:
            rows = np.vectorize(_text, otypes=[object])(rows)
        if self.names:
            return _pandas(self.where).DataFrame(rows, columns=self.names)
        return rows


def probe(estimator: Any, found: list[Feature]) -> Any:
    """One made-up row the estimator should accept, or None where none can be made."""
    names = feature_names(estimator)
    if names:
        try:
            import pandas as pd
        except ImportError:
            return None
        return pd.DataFrame({f.name: [f.example] for f in found}, columns=names)
    count = getattr(estimator, "n_features_in_", None)
    return None if count is None else np.zeros((1, int(count)))


def _column(array: np.ndarray) -> np.ndarray:
    values = array.reshape(-1)
    if values.dtype == object:
        return np.array([_text(v) for v in values], dtype=object)
    return values


def _text(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _pandas(where: str) -> Any:
    try:
        import pandas as pd
    except ImportError:
        raise Unavailable(
            f"{where}: the estimator was fitted on a pandas DataFrame (it has feature names) "
            "and needs pandas to predict: pip install pandas"
        ) from None
    return pd
