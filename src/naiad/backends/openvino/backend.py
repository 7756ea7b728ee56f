"""The OpenVINO backend (Triton's ``openvino``): IR, ONNX and the other formats OpenVINO reads.

A version is compiled once on its first instance and shared by the rest
(see :mod:`.instance`); the compiled model lives as long as one of its
instances does.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import openvino as ov

from naiad.backends.autocomplete import default_dynamic_batching, default_max_batch_size
from naiad.backends.base import Backend, InstanceSpec, LoadContext, ModelInstance
from naiad.backends.openvino.instance import CompiledModel, OpenVinoInstance, open_version
from naiad.backends.openvino.ir import (
    has_batch_layout,
    model_path,
    read_model,
    shape_model,
    signature,
)
from naiad.backends.openvino.settings import read_settings
from naiad.config.model_config_pb2 import DataType, ModelInstanceGroup
from naiad.config.model_signature import ModelSignature, TensorSignature
from naiad.core.errors import InvalidArgument

if TYPE_CHECKING:
    from naiad.config import ModelConfig

#: Triton's default-max-batch-size, given to a model whose layouts say it batches.


class OpenVinoBackend(Backend):
    name = "openvino"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: id(LoadContext) -> its version's compiled model, while an instance holds it.
        self._compiled: weakref.WeakValueDictionary[int, CompiledModel] = (
            weakref.WeakValueDictionary()
        )

    def preferred_instance_kind(self) -> str:
        return "KIND_CPU"

    def validate(self, config: ModelConfig, model_dir: Path) -> None:
        """Bad parameters and GPU instances fail before any file is read (and in ``naiad check``)."""
        read_settings(config)
        for group in config.instance_group:
            if group.kind == ModelInstanceGroup.KIND_GPU:
                raise InvalidArgument(
                    f"unable to load model '{config.name}', the OpenVINO backend supports only "
                    "Kind CPU and AUTO (set the parameter TARGET_DEVICE to run on another "
                    "OpenVINO device)"
                )

    def model_signature(self, config: ModelConfig, model_dir: Path, version: int) -> ModelSignature:
        """The tensors as an instance will see them: after the reshape for batching."""
        path = model_path(model_dir, version, config.default_model_filename)
        return shape_model(ov.Core(), path, config, read_settings(config)).signature

    def check_version(
        self, config: ModelConfig, model_dir: Path, version: int, options: Mapping[str, str]
    ) -> None:
        """What a load refuses before compiling: the extension, the device, a fixed batch."""
        open_version(config, model_dir, version)

    def auto_complete_config(self, config: ModelConfig, model_dir: Path, version: int) -> None:
        """Triton's rules: batching from the layouts, then the missing inputs and outputs."""
        path = model_path(model_dir, version, config.default_model_filename)
        batchable, found, open_rank = _read_facts(path, config)
        if batchable:
            default_max_batch_size(config)
            default_dynamic_batching(config)
        skip = 1 if config.max_batch_size > 0 else 0
        if len(config.input) == 0:
            for tensor in found.inputs:
                _add_tensor(config.input.add(), tensor, skip, config.name, open_rank)
        if len(config.output) == 0:
            for tensor in found.outputs:
                _add_tensor(config.output.add(), tensor, skip, config.name, open_rank)

    def create_instance(self, ctx: LoadContext, spec: InstanceSpec) -> ModelInstance:
        if spec.kind == "GPU":
            raise InvalidArgument(
                f"unable to load model '{ctx.name}', the OpenVINO backend supports only "
                "Kind CPU and AUTO"
            )
        with self._lock:  # instances of one version share its compiled model
            compiled = self._compiled.get(id(ctx))
            if compiled is None or compiled.context is not ctx:
                compiled = CompiledModel(ctx)
                self._compiled[id(ctx)] = compiled
        return OpenVinoInstance(ctx, spec, compiled)

    def unload(self, ctx: LoadContext) -> None:
        with self._lock:
            compiled = self._compiled.get(id(ctx))
            if compiled is not None and compiled.context is ctx:
                del self._compiled[id(ctx)]


_Facts = tuple[bool, ModelSignature, frozenset[str]]


def _read_facts(path: Path, config: ModelConfig) -> _Facts:
    stat = path.stat() if path.exists() else None
    key = (str(path), stat.st_size if stat else -1, stat.st_mtime_ns if stat else -1)
    return _cached_facts(key, config.name)


@functools.lru_cache(maxsize=32)
def _cached_facts(key: tuple[str, int, int], name: str) -> _Facts:
    """Whether the model batches by its layouts, its tensors as the file declares
    them, and which of them have a dynamic rank.  Keyed by the file's size and
    time: a replaced file is read again."""
    from naiad.config import ModelConfig

    model = read_model(ov.Core(), Path(key[0]), name)
    open_rank: set[str] = set()
    found = signature(model, ModelConfig(name=name), open_rank=open_rank)
    return has_batch_layout(model), found, frozenset(open_rank)


def _add_tensor(
    entry: Any, tensor: TensorSignature, skip: int, model: str, open_rank: frozenset[str]
) -> None:
    if tensor.name in open_rank:
        raise InvalidArgument(
            f"autofill failed for model '{model}': tensor '{tensor.name}' has a dynamic rank; "
            "give the inputs and outputs in the config"
        )
    if tensor.data_type == DataType.TYPE_INVALID:
        raise InvalidArgument(
            f"autofill failed for model '{model}': unsupported OpenVINO element type "
            f"'{tensor.type_name}' of tensor '{tensor.name}'"
        )
    entry.name = tensor.name
    entry.data_type = tensor.data_type
    entry.dims.extend(tensor.shape[skip:])
