"""``ensemble_scheduling.max_inflight_requests`` (Triton's per-step limit, shared by all of an
ensemble's requests): a decoupled producer fans out faster than a slow step with four
instances can take; each answer carries when the slow step ran, so the test reads how many
of its requests overlapped.  With the limit of 2, never more than 2; the same graph without
the limit overlaps more (the measure can see it)."""

from __future__ import annotations

import queue
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from support.served import Served, naiad_serve

pytestmark = pytest.mark.protocol

COUNT = 8

PRODUCER = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            count = int(pb_utils.get_input_tensor_by_name(request, "COUNT").as_numpy()[0])
            sender = request.get_response_sender()
            for i in range(count):
                sender.send(pb_utils.InferenceResponse(
                    [pb_utils.Tensor("ITEM", np.array([i], dtype=np.float64))]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
"""

SLOW = """
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        start = time.monotonic()
        time.sleep(0.15)
        end = time.monotonic()
        return [
            pb_utils.InferenceResponse([pb_utils.Tensor("SPAN", np.array([start, end]))])
            for _ in requests
        ]
"""


def _write(repo: Path, name: str, config: str, model_py: str | None = None) -> None:
    (repo / name / "1").mkdir(parents=True, exist_ok=True)
    if model_py is not None:
        (repo / name / "1" / "model.py").write_text(model_py)
    (repo / name / "config.pbtxt").write_text(textwrap.dedent(config))


def _ensemble(repo: Path, name: str, limit: str) -> None:
    _write(repo, name, f"""
        platform: "ensemble"
        input [{{ name: "COUNT" data_type: TYPE_INT32 dims: [1] }}]
        output [{{ name: "SPAN" data_type: TYPE_FP64 dims: [2] }}]
        ensemble_scheduling {{
          {limit}
          step [
            {{ model_name: "producer"
              input_map {{ key: "COUNT" value: "COUNT" }}
              output_map {{ key: "ITEM" value: "item" }} }},
            {{ model_name: "slow"
              input_map {{ key: "ITEM" value: "item" }}
              output_map {{ key: "SPAN" value: "SPAN" }} }}
          ]
        }}
    """)  # fmt: skip


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    repo = tmp_path_factory.mktemp("max_inflight")
    _write(repo, "producer", """
        backend: "python"
        input [{ name: "COUNT" data_type: TYPE_INT32 dims: [1] }]
        output [{ name: "ITEM" data_type: TYPE_FP64 dims: [1] }]
        model_transaction_policy { decoupled: true }
    """, PRODUCER)  # fmt: skip
    _write(repo, "slow", """
        backend: "python"
        input [{ name: "ITEM" data_type: TYPE_FP64 dims: [1] }]
        output [{ name: "SPAN" data_type: TYPE_FP64 dims: [2] }]
        instance_group [{ kind: KIND_CPU count: 4 }]
    """, SLOW)  # fmt: skip
    _ensemble(repo, "limited", "max_inflight_requests: 2")
    _ensemble(repo, "unlimited", "")
    with naiad_serve(repo) as server:
        yield server


def spans(served: Served, model: str) -> list[tuple[float, float]]:
    """Every response's [start, end] of the slow step, streamed over gRPC."""
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{served.grpc_port}")
    results: queue.Queue[Any] = queue.Queue()
    client.start_stream(callback=lambda result, error: results.put((result, error)))
    found = []
    try:
        count = grpcclient.InferInput("COUNT", [1], "INT32")
        count.set_data_from_numpy(np.array([COUNT], dtype=np.int32))
        client.async_stream_infer(model, [count], enable_empty_final_response=True)
        while True:
            result, error = results.get(timeout=60)
            assert error is None, error
            span = result.as_numpy("SPAN")
            if span is not None:
                found.append((float(span[0]), float(span[1])))
            if result.get_response().parameters["triton_final_response"].bool_param:
                break
    finally:
        client.stop_stream()
        client.close()
    return found


def most_at_once(found: list[tuple[float, float]]) -> int:
    events = sorted([(s, 1) for s, _ in found] + [(e, -1) for _, e in found])
    running = most = 0
    for _, change in events:  # an end sorts before a start at the same instant
        running += change
        most = max(most, running)
    return most


def test_the_limit_holds_the_slow_step_to_two_requests_at_once(served: Served) -> None:
    found = spans(served, "limited")
    assert len(found) == COUNT
    assert most_at_once(found) <= 2


def test_without_the_limit_the_same_graph_runs_more_at_once(served: Served) -> None:
    found = spans(served, "unlimited")
    assert len(found) == COUNT
    assert most_at_once(found) > 2
