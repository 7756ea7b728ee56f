"""Opening a version's scikit-learn file: only with consent, only from the repository.

A ``model.joblib`` or ``model.pkl`` is a pickle; :mod:`naiad.backends.pickles`
holds the rule.  Auto-complete, ``naiad check`` and every instance open it
through :func:`load_estimator`, so all three refuse a file with the same
message.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import joblib

from naiad.backends.each_alone import first_line
from naiad.backends.parameters import ModelParameters
from naiad.backends.pickles import check_pickles_allowed, pickle_in_repository
from naiad.backends.sklearn.signature import METHODS, default_method
from naiad.config import ModelConfig
from naiad.core.errors import InvalidArgument, NaiadError

BACKEND = "sklearn"
#: The files a version folder may hold, in the order they are looked for (MLServer's).
FILENAMES = ("model.joblib", "model.pkl", "model.pickle")
#: The parameter that picks the method whose outputs auto-complete declares.
METHOD = "method"


def model_path(config: ModelConfig, model_dir: Path, version: int) -> Path:
    """``default_model_filename``, else the first of :data:`FILENAMES` the version holds."""
    folder = model_dir / str(version)
    if config.default_model_filename:
        return folder / config.default_model_filename
    return next((folder / n for n in FILENAMES if (folder / n).is_file()), folder / FILENAMES[0])


def load_estimator(
    config: ModelConfig, model_dir: Path, version: int, options: Mapping[str, str]
) -> Any:
    """The fitted object of a version, or a NaiadError that says why not."""
    where = f"model '{config.name}'"
    path = model_path(config, model_dir, version)
    if not path.is_file():
        raise InvalidArgument(
            f"{where}: unable to find model file '{path}' (a scikit-learn object saved with "
            f"joblib.dump(estimator, '{FILENAMES[0]}'))"
        )
    check_pickles_allowed(BACKEND, where, path, options, "a pickle (a saved scikit-learn object)")
    resolved = pickle_in_repository(where, path, model_dir)
    try:
        estimator = joblib.load(resolved)
    except NaiadError:
        raise
    except Exception as exc:
        reason = first_line(exc)
        raise InvalidArgument(f"{where}: failed to load model file '{path}': {reason}") from None
    if not any(hasattr(estimator, m) for m in METHODS):
        raise InvalidArgument(
            f"{where}: '{path.name}' holds a {type(estimator).__name__}, not a scikit-learn "
            f"estimator (it has none of {', '.join(METHODS)})"
        )
    if getattr(estimator, "n_features_in_", None) is None:
        raise InvalidArgument(
            f"{where}: the {type(estimator).__name__} in '{path.name}' is not fitted "
            "(no n_features_in_): save it after fit()"
        )
    return estimator


def read_method(config: ModelConfig, estimator: Any | None = None) -> str:
    """The ``method`` parameter (checked), or the estimator's natural one."""
    params = ModelParameters(config)
    method = params.get(METHOD)
    if method and method not in METHODS:
        raise params.invalid(METHOD, "one of " + ", ".join(METHODS))
    if not method:
        return default_method(estimator) if estimator is not None else "predict"
    if estimator is not None and not hasattr(estimator, method):
        raise InvalidArgument(
            f"model '{config.name}': parameter '{METHOD}' is '{method}', but the "
            f"{type(estimator).__name__} has no {method}()"
        )
    return method
