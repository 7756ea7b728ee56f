"""The MLflow backend (``backend: "mlflow"``): a python_function model saved by MLflow.

A version folder that is an MLflow model (it holds ``MLmodel``), or that
holds one in a folder (``default_model_filename``, ``model/`` by default, the
artifact path ``log_model`` uses), serves with no config: auto-complete reads
the signature in ``MLmodel`` (:mod:`.schema`) without running anything.

Loading the model (``mlflow.pyfunc.load_model``) runs its code: a
python_function model is a cloudpickle, a scikit-learn flavour a pickle, a
``code_paths`` module is imported.  So it needs the operator's
``--backend-config mlflow,allow-pickle=true``, as scikit-learn files do
(:mod:`naiad.backends.pickles`); otherwise a pickle refused by the sklearn
backend would load when wrapped in an ``MLmodel`` folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mlflow.models import Model

from naiad.backends.autocomplete import default_dynamic_batching, default_max_batch_size
from naiad.backends.base import Backend, InstanceSpec, LoadContext, ModelInstance
from naiad.backends.mlflow import schema
from naiad.backends.mlflow.instance import MlflowInstance
from naiad.config import ModelConfig
from naiad.core.errors import InvalidArgument, NaiadError

#: The folder in the version folder that holds ``MLmodel`` when the version is not one.
DEFAULT_FOLDER = "model"
#: Rows a batch may hold unless the config says otherwise (as the sklearn backend).
DEFAULT_MAX_BATCH_SIZE = 256


def model_folder(config: ModelConfig, model_dir: Path, version: int) -> Path:
    """The MLflow model of a version: the folder ``default_model_filename`` names, the
    version folder itself when it holds ``MLmodel``, else its ``model/`` folder."""
    folder = model_dir / str(version)
    if config.default_model_filename:
        return folder / config.default_model_filename
    return folder if (folder / "MLmodel").is_file() else folder / DEFAULT_FOLDER


def read_signature(config: ModelConfig, model_dir: Path, version: int) -> schema.Signature:
    """The model's signature from its ``MLmodel`` file (YAML: nothing is run)."""
    where = f"model '{config.name}'"
    path = model_folder(config, model_dir, version) / "MLmodel"
    if not path.is_file():
        raise InvalidArgument(
            f"{where}: unable to find '{path}' (a model saved with mlflow.pyfunc.save_model "
            "or mlflow.<flavour>.save_model)"
        )
    try:
        model = Model.load(str(path))
    except NaiadError:
        raise
    except Exception as exc:
        raise InvalidArgument(f"{where}: failed to read '{path}': {exc}") from None
    return schema.read(where, model.signature)


class MlflowBackend(Backend):
    name = "mlflow"

    def preferred_instance_kind(self) -> str:
        return "KIND_CPU"

    def model_file(self, config: ModelConfig, model_dir: Path, version: int) -> Path | None:
        return model_folder(config, model_dir, version)

    def auto_complete_config(self, config: ModelConfig, model_dir: Path, version: int) -> None:
        """Inputs, outputs and batching from the signature in ``MLmodel``."""
        if len(config.input) > 0 and len(config.output) > 0:
            return
        signature = read_signature(config, model_dir, version)
        if signature.can_batch:
            default_max_batch_size(config, DEFAULT_MAX_BATCH_SIZE)
            default_dynamic_batching(config)
        elif config.max_batch_size > 0:
            raise InvalidArgument(
                f"autofill failed for model '{config.name}': its signature's tensors have no "
                "batch dimension (-1 first) while a non-zero max_batch_size is specified"
            )
        if len(config.input) == 0:
            for tensor in signature.inputs:
                _add(config.input.add(), tensor)
        if len(config.output) == 0:
            for tensor in signature.outputs:
                _add(config.output.add(), tensor)

    def create_instance(self, ctx: LoadContext, spec: InstanceSpec) -> ModelInstance:
        return MlflowInstance(ctx, spec, model_folder(ctx.config, ctx.model_dir, ctx.version))


def _add(entry: Any, tensor: schema.Tensor) -> None:
    entry.name = tensor.name
    entry.data_type = tensor.datatype.config_enum
    entry.dims.extend(tensor.dims)
