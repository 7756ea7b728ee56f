"""A finished request leaves nothing for the garbage collector.

Objects in a reference cycle outlive their request until a collection runs,
and every collection pauses the event loop; so the request path must free
everything by reference counting alone.  Checked with tritonclient against a
real server: after requests over HTTP, gRPC and a gRPC stream, the objects a
collection finds unreachable include no request or response of naiad's core.
"""

from __future__ import annotations

import gc
import queue
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from support.onnx_models import identity, write_config

from naiad.core.types import InferenceRequest, InferenceResponse, InferInput, OutputTensor

pytestmark = pytest.mark.protocol

CORE_TYPES = (InferenceRequest, InferenceResponse, InferInput, OutputTensor)
X = np.arange(16, dtype=np.float32).reshape(1, 16)


@pytest.fixture
def server(repo: Path, serve):  # type: ignore[no-untyped-def]
    identity(repo / "identity" / "1" / "model.onnx")
    write_config(
        repo / "identity",
        'platform: "onnxruntime_onnx"\nmax_batch_size: 8\n'
        'input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [16] }]\n'
        'output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [16] }]\n',
    )
    return serve(repo, http=True, grpc=True)


@pytest.fixture
def collector_paused() -> Iterator[None]:
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def _cyclic_core_objects() -> list[str]:
    gc.collect()
    return sorted({type(o).__name__ for o in gc.garbage if isinstance(o, CORE_TYPES)})


def test_requests_leave_no_cycles(server, collector_paused) -> None:  # type: ignore[no-untyped-def]
    http = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    grpc = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    outputs_http = [httpclient.InferRequestedOutput("OUTPUT0", binary_data=True)]
    outputs_grpc = [grpcclient.InferRequestedOutput("OUTPUT0")]
    results: queue.Queue = queue.Queue()
    grpc.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        for _ in range(20):
            inputs = [httpclient.InferInput("INPUT0", [1, 16], "FP32")]
            inputs[0].set_data_from_numpy(X)
            answer = http.infer("identity", inputs, outputs=outputs_http)
            np.testing.assert_array_equal(answer.as_numpy("OUTPUT0"), X)
            inputs = [grpcclient.InferInput("INPUT0", [1, 16], "FP32")]
            inputs[0].set_data_from_numpy(X)
            answer = grpc.infer("identity", inputs, outputs=outputs_grpc)
            np.testing.assert_array_equal(answer.as_numpy("OUTPUT0"), X)
            grpc.async_stream_infer("identity", inputs, outputs=outputs_grpc)
            result, error = results.get(timeout=30)
            assert error is None
            np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), X)
    finally:
        grpc.stop_stream()
        grpc.close()
        http.close()
    assert _cyclic_core_objects() == []
