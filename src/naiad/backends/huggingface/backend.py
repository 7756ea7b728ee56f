"""The Hugging Face backend (``backend: "huggingface"``): a saved transformers pipeline.

A version folder written by ``pipeline.save_pretrained(folder)`` (the
model's ``config.json`` and weights, its tokenizer or image processor)
serves with no config: auto-complete reads the task and the labels from
``config.json`` (:mod:`.tasks`) and declares the task's tensors.

Weights are safetensors (or PyTorch files that transformers opens with
``weights_only``), and naiad never passes ``trust_remote_code``: a folder
whose model needs its own code is refused by transformers, not run.  So,
unlike the sklearn and mlflow backends, no pickle consent is asked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import transformers  # noqa: F401  (a missing extra fails here, naming it)

from naiad.backends.autocomplete import default_dynamic_batching, default_max_batch_size
from naiad.backends.base import Backend, InstanceSpec, LoadContext, ModelInstance
from naiad.backends.huggingface import tasks
from naiad.backends.huggingface.instance import HuggingFaceInstance
from naiad.config import ModelConfig
from naiad.core.errors import InvalidArgument

#: Texts or images a batch may hold unless the config says otherwise.
DEFAULT_MAX_BATCH_SIZE = 8


def pipeline_folder(config: ModelConfig, model_dir: Path, version: int) -> Path:
    """The saved pipeline: the version folder, or the folder ``default_model_filename`` names."""
    return model_dir / str(version) / config.default_model_filename


class HuggingFaceBackend(Backend):
    name = "huggingface"

    def preferred_instance_kind(self) -> str:
        return "KIND_CPU"

    def model_file(self, config: ModelConfig, model_dir: Path, version: int) -> Path | None:
        return pipeline_folder(config, model_dir, version) / "config.json"

    def auto_complete_config(self, config: ModelConfig, model_dir: Path, version: int) -> None:
        """The task's inputs and outputs, sized by the saved labels and hidden size."""
        where = f"model '{config.name}'"
        saved = tasks.read_model_config(where, pipeline_folder(config, model_dir, version))
        task = tasks.task_of(config, saved)
        if len(config.input) == 0:
            for tensor in tasks.inputs(task):
                _add(config.input.add(), tensor)
        if len(config.output) == 0:
            for tensor in tasks.outputs(task, saved):
                _add(config.output.add(), tensor)
        default_max_batch_size(config, DEFAULT_MAX_BATCH_SIZE)
        default_dynamic_batching(config)

    def validate(self, config: ModelConfig, model_dir: Path) -> None:
        tasks.pooling(config)
        tasks.aggregation(config)
        if config.max_batch_size <= 0:
            raise InvalidArgument(
                f"model '{config.name}': the huggingface backend needs max_batch_size > 0 "
                "(each batch item is one text or image)"
            )

    def create_instance(self, ctx: LoadContext, spec: InstanceSpec) -> ModelInstance:
        folder = pipeline_folder(ctx.config, ctx.model_dir, ctx.version)
        return HuggingFaceInstance(ctx, spec, folder)


def _add(entry: Any, tensor: tasks.Tensor) -> None:
    entry.name = tensor.name
    entry.data_type = tensor.datatype.config_enum
    entry.dims.extend(tensor.dims)
