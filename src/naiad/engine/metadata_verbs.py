"""The health and metadata extension's questions about the server and its models,
as ``DataPlane`` offers them: whether a model is ready, its metadata and
config, the server's metadata.  Answers only: nothing here changes state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from naiad._version import TRITON_VERSION
from naiad.core.errors import InvalidArgument, NotFound, Unavailable
from naiad.core.versions import parse_version
from naiad.engine.metadata import ModelMetadata, ServerMetadata, TensorMetadata
from naiad.engine.residency import Described

if TYPE_CHECKING:
    from naiad.config import ModelConfig
    from naiad.core.signature import Signature, TensorSpec
    from naiad.engine.registry import ModelRegistry, ModelVersion
    from naiad.engine.residency import Residency
    from naiad.options.declarations import ServerOptions

#: The protocol extensions the server metadata names (Triton's words).
EXTENSIONS = (
    "classification",
    "sequence",
    "model_repository",
    "model_repository(unload_dependents)",
    "schedule_policy",
    "model_configuration",
    "system_shared_memory",
    "cuda_shared_memory",
    "binary_tensor_data",
    "parameters",
    "statistics",
    "trace",
    "logging",
)


class MetadataVerbs:
    """What the server and each model version say about themselves."""

    options: ServerOptions
    registry: ModelRegistry
    residency: Residency | None
    stopping: bool

    def server_metadata(self) -> ServerMetadata:
        return ServerMetadata(self.options.server_id, TRITON_VERSION, EXTENSIONS)

    def model_ready(self, name: str, version: str = "") -> bool:
        """Whether that version is READY; raises for unknown models and versions.

        Answers from the registry's entries directly: an unready model is an
        ordinary answer here, not an error to catch.
        """
        v = parse_version(version)
        entry = self.registry.entry(name)
        if entry is None:
            raise NotFound(f"Request for unknown model: '{name}' is not found")
        if v is None:
            ready = entry.ready_versions()
            if not ready:
                return False
            mv = ready[-1]  # the version requests would reach
        else:
            found = entry.versions.get(v)
            if found is None:
                raise NotFound(f"Request for unknown model: '{name}' version {v} is not found")
            mv = found
        return mv.ready and all(i.is_ready() for i in mv.instances)

    def model_metadata(self, name: str, version: str = "") -> ModelMetadata:
        v = parse_version(version)
        found = self._version_or_described(name, v)
        if isinstance(found, Described):
            sig = found.signature
            versions = tuple(str(x) for x in found.versions) if v is None else (str(v),)
            return ModelMetadata(name, versions, sig.platform, *_tensors(sig))
        signature = found.signature
        assert signature is not None
        tensors: tuple[tuple[TensorMetadata, ...], tuple[TensorMetadata, ...]] | None
        tensors = found.extra.get("metadata")
        if tensors is None:
            tensors = found.extra["metadata"] = _tensors(signature)
        if v is None:
            versions = tuple(str(x.version) for x in self.registry.models[name].ready_versions())
        else:
            versions = (str(v),)
        return ModelMetadata(name, versions, signature.platform, *tensors)

    def model_config(self, name: str, version: str = "") -> ModelConfig:
        config = self._version_or_described(name, parse_version(version)).config
        assert config is not None
        return config

    async def model_file(self, name: str, relpath: str, limit: int = 4 << 20) -> bytes:
        """A file of a model's folder, for a frontend that must not know where the
        repository lives (the OpenAI API's chat template); with residency, the model is
        loaded first, as its first request would load it.  Paths that leave the folder
        are refused: a config may name any path, the server reads only its model's."""
        residency = self.residency
        if residency is not None and not self.stopping and residency.manages(name):
            await residency.wait(name)
        mv = self.registry.get(name, None)
        if mv.context is None:
            raise NotFound(f"model '{name}' has no folder")
        root = mv.context.model_dir.resolve()
        path = (root / relpath).resolve()
        if path != root and root not in path.parents:
            raise InvalidArgument(f"'{relpath}' is outside the folder of model '{name}'")
        return await asyncio.to_thread(_read, path, name, relpath, limit)

    def signature(self, name: str, version: int | None) -> Signature:
        """The inputs and outputs of the version a request would reach; with residency,
        also of a model that is not loaded."""
        signature = self._version_or_described(name, version).signature
        assert signature is not None
        return signature

    def _version_or_described(self, name: str, version: int | None) -> ModelVersion | Described:
        """The READY version a request would reach, else what residency knows of the model
        without its being loaded (engine/residency.py); else the look-up's error."""
        try:
            return self.registry.get(name, version)
        except (NotFound, Unavailable):
            residency = self.residency
            described = residency.described(name) if residency is not None else None
            if described is None or (version is not None and version not in described.versions):
                raise
            return described


def _read(path: Path, name: str, relpath: str, limit: int) -> bytes:
    if not path.is_file():
        raise NotFound(f"model '{name}' has no file '{relpath}'")
    if path.stat().st_size > limit:
        raise InvalidArgument(f"'{relpath}' of model '{name}' is over {limit} bytes")
    return path.read_bytes()


def _tensors(sig: Signature) -> tuple[tuple[TensorMetadata, ...], tuple[TensorMetadata, ...]]:
    return (
        _tensor_metadata(sig.inputs.values(), sig.max_batch_size),
        _tensor_metadata(sig.outputs.values(), sig.max_batch_size),
    )


def _tensor_metadata(
    specs: Iterable[TensorSpec], max_batch_size: int
) -> tuple[TensorMetadata, ...]:
    return tuple(
        TensorMetadata(s.name, s.datatype.name, tuple(s.metadata_shape(max_batch_size)))
        for s in specs
    )
