"""Backends are found by their Triton name and imported only when a model needs one.

Built-in backends live in this package; a third-party package registers its
own through the ``naiad.backends`` entry-point group (``name = module:Class``)
and needs no change here.
"""

from __future__ import annotations

import importlib
from importlib import metadata

from naiad.backends.base import Backend
from naiad.core.errors import InvalidArgument, NaiadError

BUILTIN: dict[str, str] = {
    "onnxruntime": "naiad.backends.onnxruntime:OnnxRuntimeBackend",
    "python": "naiad.backends.python:PythonBackend",
    "pytorch": "naiad.backends.pytorch:PyTorchBackend",
    "openvino": "naiad.backends.openvino:OpenVinoBackend",
    "fil": "naiad.backends.fil:FilBackend",
    "tensorflow": "naiad.backends.tensorflow:TensorFlowBackend",
    "tensorrt": "naiad.backends.tensorrt:TensorRtBackend",
    "sklearn": "naiad.backends.sklearn:SklearnBackend",
    "mlflow": "naiad.backends.mlflow:MlflowBackend",
    "huggingface": "naiad.backends.huggingface:HuggingFaceBackend",
}

#: The extra that provides a built-in backend's framework, for the error message.
EXTRAS: dict[str, str] = {
    "pytorch": "torch",
    "openvino": "openvino",
    "fil": "fil",
    "tensorflow": "tensorflow",
    "tensorrt": "tensorrt",
    "sklearn": "sklearn",
    "mlflow": "mlflow",
    "huggingface": "huggingface",
}

ENTRY_POINT_GROUP = "naiad.backends"


class BackendRegistry:
    """Backend instances by name, created on first use and shared by models."""

    def __init__(self) -> None:
        self._loaded: dict[str, Backend] = {}
        self._extra: dict[str, type[Backend]] = {}

    def register(self, name: str, backend: type[Backend]) -> None:
        """Register a backend class in-process (tests, embedded use)."""
        self._extra[name] = backend
        self._loaded.pop(name, None)

    def known(self, name: str) -> bool:
        return name in self._extra or name in BUILTIN or self._entry_point(name) is not None

    def get(self, name: str) -> Backend:
        backend = self._loaded.get(name)
        if backend is None:
            backend = self._loaded[name] = self._create(name)
        return backend

    def _create(self, name: str) -> Backend:
        cls = self._extra.get(name)
        if cls is not None:
            return cls()
        target = BUILTIN.get(name)
        if target is None:
            ep = self._entry_point(name)
            if ep is None:
                raise InvalidArgument(f"unable to find backend '{name}'")
            try:
                cls = ep.load()
            except Exception as exc:
                raise InvalidArgument(f"unable to load backend '{name}': {exc}") from None
            return cls()
        module_name, _, attr = target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            extra = EXTRAS.get(name)
            hint = f" (install it with: pip install 'naiad[{extra}]')" if extra else ""
            raise NaiadError(f"backend '{name}' is not available: {exc}{hint}") from None
        return getattr(module, attr)()

    @staticmethod
    def _entry_point(name: str) -> metadata.EntryPoint | None:
        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
            if ep.name == name:
                return ep
        return None
