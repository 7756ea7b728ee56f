"""``naiad serve --workers 2``: a state change when a worker dies or fails it.

The supervisor orders every change and keeps the journal; the worker that took
the call applies it first, then the others.  These are the cases where that
order meets a failure: the worker that took a load dies before the others
applied it, and a load that one worker cannot apply after the other did.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import tritonclient.http as httpclient
from support.workers import DEADLINE_S, Served

pytestmark = pytest.mark.e2e

CONFIG = """
backend: "python"
max_batch_size: 0
input [{ name: "IN", data_type: TYPE_FP32, dims: [ 2 ] }]
output [{ name: "OUT", data_type: TYPE_FP32, dims: [ 2 ] }]
"""

#: Initialises slowly, leaving a file named after its worker's pid when it starts to.
SLOW = """
import os, time
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        open(os.path.join(MARKS, str(os.getppid())), "w").close()
        time.sleep(4)

    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy())]) for r in requests]
"""

#: Cannot be initialised on worker 1 (its environment says which worker it is).
NOT_ON_ONE = """
import os
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        if os.environ.get("NAIAD_WORKER_INDEX") == "1":
            raise pb_utils.TritonModelException("this model cannot start on worker 1")

    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy())]) for r in requests]
"""


def _model(repo: Path, name: str, source: str) -> None:
    (repo / name / "1").mkdir(parents=True)
    (repo / name / "config.pbtxt").write_text(CONFIG)
    (repo / name / "1" / "model.py").write_text(source)


def _ready_on_fresh_connections(served: Served, model: str) -> set[bool]:
    """Whether ``model`` is ready, as each of 8 new connections (both workers) says."""
    answers = set()
    for _ in range(8):
        client = httpclient.InferenceServerClient(f"127.0.0.1:{served.http}")
        try:
            answers.add(client.is_model_ready(model))
        finally:
            client.close()
    return answers


def _eventually(condition, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def test_a_load_whose_worker_dies_midway_still_reaches_every_worker(tmp_path: Path) -> None:
    repo, marks = tmp_path / "models", tmp_path / "marks"
    marks.mkdir()
    _model(repo, "slow", f"MARKS = {str(marks)!r}\n" + SLOW)
    served = Served(repo, "--model-control-mode=explicit")
    try:
        served.wait_ready()
        before = {w.pid: w for w in served.workers()}

        def load() -> None:
            client = httpclient.InferenceServerClient(f"127.0.0.1:{served.http}")
            try:
                client.load_model("slow")
            except Exception:  # its worker is killed under it: the connection drops
                pass
            finally:
                client.close()

        loading = threading.Thread(target=load, daemon=True)
        loading.start()
        _eventually(lambda: any(marks.iterdir()), "no worker started the load")
        (first,) = [int(p.name) for p in marks.iterdir()]
        assert first in before  # the worker that took the call applies it first ...
        before[first].kill()  # ... and dies while it does
        loading.join(DEADLINE_S)
        # The other worker applied it, and the restarted one replayed it from the journal.
        served.wait_for(r"worker \d went while applying LoadModel: the others apply it")
        served.wait_replaced(list(before.values()))
        _eventually(
            lambda: _ready_on_fresh_connections(served, "slow") == {True},
            "the load did not reach every worker:\n" + "\n".join(served.log),
        )
        assert any("applying 1 change(s) the other workers made" in line for line in served.log)
        assert served.stop() == 0
    finally:
        served.stop()


def test_a_load_one_worker_cannot_apply_fails_and_restarts_that_worker(tmp_path: Path) -> None:
    repo = tmp_path / "models"
    _model(repo, "picky", NOT_ON_ONE)
    served = Served(repo, "--model-control-mode=explicit")
    try:
        served.wait_ready()
        before = served.workers()
        # Taken by worker 1 the load fails there and changes nothing; try new connections
        # until worker 0 takes it, applies it, and worker 1 then fails it.
        message = ""
        for _ in range(40):
            client = httpclient.InferenceServerClient(f"127.0.0.1:{served.http}")
            try:
                client.load_model("picky")
            except httpclient.InferenceServerException as exc:
                message = str(exc)
            finally:
                client.close()
            assert "cannot start on worker 1" in message
            if "restarting to catch up" in message:
                break
            assert _ready_on_fresh_connections(served, "picky") == {False}  # nothing changed
        assert "(on worker 1, restarting to catch up)" in message
        # Worker 1 is restarted to replay the journal, cannot apply the load again,
        # says so, and serves without the model; worker 0 keeps it.
        served.wait_replaced(before)
        served.wait_for(r"worker 1 restarts to replay the server's changes")
        served.wait_for(r"could not apply LoadModel as the other workers did")
        assert _ready_on_fresh_connections(served, "picky") == {True, False}
        assert served.stop() == 0
        assert "Traceback" not in "\n".join(served.log)
    finally:
        served.stop()
