"""``ModelInferRequest`` -> core request and core response -> ``ModelInferResponse``.

Pure functions, no server: the rules of grpc.md §4.4-§4.6, with Triton's
error texts (``src/grpc/infer_handler.cc``, ``grpc_utils.h``) so clients see
what Triton would tell them.  Request parameters are typed by
:mod:`naiad.frontends.grpc.parameters`.

Tensor bytes: protobuf's Python runtime hands out ``bytes`` for a ``bytes``
field and only accepts ``bytes`` when setting one (no memoryview), so raw
inputs are passed on as the ``bytes`` the message gives us (the core wraps
them with ``np.frombuffer``, no further copy) and outputs are encoded with one
``ndarray.tobytes()`` each.

Repeated fields are read with a slice (``msg.inputs[:]``), never iterated:
upb's containers have no ``__iter__``, so a ``for`` loop or ``tuple()`` over
one falls back to indexing until an ``IndexError`` whose message is
formatted with printf -- about a tenth of this module's cost per request.
A slice copies the entries into a list in one call.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from naiad.core import datatypes
from naiad.core.datatypes import DataType
from naiad.core.errors import Internal, InvalidArgument
from naiad.core.parameters import set_request_parameters
from naiad.core.types import (
    InferenceRequest,
    InferenceResponse,
    InferInput,
    OutputTensor,
    ParameterValue,
    RequestedOutput,
    SharedMemoryRef,
)
from naiad.core.versions import parse_version
from naiad.frontends.grpc import grpc_service_pb2 as pb
from naiad.frontends.grpc.parameters import PROTO_PARAMETERS

_INT64_MAX = (1 << 63) - 1

_SHM_REGION = "shared_memory_region"
_SHM_OFFSET = "shared_memory_offset"
_SHM_BYTE_SIZE = "shared_memory_byte_size"


# ---------------------------------------------------------------------------- decoding


def decode_infer_request(
    msg: pb.ModelInferRequest, raw: list[bytes] | None = None
) -> InferenceRequest:
    """The core request for a ``ModelInfer``/``ModelStreamInfer`` message.

    Inputs keep their wire encoding (``bytes``) or become numpy arrays (typed
    ``contents``); shared-memory inputs carry a :class:`SharedMemoryRef`.  The
    core validates names, datatypes, shapes and byte sizes afterwards.
    ``raw``: the message's ``raw_input_contents``, when the caller took them.
    """
    model = msg.model_name
    request = InferenceRequest(model, model_version=parse_version(msg.model_version), id=msg.id)
    if msg.parameters:
        set_request_parameters(request, msg.parameters, PROTO_PARAMETERS)

    if raw is None:
        raw = msg.raw_input_contents[:]
    raw_count = len(raw)
    next_raw = 0  # raw_input_contents[i] belongs to the i-th input that is neither shm nor contents
    inputs = request.inputs
    for tensor in msg.inputs[:]:
        name = tensor.name
        dt = datatypes.from_name(tensor.datatype)
        item = InferInput(name, dt, tuple(tensor.shape[:]))
        has_contents = tensor.HasField("contents")
        params = tensor.parameters
        if params:
            item.shm = _shared_memory(params, name)
            item.parameters = _tensor_parameters(params)
        if item.shm is not None:
            if has_contents:
                raise InvalidArgument(
                    "unexpected 'content' provided when using shared memory for input tensor "
                    f"'{name}' for model '{model}'"
                )
        elif has_contents:
            if raw_count:
                raise InvalidArgument(
                    f"contents field must not be specified when using raw_input_contents for "
                    f"'{name}' for model '{model}'"
                )
            item.data = _contents_array(tensor.contents, dt, name, model)
        elif next_raw < raw_count:
            item.data = raw[next_raw]
            next_raw += 1
        else:
            raise InvalidArgument(
                f"unable to find data for input tensor '{name}' for model '{model}' in request."
            )
        inputs.append(item)
    if next_raw != raw_count:
        # Triton ignores surplus entries; a surplus means client and server disagree on
        # which input an entry belongs to, so naiad refuses it (as HTTP refuses extra bytes).
        raise InvalidArgument(
            f"unexpected additional input data for model '{model}': raw_input_contents has "
            f"{raw_count} entries but only {next_raw} input(s) read their data from it"
        )

    outputs = request.outputs
    for wanted in msg.outputs[:]:
        outputs.append(_requested_output(wanted))
    return request


def _shared_memory(params: Mapping[str, pb.InferParameter], tensor: str) -> SharedMemoryRef | None:
    """The shared-memory reference of an input or output, or None (Triton's rules)."""
    region_param = params.get(_SHM_REGION)
    if region_param is not None and region_param.WhichOneof("parameter_choice") != "string_param":
        raise InvalidArgument(
            f"invalid value type for '{_SHM_REGION}' parameter for tensor '{tensor}', "
            "expected string_param."
        )
    offset = _shm_int(params, _SHM_OFFSET, tensor, region_param is not None)
    byte_size = _shm_int(params, _SHM_BYTE_SIZE, tensor, region_param is not None)
    if region_param is None:
        return None
    if byte_size is None:
        raise InvalidArgument(
            f"'{_SHM_BYTE_SIZE}' must be specified along with '{_SHM_REGION}' parameter for "
            f"tensor '{tensor}'"
        )
    return SharedMemoryRef(region_param.string_param, byte_size, offset or 0)


def _shm_int(
    params: Mapping[str, pb.InferParameter], key: str, tensor: str, has_region: bool
) -> int | None:
    param = params.get(key)
    if param is None:
        return None
    if not has_region:
        raise InvalidArgument(
            f"'{key}' can not be specified without '{_SHM_REGION}' parameter for tensor '{tensor}'"
        )
    if param.WhichOneof("parameter_choice") != "int64_param":
        raise InvalidArgument(
            f"invalid value type for '{key}' parameter for tensor '{tensor}', expected int64_param."
        )
    return param.int64_param


def _tensor_parameters(
    params: Mapping[str, pb.InferParameter],
) -> dict[str, ParameterValue] | None:
    """Per-tensor parameters as plain values (kept for the core; shm ones included)."""
    values: dict[str, ParameterValue] = {}
    for key, param in params.items():
        which = param.WhichOneof("parameter_choice")
        if which is not None:
            values[key] = getattr(param, which)
    return values or None


def _requested_output(wanted: pb.ModelInferRequest.InferRequestedOutputTensor) -> RequestedOutput:
    params = wanted.parameters
    if not params:
        return RequestedOutput(wanted.name)
    shm = _shared_memory(params, wanted.name)
    classification = 0
    class_param = params.get("classification")
    if class_param is not None:
        if class_param.WhichOneof("parameter_choice") != "int64_param":
            raise InvalidArgument(
                "invalid value type for 'classification' parameter, expected int64_param"
            )
        classification = class_param.int64_param
        if classification <= 0:
            # Triton's text says ">= 0" while it rejects 0 as well; kept verbatim.
            raise InvalidArgument("invalid value for 'classification' parameter, expected >= 0")
        if shm is not None:
            raise InvalidArgument(
                "output can't set both 'shared_memory_region' and 'classification'"
            )
    return RequestedOutput(wanted.name, classification, shm, _tensor_parameters(params))


# (contents field, numpy type of its elements, datatypes it may carry).  INT8/INT16
# (UINT8/UINT16) travel as the low bytes of int32 (uint32) elements.
_CONTENT_FIELDS: tuple[tuple[str, type[np.generic], tuple[DataType, ...]], ...] = (
    ("bool_contents", np.bool_, (datatypes.BOOL,)),
    ("int_contents", np.int32, (datatypes.INT8, datatypes.INT16, datatypes.INT32)),
    ("int64_contents", np.int64, (datatypes.INT64,)),
    ("uint_contents", np.uint32, (datatypes.UINT8, datatypes.UINT16, datatypes.UINT32)),
    ("uint64_contents", np.uint64, (datatypes.UINT64,)),
    ("fp32_contents", np.float32, (datatypes.FP32,)),
    ("fp64_contents", np.float64, (datatypes.FP64,)),
    ("bytes_contents", np.object_, (datatypes.BYTES,)),
)


def _contents_array(
    contents: pb.InferTensorContents, dt: DataType, name: str, model: str
) -> np.ndarray:
    """Typed ``contents`` as a flat numpy array of ``dt`` (the core checks the count)."""
    found: np.ndarray | None = None
    for field, element_type, carries in _CONTENT_FIELDS:
        values = getattr(contents, field)
        if not values:
            continue
        if found is not None:
            raise InvalidArgument(
                f"unexpected explicit tensor data for input tensor '{name}' for model "
                f"'{model}', binary data was already supplied."
            )
        if dt not in carries:
            sent = carries[-1]  # the type Triton names: INT32 for int_contents, ...
            raise InvalidArgument(
                f"unexpected explicit tensor data for input tensor '{name}' for model "
                f"'{model}' of type '{sent}', expected datatype '{dt}'"
            )
        if element_type is np.object_:
            found = np.empty(len(values), dtype=np.object_)
            found[:] = list(values)
        else:
            array = np.array(values, dtype=element_type)
            # astype wraps like Triton's "low bytes of each int32" for INT8/INT16/UINT8/UINT16.
            found = array if array.dtype == dt.numpy else array.astype(dt.numpy)
    if found is None:  # contents present but empty: a zero-element tensor
        return np.empty(0, dtype=dt.numpy)
    return found


# ---------------------------------------------------------------------------- encoding


def encode_infer_response(
    response: InferenceResponse,
    request: InferenceRequest | None = None,
    into: pb.ModelInferResponse | None = None,
) -> pb.ModelInferResponse:
    """The ``ModelInferResponse`` for a successful core response (grpc.md §4.6).

    ``raw_output_contents`` gets exactly one entry per output, at the same
    index: perf_analyzer indexes it without bounds checks.  Outputs written to
    shared memory and zero-byte outputs get an empty entry.  ``request``
    supplies the model name and id when the response lacks them (e.g. an
    empty final response of a decoupled model).  ``into`` is filled instead of
    a new message (the ``infer_response`` of a stream message: no nested copy),
    so it must be empty: fields whose value is the proto3 default are left
    unset rather than written (each write costs a upb lookup).  Shapes go to
    protobuf as they are: upb takes any integer (numpy's too) through
    ``__index__``.
    """
    msg = pb.ModelInferResponse() if into is None else into
    msg.model_name = response.model_name or (request.model_name if request else "")
    msg.model_version = str(response.model_version)
    request_id = response.id or (request.id if request else "")
    if request_id:
        msg.id = request_id
    if response.parameters:
        set_parameters(msg.parameters, response.parameters)
    outputs = msg.outputs
    raw = msg.raw_output_contents
    for tensor in response.outputs:
        outputs.add(name=tensor.name, datatype=tensor.datatype.name, shape=tensor.shape)
        raw.append(tensor_bytes(tensor))
    return msg


def tensor_bytes(tensor: OutputTensor) -> bytes:
    """The raw wire bytes of an output; empty for shared-memory outputs.

    Little-endian, row-major; BOOL one byte per element; BF16 two bytes
    (``ml_dtypes.bfloat16``); BYTES length-prefixed.
    """
    data = tensor.data
    if data is None:
        return b""
    dt = tensor.datatype
    if dt.is_bytes:
        return datatypes.serialize_bytes(data)
    if data.dtype != dt.numpy:  # e.g. big-endian, or float32 handed back for a BF16 output
        data = data.astype(dt.numpy)
    return data.tobytes()


def set_parameters(target: Mapping[str, pb.InferParameter], values: Mapping[str, object]) -> None:
    """Fill a ``map<string, InferParameter>`` from Python values (bool/int/str/float)."""
    for key, value in values.items():
        param = target[key]
        if isinstance(value, (bool, np.bool_)):
            param.bool_param = bool(value)
        elif isinstance(value, (int, np.integer)):
            number = int(value)
            if number > _INT64_MAX:
                param.uint64_param = number
            else:
                param.int64_param = number
        elif isinstance(value, str):
            param.string_param = value
        elif isinstance(value, (float, np.floating)):
            param.double_param = float(value)
        else:
            raise Internal(
                f"response parameter '{key}' has unsupported type {type(value).__name__}; "
                "expected bool, int, str or float"
            )


__all__ = ["decode_infer_request", "encode_infer_response", "set_parameters", "tensor_bytes"]
