"""The default ``execution-mode=auto`` on a running server, seen from a client.

A model that only computes answers from the server's process (no stub is
started); one that imports a native library gets its stub, as in Triton,
and survives its own crash without taking the server along; the
backend option and the model parameter still force either mode.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient
from pybackend_helpers import A, B, instances
from pybackend_models import ADD_SUB, add_sub

from naiad.backends.python.process import ProcessInstance
from naiad.backends.python.thread import ThreadInstance

pytestmark = pytest.mark.protocol

#: The README's add_sub: numpy and pb_utils only.
PURE = (
    Path(__file__).parents[3] / "examples/model_repository/add_sub_python/1/model.py"
).read_text()


def _default_mode(repo, name, source=PURE):
    """add_sub with no NAIAD_EXECUTION_MODE: whatever the server's default is."""
    return add_sub(repo, name, source=source)


def _infer(client, model, **parameters):
    inputs = [
        httpclient.InferInput("INPUT0", [4], "FP32"),
        httpclient.InferInput("INPUT1", [4], "FP32"),
    ]
    inputs[0].set_data_from_numpy(A)
    inputs[1].set_data_from_numpy(B)
    return client.infer(model, inputs, parameters=parameters or None)


def test_a_model_that_only_computes_runs_in_the_server(repo, serve, caplog):
    _default_mode(repo, "pure")
    with caplog.at_level(logging.INFO, logger="naiad"):
        server = serve(repo, http=True)
    assert all(isinstance(i, ThreadInstance) for i in instances(server, "pure"))
    assert "Python model 'pure' runs in the server's process" in caplog.text
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    result = _infer(client, "pure")
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), A + B)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), A - B)


def test_a_native_library_keeps_the_stub_and_its_crash_stays_there(repo, serve, caplog):
    _default_mode(repo, "native", ADD_SUB)  # imports ctypes where a request asks it to crash
    _default_mode(repo, "pure")
    with caplog.at_level(logging.INFO, logger="naiad"):
        server = serve(repo, http=True)
    (instance,) = instances(server, "native")
    assert isinstance(instance, ProcessInstance) and instance.pid is not None
    assert "Python model 'native' runs in stub processes: it uses os._exit" in caplog.text
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    np.testing.assert_array_equal(_infer(client, "native").as_numpy("OUTPUT0"), A + B)
    with pytest.raises(Exception, match="Stub process 'native_0_0' is not healthy"):
        _infer(client, "native", crash="segv")
    # The segfault took its stub, not the server: the in-process model still answers.
    np.testing.assert_array_equal(_infer(client, "pure").as_numpy("OUTPUT0"), A + B)
    assert instance.restarted.wait(60)
    np.testing.assert_array_equal(_infer(client, "native").as_numpy("OUTPUT0"), A + B)


def test_several_instances_of_a_pure_model_get_stubs_to_compute_in_parallel(repo, serve, caplog):
    add_sub(repo, "pair", count=2, source=PURE)
    with caplog.at_level(logging.INFO, logger="naiad"):
        server = serve(repo)
    pair = instances(server, "pair")
    assert len(pair) == 2 and all(isinstance(i, ProcessInstance) for i in pair)
    assert "Python model 'pair' runs in stub processes: it has 2 instances" in caplog.text


def test_the_backend_option_forces_stubs(repo, serve):
    _default_mode(repo, "pure")
    server = serve(repo, backend_config={"python": {"execution-mode": "process"}})
    assert all(isinstance(i, ProcessInstance) for i in instances(server, "pure"))


def test_the_model_parameter_wins_over_the_backend_option(repo, serve):
    add_sub(repo, "forced", mode="thread")
    add_sub(repo, "stub", mode="process")
    server = serve(repo, backend_config={"python": {"execution-mode": "process"}})
    assert isinstance(instances(server, "forced")[0], ThreadInstance)
    assert isinstance(instances(server, "stub")[0], ProcessInstance)


def test_an_unknown_mode_is_named(repo, serve):
    _default_mode(repo, "pure")
    server = serve(repo, backend_config={"python": {"execution-mode": "fork"}})
    reason = dict(server.dataplane.failed_models())["pure version 1"]
    assert (
        "execution-mode of the python backend must be one of auto, process, thread, not 'fork'"
        in reason
    )


#: A model that computes in pure Python: 6 ms of its thread's CPU per execution.
BUSY = PURE.replace(
    "    def execute(self, requests):\n",
    "    def execute(self, requests):\n"
    "        start = time.thread_time()\n"
    "        while time.thread_time() - start < 0.006:\n"
    "            pass\n",
).replace("import json", "import json\nimport time")


def test_a_heavy_model_in_the_server_is_told_where_it_belongs(repo, serve, caplog):
    """Its source cannot say how heavy it is: its first executions do, in one warning."""
    assert "import time" in BUSY and "thread_time" in BUSY
    _default_mode(repo, "busy", BUSY)
    _default_mode(repo, "pure")
    server = serve(repo)
    with caplog.at_level(logging.WARNING, logger="naiad"):
        for _ in range(25):
            for model in ("busy", "pure"):
                out = server.infer(model, {"INPUT0": A, "INPUT1": B})
                np.testing.assert_array_equal(out["OUTPUT0"], A + B)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("Python model 'busy' runs in the server's process")
    assert 'string_value: "process"' in warnings[0]


def test_naiad_check_refuses_an_unknown_mode_as_the_load_does(repo, capsys):
    from naiad.cli import main

    _default_mode(repo, "pure")
    assert main(["check", str(repo), "--backend-config", "python,execution-mode=fork"]) == 1
    out = capsys.readouterr().out
    assert "must be one of auto, process, thread, not 'fork'" in out, out
    assert main(["check", str(repo), "--backend-config", "python,execution-mode=process"]) == 0
