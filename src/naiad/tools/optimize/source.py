"""The model to optimise: a repository's model version, or a bare ``.onnx`` file.

The repository case reads the model's config with naiad's own parser and
applies Triton's platform rules, so "is this an ONNX model, and which file
is it" is answered exactly as ``naiad serve`` would answer it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from naiad.config import ConfigError, ModelConfig, fill_platform_and_backend, read_model_config
from naiad.repository.local import ModelSource
from naiad.tools.optimize.errors import OptimizeError


@dataclass(frozen=True)
class RepositoryModel:
    """One version of a model in a local repository."""

    name: str
    repository: Path
    #: The config as written (empty when the model has no config.pbtxt).
    config: ModelConfig
    #: Whether ``config.pbtxt`` exists (auto-complete fills the config otherwise).
    has_config: bool
    version: int
    #: The model file's name in a version folder (``model.onnx`` unless the config says).
    filename: str

    @property
    def directory(self) -> Path:
        return self.repository / self.name

    @property
    def file(self) -> Path:
        return self.directory / str(self.version) / self.filename

    def versions(self) -> list[int]:
        return ModelSource(self.name, self.directory, self.repository).versions()


def find_model(repository: Path, name: str, version: int | None) -> RepositoryModel:
    """``repository/name`` at ``version`` (the highest version when None), checked to be
    an ONNX Runtime model whose file exists."""
    if not repository.is_dir():
        raise OptimizeError(f"model repository {repository} does not exist")
    directory = repository / name
    if not name or "/" in name or not directory.is_dir():
        raise OptimizeError(f"unknown model '{name}': no folder {directory}")
    try:
        written = read_model_config(directory)
    except ConfigError as exc:
        raise OptimizeError(str(exc).splitlines()[0]) from None
    versions = ModelSource(name, directory, repository).versions()
    if not versions:
        raise OptimizeError(f"model '{name}' has no version folders in {directory}")
    if version is None:
        version = versions[-1]
    elif version not in versions:
        raise OptimizeError(
            f"model '{name}' has no version {version} (versions: {', '.join(map(str, versions))})"
        )
    filled = ModelConfig()
    if written is not None:
        filled.CopyFrom(written)
    try:
        fill_platform_and_backend(filled, directory, versions[0])
    except ConfigError as exc:
        raise OptimizeError(str(exc).splitlines()[0]) from None
    if filled.backend != "onnxruntime":
        kind = filled.platform or filled.backend or "unknown"
        raise OptimizeError(
            f"model '{name}' is not an ONNX model (platform/backend {kind}); "
            "naiad optimize works on onnxruntime models (see --torch to export PyTorch ones)"
        )
    model = RepositoryModel(
        name=name,
        repository=repository,
        config=written if written is not None else ModelConfig(),
        has_config=written is not None,
        version=version,
        filename=filled.default_model_filename or "model.onnx",
    )
    if model.file.is_dir():
        raise OptimizeError(f"{model.file} is a folder; naiad optimize reads one-file ONNX models")
    if not model.file.is_file():
        raise OptimizeError(f"model '{name}' version {version} has no {model.filename}")
    return model


def check_onnx_file(path: Path) -> None:
    """A direct ``--onnx`` path: it must be a file."""
    if not path.is_file():
        raise OptimizeError(f"ONNX file {path} does not exist")
