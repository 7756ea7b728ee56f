"""A FIL model's ``parameters``, read once with the rules of Triton's FIL backend.

Triton reads them as strings (rapids-triton's ``get_config_param``):
``is_classifier`` (or its old name
``output_class``) is required, ``model_type`` defaults to ``xgboost``.  The
GPU and performance knobs of Triton's FIL (``layout``, ``chunk_size``,
``storage_type``, ...) change no answer; naiad accepts and checks them but
has nothing to tune with them on the CPU.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from naiad.backends.parameters import ModelParameters
from naiad.config import ModelConfig
from naiad.config.model_config_pb2 import ModelInstanceGroup
from naiad.core.errors import InvalidArgument, Unsupported

#: model_type -> the file Triton's FIL looks for in the version folder.
DEFAULT_FILENAMES: dict[str, str] = {
    "xgboost": "xgboost.model",
    "xgboost_json": "xgboost.json",
    "xgboost_ubj": "xgboost.ubj",
    "lightgbm": "model.txt",
    "treelite_checkpoint": "checkpoint.tl",
    # naiad's own: scikit-learn estimators pickled with pickle or joblib.
    "sklearn": "model.pkl",
}
SKLEARN_ALTERNATIVE = "model.joblib"

#: Accepted for compatibility with Triton's FIL configs; no effect on the CPU.
_INT_KNOBS = ("transfer_threshold", "chunk_size", "blocks_per_sm", "threads_per_tree")
_BOOL_KNOBS = ("use_experimental_optimizations", "xgboost_allow_unknown_field")


@dataclass(frozen=True)
class FilParams:
    model_type: str
    is_classifier: bool
    predict_proba: bool
    threshold: float
    #: Threads one instance's predictions use (xgboost, lightgbm, treelite).
    nthread: int
    #: ``cpu_nthread`` as given (scikit-learn estimators only use threads when asked).
    cpu_nthread: int | None


def read_params(config: ModelConfig) -> FilParams:
    """The parameters of a FIL model, or InvalidArgument/Unsupported naming the bad one."""
    params = ModelParameters(config)
    where = f"model '{config.name}'"
    model_type = params.get("model_type", "xgboost")
    if model_type not in DEFAULT_FILENAMES:
        raise Unsupported(
            f"{where}: parameter 'model_type' is '{model_type}', not a model type the fil "
            f"backend knows ({', '.join(DEFAULT_FILENAMES)})"
        )
    classifier = params.flag("is_classifier")
    old = params.flag("output_class")
    if classifier is None and old is None:
        raise InvalidArgument(
            f"{where}: required parameter 'is_classifier' (formerly 'output_class') not found "
            "in config: set it to 'true' for a classifier or 'false' for a regressor"
        )
    if classifier is not None and old is not None and classifier != old:
        raise InvalidArgument(
            f"{where}: parameters 'is_classifier' ({str(classifier).lower()}) and "
            f"'output_class' ({str(old).lower()}) "
            "disagree; 'output_class' is the old name of 'is_classifier', give one of them"
        )
    for name in _INT_KNOBS:
        params.integer(name)
    for name in _BOOL_KNOBS:
        params.flag(name)
    threshold = params.number("threshold")
    nthread = params.integer("cpu_nthread")
    return FilParams(
        model_type=model_type,
        is_classifier=bool(classifier if classifier is not None else old),
        predict_proba=bool(params.flag("predict_proba")),
        threshold=0.5 if threshold is None else threshold,
        nthread=nthread if nthread is not None and nthread > 0 else _fair_share(config),
        cpu_nthread=nthread if nthread is not None and nthread > 0 else None,
    )


def model_path(config: ModelConfig, model_dir: Path, version: int, model_type: str) -> Path:
    """The model file of a version, found as Triton's FIL finds it.

    ``default_model_filename`` names it; when it is empty or names a folder,
    the model type's default file name is looked for (in that folder).
    """
    path = model_dir / str(version)
    if config.default_model_filename:
        path = path / config.default_model_filename
        if not path.is_dir():
            return path
    default = path / DEFAULT_FILENAMES[model_type]
    if model_type == "sklearn" and not default.exists() and (path / SKLEARN_ALTERNATIVE).exists():
        return path / SKLEARN_ALTERNATIVE
    return default


def _fair_share(config: ModelConfig) -> int:
    """Cores per CPU instance, so a model's instances together do not oversubscribe the host.

    Triton's FIL takes every core for each instance (``cpu_nthread`` -1, OpenMP's
    default); with several instances (or models) that makes threads fight for cores.
    """
    cpu = ModelInstanceGroup.Kind.KIND_CPU
    instances = sum(g.count for g in config.instance_group if g.kind == cpu) or 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, (cores or 1) // instances)
