"""``naiad serve --workers 2`` when a worker stops answering, and when the server drains.

A stopped worker (SIGSTOP) still holds its listening sockets, so the kernel
keeps handing it new connections; the supervisor's health check kills it to
restart it, and the other worker's requests passed to it fail with a clear
error instead of waiting for it.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest
from scheduling.sequence_models import acc_state
from support import onnx_models
from support.onnx_models import write_config
from support.workers import DEADLINE_S, Served, infer

pytestmark = pytest.mark.e2e


def _worker_of(conn: http.client.HTTPConnection) -> int:
    """The index of the worker that holds this (keep-alive) connection."""
    conn.request("GET", "/dashboard/api/server")
    reply = conn.getresponse()
    assert reply.status == 200
    return int(json.loads(reply.read())["worker"])


def _connections(served: Served, each: int) -> dict[int, list[http.client.HTTPConnection]]:
    """At least ``each`` keep-alive connections held by each worker (the kernel picks)."""
    held: dict[int, list[http.client.HTTPConnection]] = {0: [], 1: []}
    for _ in range(200):
        if all(len(conns) >= each for conns in held.values()):
            return held
        conn = http.client.HTTPConnection("127.0.0.1", served.http, timeout=DEADLINE_S)
        held[_worker_of(conn)].append(conn)
    raise AssertionError(f"the kernel gave one worker every connection: {held}")


def _close(held: dict[int, list[http.client.HTTPConnection]]) -> None:
    for conns in held.values():
        for conn in conns:
            conn.close()


def _pid_of(served: Served, index: int) -> int:
    (pid,) = [
        w.pid for w in served.workers() if w.environ().get("NAIAD_WORKER_INDEX") == str(index)
    ]
    return pid


def _step(
    conn: http.client.HTTPConnection, corrid: int, value: int, start: bool = False
) -> tuple[int, dict[str, object]]:
    body = json.dumps({
        "inputs": [{"name": "INPUT", "shape": [1, 1], "datatype": "INT32", "data": [value]}],
        "parameters": {"sequence_id": corrid, "sequence_start": start},
    })  # fmt: skip
    conn.request("POST", "/v2/models/acc_state/infer", body)
    reply = conn.getresponse()
    return reply.status, json.loads(reply.read())


def test_a_stopped_worker_is_restarted_and_its_sequences_fail_clearly(repo: Path):
    onnx_models.add_sub(repo / "add_sub" / "1" / "model.onnx", shape=("batch", 4))
    write_config(repo / "add_sub", "max_batch_size: 8\n")
    acc_state(repo)
    served = Served(repo, "--worker-timeout-secs=5")  # a busy machine may starve a loop for 2 s
    held: dict[int, list[http.client.HTTPConnection]] = {}
    try:
        served.wait_ready()
        held = _connections(served, 1)
        victim, healthy = 1, held[0][0]
        victim_pid = _pid_of(served, victim)
        corrid = 3  # owned by worker 3 % 2 == victim
        assert _step(healthy, corrid, 5, start=True) == (200, _step_result(5))

        before = served.workers()
        os.kill(victim_pid, signal.SIGSTOP)
        # Passed to its stopped owner, the step fails with UNAVAILABLE naming the worker:
        # the link's ping timed out, or the supervisor killed the worker first.
        status, body = _step(healthy, corrid, 1)
        assert status == 503, body
        assert f"worker {victim}" in str(body["error"]), body
        served.wait_for(
            rf"worker {victim} \(pid {victim_pid}\) did not answer for 5s "
            r"\(--worker-timeout-secs\); killing it to restart it"
        )
        served.wait_for(rf"worker {victim} \(pid {victim_pid}\) exited with code -9; .* restarting")
        served.wait_replaced(before)  # the new worker serves

        # The sequence's state died with its owner: its next step says so at once ...
        status, body = _step(healthy, corrid, 1)
        assert status == 400 and "must specify the START flag" in str(body["error"]), body
        # ... and a new sequence with that id runs on the new owner.
        assert _step(healthy, corrid, 7, start=True) == (200, _step_result(7))
        # Every new connection is answered again, whichever worker the kernel picks.
        for i in range(40):
            assert infer(served.http, [float(i)] * 4) == [i + 1.0] * 4
        assert served.stop() == 0
    finally:
        _close(held)
        served.stop()
    assert "Traceback" not in "\n".join(served.log)


def _step_result(total: int) -> dict[str, object]:
    return {
        "model_name": "acc_state",
        "model_version": "1",
        "outputs": [{"name": "OUTPUT", "datatype": "INT32", "shape": [1, 1], "data": [total]}],
    }


#: Answers once the file ``release`` exists; says it runs by creating ``running.<pid>``.
HELD = """
import os
import time

import triton_python_backend_utils as pb_utils

FOLDER = {folder!r}


class TritonPythonModel:
    def execute(self, requests):
        open(os.path.join(FOLDER, f"running.{{os.getpid()}}"), "w").close()
        while not os.path.exists(os.path.join(FOLDER, "release")):
            time.sleep(0.05)
        return [
            pb_utils.InferenceResponse([pb_utils.Tensor("OUT", pb_utils.get_input_tensor_by_name(
                r, "IN").as_numpy())])
            for r in requests
        ]
"""


def test_sigterm_closes_idle_keep_alive_connections_while_requests_drain(repo: Path, tmp_path):
    folder = tmp_path / "held"
    folder.mkdir()
    (repo / "held" / "1").mkdir(parents=True)
    (repo / "held" / "1" / "model.py").write_text(textwrap.dedent(HELD.format(folder=str(folder))))
    (repo / "held" / "config.pbtxt").write_text(
        'backend: "python"\nmax_batch_size: 0\n'
        'input [{ name: "IN" data_type: TYPE_FP32 dims: [1] }]\n'
        'output [{ name: "OUT" data_type: TYPE_FP32 dims: [1] }]\n'
    )
    served = Served(repo, "--exit-timeout-secs=600")
    held: dict[int, list[http.client.HTTPConnection]] = {}
    answers: list[http.client.HTTPResponse] = []
    try:
        served.wait_ready()
        held = _connections(served, 3)
        # On each worker, one request that waits for the test, and two idle connections.

        def held_request(conn: http.client.HTTPConnection) -> None:
            body = '{"inputs":[{"name":"IN","shape":[1],"datatype":"FP32","data":[1.0]}]}'
            conn.request("POST", "/v2/models/held/infer", body)
            answers.append(conn.getresponse())

        threads = [
            threading.Thread(target=held_request, args=(conns[0],)) for conns in held.values()
        ]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + DEADLINE_S
        while len(list(folder.glob("running.*"))) < 2:
            assert time.monotonic() < deadline, "the held requests did not start"
            time.sleep(0.05)

        served.proc.send_signal(signal.SIGTERM)
        idle = [conn.sock for conns in held.values() for conn in conns[1:]]
        for sock in idle:
            assert isinstance(sock, socket.socket)
            sock.settimeout(DEADLINE_S)
            assert sock.recv(1) == b""  # closed by the server, nothing said (no 503)
        assert psutil.pid_exists(served.proc.pid) and served.proc.poll() is None  # still draining

        (folder / "release").touch()
        for thread in threads:
            thread.join(DEADLINE_S)
        assert [(a.status, a.getheader("Connection")) for a in answers] == [(200, "close")] * 2
        assert served.proc.wait(DEADLINE_S) == 0
    finally:
        (folder / "release").touch()
        for answer in answers:
            answer.close()
        _close(held)
        served.stop()
