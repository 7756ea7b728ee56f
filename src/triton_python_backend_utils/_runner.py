"""Load a ``TritonPythonModel`` and call it exactly as Triton's stub does.

Shared by the stub process and the in-process (thread) mode, so both load
models, check ``execute`` results and word errors the same way.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
import traceback
from types import ModuleType
from typing import Any

from triton_python_backend_utils._errors import ErrorCode, TritonModelException
from triton_python_backend_utils._request import InferenceRequest
from triton_python_backend_utils._response import InferenceResponse
from triton_python_backend_utils._tensor import Tensor


class BatchError(Exception):
    """Every request of the batch fails with this (INTERNAL) message."""


_HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGE = os.path.basename(_HERE)


_IMPORTLIB = os.path.dirname(os.path.abspath(importlib.__file__))


def _ours(filename: str) -> bool:
    """A frame of this package: run from its source, or compiled, where the frame names
    the source as the build saw it (``src/triton_python_backend_utils/_runner.py``)."""
    if os.path.dirname(os.path.abspath(filename)) == _HERE:
        return True
    return not os.path.isabs(filename) and os.path.basename(os.path.dirname(filename)) == _PACKAGE


def python_error_text(exc: BaseException) -> str:
    """``<Type>: <message>`` and the model's frames, innermost first, as Triton shows them.

    Triton lists the frames below its call into Python: not the caller's
    (the server's own, in thread mode), nor this package's or importlib's.
    """
    entries: list[traceback.FrameSummary] = list(traceback.extract_tb(exc.__traceback__))
    ours = [_ours(e.filename) for e in entries]
    if True in ours:
        start = ours.index(True)
        entries, ours = entries[start:], ours[start:]
    kept = [
        e
        for e, mine in zip(entries, ours, strict=True)
        if not mine
        and os.path.dirname(os.path.abspath(e.filename)) != _IMPORTLIB
        and "importlib._bootstrap" not in e.filename
    ]
    lines = "".join(f"  {e.filename}({e.lineno}): {e.name}\n" for e in reversed(kept))
    text = f"{type(exc).__name__}: {exc}"
    return f"{text}\n\nAt:\n{lines}" if lines else text


def import_model(model_file: str, version: str, isolated: bool) -> ModuleType:
    """Import ``model_file`` the way Triton does (``<version>.<stem>``, dirs on sys.path).

    ``isolated`` (several models in one interpreter) imports it under a unique
    name instead, so that two models' ``1/model.py`` do not collide.
    """
    version_dir = os.path.dirname(os.path.abspath(model_file))
    model_dir = os.path.dirname(version_dir)
    for path in (version_dir, model_dir):
        if path not in sys.path:
            sys.path.append(path)
    stem = os.path.splitext(os.path.basename(model_file))[0]
    if not isolated:
        return importlib.import_module(f"{version}.{stem}")
    unique = f"_naiad_model_{abs(hash(model_file)):x}"
    spec = importlib.util.spec_from_file_location(unique, model_file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {model_file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[unique] = module
    spec.loader.exec_module(module)
    return module


def no_model_class(model_file: str) -> TritonModelException:
    """The error of a model file whose module has no ``TritonPythonModel`` (``naiad check``
    reports it in these words too)."""
    return TritonModelException(
        f"Python model file '{model_file}' does not define a 'TritonPythonModel' class"
    )


class ModelRunner:
    """One instance of a Python model."""

    def __init__(
        self,
        instance_name: str,
        decoupled: bool,
        output_names: list[str],
        iterative: bool = False,
    ) -> None:
        self.instance_name = instance_name
        self.decoupled = decoupled
        #: ``sequence_batching { iterative_sequence: true }``: requests may be rescheduled.
        self.iterative = iterative
        self.output_names = frozenset(output_names)
        self.model: Any = None
        self.async_execute = False

    def load(self, model_file: str, version: str, isolated: bool) -> None:
        module = import_model(model_file, version, isolated)
        cls = getattr(module, "TritonPythonModel", None)
        if cls is None:
            raise no_model_class(model_file)
        self.model = cls()
        self.async_execute = inspect.iscoroutinefunction(getattr(self.model, "execute", None))

    def initialize(self, args: dict[str, str]) -> None:
        init = getattr(self.model, "initialize", None)
        if init is not None:
            init(args)
        if not hasattr(self.model, "execute"):
            raise TritonModelException("Python model must implement 'execute' function")

    def execute(self, requests: list[InferenceRequest]) -> Any:
        """What ``execute`` returned (a coroutine for ``async def execute``), or BatchError."""
        try:
            return self.model.execute(requests)
        except Exception as exc:
            raise BatchError(self.failed(python_error_text(exc))) from None

    async def execute_async(self, requests: list[InferenceRequest]) -> Any:
        try:
            return await self.model.execute(requests)
        except Exception as exc:
            raise BatchError(self.failed(python_error_text(exc))) from None

    def failed(self, text: str) -> str:
        return f"Failed to process the request(s) for model '{self.instance_name}', message: {text}"

    def check(
        self, result: Any, requests: list[InferenceRequest]
    ) -> list[InferenceResponse | None] | None:
        """Validate what ``execute`` returned; raise BatchError as Triton words it."""
        if self.decoupled:
            if result is not None:
                raise BatchError(
                    self.failed(
                        f"Python model '{self.instance_name}' is using the decoupled mode and the "
                        "execute function must return None."
                    )
                )
            return None
        if not isinstance(result, list):
            raise BatchError(
                self.failed(f"Expected a list in the execute return, found type '{type(result)}'.")
            )
        if len(result) != len(requests):
            raise BatchError(
                self.failed(
                    "Number of InferenceResponse objects do not match the number of InferenceRequest "
                    f"objects. InferenceRequest(s) size is:{len(requests)}, and InferenceResponse(s) "
                    f"size is:{len(result)}\n"
                )
            )
        for item in result:
            if item is not None and not isinstance(item, InferenceResponse):
                raise BatchError(
                    self.failed(
                        "Expected an 'InferenceResponse' object in the execute function return list, "
                        f"found type '{type(item)}'."
                    )
                )
        return result

    def outputs(self, response: InferenceResponse, requested: list[str]) -> list[Tensor]:
        """The tensors to send: unknown names fail, unrequested ones are dropped."""
        kept: list[Tensor] = []
        for tensor in response.output_tensors():
            name = tensor.name()
            if name not in self.output_names:
                raise OutputError(ErrorCode.INVALID_ARG, f"unexpected inference output '{name}'")
            if name in requested:
                kept.append(tensor)
        return kept

    def finalize(self) -> str | None:
        """Call ``finalize``; its error text, if any (only logged)."""
        fin = getattr(self.model, "finalize", None)
        if fin is None:
            return None
        try:
            fin()
        except Exception as exc:
            return python_error_text(exc)
        return None

    def is_ready(self) -> Any:
        """``is_ready()``'s result (maybe a coroutine); True if the model has none."""
        check = getattr(self.model, "is_ready", None)
        return True if check is None else check()


class OutputError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
