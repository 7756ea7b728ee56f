"""The scikit-learn backend (``backend: "sklearn"``): any fitted estimator or pipeline.

A version folder holding ``model.joblib`` (or ``model.pkl``) serves with no
config at all: auto-complete opens the object and declares one input per
feature it was fitted on (or one 2-D ``input``), and one output per method
it will call, named after the method (``predict``, and ``predict_proba``
beside it for a classifier; the ``method`` parameter picks another, such as
``transform``).  A config may give its own inputs and outputs instead; the
outputs must still be named after methods the object has.  Rows batch:
max_batch_size defaults to 256, with the dynamic batcher.

Opening the file runs the pickle, so it needs the operator's
``--backend-config sklearn,allow-pickle=true`` (:mod:`naiad.backends.pickles`),
for auto-complete as for the load.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import sklearn  # noqa: F401  (a missing extra fails here, naming it)

from naiad.backends.autocomplete import default_dynamic_batching, default_max_batch_size
from naiad.backends.base import Backend, InstanceSpec, LoadContext, ModelInstance
from naiad.backends.sklearn.instance import SklearnInstance
from naiad.backends.sklearn.loading import load_estimator, model_path, read_method
from naiad.backends.sklearn.rows import probe
from naiad.backends.sklearn.signature import (
    INPUT,
    METHODS,
    Feature,
    default_outputs,
    features,
    outputs,
)
from naiad.config import ModelConfig
from naiad.core import datatypes
from naiad.core.errors import InvalidArgument

#: Rows a batch may hold unless the config says otherwise: tabular rows are small, and
#: a client often sends a whole frame in one request.
DEFAULT_MAX_BATCH_SIZE = 256


class SklearnBackend(Backend):
    name = "sklearn"

    def preferred_instance_kind(self) -> str:
        return "KIND_CPU"

    def model_file(self, config: ModelConfig, model_dir: Path, version: int) -> Path | None:
        return model_path(config, model_dir, version)

    def auto_complete_with_options(
        self, config: ModelConfig, model_dir: Path, version: int, options: Mapping[str, str]
    ) -> None:
        """Inputs from the fitted object's features, outputs from its methods (probed)."""
        if len(config.input) > 0 and len(config.output) > 0:
            default_max_batch_size(config, DEFAULT_MAX_BATCH_SIZE)
            default_dynamic_batching(config)
            return
        estimator = load_estimator(config, model_dir, version, options)
        named = features(estimator)
        if len(config.input) == 0:
            _add_inputs(config, estimator, named)
        if len(config.output) == 0:
            method = read_method(config, estimator)
            for out in outputs(
                estimator, default_outputs(estimator, method), probe(estimator, named)
            ):
                entry = config.output.add(name=out.name, data_type=out.datatype.config_enum)
                entry.dims.extend(out.dims)
        default_max_batch_size(config, DEFAULT_MAX_BATCH_SIZE)
        default_dynamic_batching(config)

    def validate(self, config: ModelConfig, model_dir: Path) -> None:
        where = f"model '{config.name}'"
        read_method(config)
        if config.max_batch_size <= 0:
            raise InvalidArgument(
                f"{where}: the sklearn backend needs max_batch_size > 0 (it batches rows)"
            )
        for output in config.output:
            if output.name not in METHODS:
                raise InvalidArgument(
                    f"{where}: output '{output.name}' is not a method the sklearn backend calls; "
                    f"name each output after one ({', '.join(METHODS)})"
                )

    def check_version(
        self, config: ModelConfig, model_dir: Path, version: int, options: Mapping[str, str]
    ) -> None:
        SklearnInstance.check(config, load_estimator(config, model_dir, version, options))

    def create_instance(self, ctx: LoadContext, spec: InstanceSpec) -> ModelInstance:
        return SklearnInstance(ctx, spec)


def _add_inputs(config: ModelConfig, estimator: Any, named: list[Feature]) -> None:
    if named:
        for feature in named:
            entry = config.input.add(name=feature.name, data_type=feature.datatype.config_enum)
            entry.dims.append(1)
        return
    # Features with no names are numbers; scikit-learn computes in float64.
    entry = config.input.add(name=INPUT, data_type=datatypes.FP64.config_enum)
    entry.dims.append(int(estimator.n_features_in_))
