"""Which backend runs a model: Triton's platform/backend/file-name rules (§4).

Triton fills ``platform``, ``backend`` and ``default_model_filename`` from
whatever the user gave (any of the three, or a file in the first version
directory, or a ``model.<backend>`` directory name) before any backend is
loaded; the order of the rules below matters and is Triton's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from naiad.config.errors import ConfigError
from naiad.config.model_config_pb2 import ModelConfig

#: Fills in backend, platform and file name when the config is this backend's.
Rule = Callable[[ModelConfig, Path | None], bool]

ENSEMBLE_PLATFORM = "ensemble"

#: Known platform strings and the backend each must pair with.  Platforms not
#: listed here (and an empty platform) pair with any backend that is not one
#: of :data:`KNOWN_BACKENDS`, i.e. custom backends.
KNOWN_PLATFORMS: dict[str, str] = {
    "tensorrt_plan": "tensorrt",
    "tensorflow_graphdef": "tensorflow",
    "tensorflow_savedmodel": "tensorflow",
    "onnxruntime_onnx": "onnxruntime",
    "pytorch_libtorch": "pytorch",
    "torch_aoti": "pytorch",
    ENSEMBLE_PLATFORM: "",
}

#: Backends that Triton ties to a platform string.
KNOWN_BACKENDS = frozenset(b for b in KNOWN_PLATFORMS.values() if b)

#: The model file (or directory) a backend looks for in ``<version>/`` by default.
DEFAULT_MODEL_FILENAMES: dict[str, str] = {
    "tensorflow_savedmodel": "model.savedmodel",
    "tensorflow_graphdef": "model.graphdef",
    "tensorrt": "model.plan",
    "onnxruntime": "model.onnx",
    "openvino": "model.xml",
    "pytorch_libtorch": "model.pt",
    "torch_aoti": "model.pt2",
    "python": "model.py",
}

_PLATFORM_ALIASES = {"libtorch": "pytorch_libtorch"}


def fill_platform_and_backend(
    config: ModelConfig, model_dir: Path, first_version: int | None
) -> None:
    """Fill ``name``, ``platform``, ``backend``, ``default_model_filename`` in place.

    ``first_version`` is the first version directory (None when there is
    none); its content decides the backend when the config names none.
    Raises ConfigError when the name disagrees with the directory or no
    backend can be determined.
    """
    model_dir = Path(model_dir)
    dir_name = model_dir.name
    config_path = str(model_dir / "config.pbtxt")
    if not config.name:
        config.name = dir_name
    elif config.name != dir_name:
        raise ConfigError(
            f"unexpected directory name '{dir_name}' for model '{config.name}', "
            "directory name must equal model name",
            path=config_path,
            field="name",
        )
    if config.platform in _PLATFORM_ALIASES:
        config.platform = _PLATFORM_ALIASES[config.platform]
    version_dir = model_dir / str(first_version) if first_version is not None else None
    for rule in _RULES:
        if rule(config, version_dir):
            return
    _custom_backend(config, config_path)


def _exists(version_dir: Path | None, name: str, *, directory: bool | None = None) -> bool:
    """Whether the version dir holds ``name`` (of the given kind, if given)."""
    if version_dir is None:
        return False
    path = version_dir / name
    if directory is None:
        return path.exists()
    return path.is_dir() if directory else path.is_file()


def _can_detect(config: ModelConfig, version_dir: Path | None) -> bool:
    """Files are only consulted when the config names no platform and no file."""
    return not config.platform and not config.default_model_filename and version_dir is not None


def _tensorflow(config: ModelConfig, version_dir: Path | None) -> bool:
    if not config.platform and config.backend in ("", "tensorflow"):
        filename = config.default_model_filename
        if filename == "model.savedmodel":
            config.platform = "tensorflow_savedmodel"
        elif filename == "model.graphdef":
            config.platform = "tensorflow_graphdef"
        elif not filename and version_dir is not None:
            if _exists(version_dir, "model.savedmodel", directory=True):
                config.platform = "tensorflow_savedmodel"
            if _exists(version_dir, "model.graphdef", directory=False):
                config.platform = "tensorflow_graphdef"
    if config.platform not in ("tensorflow_savedmodel", "tensorflow_graphdef"):
        return False
    config.backend = config.backend or "tensorflow"
    config.default_model_filename = (
        config.default_model_filename or DEFAULT_MODEL_FILENAMES[config.platform]
    )
    return True


def _by_file(backend: str, filename: str, platform: str = "", *, file_only: bool = False) -> Rule:
    """The rule of a backend known by one model file (and maybe one platform name).

    ``file_only``: a directory of that name does not count (ONNX models may be
    directories, TensorRT plans may not).
    """

    def rule(config: ModelConfig, version_dir: Path | None) -> bool:
        if not config.backend:
            named = (platform and config.platform == platform) or (
                config.default_model_filename == filename
            )
            found = _can_detect(config, version_dir) and _exists(
                version_dir, filename, directory=False if file_only else None
            )
            if named or found:
                config.backend = backend
        if config.backend != backend:
            return False
        if platform:
            config.platform = config.platform or platform
        config.default_model_filename = config.default_model_filename or filename
        return True

    return rule


_tensorrt = _by_file("tensorrt", "model.plan", "tensorrt_plan", file_only=True)
_onnxruntime = _by_file("onnxruntime", "model.onnx", "onnxruntime_onnx")
_openvino = _by_file("openvino", "model.xml")


def _pytorch(config: ModelConfig, version_dir: Path | None) -> bool:
    if not config.backend:
        if config.platform in (
            "pytorch_libtorch",
            "torch_aoti",
        ) or config.default_model_filename in (
            "model.pt",
            "model.pt2",
        ):
            config.backend = "pytorch"
        elif _can_detect(config, version_dir) and (
            _exists(version_dir, "model.pt", directory=False)
            or _exists(version_dir, "model.pt2", directory=False)
        ):
            config.backend = "pytorch"
    if config.backend != "pytorch":
        return False
    if not config.platform:
        aoti = config.default_model_filename == "model.pt2" or (
            not config.default_model_filename
            and not _exists(version_dir, "model.pt", directory=False)
            and _exists(version_dir, "model.pt2", directory=False)
        )
        config.platform = "torch_aoti" if aoti else "pytorch_libtorch"
    if config.runtime != "model.py" and not config.default_model_filename:
        config.default_model_filename = DEFAULT_MODEL_FILENAMES.get(config.platform, "model.pt")
    return True


_python = _by_file("python", "model.py")


#: naiad's backends for saved Python objects, and the files (or folders) that tell
#: them, in order, when no config names a backend: an MLflow model (``MLmodel`` in
#: the version folder or in its ``model/`` folder; before scikit-learn, as MLflow's
#: sklearn flavour holds a ``model.pkl``), a scikit-learn pickle, a Hugging Face
#: ``save_pretrained`` folder (its weights).  After Triton's rules, so a version
#: folder that also holds ``model.py`` or ``model.onnx`` stays theirs.
SAVED_MODEL_FILES: tuple[tuple[str, str], ...] = (
    ("mlflow", "MLmodel"),
    ("mlflow", "model/MLmodel"),
    ("sklearn", "model.joblib"),
    ("sklearn", "model.pkl"),
    ("sklearn", "model.pickle"),
    # save_pretrained's weights (beside its config.json), one file or an index of shards.
    ("huggingface", "model.safetensors"),
    ("huggingface", "model.safetensors.index.json"),
    ("huggingface", "pytorch_model.bin"),
    ("huggingface", "pytorch_model.bin.index.json"),
)


def _saved_model(config: ModelConfig, version_dir: Path | None) -> bool:
    if not config.backend and _can_detect(config, version_dir):
        for backend, filename in SAVED_MODEL_FILES:
            if _exists(version_dir, filename, directory=False):
                config.backend = backend
                break
    names = [f for b, f in SAVED_MODEL_FILES if b == config.backend]
    if not names:
        return False
    if not config.default_model_filename:
        # The first of the backend's files the version holds (the file the backend
        # loads, or for a model that is a folder, "" for the version folder itself).
        found = next((f for f in names if _exists(version_dir, f, directory=False)), names[0])
        folder = found.rpartition("/")[0] if "/" in found else ""
        config.default_model_filename = found if config.backend == "sklearn" else folder
    return True


_RULES = (_tensorflow, _tensorrt, _onnxruntime, _openvino, _pytorch, _python, _saved_model)


def _custom_backend(config: ModelConfig, config_path: str) -> None:
    """Nothing given at all: the directory must be named ``<something>.<backend>``."""
    if config.backend or config.platform or config.default_model_filename:
        return
    _, dot, backend = config.name.partition(".")
    if not dot or not backend:
        raise ConfigError(
            f"Invalid model name: Could not determine backend for model '{config.name}' "
            "with no backend in model configuration. Expected model name of the form "
            "'model.<backend_name>'.",
            path=config_path,
            field="backend",
        )
    config.backend = backend
    config.default_model_filename = f"model.{backend}"
