"""Request rescheduling (iterative sequences) over HTTP and gRPC with tritonclient.

A model with ``sequence_batching { iterative_sequence: true }`` may release a
request with ``TRITONSERVER_REQUEST_RELEASE_RESCHEDULE``: it runs again in a
later ``execute`` (one decoding step per execution, say) while new requests
join the batch, and the client sees only what the model sends.  Each model
here returns the request flags it saw in every execution, so the number of
executions and the START flag on the first one are evidence, not timing.
"""

from __future__ import annotations

import asyncio
import queue
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.http.aio as aiohttpclient
from pybackend_models import add_sub, write_model
from tritonclient.utils import InferenceServerException

from naiad import Server

pytestmark = pytest.mark.protocol

ITERATIVE = """name: "{name}"
backend: "python"
max_batch_size: 4
input [{{ name: "N" data_type: TYPE_INT32 dims: [1] }}]
output [{{ name: "FLAGS" data_type: TYPE_INT32 dims: [-1] }}]
output [{{ name: "WIDEST" data_type: TYPE_INT32 dims: [1] }}]
sequence_batching {{ iterative_sequence: true }}
{extra}
"""

#: Runs each request N times (N = 0: until another request shares its batch).
COUNTDOWN = """
import time
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.seen = {}

    def execute(self, requests):
        responses = []
        for request in requests:
            cid = request.correlation_id()
            flags, widest = self.seen.setdefault(cid, ([], [0]))
            flags.append(request.flags())
            widest[0] = max(widest[0], len(requests))
            n = int(pb_utils.get_input_tensor_by_name(request, "N").as_numpy().reshape(-1)[0])
            done = len(flags) >= n if n else widest[0] > 1 or len(flags) >= 5000
            if not done:
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                responses.append(None)
                continue
            del self.seen[cid]
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("FLAGS", np.array([flags], dtype=np.int32)),
                pb_utils.Tensor("WIDEST", np.array([widest], dtype=np.int32)),
            ]))
        if len(requests) == 1:
            time.sleep(0.001)  # a lone request waiting for company
        return responses
"""

#: Decoupled: one response per execution, the last one FINAL ({async_}execute).
STEPS = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.flags = {}

    {async_}def execute(self, requests):
        for request in requests:
            flags = self.flags.setdefault(request.correlation_id(), [])
            flags.append(request.flags())
            n = int(pb_utils.get_input_tensor_by_name(request, "N").as_numpy().reshape(-1)[0])
            response = pb_utils.InferenceResponse([
                pb_utils.Tensor("FLAGS", np.array([flags], dtype=np.int32)),
                pb_utils.Tensor("WIDEST", np.array([[len(requests)]], dtype=np.int32)),
            ])
            sender = request.get_response_sender()
            if len(flags) < n:
                sender.send(response)
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
            else:
                del self.flags[request.correlation_id()]
                sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
"""

RESCHEDULE_ANYWAY = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
        return [None for _ in requests]
"""

MODES = ["process", "thread"]


def _model(repo: Path, name: str, source: str, mode: str, decoupled: bool = False) -> None:
    extra = "model_transaction_policy { decoupled: true }\n" if decoupled else ""
    if mode == "thread":
        extra += 'parameters { key: "NAIAD_EXECUTION_MODE" value: { string_value: "thread" } }\n'
    write_model(repo, name, source, ITERATIVE.format(name=name, extra=extra))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    repo = tmp_path_factory.mktemp("reschedule")
    for mode in MODES:
        _model(repo, f"countdown_{mode}", COUNTDOWN, mode)
        _model(repo, f"steps_{mode}", STEPS.replace("{async_}", ""), mode, decoupled=True)
        _model(
            repo, f"steps_async_{mode}", STEPS.replace("{async_}", "async "), mode, decoupled=True
        )
    add_sub(repo, "not_iterative", source=RESCHEDULE_ANYWAY)
    with Server(repo, http_port=0, grpc_port=0) as started:
        yield started


def _n(module: Any, value: int) -> Any:
    tensor = module.InferInput("N", [1, 1], "INT32")
    tensor.set_data_from_numpy(np.array([[value]], dtype=np.int32))
    return tensor


def _stats(client: httpclient.InferenceServerClient, model: str) -> dict[str, Any]:
    return client.get_inference_statistics(model)["model_stats"][0]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_rescheduled_request_runs_again_and_is_answered_once(server, mode, protocol) -> None:
    module = httpclient if protocol == "http" else grpcclient
    port = server.http_port if protocol == "http" else server.grpc_port
    client = module.InferenceServerClient(f"127.0.0.1:{port}")
    stats = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    model = f"countdown_{mode}"
    before = _stats(stats, model)
    # No sequence id: the iterative sequencer gives the request one, with START.
    result = client.infer(model, [_n(module, 4)])
    np.testing.assert_array_equal(result.as_numpy("FLAGS"), [[1, 0, 0, 0]])
    after = _stats(stats, model)
    assert int(after["execution_count"]) - int(before["execution_count"]) == 4
    # Triton counts each execution as a success too.
    success = after["inference_stats"]["success"]["count"]
    assert int(success) - int(before["inference_stats"]["success"]["count"]) == 4
    # The final response ended the sequence: its slot is free for the next one.
    assert server.dataplane.registry.get(model).scheduler.sequence_count == 0


@pytest.mark.parametrize("mode", MODES)
def test_new_requests_join_the_batch_of_a_rescheduled_one(server, mode) -> None:
    """In-flight batching: a request that keeps running is joined by the next one."""

    async def run() -> list[Any]:
        client = aiohttpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
        try:
            first = asyncio.ensure_future(client.infer(f"countdown_{mode}", [_n(aiohttpclient, 0)]))
            await asyncio.sleep(0.05)
            second = await client.infer(f"countdown_{mode}", [_n(aiohttpclient, 0)])
            return [await first, second]
        finally:
            await client.close()

    first, second = asyncio.run(run())
    # The first ran alone, rescheduled itself until the second shared its batch.
    assert first.as_numpy("WIDEST")[0, 0] == 2
    assert len(first.as_numpy("FLAGS")[0]) > 1
    assert second.as_numpy("WIDEST")[0, 0] == 2
    np.testing.assert_array_equal(second.as_numpy("FLAGS"), [[1]])


@pytest.mark.parametrize("model", ["steps", "steps_async"])
@pytest.mark.parametrize("mode", MODES)
def test_a_decoupled_model_streams_one_response_per_execution(server, mode, model) -> None:
    answers: queue.Queue[Any] = queue.Queue()
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    try:
        client.async_stream_infer(f"{model}_{mode}", [_n(grpcclient, 3)], request_id="r")
        got = [answers.get(timeout=30) for _ in range(3)]
    finally:
        client.stop_stream()
    assert [error for _, error in got] == [None, None, None]
    flags = [result.as_numpy("FLAGS").tolist() for result, _ in got]
    assert flags == [[[1]], [[1, 0]], [[1, 0, 0]]]
    assert answers.empty()


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_rescheduling_needs_an_iterative_sequence_model(server, protocol) -> None:
    module = httpclient if protocol == "http" else grpcclient
    port = server.http_port if protocol == "http" else server.grpc_port
    client = module.InferenceServerClient(f"127.0.0.1:{port}")
    a = module.InferInput("INPUT0", [4], "FP32")
    a.set_data_from_numpy(np.zeros(4, dtype=np.float32))
    b = module.InferInput("INPUT1", [4], "FP32")
    b.set_data_from_numpy(np.zeros(4, dtype=np.float32))
    with pytest.raises(InferenceServerException) as info:
        client.infer("not_iterative", [a, b])
    assert "TRITONSERVER_REQUEST_RELEASE_RESCHEDULE" in str(info.value)
    assert "not configured to handle such a flag" in str(info.value)


def test_a_request_that_ended_its_sequence_cannot_run_again(server) -> None:
    """Its END freed the slot, so the rescheduled request has no sequence to go back to.

    (Triton 2.51 leaves such a request unanswered and its instance stuck.)
    """
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    with pytest.raises(InferenceServerException) as info:
        client.infer(
            "countdown_process", [_n(httpclient, 2)],
            sequence_id=78, sequence_start=True, sequence_end=True,
        )  # fmt: skip
    assert "must specify the START flag on the first request of the sequence" in str(info.value)
    np.testing.assert_array_equal(
        client.infer("countdown_process", [_n(httpclient, 2)]).as_numpy("FLAGS"), [[1, 0]]
    )
