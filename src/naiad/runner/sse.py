"""Streaming over HTTP: Triton's ``generate_stream`` extension (server-sent events).

``tritonclient.http`` has no streaming call, so the HTTP mode streams the way
Triton's HTTP frontend offers it: the inputs go out as one JSON object, each
response comes back as one ``data:`` event whose output values are
flattened.  Shapes travel as element counts, so this module refuses an input
whose shape the server would read differently, and reshapes outputs from the
model's metadata.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import numpy as np

from naiad.core.errors import NaiadError, Unsupported
from naiad.runner.client import Call
from naiad.runner.errors import from_status
from naiad.runner.result import InferResult, Output
from naiad.runner.signature import TensorSpec

if TYPE_CHECKING:
    import aiohttp

_HEADER = ("model_name", "model_version", "id")
#: Request options generate_stream has no field for.
_UNSUPPORTED = ("outputs", "sequence_id", "priority", "timeout")


async def generate_stream(
    session: aiohttp.ClientSession,
    server: str,
    call: Call,
    checked: Callable[[Awaitable[Any]], Awaitable[Any]],
) -> AsyncIterator[InferResult]:
    """The responses of ``call`` from ``server`` (``http://host:port``); ``checked``
    turns a failure of what it awaits into a NaiadError."""
    body = _body(call)
    version = f"/versions/{call.version}" if call.version else ""
    url = f"{server}/v2/models/{quote(call.model)}{version}/generate_stream"
    async with await checked(session.post(url, json=body)) as answer:
        if answer.status != 200:
            raise from_status(str(answer.status), _error_text(await answer.read()))
        while True:
            line = await checked(answer.content.readline())
            if not line:
                return
            if not line.startswith(b"data:"):
                continue
            doc = json.loads(line[5:])
            if "error" in doc:
                raise NaiadError(doc["error"])
            yield _result(doc, call)


def _body(call: Call) -> dict[str, Any]:
    options = call.options
    for name in _UNSUPPORTED:
        if getattr(options, name):
            raise Unsupported(
                f"streaming over HTTP (generate_stream) cannot carry '{name}'; "
                "stream with server_type='grpc' or the embedded runner"
            )
    body: dict[str, Any] = {
        spec.name: _values(call.model, spec, array) for spec, array in call.inputs
    }
    if options.request_id:
        body["id"] = options.request_id
    if options.parameters:
        body["parameters"] = dict(options.parameters)
    return body


def _values(model: str, spec: TensorSpec, array: np.ndarray) -> Any:
    """The input as the flat JSON list the server reshapes by its element count."""
    fixed = 1
    for d in spec.shape:
        fixed *= 1 if d == -1 else d
    read_as = [1 if d == -1 else d for d in spec.shape]
    variable = [i for i, d in enumerate(spec.shape) if d == -1]
    if variable:
        read_as[variable[-1]] = array.size // fixed if fixed else 0
    if list(array.shape) != read_as:
        raise Unsupported(
            f"over HTTP, generate_stream would read input '{spec.name}' of model '{model}' "
            f"as shape {read_as}, not {list(array.shape)}; stream it with server_type='grpc' "
            "or the embedded runner"
        )
    flat = array.reshape(-1).tolist()
    if spec.datatype.is_bytes:
        try:
            flat = [v.decode() if isinstance(v, bytes) else v for v in flat]
        except UnicodeDecodeError:
            raise Unsupported(
                f"input '{spec.name}' holds bytes that are not UTF-8, which JSON cannot carry; "
                "stream it with server_type='grpc' or the embedded runner"
            ) from None
    return flat


def _result(doc: dict[str, Any], call: Call) -> InferResult:
    outputs: dict[str, Output] = {}
    parameters: dict[str, Any] = {}
    for key, value in doc.items():
        spec = call.signature.output(key)
        if spec is not None:
            data = _array(spec, value)
            outputs[key] = Output(key, spec.datatype.name, list(data.shape), data)
        elif key not in _HEADER:
            parameters[key] = value
    return InferResult(
        outputs,
        doc.get("model_name", call.model),
        str(doc.get("model_version", "")),
        doc.get("id", ""),
        parameters,
    )


def _array(spec: TensorSpec, value: Any) -> np.ndarray:
    flat = value if isinstance(value, list) else [value]
    if spec.datatype.is_bytes:
        array = np.empty(len(flat), dtype=np.object_)
        array[:] = [v.encode() if isinstance(v, str) else v for v in flat]
    else:
        array = np.asarray(flat, dtype=spec.datatype.numpy)
    shape = list(spec.shape)
    if shape.count(-1) <= 1:
        return array.reshape(shape)
    return array


def _error_text(body: bytes) -> str:
    try:
        return str(json.loads(body)["error"])
    except (ValueError, KeyError, TypeError):
        return body.decode(errors="replace")
