"""naiad on Ray Serve: a local Ray (started by ray_driver.py, a child process), two
replicas behind Ray's HTTP proxy, called with tritonclient.http; one replica killed
while a client keeps asking."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

# Ray starts a controller, a proxy and two replicas, each a process importing Ray: on a
# loaded two-core machine (the parallel suite at its busiest) that took over two minutes.
pytestmark = [pytest.mark.e2e, pytest.mark.frameworks, pytest.mark.timeout(900)]
STARTUP_S = 420

ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).resolve().parent / "ray_driver.py"


class Driver:
    """The child process that holds the Ray driver; one command, one line back."""

    def __init__(self, proc: subprocess.Popen, url: str, log: Path) -> None:
        self.proc = proc
        self.url = url
        self.log = log
        self.lock = threading.Lock()

    def ask(self, command: str, timeout: float = 60) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with self.lock:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
            return _read_line(self.proc, self.log, timeout)


def _read_line(proc: subprocess.Popen, log: Path, timeout: float) -> str:
    """One line of the driver's output, or a failure with its log if none comes."""
    assert proc.stdout is not None
    found: list[str] = []
    reader = threading.Thread(target=lambda: found.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    assert found and found[0], (
        f"the Ray driver said nothing (exit code {proc.poll()}); its log ends:\n"
        + log.read_text(errors="replace")[-4000:]
    )
    return found[0].strip()


@pytest.fixture(scope="module")
def ray_serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Driver]:
    folder = tmp_path_factory.mktemp("ray")
    shutil.copytree(
        ROOT / "examples" / "model_repository" / "add_sub", folder / "models" / "add_sub"
    )
    path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, PYTHONPATH=path, RAY_USAGE_STATS_ENABLED="0")
    log_path = folder / "driver.log"
    log = log_path.open("w")
    proc = subprocess.Popen(
        [sys.executable, str(DRIVER), str(folder / "models"), "2"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, env=env,
    )  # fmt: skip
    try:
        # the driver serves on a free port it picks (Ray Serve's own default is 8000)
        ready = _read_line(proc, log_path, STARTUP_S)
        found = re.fullmatch(r"ready (127\.0\.0\.1:\d+)", ready)
        assert found, log_path.read_text()[-4000:]
        yield Driver(proc, found[1], log_path)
    finally:
        if proc.poll() is None:
            assert proc.stdin is not None
            proc.stdin.write("quit\n")
            proc.stdin.flush()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()
        log.close()


def _infer(client: httpclient.InferenceServerClient, seed: int) -> tuple[np.ndarray, np.ndarray]:
    a = np.arange(4, dtype=np.float32) + seed
    b = np.full(4, seed % 7, dtype=np.float32)
    inputs = [
        httpclient.InferInput("INPUT0", [4], "FP32"),
        httpclient.InferInput("INPUT1", [4], "FP32"),
    ]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b, binary_data=False)
    result = client.infer("add_sub", inputs)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)
    return a, b


def test_tritonclient_through_rays_proxy(ray_serve: Driver) -> None:
    assert ray_serve.ask("replicas") == "2"
    client = httpclient.InferenceServerClient(ray_serve.url)
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("add_sub")
    assert client.get_model_metadata("add_sub")["platform"] == "onnxruntime_onnx"
    for seed in range(20):
        _infer(client, seed)
    with pytest.raises(InferenceServerException) as caught:
        client.get_model_metadata("no_such_model")
    assert caught.value.status() == "404"


def _replaced(driver: Driver, killed: str) -> bool:
    """Whether two replicas run again, neither of them the killed one."""
    replicas = driver.ask("names").split()
    return driver.ask("replicas") == "2" and len(replicas) == 2 and killed not in replicas


def test_a_killed_replica_is_replaced_and_no_answer_is_lost(ray_serve: Driver) -> None:
    answered: list[int] = []
    retries = 0
    stop = time.monotonic() + 240  # a new replica starts as slowly as the first ones
    killed = ""
    seed = 0
    before = ray_serve.ask("names").split()
    assert len(before) == 2
    while len(answered) < 150 or not _replaced(ray_serve, killed):
        assert time.monotonic() < stop, f"{len(answered)} answers, {retries} retries"
        if seed == 30:
            killed = ray_serve.ask("kill")
        for _ in range(50):  # each request is retried until it is answered
            try:
                client = httpclient.InferenceServerClient(ray_serve.url, network_timeout=10)
                _infer(client, seed)
                break
            except (InferenceServerException, ConnectionError, OSError):
                retries += 1
                time.sleep(0.1)
        else:
            pytest.fail(f"request {seed} never answered")
        answered.append(seed)
        seed += 1
    assert killed.startswith("SERVE_REPLICA::")
    assert answered == list(range(seed))
    assert _replaced(ray_serve, killed)
    print(f"{seed} answers, {retries} retries")
