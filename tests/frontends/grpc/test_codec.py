"""The gRPC codec decodes what tritonclient sends and encodes what tritonclient reads.

Requests are built with tritonclient's own request builder and sent through
serialization, exactly as they cross the wire; responses are read back with
``tritonclient.grpc.InferResult``.
"""

from __future__ import annotations

from typing import Any

import grpc
import ml_dtypes
import numpy as np
import pytest

from naiad.core import datatypes
from naiad.core.errors import Internal, InvalidArgument, Kind, NaiadError
from naiad.core.types import InferenceRequest, InferenceResponse, OutputTensor, SharedMemoryRef
from naiad.frontends.grpc import grpc_service_pb2 as pb
from naiad.frontends.grpc.codec import decode_infer_request, encode_infer_response
from naiad.frontends.grpc.errors import STATUS_CODES, status_of

pytestmark = pytest.mark.unit

tc = pytest.importorskip("tritonclient.grpc")
from tritonclient.grpc import _utils as tc_utils  # noqa: E402
from tritonclient.grpc import service_pb2 as tc_pb  # noqa: E402

# One sample per datatype, as a model or a client would hold it in numpy.
SAMPLES: dict[str, np.ndarray] = {
    "BOOL": np.array([[True, False, True]]),
    "UINT8": np.array([[0, 7, 255]], dtype=np.uint8),
    "UINT16": np.array([[0, 7, 65535]], dtype=np.uint16),
    "UINT32": np.array([[0, 7, 2**32 - 1]], dtype=np.uint32),
    "UINT64": np.array([[0, 7, 2**64 - 1]], dtype=np.uint64),
    "INT8": np.array([[-128, 0, 127]], dtype=np.int8),
    "INT16": np.array([[-(2**15), 0, 2**15 - 1]], dtype=np.int16),
    "INT32": np.array([[-(2**31), 0, 2**31 - 1]], dtype=np.int32),
    "INT64": np.array([[-(2**63), 0, 2**63 - 1]], dtype=np.int64),
    "FP16": np.array([[-1.5, 0.0, 65504.0]], dtype=np.float16),
    "FP32": np.array([[-1.5, 0.25, 3.0e38]], dtype=np.float32),
    "FP64": np.array([[-1.5, 0.25, 1.0e300]], dtype=np.float64),
    "BYTES": np.array([[b"", b"abc", "h\xe9llo".encode()]], dtype=np.object_),
    "BF16": np.array([[-1.5, 0.25, 3.0e38]], dtype=ml_dtypes.bfloat16),
}


def client_request(
    inputs: list[Any],
    outputs: list[Any] | None = None,
    *,
    model: str = "m",
    version: str = "",
    request_id: str = "",
    sequence_id: int | str = 0,
    sequence_start: bool = False,
    sequence_end: bool = False,
    priority: int = 0,
    timeout: int | None = None,
    parameters: dict[str, Any] | None = None,
) -> pb.ModelInferRequest:
    """What ``InferenceServerClient.infer`` would put on the wire, as naiad receives it."""
    message = tc_utils._get_inference_request(
        model, inputs, version, request_id, outputs, sequence_id, sequence_start,
        sequence_end, priority, timeout, parameters,
    )  # fmt: skip
    return pb.ModelInferRequest.FromString(message.SerializeToString())


def client_input(name: str, array: np.ndarray, datatype: str) -> Any:
    tensor = tc.InferInput(name, list(array.shape), datatype)
    tensor.set_data_from_numpy(array)
    return tensor


def request_with(**fields: Any) -> pb.ModelInferRequest:
    """A hand-built request with one FP32 input of 1 element in raw_input_contents."""
    message = pb.ModelInferRequest(model_name="m", **fields)
    if not message.inputs:
        message.inputs.add(name="x", datatype="FP32", shape=[1])
        message.raw_input_contents.append(b"\0\0\0\0")
    return message


def raises(message: str) -> Any:
    return pytest.raises(InvalidArgument, match="^" + _escape(message) + "$")


def _escape(text: str) -> str:
    import re

    return re.escape(text)


def as_numpy(data: Any, dt: datatypes.DataType, shape: tuple[int, ...]) -> np.ndarray:
    """What the core's validation makes of decoded input data."""
    if isinstance(data, np.ndarray):
        return data.reshape(shape)
    if dt.is_bytes:
        return datatypes.deserialize_bytes(data).reshape(shape)
    return np.frombuffer(data, dtype=dt.numpy).reshape(shape)


# ---------------------------------------------------------------------------- request basics


def test_tritonclient_request_decodes_every_field() -> None:
    inputs = [client_input("x", SAMPLES["FP32"], "FP32")]
    outputs = [tc.InferRequestedOutput("y"), tc.InferRequestedOutput("z", class_count=3)]
    request = decode_infer_request(
        client_request(
            inputs,
            outputs,
            model="dense",
            version="2",
            request_id="r-1",
            sequence_id=42,
            sequence_start=True,
            sequence_end=False,
            priority=3,
            timeout=1500,
            parameters={"s": "text", "b": True, "i": -7, "f": 0.5},
        )  # fmt: skip
    )
    assert isinstance(request, InferenceRequest)
    assert (request.model_name, request.model_version, request.id) == ("dense", 2, "r-1")
    assert (request.correlation_id, request.sequence_start, request.sequence_end) == (
        42,
        True,
        False,
    )
    assert (request.priority, request.timeout_us) == (3, 1500)
    assert request.parameters == {"s": "text", "b": True, "i": -7, "f": 0.5}
    assert type(request.parameters["i"]) is int and type(request.parameters["b"]) is bool
    assert [(o.name, o.classification, o.shm) for o in request.outputs] == [
        ("y", 0, None),
        ("z", 3, None),
    ]
    assert not request.enable_empty_final_response


@pytest.mark.parametrize(("text", "version"), [("", None), ("1", 1), ("17", 17)])
def test_version_string(text: str, version: int | None) -> None:
    assert decode_infer_request(request_with(model_version=text)).model_version == version


@pytest.mark.parametrize("text", ["x", "-1", "1.0", " 1"])
def test_bad_version_string(text: str) -> None:
    with raises(f"failed to get model version from specified version string '{text}'"):
        decode_infer_request(request_with(model_version=text))


def test_defaults_without_parameters() -> None:
    request = decode_infer_request(request_with())
    assert (request.model_version, request.id, request.correlation_id) == (None, "", 0)
    assert (request.priority, request.timeout_us, request.parameters) == (0, 0, {})
    assert request.outputs == []


# ---------------------------------------------------------------------------- request parameters


def with_param(key: str, **value: Any) -> pb.ModelInferRequest:
    message = request_with()
    param = message.parameters[key]
    for field, v in value.items():
        setattr(param, field, v)
    return message


def test_string_sequence_id() -> None:
    request = decode_infer_request(
        client_request([client_input("x", SAMPLES["FP32"], "FP32")], sequence_id="seq-a")
    )
    assert request.correlation_id == "seq-a"


def test_negative_int64_sequence_id_wraps_like_triton() -> None:
    request = decode_infer_request(with_param("sequence_id", int64_param=-1))
    assert request.correlation_id == 2**64 - 1


@pytest.mark.parametrize("value", [{"bool_param": True}, {"uint64_param": 1}, {}])
def test_sequence_id_type(value: dict[str, Any]) -> None:
    with raises(
        "invalid value type for 'sequence_id' parameter, expected int64_param or string_param."
    ):
        decode_infer_request(with_param("sequence_id", **value))


@pytest.mark.parametrize("key", ["sequence_start", "sequence_end"])
def test_sequence_flags_must_be_bool(key: str) -> None:
    assert getattr(decode_infer_request(with_param(key, bool_param=True)), key) is True
    with raises(f"invalid value type for '{key}' parameter, expected bool_param."):
        decode_infer_request(with_param(key, int64_param=1))


def test_priority() -> None:
    assert decode_infer_request(with_param("priority", int64_param=5)).priority == 5
    assert decode_infer_request(with_param("priority", uint64_param=2**64 - 1)).priority == (
        2**64 - 1
    )
    with raises("invalid value for 'priority', expected value >= 0."):
        decode_infer_request(with_param("priority", int64_param=-1))
    with raises(
        "invalid value type for 'priority' parameter, expected int64_param or uint64_param."
    ):
        decode_infer_request(with_param("priority", string_param="1"))


def test_timeout() -> None:
    assert decode_infer_request(with_param("timeout", int64_param=250)).timeout_us == 250
    with raises("invalid value type for 'timeout' parameter, expected int64_param."):
        decode_infer_request(with_param("timeout", uint64_param=250))


def test_enable_empty_final_response() -> None:
    request = decode_infer_request(
        with_param("triton_enable_empty_final_response", bool_param=True)
    )
    assert request.enable_empty_final_response is True
    assert "triton_enable_empty_final_response" not in request.parameters
    with raises(
        "invalid value type for 'triton_enable_empty_final_response' parameter, "
        "expected bool_param."
    ):
        decode_infer_request(with_param("triton_enable_empty_final_response", int64_param=1))


def test_other_triton_parameters_are_reserved() -> None:
    with raises(
        "parameter keys starting with 'triton_' are reserved for Triton usage. Only the "
        "following keys starting with 'triton_' are allowed: triton_enable_empty_final_response"
    ):
        decode_infer_request(with_param("triton_final_response", bool_param=True))


def test_custom_parameter_types() -> None:
    message = request_with()
    message.parameters["i"].int64_param = -3
    message.parameters["b"].bool_param = False
    message.parameters["s"].string_param = ""
    message.parameters["d"].double_param = 2.5
    assert decode_infer_request(message).parameters == {"i": -3, "b": False, "s": "", "d": 2.5}


@pytest.mark.parametrize("value", [{"uint64_param": 1}, {}])
def test_custom_parameter_uint64_or_unset(value: dict[str, Any]) -> None:
    with raises(
        "invalid value type for 'k' parameter, expected int64_param, bool_param, "
        "double_param or string_param."
    ):
        decode_infer_request(with_param("k", **value))


# ---------------------------------------------------------------------------- input data


@pytest.mark.parametrize("datatype", list(SAMPLES))
def test_raw_input_of_every_datatype(datatype: str) -> None:
    """tritonclient's bytes reach the core unchanged and read back as the client's array."""
    array = SAMPLES[datatype]
    request = decode_infer_request(client_request([client_input("x", array, datatype)]))
    (tensor,) = request.inputs
    assert (tensor.name, tensor.datatype, tensor.shape) == (
        "x",
        datatypes.from_name(datatype),
        (1, 3),
    )
    assert isinstance(tensor.data, bytes) and tensor.shm is None
    decoded = as_numpy(tensor.data, tensor.datatype, tensor.shape)
    if datatype == "BYTES":
        np.testing.assert_array_equal(decoded, array)
    else:
        assert decoded.dtype == array.dtype
        assert decoded.tobytes() == array.tobytes()


def test_bf16_travels_as_two_bytes_per_element() -> None:
    request = decode_infer_request(client_request([client_input("x", SAMPLES["BF16"], "BF16")]))
    assert len(request.inputs[0].data) == 6  # type: ignore[arg-type]


def test_raw_contents_follow_inputs_that_are_not_shm_or_contents() -> None:
    a = client_input("a", SAMPLES["INT32"], "INT32")
    shm = tc.InferInput("s", [1, 3], "INT32")
    shm.set_shared_memory("region", 12, offset=8)
    b = client_input("b", SAMPLES["FP64"], "FP64")
    request = decode_infer_request(client_request([a, shm, b]))
    a_in, s_in, b_in = request.inputs
    assert a_in.data == SAMPLES["INT32"].tobytes() and b_in.data == SAMPLES["FP64"].tobytes()
    assert s_in.data is None
    assert isinstance(s_in.shm, SharedMemoryRef)
    assert (s_in.shm.region, s_in.shm.byte_size, s_in.shm.offset) == ("region", 12, 8)


def test_shm_offset_defaults_to_zero() -> None:
    tensor = tc.InferInput("s", [3], "INT32")
    tensor.set_shared_memory("region", 12)  # tritonclient omits the offset when 0
    (item,) = decode_infer_request(client_request([tensor])).inputs
    assert item.shm is not None and (item.shm.region, item.shm.offset) == ("region", 0)


def shm_input(**params: dict[str, Any]) -> pb.ModelInferRequest:
    message = pb.ModelInferRequest(model_name="m")
    tensor = message.inputs.add(name="x", datatype="FP32", shape=[1])
    for key, value in params.items():
        for field, v in value.items():
            setattr(tensor.parameters[key], field, v)
    return message


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"shared_memory_region": {"int64_param": 1}, "shared_memory_byte_size": {"int64_param": 4}},
            "invalid value type for 'shared_memory_region' parameter for tensor 'x', "
            "expected string_param.",
        ),
        (
            {"shared_memory_offset": {"int64_param": 0}},
            "'shared_memory_offset' can not be specified without 'shared_memory_region' "
            "parameter for tensor 'x'",
        ),
        (
            {"shared_memory_byte_size": {"int64_param": 4}},
            "'shared_memory_byte_size' can not be specified without 'shared_memory_region' "
            "parameter for tensor 'x'",
        ),
        (
            {"shared_memory_region": {"string_param": "r"}},
            "'shared_memory_byte_size' must be specified along with 'shared_memory_region' "
            "parameter for tensor 'x'",
        ),
        (
            {
                "shared_memory_region": {"string_param": "r"},
                "shared_memory_byte_size": {"int64_param": 4},
                "shared_memory_offset": {"string_param": "0"},
            },
            "invalid value type for 'shared_memory_offset' parameter for tensor 'x', "
            "expected int64_param.",
        ),
        (
            {"shared_memory_region": {"string_param": "r"}, "shared_memory_byte_size": {"uint64_param": 4}},
            "invalid value type for 'shared_memory_byte_size' parameter for tensor 'x', "
            "expected int64_param.",
        ),
    ],
)  # fmt: skip
def test_shm_parameter_errors(params: dict[str, Any], message: str) -> None:
    with raises(message):
        decode_infer_request(shm_input(**params))


def test_shm_input_must_not_have_contents() -> None:
    message = shm_input(
        shared_memory_region={"string_param": "r"}, shared_memory_byte_size={"int64_param": 4}
    )
    message.inputs[0].contents.fp32_contents.append(1.0)
    with raises(
        "unexpected 'content' provided when using shared memory for input tensor 'x' for model 'm'"
    ):
        decode_infer_request(message)


def test_binary_data_parameters_are_ignored_on_grpc() -> None:
    message = request_with()
    message.inputs[0].parameters["binary_data_size"].int64_param = 4
    (tensor,) = decode_infer_request(message).inputs
    assert tensor.data == b"\0\0\0\0" and tensor.shm is None


def test_missing_raw_contents() -> None:
    message = pb.ModelInferRequest(model_name="m")
    message.inputs.add(name="x", datatype="FP32", shape=[1])
    with raises("unable to find data for input tensor 'x' for model 'm' in request."):
        decode_infer_request(message)


def test_surplus_raw_contents() -> None:
    message = request_with()
    message.raw_input_contents.append(b"\0\0\0\0")
    with pytest.raises(InvalidArgument, match="unexpected additional input data for model 'm'"):
        decode_infer_request(message)


def test_unknown_datatype() -> None:
    message = request_with()
    message.inputs[0].datatype = "FLOAT"
    with raises("invalid datatype 'FLOAT'"):
        decode_infer_request(message)


# ---------------------------------------------------------------------------- typed contents

# (datatype, contents field, values sent, the array the core must see)
CONTENTS_CASES: list[tuple[str, str, list[Any], np.ndarray]] = [
    ("BOOL", "bool_contents", [True, False], np.array([True, False])),
    ("INT8", "int_contents", [-1, 127, 300], np.array([-1, 127, 44], dtype=np.int8)),
    ("INT16", "int_contents", [-1, 70000], np.array([-1, 4464], dtype=np.int16)),
    ("INT32", "int_contents", [-(2**31), 5], np.array([-(2**31), 5], dtype=np.int32)),
    ("INT64", "int64_contents", [-(2**63), 5], np.array([-(2**63), 5], dtype=np.int64)),
    ("UINT8", "uint_contents", [255, 256], np.array([255, 0], dtype=np.uint8)),
    ("UINT16", "uint_contents", [65535, 65537], np.array([65535, 1], dtype=np.uint16)),
    ("UINT32", "uint_contents", [2**32 - 1], np.array([2**32 - 1], dtype=np.uint32)),
    ("UINT64", "uint64_contents", [2**64 - 1], np.array([2**64 - 1], dtype=np.uint64)),
    ("FP32", "fp32_contents", [1.5, -2.0], np.array([1.5, -2.0], dtype=np.float32)),
    ("FP64", "fp64_contents", [1e300], np.array([1e300], dtype=np.float64)),
    ("BYTES", "bytes_contents", [b"ab", b""], np.array([b"ab", b""], dtype=np.object_)),
]


def contents_request(datatype: str, field: str, values: list[Any]) -> pb.ModelInferRequest:
    message = pb.ModelInferRequest(model_name="m")
    tensor = message.inputs.add(name="x", datatype=datatype, shape=[len(values)])
    getattr(tensor.contents, field).extend(values)
    return message


@pytest.mark.parametrize(("datatype", "field", "values", "expected"), CONTENTS_CASES)
def test_typed_contents(datatype: str, field: str, values: list[Any], expected: np.ndarray) -> None:
    (tensor,) = decode_infer_request(contents_request(datatype, field, values)).inputs
    assert isinstance(tensor.data, np.ndarray)
    assert tensor.data.dtype == datatypes.from_name(datatype).numpy
    np.testing.assert_array_equal(tensor.data, expected)


@pytest.mark.parametrize(
    ("datatype", "field", "sent"),
    [
        ("INT32", "fp32_contents", "FP32"),
        ("FP16", "fp32_contents", "FP32"),
        ("BF16", "fp32_contents", "FP32"),
        ("INT64", "int_contents", "INT32"),
        ("UINT8", "int_contents", "INT32"),
        ("INT8", "uint_contents", "UINT32"),
        ("FP32", "fp64_contents", "FP64"),
        ("BYTES", "bool_contents", "BOOL"),
        ("UINT64", "bytes_contents", "BYTES"),
    ],
)
def test_contents_field_must_match_datatype(datatype: str, field: str, sent: str) -> None:
    value: Any = b"x" if field == "bytes_contents" else 1
    with raises(
        f"unexpected explicit tensor data for input tensor 'x' for model 'm' of type "
        f"'{sent}', expected datatype '{datatype}'"
    ):
        decode_infer_request(contents_request(datatype, field, [value]))


def test_contents_in_two_fields() -> None:
    message = contents_request("FP32", "fp32_contents", [1.0])
    message.inputs[0].contents.fp64_contents.append(1.0)
    with raises(
        "unexpected explicit tensor data for input tensor 'x' for model 'm', "
        "binary data was already supplied."
    ):
        decode_infer_request(message)


def test_contents_with_raw_input_contents() -> None:
    message = contents_request("FP32", "fp32_contents", [1.0])
    tensor = message.inputs.add(name="y", datatype="FP32", shape=[1])
    assert tensor.name == "y"
    message.raw_input_contents.append(b"\0\0\0\0")
    with raises(
        "contents field must not be specified when using raw_input_contents for 'x' for model 'm'"
    ):
        decode_infer_request(message)


def test_empty_contents_is_a_zero_element_tensor() -> None:
    message = pb.ModelInferRequest(model_name="m")
    message.inputs.add(name="x", datatype="FP16", shape=[0]).contents.SetInParent()
    (tensor,) = decode_infer_request(message).inputs
    assert isinstance(tensor.data, np.ndarray)
    assert tensor.data.dtype == np.float16 and tensor.data.size == 0


# ---------------------------------------------------------------------------- requested outputs


def test_shm_output() -> None:
    output = tc.InferRequestedOutput("y")
    output.set_shared_memory("out_region", 64, offset=16)
    request = decode_infer_request(
        client_request([client_input("x", SAMPLES["FP32"], "FP32")], [output])
    )
    (wanted,) = request.outputs
    assert wanted.shm is not None and wanted.classification == 0
    assert (wanted.shm.region, wanted.shm.byte_size, wanted.shm.offset) == ("out_region", 64, 16)


def output_request(**params: dict[str, Any]) -> pb.ModelInferRequest:
    message = request_with()
    output = message.outputs.add(name="y")
    for key, value in params.items():
        for field, v in value.items():
            setattr(output.parameters[key], field, v)
    return message


def test_classification_type_and_value() -> None:
    with raises("invalid value type for 'classification' parameter, expected int64_param"):
        decode_infer_request(output_request(classification={"uint64_param": 2}))
    for count in (0, -1):
        with raises("invalid value for 'classification' parameter, expected >= 0"):
            decode_infer_request(output_request(classification={"int64_param": count}))


def test_shm_and_classification_on_one_output() -> None:
    with raises("output can't set both 'shared_memory_region' and 'classification'"):
        decode_infer_request(
            output_request(
                classification={"int64_param": 2},
                shared_memory_region={"string_param": "r"},
                shared_memory_byte_size={"int64_param": 8},
            )
        )


def test_output_shm_parameter_errors() -> None:
    with raises(
        "'shared_memory_offset' can not be specified without 'shared_memory_region' "
        "parameter for tensor 'y'"
    ):
        decode_infer_request(output_request(shared_memory_offset={"int64_param": 0}))


# ---------------------------------------------------------------------------- responses


def read_back(message: pb.ModelInferResponse) -> Any:
    """tritonclient's view of what naiad sends."""
    return tc.InferResult(tc_pb.ModelInferResponse.FromString(message.SerializeToString()))


def response_of(*outputs: OutputTensor, **fields: Any) -> InferenceResponse:
    fields.setdefault("model_name", "m")
    fields.setdefault("model_version", 1)
    return InferenceResponse(outputs=list(outputs), **fields)


def output(name: str, array: np.ndarray | None, datatype: str) -> OutputTensor:
    shape = (1, 3) if array is None else array.shape
    return OutputTensor(name, datatypes.from_name(datatype), tuple(shape), array)


@pytest.mark.parametrize("datatype", list(SAMPLES))
def test_every_datatype_reads_back_in_tritonclient(datatype: str) -> None:
    array = SAMPLES[datatype]
    message = encode_infer_response(response_of(output("y", array, datatype)))
    result = read_back(message)
    got = result.as_numpy("y")
    assert got.shape == array.shape
    if datatype == "BYTES":
        np.testing.assert_array_equal(got, array)
    else:
        assert got.dtype == array.dtype and got.tobytes() == array.tobytes()
    assert result.get_output("y").datatype == datatype


def test_header_fields() -> None:
    message = encode_infer_response(response_of(model_name="dense", model_version=12, id="r-9"))
    assert (message.model_name, message.model_version, message.id) == ("dense", "12", "r-9")
    assert len(message.outputs) == len(message.raw_output_contents) == 0


def test_numpy_integer_shapes_are_written_as_ints() -> None:
    """Shapes go to protobuf as they are; a backend may build them from numpy integers."""
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    shape = (np.int64(2), np.int32(3))
    message = encode_infer_response(
        response_of(OutputTensor("y", datatypes.FP32, shape, array))  # type: ignore[arg-type]
    )
    assert list(message.outputs[0].shape) == [2, 3]
    np.testing.assert_array_equal(read_back(message).as_numpy("y"), array)


def test_name_and_id_fall_back_to_the_request() -> None:
    request = InferenceRequest("dense", id="r-1")
    message = encode_infer_response(InferenceResponse(model_version=3), request)
    assert (message.model_name, message.model_version, message.id) == ("dense", "3", "r-1")


def test_one_raw_entry_per_output_with_empty_ones_for_shm_and_zero_bytes() -> None:
    shm = OutputTensor("in_shm", datatypes.FP32, (1, 3), None, SharedMemoryRef("region", 12))
    empty = output("empty", np.zeros((0, 3), dtype=np.float32), "FP32")
    empty_bytes = output("no_strings", np.empty((0,), dtype=np.object_), "BYTES")
    dense = output("dense", SAMPLES["INT32"], "INT32")
    message = encode_infer_response(response_of(shm, empty, dense, empty_bytes))
    assert [o.name for o in message.outputs] == ["in_shm", "empty", "dense", "no_strings"]
    assert list(message.raw_output_contents) == [b"", b"", SAMPLES["INT32"].tobytes(), b""]
    assert list(message.outputs[0].shape) == [1, 3]
    assert list(message.outputs[0].parameters) == []  # no binary_data_size on gRPC
    result = read_back(message)
    np.testing.assert_array_equal(result.as_numpy("dense"), SAMPLES["INT32"])
    assert result.as_numpy("empty").shape == (0, 3)


def test_bf16_output_is_two_bytes_per_element() -> None:
    message = encode_infer_response(response_of(output("y", SAMPLES["BF16"], "BF16")))
    assert len(message.raw_output_contents[0]) == 6


def test_float32_data_for_a_bf16_output_is_converted() -> None:
    data = np.array([1.5, -2.0], dtype=np.float32)
    message = encode_infer_response(response_of(output("y", data, "BF16")))
    assert message.raw_output_contents[0] == data.astype(ml_dtypes.bfloat16).tobytes()


def test_non_contiguous_and_big_endian_outputs() -> None:
    base = np.arange(12, dtype=np.int32).reshape(3, 4)
    strided = output("t", base.T, "INT32")
    big = output("b", np.array([1.0, 2.0], dtype=">f4"), "FP32")
    result = read_back(encode_infer_response(response_of(strided, big)))
    np.testing.assert_array_equal(result.as_numpy("t"), base.T)
    np.testing.assert_array_equal(result.as_numpy("b"), np.array([1.0, 2.0], dtype=np.float32))


def test_classification_strings_read_back() -> None:
    labels = np.array([[b"0.900000:3:fish", b"0.100000:1"]], dtype=np.object_)
    result = read_back(encode_infer_response(response_of(output("y", labels, "BYTES"))))
    np.testing.assert_array_equal(result.as_numpy("y"), labels)


def test_response_parameters() -> None:
    params = {
        "b": True, "i": -5, "big": 2**63, "s": "x", "f": 0.25,
        "np_b": np.bool_(False), "np_i": np.int32(7), "np_f": np.float32(0.5),
    }  # fmt: skip
    message = encode_infer_response(response_of(parameters=params))
    got = {k: (v.WhichOneof("parameter_choice"), getattr(v, v.WhichOneof("parameter_choice")))
           for k, v in message.parameters.items()}  # fmt: skip
    assert got == {
        "b": ("bool_param", True), "i": ("int64_param", -5), "big": ("uint64_param", 2**63),
        "s": ("string_param", "x"), "f": ("double_param", 0.25),
        "np_b": ("bool_param", False), "np_i": ("int64_param", 7), "np_f": ("double_param", 0.5),
    }  # fmt: skip
    assert read_back(message).get_response().parameters["s"].string_param == "x"


def test_unsupported_response_parameter() -> None:
    with pytest.raises(Internal, match="response parameter 'x' has unsupported type list"):
        encode_infer_response(response_of(parameters={"x": [1]}))  # type: ignore[dict-item]


# ---------------------------------------------------------------------------- status codes


def test_every_kind_has_a_status_code() -> None:
    assert set(STATUS_CODES) == set(Kind)
    assert STATUS_CODES[Kind.UNSUPPORTED] is grpc.StatusCode.UNIMPLEMENTED
    assert STATUS_CODES[Kind.INVALID_ARG] is grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize(
    ("kind", "code"),
    [
        (Kind.UNKNOWN, 2), (Kind.INTERNAL, 13), (Kind.NOT_FOUND, 5), (Kind.INVALID_ARG, 3),
        (Kind.UNAVAILABLE, 14), (Kind.UNSUPPORTED, 12), (Kind.ALREADY_EXISTS, 6),
        (Kind.CANCELLED, 1),
    ],
)  # fmt: skip
def test_status_of(kind: Kind, code: int) -> None:
    status, details = status_of(NaiadError.of(kind, "boom"))
    assert status.value[0] == code and details == "boom"
