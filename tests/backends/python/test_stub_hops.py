"""Several requests per hop to a stub process: how many batches a busy stub is handed
depends on how long its batches take, and under load frames carry several batches
each way.

A gate holds the stub in one batch (until a file appears) while the test sends
more; what the server handed the stub meanwhile, and how many batches each frame
carried, are read from its connection to the stub.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pybackend_helpers import A, B, instances
from pybackend_models import add_sub
from support.waiting import until

from naiad.backends.python.connection import PIPELINE_NS
from triton_python_backend_utils import _wire

pytestmark = pytest.mark.protocol

#: add_sub in a stub; a request whose INPUT0 starts negative waits for the file "go"
#: in the model's folder (after creating "started"); each batch first sleeps {sleep} s.
GATED = """
import os
import time
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.folder = args["model_repository"]

    def execute(self, requests):
        time.sleep({sleep})
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            if a[0] < 0:
                open(os.path.join(self.folder, "started"), "w").close()
                while not os.path.exists(os.path.join(self.folder, "go")):
                    time.sleep(0.001)
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUTPUT0", a + b), pb_utils.Tensor("OUTPUT1", a - b)]))
        return responses
"""


def _gated_run(server: Any, folder: Path, behind: int) -> int:
    """Hold the stub in one batch, send ``behind`` more; how many batches the stub held.
    Every answer is checked."""
    conn = instances(server, "m")[0]._conn
    scheduler = server.dataplane.registry.get("m").scheduler
    with ThreadPoolExecutor(behind + 1) as pool:
        gate = pool.submit(server.infer, "m", {"INPUT0": A - 10, "INPUT1": B})
        until((folder / "started").exists, "the gated batch to start")
        rest = [
            pool.submit(server.infer, "m", {"INPUT0": A + i, "INPUT1": B}) for i in range(behind)
        ]
        # Every request is either with the stub or still in the scheduler's queue.
        until(
            lambda: len(conn._batches) + len(scheduler._queue) == behind + 1,
            "the requests to arrive",
        )
        time.sleep(0.05)  # a turn or two of the loop, to hand over what it would
        held = len(conn._batches)
        (folder / "go").touch()
        np.testing.assert_array_equal(gate.result(timeout=30)["OUTPUT0"], A - 10 + B)
        for i, future in enumerate(rest):
            out = future.result(timeout=30)
            np.testing.assert_array_equal(out["OUTPUT0"], A + i + B)
            np.testing.assert_array_equal(out["OUTPUT1"], A + i - B)
    return held


def test_a_fast_busy_stub_is_handed_more_than_two_batches(repo, serve):
    folder = add_sub(repo, "m", mode="process", source=GATED.format(sleep=0))
    server = serve(repo)
    conn = instances(server, "m")[0]._conn
    # Until its batches are measured fast: one preempted batch on a loaded machine
    # weighs for a few dozen after it.
    for _ in range(500):
        np.testing.assert_array_equal(
            server.infer("m", {"INPUT0": A, "INPUT1": B})["OUTPUT0"], A + B
        )
        if conn._exec_ns < PIPELINE_NS / 4:
            break
    assert conn._exec_ns < PIPELINE_NS / 4, conn._exec_ns
    assert _gated_run(server, folder, behind=12) > 2


def test_a_slow_stub_is_handed_two_batches(repo, serve):
    folder = add_sub(repo, "m", mode="process", source=GATED.format(sleep=0.005))
    server = serve(repo)
    for _ in range(5):  # 5 ms a batch: two of them hold a millisecond of work
        server.infer("m", {"INPUT0": A, "INPUT1": B})
    assert _gated_run(server, folder, behind=6) == 2


def test_under_load_frames_carry_several_batches_each_way(repo, serve):
    """Bursts of 32 requests at once, until a frame each way carried more than one
    batch: the batches of one loop turn leave together, and the stub reports those that
    ended while others waited together."""
    add_sub(repo, "m", mode="process", source=GATED.format(sleep=0))
    server = serve(repo)
    conn = instances(server, "m")[0]._conn
    done: list[int] = []
    on_done = conn._handlers[_wire.EXEC_DONE]

    def recorded_done(bodies: list[Any]) -> None:
        done.append(len(bodies))
        on_done(bodies)

    conn._handlers[_wire.EXEC_DONE] = recorded_done
    first = conn.link.seq  # the server's frames to this stub are all EXECUTE now
    with ThreadPoolExecutor(32) as pool:
        for _burst in range(50):
            futures = [
                pool.submit(server.infer, "m", {"INPUT0": A + i, "INPUT1": B}) for i in range(32)
            ]
            for i, future in enumerate(futures):
                np.testing.assert_array_equal(future.result(timeout=30)["OUTPUT0"], A + i + B)
            if conn.link.seq - first < sum(done) and max(done) > 1:
                break
    assert conn.link.seq - first < sum(done), (conn.link.seq - first, sum(done))
    assert max(done) > 1, done
    assert not conn._batches  # every batch handed over was reported
