"""The request and response objects survive pickling and copying as they were.

They are compiled (``naiad._compiled``), and a compiled class is made by
calling its constructor: each defines how it is rebuilt.  A pickle or a
``copy`` that lost a field would pass for the object it came from.
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from naiad.core import datatypes
from naiad.core.errors import Unavailable
from naiad.core.types import (
    InferenceRequest,
    InferenceResponse,
    InferInput,
    OutputTensor,
    RequestedOutput,
    SharedMemoryRef,
)

pytestmark = pytest.mark.unit


def _request() -> InferenceRequest:
    region = SharedMemoryRef("region", 16, 8)
    tensor = InferInput(
        "INPUT0", datatypes.FP32, (2, 2), np.arange(4, dtype=np.float32).reshape(2, 2)
    )
    tensor.parameters = {"binary_data_size": 16}
    request = InferenceRequest(
        "model",
        [tensor, InferInput("INPUT1", datatypes.INT32, (1,), None, region)],
        model_version=3,
        id="r-1",
        outputs=[RequestedOutput("OUTPUT0", 2, region, {"binary_data": True})],
        parameters={"custom": "x"},
        correlation_id="sequence-7",
        sequence_start=True,
        priority=1,
        timeout_us=500,
    )
    request.batch_size, request.arrival_ns, request.queue_ns = 2, 11, 5
    request.enable_empty_final_response = True
    request.trace_context = {"traceparent": "00-ab-cd-01"}
    request.template = ("a", 1)
    return request


@pytest.mark.parametrize("clone", [lambda r: pickle.loads(pickle.dumps(r)), copy.deepcopy])
def test_a_request_comes_back_with_every_field(clone) -> None:
    before = _request()
    after = clone(before)
    assert type(after) is InferenceRequest and after is not before
    for name in ("model_name", "model_version", "id", "parameters", "correlation_id",
                 "sequence_start", "sequence_end", "priority", "timeout_us", "batch_size",
                 "arrival_ns", "queue_ns", "enable_empty_final_response", "trace_context",
                 "template", "flags"):  # fmt: skip
        assert getattr(after, name) == getattr(before, name), name
    first, second = after.inputs
    assert (first.name, first.datatype, first.shape, first.parameters) == (
        "INPUT0",
        datatypes.FP32,
        (2, 2),
        {"binary_data_size": 16},
    )
    assert np.array_equal(first.array(), before.inputs[0].array())
    assert second.data is None and repr(second.shm) == "SharedMemoryRef('region', 16, 8)"
    (output,) = after.outputs
    assert (output.name, output.classification, output.parameters) == (
        "OUTPUT0",
        2,
        {"binary_data": True},
    )
    assert (output.shm.region, output.shm.byte_size, output.shm.offset) == ("region", 16, 8)


@pytest.mark.parametrize("clone", [lambda r: pickle.loads(pickle.dumps(r)), copy.copy])
def test_a_response_comes_back_with_its_outputs_or_its_error(clone) -> None:
    data = np.array([1.5, 2.5], dtype=np.float32)
    answer = InferenceResponse("model", 2, "r-1", [OutputTensor("OUT", datatypes.FP32, (2,), data)],
                               {"p": 1}, final=False)  # fmt: skip
    again = clone(answer)
    assert (again.model_name, again.model_version, again.id, again.parameters, again.final) == (
        "model",
        2,
        "r-1",
        {"p": 1},
        False,
    )
    assert again.error is None and np.array_equal(again.as_numpy("OUT"), data)
    failed = clone(InferenceResponse("model", error=Unavailable("model 'model' is not ready")))
    assert isinstance(failed.error, Unavailable)
    assert failed.error.message == "model 'model' is not ready" and failed.outputs == []
