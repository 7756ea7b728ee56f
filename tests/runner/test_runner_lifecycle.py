"""Starting and stopping runners: lazily, cleanly, and with a clear error when a server fails."""

from __future__ import annotations

import asyncio
import gc
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from support.processes import children, free_port, gone, listening
from support.repository_models import write_model

import naiad
from naiad.core.errors import Kind

pytestmark = pytest.mark.e2e

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "model_repository"
ONE = np.ones((1, 4), np.float32)
NETWORK = ("grpc", "http")
SLOW_MODEL = """
import time

class TritonPythonModel:
    def initialize(self, args):
        time.sleep(60)

    def execute(self, requests):
        return []
"""
SLOW_CONFIG = """
backend: "python"
input [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 1 ] } ]
"""


@pytest.fixture
def small_repo(repo: Path) -> Path:
    write_model(repo, "plus2", 1, 2.0)
    return repo


def _child(runner: naiad.Runner):
    return runner._resources.child


# -- starting ---------------------------------------------------------------------------


@pytest.mark.parametrize("server_type", ["embedded", *NETWORK])
def test_nothing_starts_before_first_use(small_repo, server_type):
    runner = naiad.Runner("lazy", small_repo, server_type=server_type)
    try:
        assert not runner.started
        assert "not started" in repr(runner)
        np.testing.assert_array_equal(runner.plus2.run(ONE)["OUTPUT0"], ONE + 2)
        assert runner.started
    finally:
        runner.close()
    assert "closed" in repr(runner)


def test_a_runner_not_started_checks_a_model_name_on_its_first_call(small_repo):
    runner = naiad.Runner("names", small_repo)
    model = runner.nope  # no I/O in attribute access: async code may write it freely
    assert not runner.started
    try:
        with pytest.raises(naiad.NaiadError, match="has no model 'nope'; its models are plus2"):
            model.run(ONE)
        with pytest.raises(AttributeError):
            runner.also_nope  # noqa: B018  (started now: checked at once)
    finally:
        runner.close()


@pytest.mark.parametrize("server_type", NETWORK)
def test_close_leaves_no_process_and_no_port(small_repo, server_type, caplog):
    caplog.set_level("INFO", logger="naiad.runner")
    with naiad.Runner("tidy", small_repo, server_type=server_type) as runner:
        runner.plus2.run(ONE)
        child = _child(runner)
        port = int(runner._resources.client.address.rpartition(":")[2])
        assert listening(port)
    assert child.returncode is not None
    assert not listening(port)
    runner.close()  # a second close is no error
    with pytest.raises(naiad.NaiadError, match="runner 'tidy' is closed") as info:
        runner.plus2.run(ONE)
    assert info.value.kind is Kind.UNAVAILABLE
    # what the child printed reached the naiad.runner logger
    assert any("[tidy]" in r.getMessage() and "plus2" in r.getMessage() for r in caplog.records)


def test_embedded_close_stops_python_stub_processes(repo):
    shutil.copytree(EXAMPLES / "add_sub_python", repo / "add_sub_python")
    config = repo / "add_sub_python" / "config.pbtxt"  # a stub, though it could run in-process
    config.write_text(
        config.read_text()
        + '\nparameters { key: "NAIAD_EXECUTION_MODE" value: { string_value: "process" } }\n'
    )
    before = children(os.getpid())
    with naiad.Runner("stubs", repo) as runner:
        runner.add_sub_python.run(np.ones(4, np.float32), np.ones(4, np.float32))
        stubs = children(os.getpid()) - before
        assert stubs  # the model's stub process
    assert all(gone(pid) for pid in stubs)


# -- failures at start ---------------------------------------------------------------------


@pytest.mark.parametrize("server_type", NETWORK)
def test_a_child_that_fails_to_start_is_reported(small_repo, server_type):
    (small_repo / "broken").mkdir()
    (small_repo / "broken" / "config.pbtxt").write_text(
        'backend: "onnxruntime"\nmax_batch_sise: 2\n'
    )
    # However patient the runner, a child that exits says so at once (its ready pipe closes).
    runner = naiad.Runner("broken", small_repo, server_type=server_type, startup_timeout=600)
    started = time.monotonic()
    with pytest.raises(naiad.NaiadError, match=r"exited with code 1 while starting") as info:
        runner.start()
    assert time.monotonic() - started < 300
    assert info.value.kind is Kind.UNAVAILABLE
    assert "max_batch_sise" in info.value.message  # its last output says what is wrong
    assert not runner.started
    # fixed meanwhile: the next use starts a new child
    (small_repo / "broken" / "config.pbtxt").write_text(
        'backend: "onnxruntime"\nmax_batch_size: 2\n'
    )
    write_model(small_repo, "broken", 1, 5.0)
    try:
        np.testing.assert_array_equal(runner.broken.run(ONE)["OUTPUT0"], ONE + 5)
    finally:
        runner.close()


def test_embedded_reports_models_that_fail_to_load(small_repo):
    (small_repo / "broken").mkdir()
    (small_repo / "broken" / "config.pbtxt").write_text('backend: "onnxruntime"\n')
    with pytest.raises(
        naiad.NaiadError, match=r"1 model\(s\) failed to load: broken.*--exit-on-error=false"
    ):
        naiad.Runner("broken", small_repo).start()
    with naiad.Runner("rest", small_repo, cli_args=["--exit-on-error=false"]) as runner:
        np.testing.assert_array_equal(runner.plus2.run(ONE)["OUTPUT0"], ONE + 2)


def test_a_child_that_never_listens_is_stopped(repo):
    model = repo / "slow"
    (model / "1").mkdir(parents=True)
    (model / "1" / "model.py").write_text(SLOW_MODEL)
    (model / "config.pbtxt").write_text(SLOW_CONFIG)
    runner = naiad.Runner("slow", repo, server_type="grpc", startup_timeout=1.5)
    with pytest.raises(naiad.NaiadError, match=r"did not start serving within 1.5 s") as info:
        runner.start()
    pid = int(re.search(r"\(pid (\d+)\)", info.value.message).group(1))
    assert gone(pid)


@pytest.mark.parametrize("url", ["http://127.0.0.1:{port}", "grpc://127.0.0.1:{port}"])
def test_a_url_that_refuses_and_later_answers(url, small_repo):
    port = free_port()
    address = url.format(port=port)
    runner = naiad.Runner("remote", url=address)
    with pytest.raises(naiad.NaiadError, match=f"no server answers at {address}") as info:
        runner.start()
    assert info.value.kind is Kind.UNAVAILABLE
    protocol = address.partition(":")[0]
    with naiad.Server(small_repo, **{f"{protocol}_port": port}):  # the server comes up
        with runner:
            np.testing.assert_array_equal(runner.plus2.run(ONE)["OUTPUT0"], ONE + 2)


def test_a_missing_repository(tmp_path):
    with pytest.raises(naiad.NaiadError, match="model repository not found"):
        naiad.Runner("none", tmp_path / "nowhere").start()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cli_args": ["--no-such-flag=1"]}, r"unknown flag\(s\) --no-such-flag=1"),
        ({"cli_args": ["--http-port=eighty"]}, r"--http-port: invalid int value: 'eighty'"),
        ({"cli_args": ["--model-control-mode=sometimes"]}, r"invalid choice: 'sometimes'"),
        ({"cli_args": "--log-verbose=1"}, r"cli_args is a list of flags"),
        ({"server_type": "ftp"}, r"server_type must be one of embedded, grpc, http"),
        ({"url": "ftp://host"}, r"url must start with http://"),
        ({"url": "http://host:8000", "server_type": "grpc"}, r"speaks http, but server_type"),
        ({"url": "http://host", "cli_args": ["--log-verbose=1"]}, r"with url= the server runs"),
    ],
)
def test_arguments_are_checked_when_the_runner_is_made(kwargs, message):
    with pytest.raises(naiad.NaiadError, match=message) as info:
        naiad.Runner("args", **kwargs)
    assert info.value.kind is Kind.INVALID_ARG


def test_a_malformed_flag_value_is_checked_before_start(small_repo):
    runner = naiad.Runner("bad", small_repo, cli_args=["--backend-config=oops"])
    with pytest.raises(naiad.NaiadError, match=r"--backend-config expects <backend>,<key>=<value>"):
        runner.start()


# -- failures later --------------------------------------------------------------------------


@pytest.mark.parametrize("server_type", NETWORK)
def test_a_child_that_dies_is_reported_not_waited_on(small_repo, server_type):
    with naiad.Runner("mortal", small_repo, server_type=server_type) as runner:
        runner.plus2.run(ONE)
        child = _child(runner)
        os.kill(child.pid, signal.SIGKILL)
        child.serve.process.wait(10)
        started = time.monotonic()
        with pytest.raises(naiad.NaiadError, match=r"exited with code -9 and stopped answering"):
            runner.plus2.run(ONE)
        with pytest.raises(naiad.NaiadError, match=r"exited with code -9"):
            runner.get_model_repository_index()
        assert time.monotonic() - started < 10


@pytest.mark.parametrize("server_type", ["embedded", *NETWORK])
def test_metrics_switched_off(small_repo, server_type):
    with naiad.Runner("quiet", small_repo, server_type=server_type,
                      cli_args=["--allow-metrics=false"]) as runner:  # fmt: skip
        with pytest.raises(naiad.NaiadError, match="allow-metrics=false") as info:
            runner.metrics()
        assert info.value.kind is Kind.UNAVAILABLE


# -- the end of a program ----------------------------------------------------------------------

SCRIPT = """
import sys, numpy as np, naiad

runner = naiad.Runner("script", {repo!r}, server_type="grpc")   # at module scope
runner.plus2.run(np.ones((1, 4), np.float32))
child = runner._resources.child
print(child.pid, runner._resources.client.address.rpartition(":")[2], flush=True)
{ending}
"""


@pytest.mark.parametrize(
    "ending",
    [
        "",  # the interpreter exits with the runner still open
        "del runner\nimport gc; gc.collect(); print('collected', flush=True); import time; time.sleep(60)",
        "import time; time.sleep(60)",  # killed with SIGKILL: the child notices its parent is gone
    ],
    ids=["interpreter-exit", "garbage-collected", "parent-killed"],
)
def test_no_child_outlives_its_runner(small_repo, ending):
    code = textwrap.dedent(SCRIPT.format(repo=str(small_repo), ending=ending))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        pid, port = (int(x) for x in proc.stdout.readline().split())
        if "gc.collect" in ending:
            assert proc.stdout.readline().strip() == "collected"
            assert gone(pid)  # while the script still runs
        if "sleep" in ending:
            proc.kill()
        proc.wait(60)
        assert gone(pid)
        assert not listening(port)
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def test_a_runner_collected_in_this_process_stops_its_child(small_repo):
    runner = naiad.Runner("collected", small_repo, server_type="http")
    runner.plus2.run(ONE)
    pid = _child(runner).pid
    del runner
    gc.collect()
    assert gone(pid)


QUIET_SCRIPT = """
import numpy as np, naiad

runner = naiad.Runner("script", {repo!r}, server_type={server_type!r})
one = np.ones(4, np.float32)
print(runner.add_sub_python.run(one, one)["OUTPUT0"].tolist())
"""


@pytest.mark.parametrize("server_type", ["embedded", *NETWORK])
def test_a_script_that_never_closes_its_runner_ends_cleanly(repo, server_type):
    shutil.copytree(EXAMPLES / "add_sub_python", repo / "add_sub_python")
    code = QUIET_SCRIPT.format(repo=str(repo), server_type=server_type)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[2.0, 2.0, 2.0, 2.0]"
    assert "Traceback" not in done.stderr and "Task was destroyed" not in done.stderr


async def test_a_first_async_call_does_not_block_the_event_loop(small_repo):
    """Starting (a child, here) happens off the loop: other tasks keep running meanwhile."""
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    runner = naiad.Runner("async-start", small_repo, server_type="grpc")
    task = asyncio.ensure_future(ticker())
    try:
        await asyncio.sleep(0.05)
        before = ticks
        result = await runner.plus2.async_run(ONE)
        np.testing.assert_array_equal(result["OUTPUT0"], ONE + 2)
        assert ticks - before >= 3  # the child took far longer than three ticks to start
    finally:
        task.cancel()
        await runner.aclose()
