"""Encoding core inference responses as Triton's JSON or JSON+binary body (rest.md §5.8).

Binary outputs are handed to the transport as memoryviews over the output
arrays (no copy); the JSON header is built with one ``dumps`` (orjson).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import orjson

from naiad.core import datatypes
from naiad.core.errors import InvalidArgument
from naiad.core.types import InferenceRequest, InferenceResponse, OutputTensor

Blob = bytes | memoryview


def _default(value: Any) -> Any:
    """numpy scalars that slipped into shapes or parameters."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


_dumps = json.JSONEncoder(separators=(",", ":"), default=_default).encode


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON bytes."""
    try:
        return orjson.dumps(obj, default=_default, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:  # integers beyond 64 bits, which the standard library writes
        return _dumps(obj).encode()


def tensor_binary(tensor: OutputTensor) -> Blob:
    """The wire bytes of an output: raw little-endian, or length-prefixed for BYTES."""
    data = tensor.data
    assert data is not None
    if tensor.datatype.is_bytes:
        return datatypes.serialize_bytes(data)
    array = np.ascontiguousarray(data).reshape(-1)
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    return array.view(np.uint8).data


def tensor_json(tensor: OutputTensor) -> list[Any] | orjson.Fragment:
    """A flat JSON list of an output; FP16/BF16 cannot travel as JSON."""
    data = tensor.data
    assert data is not None
    dt = tensor.datatype
    if dt.name in ("FP16", "BF16"):
        raise InvalidArgument(
            f"sending {dt.name} data via JSON is not supported. Please use the binary data "
            "format for output"
        )
    flat = data.reshape(-1)
    if flat.dtype.kind == "f" and not np.isfinite(flat).all():
        # As the standard library writes them (NaN, Infinity), not as orjson's null.
        return orjson.Fragment(_dumps(flat.tolist()))
    if dt.is_bytes:
        return [
            x.decode("utf-8", "replace") if isinstance(x, (bytes, bytearray)) else str(x)
            for x in flat.tolist()
        ]
    return flat.tolist()


def binary_choices(request: InferenceRequest) -> tuple[bool, dict[str, bool] | None]:
    """The request-level default and the per-output ``binary_data`` flags."""
    default = request.context is True
    if not request.outputs:
        return default, None
    explicit: dict[str, bool] = {}
    for out in request.outputs:
        params = out.parameters
        explicit[out.name] = bool(params) and params.get("binary_data") is True  # type: ignore[union-attr]
    return default, explicit


def encode_infer(
    request: InferenceRequest,
    response: InferenceResponse,
    force_binary: bool = False,
    codecs: Mapping[str, tuple[str, Callable[[OutputTensor], list[Any]]]] | None = None,
) -> tuple[bytes, list[Blob], bool]:
    """``(json_header, binary_blobs, any_binary)``; clients then expect the header length.

    ``codecs``: outputs with a content type (frontends/http/content_types), written as
    their codec says when they go as JSON.
    """
    default, explicit = binary_choices(request)
    if force_binary:
        default, explicit = True, None
    outputs: list[dict[str, Any]] = []
    blobs: list[Blob] = []
    any_binary = False
    for tensor in response.outputs:
        entry: dict[str, Any] = {
            "name": tensor.name,
            "datatype": tensor.datatype.name,
            "shape": tensor.shape,
        }
        if tensor.data is not None:
            binary = default if explicit is None else explicit.get(tensor.name, default)
            if binary:
                blob = tensor_binary(tensor)
                size = blob.nbytes if isinstance(blob, memoryview) else len(blob)
                entry["parameters"] = {"binary_data_size": size}
                any_binary = True
                if size:
                    blobs.append(blob)
            elif codecs is not None and tensor.name in codecs:
                kind, write = codecs[tensor.name]
                entry["parameters"] = {"content_type": kind}
                entry["data"] = write(tensor)
            else:
                entry["data"] = tensor_json(tensor)
        outputs.append(entry)
    doc: dict[str, Any] = {}
    if response.id:
        doc["id"] = response.id
    doc["model_name"] = response.model_name
    doc["model_version"] = str(response.model_version)
    if response.parameters:
        doc["parameters"] = response.parameters
    doc["outputs"] = outputs
    return dumps(doc), blobs, any_binary
