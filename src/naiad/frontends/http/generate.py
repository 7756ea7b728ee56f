"""The generate extension: ``/generate`` (one JSON object) and ``/generate_stream`` (SSE).

A flat JSON object is mapped onto the model's inputs by name (everything
else becomes a request parameter), run through ``DataPlane.infer_stream``,
and every response is flattened back into one JSON object (rest.md §10).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from naiad.core import datatypes
from naiad.core.errors import InvalidArgument, NaiadError
from naiad.core.types import InferenceRequest, InferenceResponse, InferInput
from naiad.core.versions import parse_version
from naiad.frontends.http.codec import json_to_array, parse_json
from naiad.frontends.http.encode import dumps, tensor_json
from naiad.frontends.http.errors import status_of
from naiad.frontends.http.message import SSE_HEADERS, Request, Response, json_response

if TYPE_CHECKING:
    from naiad.engine.dataplane import DataPlane
    from naiad.engine.metadata import TensorMetadata

_SCALARS = (str, int, float, bool)


def _build(dp: DataPlane, req: Request, name: str, version: str) -> InferenceRequest:
    encoding = req.headers.get("content-encoding")
    if encoding is not None and encoding.strip().lower() not in ("", "identity"):
        raise InvalidArgument("Unsupported content-encoding, only 'identity' is supported.")
    doc = parse_json(req.body)
    if not isinstance(doc, dict):
        raise InvalidArgument("the generate request body must be a JSON object")
    specs = {s.name: s for s in dp.model_metadata(name, version).inputs}
    request = InferenceRequest(name, model_version=parse_version(version))
    params = doc.get("parameters")
    if params is not None and not isinstance(params, dict):
        raise InvalidArgument("Expected JSON object for 'parameters' field")
    for key, value in doc.items():
        if key == "parameters":
            continue
        if key == "id" and key not in specs:
            if not isinstance(value, str):
                raise InvalidArgument("unable to parse 'id': expected a string")
            request.id = value
            continue
        put_field(request, specs, key, value)
    for key, value in (params or {}).items():
        if key in specs and key in doc:
            raise InvalidArgument(
                f"Input '{key}' is specified both at the top level and in 'parameters'"
            )
        put_field(request, specs, key, value)
    return request


def put_field(
    request: InferenceRequest, specs: dict[str, TensorMetadata], key: str, value: Any
) -> None:
    """``value`` as the input ``key`` (fitted to its shape), or else as a request parameter."""
    spec = specs.get(key)
    if spec is None:
        if not isinstance(value, _SCALARS):
            raise InvalidArgument(
                f"parameter '{key}' has invalid type. It should be either 'int', 'bool', "
                "'string' or 'double'"
            )
        request.parameters[key] = value
        return
    values = value if isinstance(value, list) else [value]
    count = len(values)
    dims = list(spec.shape)
    fixed = 1
    for d in dims:
        if d != -1:
            fixed *= d
    if fixed == 0 or count % fixed:
        raise InvalidArgument(
            f"Unable to fit {count} elements of '{key}' into the shape {dims} of the model input"
        )
    variable = [i for i, d in enumerate(dims) if d == -1]
    for i in variable:
        dims[i] = 1
    if variable:
        dims[variable[-1]] = count // fixed
    dt = datatypes.from_name(spec.datatype)
    array = json_to_array(values, dt, count, key)
    request.inputs.append(InferInput(key, dt, tuple(dims), array))


def _doc(response: InferenceResponse) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    if response.id:
        doc["id"] = response.id
    doc["model_name"] = response.model_name
    doc["model_version"] = str(response.model_version)
    doc.update(response.parameters)
    for tensor in response.outputs:
        if tensor.data is None:
            continue
        flat = tensor_json(tensor)  # a Fragment when it holds NaN or infinity
        doc[tensor.name] = flat[0] if isinstance(flat, list) and len(flat) == 1 else flat
    return doc


def _empty_final(response: InferenceResponse) -> bool:
    return (
        response.final
        and response.error is None
        and not response.outputs
        and not response.parameters
    )


async def generate(dp: DataPlane, req: Request, name: str, version: str) -> Response:
    await dp.resident(name)  # the body is read against the model's inputs
    request = _build(dp, req, name, version)
    req.core = request
    results: list[InferenceResponse] = []
    async for response in dp.infer_stream(request):
        if response.error is not None:
            raise response.error
        if not _empty_final(response):
            results.append(response)
    if len(results) != 1:
        raise InvalidArgument(
            "generate expects model to produce exactly 1 response, use generate stream for "
            "model that generates various number of responses"
        )
    return json_response(dumps(_doc(results[0])))


async def generate_stream(dp: DataPlane, req: Request, name: str, version: str) -> None:
    """Writes the SSE stream itself; returns None so the connection sends nothing more."""
    await dp.resident(name)
    request = _build(dp, req, name, version)
    req.core = request
    conn = req.conn
    stream = dp.infer_stream(request)
    started = False

    def start(status: int) -> None:
        nonlocal started
        started = True
        conn.start_stream(status, SSE_HEADERS)

    try:
        async for response in stream:
            if _empty_final(response):
                continue
            if response.error is not None:
                payload = dumps({"error": response.error.message})
                if not started:
                    start(status_of(response.error))
            else:
                try:
                    payload = dumps(_doc(response))
                except NaiadError as exc:
                    payload = dumps({"error": exc.message})
                if not started:
                    start(200)
            conn.write_chunk(b"data: " + payload + b"\n\n")
            await conn.drain()
            if conn.closed:
                break
    except NaiadError as exc:
        if not started:
            raise
        conn.write_chunk(b"data: " + dumps({"error": exc.message}) + b"\n\n")
    finally:
        await stream.aclose()  # type: ignore[attr-defined]
    if not started:
        start(200)
    conn.end_stream()
