"""Element codecs: "str", "json", "base64" and "datetime", in requests and responses.

An input's elements arrive as JSON values (``data``) or as the BYTES elements
of the binary extension; each becomes one element of the tensor the model
sees.  Outputs go the other way, into the JSON ``data`` of the response.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
from collections.abc import Callable
from typing import Any

import numpy as np
import orjson

from naiad.core import datatypes
from naiad.core.errors import Internal, InvalidArgument
from naiad.core.types import InferInput, OutputTensor
from naiad.frontends.http.content_types.hinted import RawJson

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MICROSECOND = dt.timedelta(microseconds=1)


def bad(name: str, detail: str) -> InvalidArgument:
    """The 400 for an input whose content is not what its content type says."""
    return InvalidArgument(f"input '{name}': {detail}")


def byte_elements(tensor: InferInput, count: int) -> list[bytes] | None:
    """The elements of a BYTES input (JSON strings or binary data); None for other inputs."""
    data = tensor.data
    if not tensor.datatype.is_bytes:
        return None
    if isinstance(data, np.ndarray):
        return [x if isinstance(x, bytes) else str(x).encode() for x in data.reshape(-1).tolist()]
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            return datatypes.deserialize_bytes(data, count).tolist()  # type: ignore[no-any-return]
        except InvalidArgument as exc:
            raise bad(tensor.name, exc.message) from None
    return None


def by_shape(value: Any, shape: tuple[int, ...]) -> list[Any]:
    """The elements of JSON ``data`` for ``shape``: a flat list, or lists nested as the shape."""
    count = datatypes.element_count(shape)
    if not isinstance(value, list):
        return [value]
    if len(value) == count and (len(shape) <= 1 or not any(isinstance(v, list) for v in value)):
        return value
    out: list[Any] = []

    def walk(v: Any, dims: tuple[int, ...]) -> None:
        if not dims:
            out.append(v)
        elif isinstance(v, list) and len(v) == dims[0]:
            for x in v:
                walk(x, dims[1:])
        else:
            out.append(v)

    walk(value, shape)
    return out


# -- inputs -------------------------------------------------------------------------------


def json_input(tensor: InferInput, count: int) -> list[bytes]:
    """Each element serialised as JSON (from JSON ``data``) or checked to be JSON (binary)."""
    data = tensor.data
    if isinstance(data, RawJson):
        try:
            return [orjson.dumps(v) for v in by_shape(data.value, tensor.shape)]
        except TypeError as exc:
            raise bad(tensor.name, f"not JSON: {exc}") from None
    elements = byte_elements(tensor, count)
    if elements is None:
        raise bad(tensor.name, "a 'json' input takes JSON values or BYTES")
    for i, element in enumerate(elements):
        try:
            orjson.loads(element)
        except orjson.JSONDecodeError as exc:
            raise bad(tensor.name, f"element {i} is not JSON: {exc}") from None
    return elements


def base64_input(tensor: InferInput, count: int) -> list[bytes] | None:
    """JSON strings decoded from base64; binary elements are the bytes themselves (None)."""
    if not isinstance(tensor.data, np.ndarray):
        return None
    elements = byte_elements(tensor, count)
    if elements is None:
        raise bad(tensor.name, "a 'base64' input takes base64 strings")
    return [unbase64(tensor.name, e, i) for i, e in enumerate(elements)]


def unbase64(name: str, element: bytes, index: int) -> bytes:
    if element.startswith(b"data:"):  # a data URL: data:image/png;base64,....
        element = element.partition(b",")[2]
    try:
        return base64.b64decode(element, validate=True)
    except (binascii.Error, ValueError):
        raise bad(name, f"element {index} is not base64") from None


def datetime_input(tensor: InferInput, count: int, target: str) -> np.ndarray | None:
    """ISO 8601 strings as INT64 microseconds since the epoch (naive times are UTC), or
    checked and kept as strings for a BYTES input (None: nothing to change)."""
    elements = byte_elements(tensor, count)
    if elements is None:
        return None
    micros = []
    for i, element in enumerate(elements):
        try:
            when = dt.datetime.fromisoformat(element.decode())
        except (UnicodeDecodeError, ValueError):
            raise bad(tensor.name, f"element {i} is not an ISO 8601 date and time") from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.timezone.utc)
        micros.append((when - _EPOCH) // _MICROSECOND)
    if target == "INT64":
        return np.array(micros, dtype=np.int64)
    return None


# -- outputs ------------------------------------------------------------------------------


def _strings(tensor: OutputTensor) -> list[Any]:
    assert tensor.data is not None
    return [
        x.decode("utf-8", "replace") if isinstance(x, (bytes, bytearray)) else x
        for x in np.asarray(tensor.data).reshape(-1).tolist()
    ]


def json_output(tensor: OutputTensor) -> list[Any]:
    out = []
    for x in np.asarray(tensor.data).reshape(-1).tolist():
        try:
            out.append(orjson.loads(x) if isinstance(x, (bytes, str)) else x)
        except orjson.JSONDecodeError:
            raise Internal(f"output '{tensor.name}' is declared 'json' but is not JSON") from None
    return out


def base64_output(tensor: OutputTensor) -> list[str]:
    return [
        base64.b64encode(x if isinstance(x, bytes) else str(x).encode()).decode()
        for x in np.asarray(tensor.data).reshape(-1).tolist()
    ]


def datetime_output(tensor: OutputTensor) -> list[Any]:
    if tensor.datatype.is_bytes:
        return _strings(tensor)
    if tensor.datatype.name != "INT64":
        raise Internal(f"output '{tensor.name}' is declared 'datetime' but is not INT64 or BYTES")
    return [
        (_EPOCH + dt.timedelta(microseconds=int(x))).isoformat()
        for x in np.asarray(tensor.data).reshape(-1).tolist()
    ]


OUTPUTS: dict[str, Callable[[OutputTensor], list[Any]]] = {
    "str": _strings,
    "json": json_output,
    "base64": base64_output,
    "datetime": datetime_output,
}
