"""Decoding ``/infer`` request bodies into core requests (rest.md §5.2-§5.7).

The JSON header is parsed once; binary tensor data stays in the received
buffer and is handed to the core as memoryview slices (no copy).  JSON tensor
data becomes numpy arrays of the declared datatype.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import orjson

from naiad.core import datatypes
from naiad.core.datatypes import DataType
from naiad.core.errors import InvalidArgument
from naiad.core.parameters import set_request_parameters
from naiad.core.types import InferenceRequest, InferInput, RequestedOutput, SharedMemoryRef
from naiad.core.versions import parse_version
from naiad.frontends.http.content_types.hinted import Hinted, RawJson
from naiad.frontends.http.parameters import JSON_PARAMETERS, boolean, uint

_INT_KINDS = "iu"
#: ``raw`` for a request whose own content type is "json": every input's data as sent.
_ALL_RAW: frozenset[str] = frozenset({"*"})


def parse_json(data: bytes, what: str = "request") -> Any:
    """Parsed JSON, with Triton's 400 for malformed bodies.

    orjson takes every valid document; what it refuses goes to the standard
    library, which also takes NaN, Infinity and integers beyond 64 bits and
    words the error for the client.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    try:
        # Decoding first skips json's encoding detection; UnicodeDecodeError is a ValueError.
        return json.loads(str(data, "utf-8"))
    except (ValueError, RecursionError) as exc:
        raise InvalidArgument(f"failed to parse the {what} JSON buffer: {exc}") from None


def _shm_ref(params: dict[str, Any], what: str) -> SharedMemoryRef:
    region = params["shared_memory_region"]
    if not isinstance(region, str):
        raise InvalidArgument(f"unable to parse 'shared_memory_region' for {what}")
    if "shared_memory_byte_size" not in params:
        raise InvalidArgument(f"'shared_memory_byte_size' is missing for {what}")
    size = uint(params["shared_memory_byte_size"], "shared_memory_byte_size")
    offset = uint(params.get("shared_memory_offset", 0), "shared_memory_offset")
    return SharedMemoryRef(region, size, offset)


def decode_infer(
    model: str,
    version: str,
    body: bytes,
    header_length: int | None,
    raw: frozenset[str] | None = None,
) -> InferenceRequest:
    """An :class:`InferenceRequest` for a JSON or JSON+binary body.

    ``header_length`` is the Inference-Header-Content-Length value (None when
    absent: the whole body is JSON).  ``request.context`` carries the
    request-level ``binary_data_output`` default for the encoder, or a
    :class:`~naiad.frontends.http.content_types.Hinted` holding it when the
    request names a content type itself.  ``raw``: inputs whose model declares
    them "json", whose JSON ``data`` is kept as sent for the content pass.
    """
    size = len(body)
    if header_length is None or header_length == size:
        doc = parse_json(body)
        offset = size
    else:
        if header_length > size:
            raise InvalidArgument(
                f"Inference header size {header_length} exceeds the request body size {size}"
            )
        doc = parse_json(body[:header_length])
        offset = header_length
    if not isinstance(doc, dict):
        raise InvalidArgument("the inference request JSON must be an object")
    request = InferenceRequest(model, model_version=parse_version(version))
    request.context = False
    rid = doc.get("id")
    if rid is not None:
        if not isinstance(rid, str):
            raise InvalidArgument("unable to parse 'id': expected a string")
        request.id = rid
    params = doc.get("parameters")
    if params:
        if not isinstance(params, dict):
            raise InvalidArgument("unable to parse 'parameters': expected an object")
        set_request_parameters(request, params, JSON_PARAMETERS)
        if "content_type" in request.parameters:
            request.context = Hinted(request.context)
            kind = request.parameters["content_type"]
            if kind != "pd":  # a request-level type applies to every input
                raw = _ALL_RAW if kind == "json" else frozenset()
    inputs = doc.get("inputs")
    if not isinstance(inputs, list):
        raise InvalidArgument("unable to parse 'inputs': expected an array")
    view = memoryview(body) if offset < size else None
    for item in inputs:
        offset = _input(request, item, view, offset, raw)
    if offset != size:
        raise InvalidArgument(f"unexpected additional input data for model '{model}'")
    outputs = doc.get("outputs")
    if outputs:
        if not isinstance(outputs, list):
            raise InvalidArgument("unable to parse 'outputs': expected an array")
        request.outputs = [_output(o) for o in outputs]
        if request.context.__class__ is bool and any(
            o.parameters and "content_type" in o.parameters for o in request.outputs
        ):
            request.context = Hinted(request.context)
    return request


def _input(
    request: InferenceRequest,
    item: Any,
    view: memoryview | None,
    offset: int,
    raw: frozenset[str] | None,
) -> int:
    if not isinstance(item, dict):
        raise InvalidArgument("unable to parse 'inputs': each input must be an object")
    name = item.get("name")
    if not isinstance(name, str):
        raise InvalidArgument("unable to parse 'name' of an input: expected a string")
    dt_name = item.get("datatype")
    if not isinstance(dt_name, str):
        raise InvalidArgument(f"unable to parse 'datatype' of input '{name}'")
    dt = datatypes.from_name(dt_name)
    shape = item.get("shape")
    # type() rather than isinstance(): JSON true/false are not dimensions.
    if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
        raise InvalidArgument(
            f"unable to parse 'shape' of input '{name}': expected non-negative integers"
        )
    params = item.get("parameters")
    if params is not None and not isinstance(params, dict):
        raise InvalidArgument(f"unable to parse 'parameters' of input '{name}'")
    has_data = "data" in item
    binary = params.get("binary_data_size") if params else None
    has_shm = bool(params) and "shared_memory_region" in params  # type: ignore[operator]
    if has_data + (binary is not None) + has_shm != 1:
        raise InvalidArgument(
            "Input must set only one of the following fields: 'data', 'binary_data_size' in "
            "'parameters', 'shared_memory_region' in 'parameters'. But input "
            f"'{name}' set {has_data + (binary is not None) + has_shm} of them"
        )
    tensor = InferInput(name, dt, tuple(shape), parameters=params)
    hint = params.get("content_type") if params else None
    if hint is not None and request.context.__class__ is bool:
        request.context = Hinted(request.context)
    if binary is not None:
        nbytes = uint(binary, "binary_data_size")
        end = offset + nbytes
        if view is None or end > len(view):
            if nbytes == 0:
                end = offset
                tensor.data = b""
            else:
                raise InvalidArgument(
                    f"unexpected size for input '{name}', expecting {nbytes} additional bytes "
                    f"for model '{request.model_name}'"
                )
        else:
            tensor.data = view[offset:end]
        offset = end
    elif has_shm:
        assert params is not None
        tensor.shm = _shm_ref(params, f"input '{name}'")
    elif (raw is not None and hint is None and (raw is _ALL_RAW or name in raw)) or hint == "json":
        tensor.data = RawJson(item["data"])  # type: ignore[assignment]  # the content pass reads it
    else:
        count = 1
        for d in shape:
            count *= d
        tensor.data = json_to_array(item["data"], dt, count, name)
    request.inputs.append(tensor)
    return offset


def _output(item: Any) -> RequestedOutput:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        raise InvalidArgument("unable to parse 'outputs': each output must have a 'name'")
    name = item["name"]
    params = item.get("parameters")
    if not params:
        return RequestedOutput(name)
    if not isinstance(params, dict):
        raise InvalidArgument(f"unable to parse 'parameters' of output '{name}'")
    out = RequestedOutput(name, parameters=params)
    if "classification" in params:
        out.classification = uint(params["classification"], "classification")
    if "binary_data" in params:
        boolean(params["binary_data"], "binary_data")
    if "shared_memory_region" in params:
        if out.classification:
            raise InvalidArgument(
                "Output can't set both 'shared_memory_region' and 'classification'"
            )
        if params.get("binary_data") is True:
            raise InvalidArgument("Output can't set both 'shared_memory_region' and 'binary_data'")
        out.shm = _shm_ref(params, f"output '{name}'")
    return out


def json_to_array(data: Any, dt: DataType, count: int, name: str) -> np.ndarray:
    """A flat numpy array of ``dt`` from JSON ``data`` (flat or nested), Triton's rules."""
    if dt.name in ("FP16", "BF16"):
        raise InvalidArgument(
            f"receiving {dt.name} data via JSON is not supported. Please use the binary data "
            f"format for input '{name}'"
        )
    if not isinstance(data, list):
        data = [data]
    flat: list[Any] = []
    if dt.is_bytes:
        _flatten(data, flat)
        if not all(isinstance(x, str) for x in flat):
            raise _bad_data(name, "expected strings for a BYTES tensor")
        if len(flat) != count:
            raise _shape_mismatch(name)
        out = np.empty(len(flat), dtype=np.object_)
        out[:] = [x.encode() for x in flat]
        return out
    try:
        raw = np.array(data)
    except (ValueError, TypeError, OverflowError) as exc:
        raise _bad_data(name, str(exc)) from None
    if raw.size != count:
        raise _shape_mismatch(name)
    if raw.size == 0:
        return np.empty(0, dtype=dt.numpy)
    kind = raw.dtype.kind
    target = dt.numpy.kind
    if target == "b":
        ok = kind == "b"
    elif target in _INT_KINDS:
        if kind in "Of":  # ints beyond int64 made numpy pick object or float: be exact
            _flatten(data, flat)
            if not all(isinstance(x, int) and not isinstance(x, bool) for x in flat):
                raise _bad_data(name, f"values do not fit datatype {dt.name}")
            try:
                return np.array(flat, dtype=dt.numpy)
            except OverflowError as exc:
                raise _bad_data(name, str(exc)) from None
        ok = kind in _INT_KINDS
        if ok:
            info = np.iinfo(dt.numpy)
            ok = bool(raw.min() >= info.min and raw.max() <= info.max)
    else:
        ok = kind in "iuf"
    if not ok:
        raise _bad_data(name, f"values do not fit datatype {dt.name}")
    return raw.reshape(-1).astype(dt.numpy, copy=False)


def _flatten(data: list[Any], out: list[Any]) -> None:
    for x in data:
        if isinstance(x, list):
            _flatten(x, out)
        else:
            out.append(x)


def _bad_data(name: str, detail: str) -> InvalidArgument:
    return InvalidArgument(f"Unable to parse 'data' of input '{name}': {detail}")


def _shape_mismatch(name: str) -> InvalidArgument:
    return InvalidArgument(
        f"Unable to parse 'data' of input '{name}': Shape does not match true shape of 'data' field"
    )
