"""One small function per non-inference endpoint (rest.md §2-§4, §6-§9, §11-§12).

Each decodes its (tiny) request, calls one DataPlane operation and encodes
the result; errors propagate as NaiadError and become JSON in ``app``.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any

from naiad.core.errors import InvalidArgument, NaiadError, NotFound
from naiad.engine.repository_parameters import load_parameters, unload_dependents
from naiad.frontends.http import render
from naiad.frontends.http.codec import parse_json
from naiad.frontends.http.encode import dumps
from naiad.frontends.http.message import (
    Request,
    Response,
    empty_response,
    error_response,
    json_response,
)
from naiad.frontends.http.parameters import JSON_PARAMETERS

if TYPE_CHECKING:
    from naiad.engine.dataplane import DataPlane


def _json_body(req: Request, *, optional: bool = False) -> Any:
    if optional and not req.body.strip():
        return {}
    doc = parse_json(req.body)
    if not isinstance(doc, dict):
        raise InvalidArgument("the request body must be a JSON object")
    return doc


# -- health and metadata ---------------------------------------------------------


def health_live(dp: DataPlane, req: Request) -> Response:
    return empty_response() if dp.is_live() else Response(400, [], b"text/plain")


def health_ready(dp: DataPlane, req: Request) -> Response:
    return empty_response() if dp.is_ready() else Response(400, [], b"text/plain")


def model_ready(dp: DataPlane, req: Request, name: str, version: str) -> Response:
    try:
        ready = dp.model_ready(name, version)
    except NotFound:
        ready = False  # Triton 2.51: 400 "Model version not ready" for unknown ones too
    except NaiadError as exc:
        return error_response(400, exc.message)
    if not ready:
        return error_response(400, "Model version not ready")
    return empty_response()


def server_metadata(dp: DataPlane, req: Request) -> Response:
    return json_response(dumps(render.server_metadata(dp.server_metadata())))


async def model_metadata(dp: DataPlane, req: Request, name: str, version: str) -> Response:
    await dp.resident(name)
    return json_response(dumps(render.model_metadata(dp.model_metadata(name, version))))


async def model_config(dp: DataPlane, req: Request, name: str, version: str) -> Response:
    from naiad.config import config_to_json

    await dp.resident(name)
    text = config_to_json(dp.model_config(name, version))
    return json_response(text.encode() if isinstance(text, str) else text)


# -- statistics -------------------------------------------------------------------


async def stats(dp: DataPlane, req: Request, name: str, version: str) -> Response:
    return json_response(dumps(render.statistics(await dp.server_statistics(name, version))))


# -- repository ---------------------------------------------------------------------


async def repository_index(dp: DataPlane, req: Request, repo: str) -> Response:
    doc = _json_body(req, optional=True)
    ready = doc.get("ready", False)
    if not isinstance(ready, bool):
        raise InvalidArgument("Invalid value for 'ready': expected a boolean")
    # Triton's HTTP index ignores a repository name in the path (rest.md §1.1).
    return json_response(dumps(render.repository_index(await dp.repository_index(ready))))


def _parameters(req: Request) -> dict[str, Any]:
    doc = _json_body(req, optional=True)
    params = doc.get("parameters") or {}
    if not isinstance(params, dict):
        raise InvalidArgument("unable to parse 'parameters': expected an object")
    return params


async def repository_load(dp: DataPlane, req: Request, repo: str, name: str) -> Response:
    dp.check_repository_name(repo)
    config, files = load_parameters(_parameters(req), JSON_PARAMETERS)
    await dp.load_model(name, config, files)
    return empty_response(json_type=True)


async def repository_unload(dp: DataPlane, req: Request, repo: str, name: str) -> Response:
    dp.check_repository_name(repo)
    dependents = unload_dependents(_parameters(req), JSON_PARAMETERS.flag)
    await dp.unload_model(name, dependents)
    return empty_response(json_type=True)


# -- shared memory ------------------------------------------------------------------


def shm_status(dp: DataPlane, req: Request, kind: str, region: str) -> Response:
    return json_response(dumps(render.shm_status(dp.shm_status(kind, region))))


async def shm_register(dp: DataPlane, req: Request, kind: str, region: str) -> Response:
    dp.check_shm_region_name(kind, region)
    doc = _json_body(req)
    if kind == "system":
        if "key" not in doc:
            raise InvalidArgument("Shared memory register request has no 'key' field")
        if "byte_size" not in doc:
            raise InvalidArgument("Shared memory register request has no 'byte_size' field")
        key, offset, size = doc["key"], doc.get("offset", 0), doc["byte_size"]
        if not isinstance(key, str):
            raise InvalidArgument("Shared memory register request 'key' must be a string")
        await dp.shm_register_system(region, key, _uint(offset, "offset"), _uint(size, "byte_size"))
    else:
        handle = doc.get("raw_handle")
        if not isinstance(handle, dict) or not isinstance(handle.get("b64"), str):
            raise InvalidArgument("Shared memory register request has no 'raw_handle' field")
        try:
            raw = base64.b64decode(handle["b64"], validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) != 64:
            raise InvalidArgument("'raw_handle' must be a valid base64 encoded cudaIpcMemHandle_t")
        for field in ("device_id", "byte_size"):
            if field not in doc:
                raise InvalidArgument(f"Shared memory register request has no '{field}' field")
        await dp.shm_register_cuda(
            region,
            raw,
            _uint(doc["device_id"], "device_id"),
            _uint(doc["byte_size"], "byte_size"),
        )
    return empty_response(json_type=True)


async def shm_unregister(dp: DataPlane, req: Request, kind: str, region: str) -> Response:
    await dp.shm_unregister(kind, region)
    return empty_response(json_type=True)


def _uint(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgument(
            f"Shared memory register request '{what}' must be an unsigned integer"
        )
    return value


# -- trace and logging ----------------------------------------------------------------


async def trace(dp: DataPlane, req: Request) -> Response:
    changes = None if req.method == "GET" else _json_body(req)
    return json_response(dumps(render.trace_settings(await dp.trace_setting("", changes))))


async def model_trace(dp: DataPlane, req: Request, name: str, version: str) -> Response:
    changes = None if req.method == "GET" else _json_body(req)
    return json_response(dumps(render.trace_settings(await dp.trace_setting(name, changes))))


async def logging(dp: DataPlane, req: Request) -> Response:
    changes = None if req.method == "GET" else _json_body(req)
    return json_response(dumps(render.log_settings(await dp.log_setting(changes))))
