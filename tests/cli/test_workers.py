"""``naiad serve --workers 2``: two servers on one port pair, and the supervisor around them."""

from __future__ import annotations

import http.client
import json
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from support import onnx_models
from support.onnx_models import write_config
from support.workers import DEADLINE_S, Served, gone, infer

pytestmark = pytest.mark.e2e


@pytest.fixture
def served(repo: Path) -> Iterator[Served]:
    onnx_models.add_sub(repo / "add_sub" / "1" / "model.onnx", shape=("batch", 4))
    write_config(repo / "add_sub", "max_batch_size: 8\ndynamic_batching { }\n")
    server = Served(repo)
    server.wait_ready()
    yield server
    server.stop()


def _scrape(port: int) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/metrics")
        return conn.getresponse().read().decode()
    finally:
        conn.close()


def _successes(text: str) -> int:
    found = re.search(
        r'^nv_inference_request_success\{model="add_sub",version="1"\} (\d+)', text, re.M
    )
    return int(found.group(1)) if found else 0


def test_both_workers_answer_on_the_same_ports_and_the_metrics_are_their_sum(served):
    assert len(served.workers()) == 2
    # The supervisor tells its parent the public ports once both workers serve ...
    ports = {"http": served.http, "grpc": served.grpc, "metrics": served.metrics}
    assert served.wait_ready() == ports
    # ... and its log names every port it serves, the summed metrics one too.
    served.wait_for(
        rf"2 workers serving HTTP at 127\.0\.0\.1:{served.http}, gRPC at 127\.0\.0\.1:"
        rf"{served.grpc}, metrics \(the sum of the workers'\) at 127\.0\.0\.1:{served.metrics}$"
    )
    for i in range(60):
        assert infer(served.http, [float(i)] * 4) == [i + 1.0] * 4
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{served.grpc}")
    tensors = [grpcclient.InferInput(n, [1, 4], "FP32") for n in ("INPUT0", "INPUT1")]
    for tensor in tensors:
        tensor.set_data_from_numpy(np.full((1, 4), 2.0, np.float32))
    result = client.infer("add_sub", tensors)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), np.full((1, 4), 4.0))

    # Each worker's own metrics port is in its log; the public one sums them.
    private = [
        int(m.group(1))
        for m in served.wait_for(r"started metrics service at 127\.0\.0\.1:(\d+)", 2)
    ]
    each = [_successes(_scrape(port)) for port in private]
    assert all(count > 0 for count in each), each  # the kernel spread the connections
    assert sum(each) == 61
    assert _successes(_scrape(served.metrics)) == 61
    # So is the statistics extension, whichever worker answers, over HTTP and gRPC.
    for _ in range(4):  # on new connections: either worker may take the call
        conn = http.client.HTTPConnection("127.0.0.1", served.http, timeout=30)
        conn.request("GET", "/v2/models/add_sub/stats")
        stats = json.loads(conn.getresponse().read())["model_stats"]
        conn.close()
        assert [(s["name"], s["inference_count"]) for s in stats] == [("add_sub", 61)]
        assert stats[0]["inference_stats"]["success"]["count"] == 61
    grpc_stats = client.get_inference_statistics("add_sub").model_stats
    assert [(s.name, s.inference_count) for s in grpc_stats] == [("add_sub", 61)]


def test_a_killed_worker_is_replaced_while_the_other_serves(served):
    before = served.workers()
    victim = before[0]
    victim.kill()
    served.wait_for(rf"worker \d \(pid {victim.pid}\) exited with code -9; .* restarting it")
    # Meanwhile every request gets an answer from the survivor (a connection the dead
    # worker had accepted fails; a client retries it, as after any server crash).
    for i in range(20):
        for _attempt in range(3):
            try:
                assert infer(served.http, [float(i)] * 4) == [i + 1.0] * 4
                break
            except (ConnectionError, http.client.HTTPException):
                continue
        else:
            raise AssertionError(f"request {i} failed three times")
    served.wait_replaced(before)  # the new worker serves
    served.wait_for(r"started metrics service", 3)  # and its log says where
    assert served.stop() == 0


def test_sigterm_drains_every_worker(served):
    workers = served.workers()
    assert served.stop() == 0
    assert all(gone(w) for w in workers)
    assert "Traceback" not in "\n".join(served.log)


def test_workers_of_a_killed_supervisor_stop_by_themselves(served):
    workers = served.workers()
    served.proc.kill()
    deadline = time.monotonic() + DEADLINE_S
    while not all(gone(w) for w in workers):
        assert time.monotonic() < deadline, "workers outlived their supervisor:\n" + "\n".join(
            served.log
        )
        time.sleep(0.1)


def test_a_metrics_port_in_use_is_one_line_and_no_worker_starts(repo):
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        served = Served(repo, f"--metrics-port={port}")
        assert served.proc.wait(DEADLINE_S) == 1
        served.stop()
    assert any(f"--metrics-port {port}: cannot be bound" in line for line in served.log)
    assert not any("Traceback" in line for line in served.log)
