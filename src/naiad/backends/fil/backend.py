"""Triton's FIL backend (``backend: "fil"``): tree ensembles on the CPU.

A FIL model has one input ``input__0`` (FP32, one row of features per batch
item) and one output ``output__0`` (FP32), and always batches.  Triton's FIL
completes nothing of the config from the model file, and neither does
naiad: the config names both tensors and the model's feature count, which is
checked against the file at load.

A scikit-learn model is a pickle, and unpickling runs whatever code the file
holds: such models load only where the operator started the server with
``--backend-config fil,allow-pickle=true``.  A config cannot turn it on (a
model's author, or a client of the load API, is not who decides), and the
other model types are data, not code, and always load.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from naiad.backends.base import Backend, InstanceSpec, LoadContext, ModelInstance
from naiad.backends.batching import BatchPlan
from naiad.backends.fil import predictors
from naiad.backends.fil.outputs import Answer, answer_for
from naiad.backends.fil.params import DEFAULT_FILENAMES, model_path, read_params
from naiad.backends.fil.predictors import Predictor
from naiad.config import ModelConfig
from naiad.config.model_config_pb2 import DataType, ModelInput, ModelOutput
from naiad.core import datatypes
from naiad.core.errors import InvalidArgument, Unavailable, Unsupported
from naiad.core.types import InferenceRequest, InferenceResponse, OutputTensor

INPUT = "input__0"
OUTPUT = "output__0"
#: The ``--backend-config fil,<key>=true`` that lets scikit-learn pickles load.
ALLOW_PICKLE = "allow-pickle"
_YES = frozenset({"true", "yes", "on", "1"})
_NO = frozenset({"false", "no", "off", "0", ""})


class FilBackend(Backend):
    name = "fil"

    def preferred_instance_kind(self) -> str:
        return "KIND_CPU"

    def model_file(self, config: ModelConfig, model_dir: Path, version: int) -> Path | None:
        given = config.parameters.get("model_type")  # indexing would add the key
        model_type = given.string_value if given is not None else "xgboost"
        if model_type not in DEFAULT_FILENAMES:
            return None  # validate() reports it
        return model_path(config, model_dir, version, model_type)

    def validate(self, config: ModelConfig, model_dir: Path) -> None:
        """Triton's FIL I/O convention, and parameters it can read."""
        read_params(config)
        where = f"model '{config.name}'"
        if config.max_batch_size <= 0:
            raise InvalidArgument(
                f"{where}: the fil backend needs max_batch_size > 0 (it always batches rows)"
            )
        _check_tensors(where, "input", INPUT, list(config.input))
        _check_tensors(where, "output", OUTPUT, list(config.output))

    def check_version(
        self, config: ModelConfig, model_dir: Path, version: int, options: Mapping[str, str]
    ) -> None:
        _load(config, model_dir, version, options)

    def create_instance(self, ctx: LoadContext, spec: InstanceSpec) -> ModelInstance:
        return FilInstance(ctx, spec)


def _check_tensors(
    where: str, role: str, name: str, tensors: Sequence[ModelInput | ModelOutput]
) -> None:
    extra = [t.name for t in tensors if t.name != name]
    if extra:
        raise Unsupported(
            f"{where}: unexpected {role} '{extra[0]}': a fil model has one {role}, '{name}'"
            + (" (treeshap_output is not supported by naiad)" if "treeshap" in extra[0] else "")
        )
    if not tensors:
        raise InvalidArgument(
            f"{where}: the config has no {role} '{name}' (the fil backend completes no "
            f"inputs or outputs from the model file): give it as "
            f'{{name: "{name}" data_type: TYPE_FP32 dims: [...]}}'
        )
    tensor = tensors[0]
    if tensor.data_type != DataType.TYPE_FP32:
        raise InvalidArgument(
            f"{where}: {role} '{name}' has data type {DataType.Name(tensor.data_type)}; "
            "the fil backend reads and writes TYPE_FP32 only"
        )
    if len(tensor.dims) != 1 or tensor.dims[0] < 1:
        raise InvalidArgument(
            f"{where}: {role} '{name}' has dims {list(tensor.dims)}; a fil model's {role} "
            "has one dimension of fixed size (features in, scores or classes out)"
        )


def _load(
    config: ModelConfig, model_dir: Path, version: int, options: Mapping[str, str]
) -> tuple[Predictor, Answer]:
    """A version's model, checked against the config (``check_version`` too): a pickle
    only where the operator allowed pickles, its feature count, and an output its scores
    can become."""
    params = read_params(config)
    path = model_path(config, model_dir, version, params.model_type)
    if params.model_type == "sklearn":
        _check_pickles_allowed(f"model '{config.name}'", path, options)
    predictor = predictors.load(path, params.model_type, params.nthread, params.cpu_nthread)
    features = config.input[0].dims[0]
    if predictor.num_features != features:
        raise InvalidArgument(
            f"model '{config.name}': input '{INPUT}' has dims [{features}] in the config, but "
            f"the model file '{path}' has {predictor.num_features} features"
        )
    dims = list(config.output[0].dims)
    return predictor, answer_for(params, predictor.width, dims, f"model '{config.name}'")


def _check_pickles_allowed(where: str, path: Path, options: Mapping[str, str]) -> None:
    value = options.get(ALLOW_PICKLE, "").strip().lower()
    if value not in _YES | _NO:
        raise InvalidArgument(
            f"--backend-config fil,{ALLOW_PICKLE}={options[ALLOW_PICKLE]}: expected true or false"
        )
    if value in _NO:
        raise Unsupported(
            f"{where}: '{path.name}' is a pickle (model_type 'sklearn'), and loading a pickle "
            "runs any code it holds; naiad loads pickles only when the server is started with "
            f"--backend-config fil,{ALLOW_PICKLE}=true (for model files you trust), or save the "
            "estimator as a treelite checkpoint (treelite.sklearn.import_model(estimator)"
            ".serialize('checkpoint.tl'), model_type 'treelite_checkpoint')"
        )


class FilInstance(ModelInstance):
    """One loaded copy of the model; the libraries release the GIL while they predict."""

    inline_ok = True

    def __init__(self, ctx: LoadContext, spec: InstanceSpec) -> None:
        config = ctx.config
        where = f"model '{config.name}'"
        if spec.kind == "GPU":
            raise Unavailable(
                f"{where}: instance '{spec.name}' is KIND_GPU, but naiad's fil backend runs "
                "tree models on the CPU only; use KIND_CPU (or KIND_AUTO)"
            )
        self.predictor, self.answer = _load(config, ctx.model_dir, ctx.version, ctx.options)
        self.plan = BatchPlan(config)

    def execute(self, requests: list[InferenceRequest]) -> list[InferenceResponse]:
        t0 = time.monotonic_ns()
        rows = np.ascontiguousarray(self.plan.gather(requests)[INPUT], dtype=np.float32)
        t1 = time.monotonic_ns()
        result = self.answer(self.predictor.predict(rows))
        t2 = time.monotonic_ns()
        responses = []
        for produced in self.plan.split({OUTPUT: result}, requests):
            array = produced[OUTPUT]
            tensor = OutputTensor(OUTPUT, datatypes.FP32, array.shape, array)
            responses.append(InferenceResponse(outputs=[tensor]))
        self.compute_ns = (t1 - t0, t2 - t1, time.monotonic_ns() - t2)
        return responses
