"""The backend: platform checks, auto-complete, signature checks, instances.

Only SavedModels are served.  A ``tensorflow_graphdef`` model (a frozen
TensorFlow 1 graph) needs TF1 sessions, which TensorFlow 2's Python API
keeps only under ``tf.compat.v1``; naiad refuses it with a clear reason
rather than half-support it.
"""

from __future__ import annotations

from pathlib import Path

from naiad.backends.base import Backend, InstanceSpec, LoadContext, ModelInstance
from naiad.backends.parameters import ModelParameters
from naiad.backends.tensorflow import autocomplete
from naiad.backends.tensorflow.instance import TensorFlowInstance
from naiad.backends.tensorflow.runtime import thread_settings, visible_gpus
from naiad.backends.tensorflow.signature import Selection, read_signature, selection
from naiad.config import ModelConfig
from naiad.config.model_signature import ModelSignature
from naiad.core.errors import Unsupported

SAVEDMODEL = "tensorflow_savedmodel"
GRAPHDEF = "tensorflow_graphdef"


class TensorFlowBackend(Backend):
    name = "tensorflow"

    def __init__(self) -> None:
        self._gpus = visible_gpus()

    def preferred_instance_kind(self) -> str:
        return "KIND_GPU" if self._gpus else "KIND_CPU"

    def default_cpu_instance_count(self) -> int:
        return 2  # Triton's rule for TensorFlow models

    def auto_complete_config(self, config: ModelConfig, model_dir: Path, version: int) -> None:
        """Fill inputs, outputs and max_batch_size from the SavedModel's signature."""
        _check_platform(config)
        signature, _ = self.read(config, model_dir, version)
        autocomplete.complete(config, signature)

    def validate(self, config: ModelConfig, model_dir: Path) -> None:
        _check_platform(config)
        thread_settings(ModelParameters(config))

    def model_signature(self, config: ModelConfig, model_dir: Path, version: int) -> ModelSignature:
        _check_platform(config)
        return self.read(config, model_dir, version)[0]

    def read(
        self, config: ModelConfig, model_dir: Path, version: int
    ) -> tuple[ModelSignature, Selection]:
        """The signature the config's TF_GRAPH_TAG / TF_SIGNATURE_DEF select."""
        path = model_dir / str(version) / (config.default_model_filename or "model.savedmodel")
        tag, key = selection(config)
        return read_signature(config.name, path, tag, key)

    def create_instance(self, ctx: LoadContext, spec: InstanceSpec) -> ModelInstance:
        _check_platform(ctx.config)
        signature, chosen = self.read(ctx.config, ctx.model_dir, ctx.version)
        threads = thread_settings(ModelParameters(ctx.config))
        return TensorFlowInstance(ctx, spec, signature, chosen, threads, self._gpus)


def _check_platform(config: ModelConfig) -> None:
    if config.platform == GRAPHDEF:
        raise Unsupported(
            f"model '{config.name}': platform '{GRAPHDEF}' (model.graphdef) is not supported "
            f"by naiad; export the model as a SavedModel (platform '{SAVEDMODEL}', "
            "folder model.savedmodel)"
        )
    if config.platform not in ("", SAVEDMODEL):
        raise Unsupported(
            f"model '{config.name}': platform '{config.platform}' is not one the tensorflow "
            f"backend serves (only '{SAVEDMODEL}')"
        )
