"""The ``model.py`` of every model ``@naiad.model`` declares (copied, not imported by naiad).

Written for Triton's Python backend, so an exported folder serves on Triton
unmodified: it needs numpy and the user's module, not naiad.  What it serves
is described by ``naiad_function.json`` beside it (written by ``export.py``):
which file and object to call, the tensors, whether the function takes
batches.  A user module that imports naiad gets, where naiad is not
installed, a stand-in whose decorators only hand the function back.
"""

import asyncio
import importlib.util
import inspect
import json
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

import triton_python_backend_utils as pb_utils

_HERE = Path(__file__).resolve().parent


def _stand_in() -> types.ModuleType:
    """``import naiad`` where naiad is not installed (Triton's own Python backend)."""

    class Tensor:
        def __init__(self, name: str, *args: Any, **kwargs: Any) -> None:
            self.name = name

    class Model:
        def __init__(self, target: Any) -> None:
            self.target = target

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            return self.target(*args, **kwargs)

    def model(target: Any = None, **_: Any) -> Any:
        return Model(target) if target is not None else Model

    def batch(target: Any) -> Any:
        return target

    module = types.ModuleType("naiad")
    module.model, module.batch, module.Tensor = model, batch, Tensor  # type: ignore[attr-defined]
    return module


def _load(spec: dict[str, Any]) -> Any:
    """The declared object: from this process's live models when the server that wrote
    this folder runs it in its own process, else by importing its file."""
    live = sys.modules.get("naiad.functions.live")
    if live is not None and spec.get("token") in live.MODELS:
        return live.MODELS[spec["token"]]
    try:  # by name: this file runs beside naiad, or in Triton without it
        importlib.import_module("naiad")
    except ImportError:
        sys.modules["naiad"] = _stand_in()
    path = Path(spec["file"])
    if not path.is_absolute():
        path = _HERE / path
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))  # the module's own imports of its neighbours
    module = sys.modules.get(spec["module"])
    if module is None or getattr(module, "__file__", None) != str(path):
        loader = importlib.util.spec_from_file_location(spec["module"], path)
        assert loader is not None and loader.loader is not None
        module = importlib.util.module_from_spec(loader)
        sys.modules[spec["module"]] = module
        loader.loader.exec_module(module)
    return getattr(module, spec["object"])


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        spec = json.loads((_HERE / "naiad_function.json").read_text())
        found = _load(spec)
        target = getattr(found, "target", found)
        if inspect.isclass(target):
            target = target()
            if hasattr(target, "load"):
                target.load()
        self.call = target
        self.inputs = spec["inputs"]  # [[name, datatype, scalar], ...]
        self.outputs = spec["outputs"]
        self.batched = spec["batched"]
        self.decoupled = spec["decoupled"]
        self.loop: Any = asyncio.new_event_loop() if spec["async"] else None

    def execute(self, requests: list[Any]) -> list[Any] | None:
        if self.decoupled:
            for request in requests:
                self._stream(request)
            return None
        if self.batched:
            return self._batch(requests)
        return [self._one(request) for request in requests]

    # -- calling the function --------------------------------------------------------

    def _kwargs(self, request: Any, scalars: bool) -> dict[str, Any]:
        kwargs = {}
        for name, _, scalar in self.inputs:
            tensor = pb_utils.get_input_tensor_by_name(request, name)
            if tensor is None:
                continue
            value: Any = tensor.as_numpy()
            if scalars and scalar:
                value = value.reshape(-1)[0]
                value = value.decode() if isinstance(value, bytes) else value.item()
            kwargs[name] = value
        return kwargs

    def _run(self, kwargs: dict[str, Any]) -> Any:
        result = self.call(**kwargs)
        if inspect.isawaitable(result):
            result = self.loop.run_until_complete(result)
        return result

    def _one(self, request: Any) -> Any:
        try:
            return self._response(self._run(self._kwargs(request, True)))
        except Exception as exc:  # this request's error; the batch's others still run
            return pb_utils.InferenceResponse(error=pb_utils.TritonError(_text(exc)))

    def _batch(self, requests: list[Any]) -> list[Any]:
        """One call over the batch: the requests' rows joined, the answer split back."""
        parts = [self._kwargs(r, False) for r in requests]
        sizes = [len(next(iter(p.values()))) if p else 0 for p in parts]
        joined = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        try:
            result = self._outputs(self._run(joined))
        except Exception as exc:
            error = pb_utils.TritonError(_text(exc))
            return [pb_utils.InferenceResponse(error=error) for _ in requests]
        responses, start = [], 0
        for size in sizes:
            rows = {k: v[start : start + size] for k, v in result.items()}
            responses.append(self._response(rows))
            start += size
        return responses

    def _stream(self, request: Any) -> None:
        sender = request.get_response_sender()
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        try:
            items = self.call(**self._kwargs(request, not self.batched))
            if inspect.isasyncgen(items):
                items = _sync(items, self.loop)
            for item in items:
                if request.is_cancelled():
                    break
                sender.send(self._response(item))
        except Exception as exc:
            sender.send(pb_utils.InferenceResponse(error=pb_utils.TritonError(_text(exc))),
                        flags=final)  # fmt: skip
            return
        sender.send(flags=final)

    # -- answers ------------------------------------------------------------------------

    def _outputs(self, result: Any) -> dict[str, Any]:
        """A dict by output name, a tuple in output order, or the one output alone."""
        if isinstance(result, dict):
            missing = [name for name, _, _ in self.outputs if name not in result]
            if missing:
                raise ValueError(f"the function's answer has no {', '.join(missing)}")
            return result
        values = result if isinstance(result, tuple) else (result,)
        if len(values) != len(self.outputs):
            raise ValueError(f"the function gave {len(values)} values for "
                             f"{len(self.outputs)} outputs")  # fmt: skip
        return {name: value for (name, _, _), value in zip(self.outputs, values, strict=True)}

    def _response(self, result: Any) -> Any:
        tensors = []
        for name, value in self._outputs(result).items():
            datatype = next((d for n, d, _ in self.outputs if n == name), None)
            if datatype is None:
                continue
            tensors.append(pb_utils.Tensor(name, _array(value, datatype)))
        return pb_utils.InferenceResponse(output_tensors=tensors)

    def finalize(self) -> None:
        if self.loop is not None:
            self.loop.close()


def _array(value: Any, datatype: str) -> np.ndarray:
    if datatype == "BYTES":
        array = np.asarray(value, dtype=np.object_)
        flat = [v.encode() if isinstance(v, str) else v for v in array.reshape(-1)]
        array = np.array(flat, dtype=np.object_).reshape(array.shape)
    else:
        array = np.asarray(value, dtype=pb_utils.triton_string_to_numpy("TYPE_" + datatype))
    return array.reshape(1) if array.ndim == 0 else array


def _sync(agen: Any, loop: asyncio.AbstractEventLoop) -> Iterator[Any]:
    while True:
        try:
            yield loop.run_until_complete(agen.__anext__())
        except StopAsyncIteration:
            return


def _text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
