"""One small function per non-inference endpoint (rest.md §2-§4, §6-§9, §11-§12).

Each decodes its (tiny) request, calls one DataPlane operation and encodes
the result; errors propagate as NaiadError and become JSON in ``app``.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any

from naiad.core.errors import Internal, InvalidArgument, NaiadError, NotFound, Unsupported
from naiad.frontends.http.codec import parse_json
from naiad.frontends.http.encode import dumps
from naiad.frontends.http.message import (
    Request,
    Response,
    empty_response,
    error_response,
    json_response,
)

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
    return json_response(dumps(dp.server_metadata()))


def model_metadata(dp: DataPlane, req: Request, name: str, version: str) -> Response:
    return json_response(dumps(dp.model_metadata(name, version)))


def model_config(dp: DataPlane, req: Request, name: str, version: str) -> Response:
    from naiad.config import config_to_json

    text = config_to_json(dp.model_config(name, version))
    return json_response(text.encode() if isinstance(text, str) else text)


# -- statistics -------------------------------------------------------------------


def stats(dp: DataPlane, req: Request, name: str, version: str) -> Response:
    return json_response(dumps(dp.statistics(name, version)))


# -- repository ---------------------------------------------------------------------


async def repository_index(dp: DataPlane, req: Request, repo: str) -> Response:
    doc = _json_body(req, optional=True)
    ready = doc.get("ready", False)
    if not isinstance(ready, bool):
        raise InvalidArgument("Invalid value for 'ready': expected a boolean")
    return json_response(dumps(await dp.repository_index(ready)))


def _no_repo_name(repo: str) -> None:
    if repo:
        raise Unsupported("'repository_name' specification is not supported")


async def repository_load(dp: DataPlane, req: Request, repo: str, name: str) -> Response:
    _no_repo_name(repo)
    doc = _json_body(req, optional=True)
    params = doc.get("parameters") or {}
    if not isinstance(params, dict):
        raise InvalidArgument("unable to parse 'parameters': expected an object")
    config: str | None = None
    files: dict[str, bytes] = {}
    for key, value in params.items():
        if not isinstance(value, str):
            raise InvalidArgument(f"parameter '{key}' must be a string")
        if key == "config":
            config = value
        elif key.startswith("file:"):
            try:
                files[key[len("file:") :]] = base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                raise InvalidArgument(f"unable to decode base64 content of '{key}'") from None
        else:
            raise Internal("unexpected error on creating Triton parameter")
    await dp.load_model(name, config, files or None)
    return empty_response(json_type=True)


async def repository_unload(dp: DataPlane, req: Request, repo: str, name: str) -> Response:
    _no_repo_name(repo)
    doc = _json_body(req, optional=True)
    params = doc.get("parameters") or {}
    if not isinstance(params, dict):
        raise InvalidArgument("unable to parse 'parameters': expected an object")
    dependents = params.get("unload_dependents", False)
    if not isinstance(dependents, bool):
        raise InvalidArgument("unable to parse 'unload_dependents': expected a boolean")
    await dp.unload_model(name, dependents)
    return empty_response(json_type=True)


# -- shared memory ------------------------------------------------------------------


def shm_status(dp: DataPlane, req: Request, kind: str, region: str) -> Response:
    return json_response(dumps(dp.shm_status(kind, region)))


def shm_register(dp: DataPlane, req: Request, kind: str, region: str) -> Response:
    if not region:
        raise InvalidArgument(f"'region name' is necessary to register {kind} shared memory region")
    doc = _json_body(req)
    if kind == "system":
        if "key" not in doc:
            raise InvalidArgument("Shared memory register request has no 'key' field")
        if "byte_size" not in doc:
            raise InvalidArgument("Shared memory register request has no 'byte_size' field")
        key, offset, size = doc["key"], doc.get("offset", 0), doc["byte_size"]
        if not isinstance(key, str):
            raise InvalidArgument("Shared memory register request 'key' must be a string")
        dp.shm_register(
            kind,
            region,
            key=key,
            offset=_uint(offset, "offset"),
            byte_size=_uint(size, "byte_size"),
        )
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
        dp.shm_register(
            kind,
            region,
            raw_handle=raw,
            device_id=_uint(doc["device_id"], "device_id"),
            byte_size=_uint(doc["byte_size"], "byte_size"),
        )
    return empty_response(json_type=True)


def shm_unregister(dp: DataPlane, req: Request, kind: str, region: str) -> Response:
    dp.shm_unregister(kind, region)
    return empty_response(json_type=True)


def _uint(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgument(
            f"Shared memory register request '{what}' must be an unsigned integer"
        )
    return value


# -- trace and logging ----------------------------------------------------------------


def trace(dp: DataPlane, req: Request) -> Response:
    changes = None if req.method == "GET" else _json_body(req)
    return json_response(dumps(dp.trace_setting("", changes)))


def model_trace(dp: DataPlane, req: Request, name: str, version: str) -> Response:
    changes = None if req.method == "GET" else _json_body(req)
    return json_response(dumps(dp.trace_setting(name, changes)))


def logging(dp: DataPlane, req: Request) -> Response:
    if req.method == "GET":
        return json_response(dumps(dp.log_settings.to_dict()))
    return json_response(dumps(dp.log_settings.update(_json_body(req))))
