"""A request and its response survive the hop to another worker unchanged."""

from __future__ import annotations

import pickle

import ml_dtypes
import numpy as np
import pytest

from naiad.cluster.wire import (
    request_from_wire,
    request_to_wire,
    response_from_wire,
    response_to_wire,
)
from naiad.core import datatypes
from naiad.core.errors import InvalidArgument
from naiad.core.types import (
    InferenceRequest,
    InferenceResponse,
    InferInput,
    OutputTensor,
    RequestedOutput,
    SharedMemoryRef,
)

pytestmark = pytest.mark.unit


def hop(wire):
    return pickle.loads(pickle.dumps(wire, protocol=pickle.HIGHEST_PROTOCOL))


def test_a_request_crosses_whole():
    words = np.array([[b"a", b"bc"]], dtype=object)
    halves = np.arange(4, dtype=ml_dtypes.bfloat16).reshape(1, 4)
    request = InferenceRequest(
        "m",
        [
            InferInput("W", datatypes.BYTES, (1, 2), words, parameters={"p": 1}),
            InferInput("H", datatypes.BF16, (1, 4), halves),
        ],
        model_version=2,
        id="r1",
        outputs=[RequestedOutput("O", 3, SharedMemoryRef("io", 16, 8), {"binary_data": True})],
        parameters={"x": "y"},
        correlation_id="order-1",
        sequence_start=True,
        priority=2,
        timeout_us=500,
    )
    request.trace_context = {"traceparent": "00-1-2-01"}
    back = request_from_wire(hop(request_to_wire(request)))
    assert (back.model_name, back.model_version, back.id, back.parameters) == ("m", 2, "r1",
                                                                                {"x": "y"})  # fmt: skip
    assert (back.correlation_id, back.sequence_start, back.sequence_end) == ("order-1", True, False)
    assert (back.priority, back.timeout_us, back.trace_context) == (2, 500, request.trace_context)
    assert back.inputs[0].datatype is datatypes.BYTES and back.inputs[0].parameters == {"p": 1}
    assert back.inputs[0].array().tolist() == [[b"a", b"bc"]]
    assert back.inputs[1].array().dtype == ml_dtypes.bfloat16
    assert back.inputs[1].array().tolist() == halves.tolist()
    (out,) = back.outputs
    assert (out.name, out.classification, out.parameters) == ("O", 3, {"binary_data": True})
    assert out.shm is not None and (out.shm.region, out.shm.byte_size, out.shm.offset) == (
        "io",
        16,
        8,
    )


def test_a_response_crosses_whole_errors_and_odd_arrays_included():
    response = InferenceResponse(
        "m",
        1,
        "r1",
        [
            OutputTensor("A", datatypes.INT32, (2, 2), np.arange(4, dtype=np.int32).reshape(2, 2)),
            OutputTensor("WIDE", datatypes.INT32, (2,), np.array([1, 2], np.int64)),
            OutputTensor("S", datatypes.FP32, (1, 4), None, SharedMemoryRef("io", 16)),
        ],
        {"sequence_end": True},
        final=False,
    )
    back = response_from_wire(hop(response_to_wire(response)))
    assert [(o.name, o.datatype, o.shape) for o in back.outputs] == [
        ("A", datatypes.INT32, (2, 2)), ("WIDE", datatypes.INT32, (2,)),
        ("S", datatypes.FP32, (1, 4)),
    ]  # fmt: skip
    assert back.outputs[0].data.tolist() == [[0, 1], [2, 3]]
    assert back.outputs[1].data.dtype == np.int64  # as the backend made it
    assert back.outputs[2].data is None and back.outputs[2].shm.region == "io"
    assert (back.parameters, back.final, back.error) == ({"sequence_end": True}, False, None)
    failed = response_from_wire(
        hop(response_to_wire(InferenceResponse("m", error=InvalidArgument("bad"))))
    )
    assert isinstance(failed.error, InvalidArgument) and failed.error.message == "bad"
