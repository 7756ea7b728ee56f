import numpy as np
import pytest
from google.protobuf import text_format

from naiad.config import model_config_pb2 as pb
from naiad.core import datatypes
from naiad.core.errors import InvalidArgument
from naiad.core.signature import Signature
from naiad.core.types import InferenceRequest, InferInput, RequestedOutput
from naiad.core.validation import validate_request

pytestmark = pytest.mark.unit

BATCHING = """
name: "m" max_batch_size: 8
input [ { name: "A" data_type: TYPE_FP32 dims: [ 16 ] },
        { name: "B" data_type: TYPE_INT32 dims: [ -1 ] optional: true } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 16 ] } ]
"""

RESHAPED = """
name: "r" max_batch_size: 0
input [ { name: "X" data_type: TYPE_FP32 dims: [ 2, -1 ] reshape: { shape: [ -1, 2 ] } } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 4 ] } ]
"""


def signature(text: str) -> Signature:
    return Signature(text_format.Parse(text, pb.ModelConfig()))


def fp32(name: str, shape: tuple[int, ...], data=None) -> InferInput:
    if data is None:
        data = np.zeros(shape, np.float32).tobytes()
    return InferInput(name, datatypes.FP32, shape, data)


def test_wire_buffer_becomes_numpy_view_and_batch_size_is_set():
    raw = bytearray(np.arange(32, dtype=np.float32).tobytes())
    request = InferenceRequest("m", [fp32("A", (2, 16), memoryview(raw))])
    validate_request(request, "m", signature(BATCHING))
    array = request.inputs[0].array()
    assert array.shape == (2, 16) and array.dtype == np.float32
    assert request.batch_size == 2
    raw[0:4] = np.float32(7).tobytes()
    assert array[0, 0] == 7  # a view over the received buffer, not a copy


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ([fp32("C", (1, 16))], "unexpected inference input 'C' for model 'm'"),
        (
            [InferInput("A", datatypes.INT32, (1, 16), b"\0" * 64)],
            "[request id: <id_unknown>] inference input 'A' data-type is 'INT32', "
            "but model 'm' expects 'FP32'",
        ),
        (
            [fp32("A", (16,))],
            "unexpected shape for input 'A' for model 'm'. Expected [-1,16], got [1",
        ),
        ([fp32("A", (1, 15))], "Expected [-1,16], got [1,15]"),
        ([fp32("A", (9, 16))], "inference request batch-size must be <= 8 for 'm'"),
        (
            [fp32("A", (1, 16), b"\0" * 60)],
            "input byte size mismatch for input 'A' for model 'm'. Expected 64, got 60",
        ),
        (
            [],
            "expected 1 inputs but got 0 inputs for model 'm'. Got input(s) [], but missing "
            "required input(s) ['A']. Please provide all required input(s).",
        ),
        (
            [fp32("A", (2, 16)), InferInput("B", datatypes.INT32, (1, 3), b"\0" * 12)],
            "input 'B' batch size does not match other inputs for 'm'",
        ),
    ],
)
def test_bad_requests_get_tritons_messages(inputs, message):
    request = InferenceRequest("m", inputs)
    with pytest.raises(InvalidArgument) as info:
        validate_request(request, "m", signature(BATCHING))
    assert message in info.value.message


def test_optional_input_may_be_omitted_and_outputs_are_checked():
    request = InferenceRequest("m", [fp32("A", (1, 16))], outputs=[RequestedOutput("NOPE")])
    with pytest.raises(InvalidArgument, match="unexpected inference output 'NOPE' for model 'm'"):
        validate_request(request, "m", signature(BATCHING))
    ok = InferenceRequest("m", [fp32("A", (1, 16))], outputs=[RequestedOutput("OUT")])
    validate_request(ok, "m", signature(BATCHING))


def test_reshape_presents_the_backend_shape():
    request = InferenceRequest("r", [fp32("X", (2, 3))])
    validate_request(request, "r", signature(RESHAPED))
    assert request.inputs[0].array().shape == (3, 2)


def test_numpy_input_with_wrong_dtype_is_refused():
    request = InferenceRequest("m", [InferInput("A", datatypes.FP32, (1, 16), np.zeros((1, 16)))])
    with pytest.raises(InvalidArgument, match="data-type is 'FP64'"):
        validate_request(request, "m", signature(BATCHING))


def test_bytes_input_is_decoded():
    sig = signature(
        'name: "s" input [ { name: "T" data_type: TYPE_STRING dims: [ -1 ] } ] '
        'output [ { name: "U" data_type: TYPE_STRING dims: [ -1 ] } ]'
    )
    data = datatypes.serialize_bytes(np.array([b"a", b"bc"], dtype=object))
    request = InferenceRequest("s", [InferInput("T", datatypes.BYTES, (2,), data)])
    validate_request(request, "s", sig)
    assert request.inputs[0].array().tolist() == [b"a", b"bc"]
    short = InferenceRequest("s", [InferInput("T", datatypes.BYTES, (3,), data)])
    with pytest.raises(InvalidArgument, match="expected 3 string elements"):
        validate_request(short, "s", sig)


def test_a_template_is_checked_once_and_its_data_measured_every_time():
    """Requests with one template (frontends/http/templates.py) follow the first one's
    plan: the backend shape with reshape, the batch size; data of another size is
    checked in full, and a template whose inputs are not all raw bytes gets no plan."""
    sig = signature(RESHAPED)
    template = object()

    def reshaped(raw: bytes) -> InferenceRequest:
        request = InferenceRequest("r", [fp32("X", (2, 3), memoryview(raw))])
        request.template = template
        return request

    raw = np.arange(6, dtype=np.float32).tobytes()
    for _ in range(2):
        request = reshaped(raw)
        validate_request(request, "r", sig)
        assert request.inputs[0].array().shape == (3, 2) and request.batch_size == 1
        assert request.inputs[0].array().ravel().tolist() == list(range(6))
    assert list(sig.plans) == [template]
    with pytest.raises(InvalidArgument, match="input byte size mismatch for input 'X'"):
        validate_request(reshaped(raw[:-4]), "r", sig)
    batching = signature(BATCHING)
    words = InferInput("A", datatypes.FP32, (1, 16), np.zeros((1, 16), np.float32))
    request = InferenceRequest("m", [words])
    request.template = template
    validate_request(request, "m", batching)
    assert batching.plans == {}
