"""Ragged batching: flat ragged inputs, ``batch_input`` and ``batch_output`` (ragged_batching.md).

The ONNX model echoes what the backend fed it, so the tests see the batch
exactly as the model did, through tritonclient over HTTP and gRPC.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http.aio as aiohttpclient
from support import onnx_models
from support.onnx_models import write_config

from naiad.backends.batching import BatchPlan
from naiad.config import parse_config_text as parse_config
from naiad.core import datatypes
from naiad.core.errors import Internal
from naiad.core.types import InferenceRequest, InferInput

pytestmark = pytest.mark.protocol

CONFIG = """backend: "onnxruntime"
max_batch_size: 8
input [{ name: "INPUT" data_type: TYPE_FP32 dims: [-1] allow_ragged_batch: true }]
batch_input [
  { kind: BATCH_ELEMENT_COUNT target_name: "COUNT" data_type: TYPE_INT32 source_input: "INPUT" },
  { kind: BATCH_ACCUMULATED_ELEMENT_COUNT target_name: "ACC" data_type: TYPE_FP32
    source_input: "INPUT" }
]
output [
  { name: "OUT" data_type: TYPE_FP32 dims: [-1] },
  { name: "COUNT_OUT" data_type: TYPE_INT32 dims: [1] },
  { name: "ACC_OUT" data_type: TYPE_FP32 dims: [1] }
]
batch_output [{ target_name: "OUT" kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: "INPUT" }]
instance_group [{ kind: KIND_CPU count: 1 }]
"""
#: Waits for all three requests of the batch test, however slowly they arrive.
WAIT_FOR_THREE = (
    "dynamic_batching { preferred_batch_size: [3] max_queue_delay_microseconds: 30000000 }"
)


@pytest.fixture
def server(repo, serve):
    for name, batching in (("ragged", WAIT_FOR_THREE), ("ragged_now", "dynamic_batching {}")):
        onnx_models.ragged(repo / name / "1" / "model.onnx")
        write_config(repo / name, CONFIG + batching)
    return serve(repo, http=True, grpc=True)


def test_a_ragged_batch_reaches_the_model_flat_with_its_batch_inputs(server):
    widths = [2, 3, 1]

    async def send_all():
        client = aiohttpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
        try:
            calls = []
            for i, width in enumerate(widths):
                data = np.arange(width, dtype=np.float32).reshape(1, width) + 10 * i
                tensor = aiohttpclient.InferInput("INPUT", [1, width], "FP32")
                tensor.set_data_from_numpy(data)
                calls.append(client.infer("ragged", [tensor]))
            return await asyncio.gather(*calls)
        finally:
            await client.close()

    results = asyncio.run(send_all())
    stats = server.statistics("ragged")["model_stats"][0]
    assert (stats["inference_count"], stats["execution_count"]) == (3, 1)  # one batch of three
    for i, (width, result) in enumerate(zip(widths, results, strict=True)):
        # BATCH_SCATTER_WITH_INPUT_SHAPE: each request gets its own slice, in its own shape.
        expected = np.arange(width, dtype=np.float32).reshape(1, width) + 10 * i
        np.testing.assert_array_equal(result.as_numpy("OUT"), expected)
        assert result.as_numpy("COUNT_OUT").tolist() == [[width]]
    # ACC holds running totals in batch order (whichever order the requests arrived
    # in): sorted, they are the running totals of the widths taken in that order.
    ends = sorted(
        (float(r.as_numpy("ACC_OUT")[0, 0]), w) for r, w in zip(results, widths, strict=True)
    )
    assert [end for end, _ in ends] == list(np.cumsum([w for _, w in ends]).astype(float))


def test_a_lone_ragged_request_is_a_batch_of_one(server):
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    data = np.array([[1.5, 2.5, 3.5, 4.5]], dtype=np.float32)
    tensor = grpcclient.InferInput("INPUT", [1, 4], "FP32")
    tensor.set_data_from_numpy(data)
    result = client.infer("ragged_now", [tensor])
    np.testing.assert_array_equal(result.as_numpy("OUT"), data)
    assert result.as_numpy("COUNT_OUT").tolist() == [[4]]
    assert result.as_numpy("ACC_OUT").tolist() == [[4.0]]


def _request(shape: tuple[int, ...]) -> InferenceRequest:
    request = InferenceRequest("m")
    data = np.zeros(shape, np.float32)
    request.inputs.append(InferInput("X", datatypes.FP32, shape, data))
    request.batch_size = shape[0]
    return request


def _plan(kind: str, dims: str = "[-1, -1]") -> BatchPlan:
    return BatchPlan(
        parse_config(
            f'name: "m"\nmax_batch_size: 8\n'
            f'input [{{ name: "X" data_type: TYPE_FP32 dims: {dims} allow_ragged_batch: true }}]\n'
            f'batch_input [{{ kind: {kind} target_name: "B" data_type: TYPE_INT32 '
            'source_input: "X" }]\n'
        )
    )


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("BATCH_ELEMENT_COUNT", [6, 4]),
        ("BATCH_ACCUMULATED_ELEMENT_COUNT", [6, 10]),
        ("BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO", [0, 6, 10]),
        ("BATCH_ITEM_SHAPE", [[3, 1], [3, 1], [2, 2]]),
        ("BATCH_ITEM_SHAPE_FLATTEN", [3, 1, 3, 1, 2, 2]),
    ],
)
def test_every_batch_input_kind(kind, expected):
    # The example of Triton's model_config.proto: a batch-2 [3, 1] and a batch-1 [2, 2] request.
    feed = _plan(kind).gather([_request((2, 3, 1)), _request((1, 2, 2))])
    assert feed["B"].dtype == np.int32
    assert feed["B"].tolist() == expected
    assert feed["X"].shape == (10,)  # the ragged input, end to end


def test_max_element_count_is_carried_by_the_shape():
    feed = _plan("BATCH_MAX_ELEMENT_COUNT_AS_SHAPE").gather(
        [_request((2, 3, 1)), _request((1, 2, 2))]
    )
    assert feed["B"].shape == (6,)


def test_a_scattered_output_of_the_wrong_size_is_an_internal_error():
    plan = BatchPlan(
        parse_config(
            'name: "m"\nmax_batch_size: 8\n'
            'input [{ name: "X" data_type: TYPE_FP32 dims: [-1] allow_ragged_batch: true }]\n'
            'output [{ name: "Y" data_type: TYPE_FP32 dims: [-1] }]\n'
            'batch_output [{ target_name: "Y" source_input: "X" }]\n'
        )
    )
    requests = [_request((1, 3)), _request((1, 2))]
    parts = plan.split({"Y": np.arange(5, dtype=np.float32)}, requests)
    assert [p["Y"].tolist() for p in parts] == [[[0, 1, 2]], [[3, 4]]]
    with pytest.raises(Internal, match="batch output 'Y' has 4 elements"):
        plan.split({"Y": np.zeros(4, np.float32)}, requests)
