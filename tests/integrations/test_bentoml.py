"""examples/runner/bentoml_service.py under ``bentoml serve``, called with BentoML's client."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from integration_helpers import DIGITS, RUNNER_EXAMPLES, serving, stop
from support.processes import alive, children, free_port

bentoml = pytest.importorskip("bentoml")
# BentoML's client calls APIs its dependencies deprecate (pydantic 2.11, pathspec 1.x),
# and leaves its temporary folders to the garbage collector (see conftest.py).
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.frameworks,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]


@pytest.fixture(scope="module")
def service(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, subprocess.Popen, Path]]:
    home = tmp_path_factory.mktemp("bentoml")
    log = home / "serve.log"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "bentoml", "serve", "bentoml_service:NaiadDemo",
               "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    env = dict(os.environ, BENTOML_HOME=str(home / "home"), BENTOML_DO_NOT_TRACK="true")
    with serving(command, f"{url}/readyz", log, cwd=RUNNER_EXAMPLES, env=env) as proc:
        yield url, proc, log


def test_apis_through_bentomls_client(service):
    url = service[0]
    with bentoml.SyncHTTPClient(url) as client:
        assert client.add_sub(a=[1, 2, 3, 4], b=[4, 3, 2, 1]) == {
            "sum": [5, 5, 5, 5],
            "difference": [-3, -1, 1, 3],
        }
        top = client.classify(image=np.array(DIGITS["7"], np.float32), top_k=2)
        assert list(top)[0] == "seven" and len(top) == 2


def test_readiness_and_metrics(service):
    url = service[0]
    assert httpx.get(f"{url}/readyz").status_code == 200
    assert httpx.get(f"{url}/livez").status_code == 200
    with bentoml.SyncHTTPClient(url) as client:
        client.add_sub(a=[1, 2, 3, 4], b=[1, 1, 1, 1])
    metrics = httpx.get(f"{url}/metrics").text
    assert "bentoml_service_request_total" in metrics  # BentoML's own
    assert 'nv_inference_request_success{model="add_sub",version="1"}' in metrics  # naiad's


def test_a_bad_input_reaches_the_client_as_an_error(service):
    url = service[0]
    with (
        bentoml.SyncHTTPClient(url) as client,
        pytest.raises(bentoml.exceptions.BentoMLException) as info,
    ):
        client.add_sub(a=[1, 2, 3], b=[1, 1, 1, 1])
    assert "must have shape [4]" in str(info.value)


def test_stopping_the_service_closes_its_runner(service):
    _, proc, log = service
    workers = children(proc.pid)
    stubs = {stub for worker in workers for stub in children(worker)}
    assert stubs  # the Python models' stubs, under the worker's runner
    stop(proc)
    assert not any(alive(pid) for pid in workers | stubs)


UNLOADS = """
import bentoml
import naiad
from naiad.integrations.bentoml import RunnerService, http_errors


@bentoml.service
class Unloads(RunnerService):
    runner = naiad.Runner(
        "unloads",
        model_repository={repository!r},
        cli_args=["--model-control-mode=explicit", "--load-model=add_sub"],
    )

    @bentoml.api
    @http_errors
    async def add(self, a: list[float], b: list[float]) -> list[float]:
        return (await self.runner.add_sub.async_run(a, b))["OUTPUT0"].tolist()

    @bentoml.api
    async def unload(self) -> str:
        await self.runner.aio.unload_model("add_sub")
        return "unloaded"
"""


def test_client_errors_are_answered_without_a_traceback_in_the_log(tmp_path):
    """A 404 after unload_model, a 400 for a bad input: answers, not server errors."""
    (tmp_path / "unloads.py").write_text(
        UNLOADS.format(repository=str(RUNNER_EXAMPLES.parent / "model_repository"))
    )
    log = tmp_path / "serve.log"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "bentoml", "serve", "unloads:Unloads",
               "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    env = dict(os.environ, BENTOML_HOME=str(tmp_path / "home"), BENTOML_DO_NOT_TRACK="true")
    with serving(command, f"{url}/readyz", log, cwd=tmp_path, env=env):
        pair = {"a": [1, 2, 3, 4], "b": [1, 1, 1, 1]}
        assert httpx.post(f"{url}/add", json=pair).json() == [2, 3, 4, 5]
        bad = httpx.post(f"{url}/add", json={"a": [1, 2, 3], "b": [1, 1, 1, 1]})
        assert bad.status_code == 400
        assert "must have shape [4]" in bad.json()["error"]
        assert httpx.post(f"{url}/unload", json={}).status_code == 200
        for _ in range(3):
            gone = httpx.post(f"{url}/add", json=pair)
            assert gone.status_code == 404, gone.text
            assert "add_sub" in gone.json()["error"]
        text = log.read_text()
    assert "Traceback" not in text, text
    assert "Exception on /add" not in text, text
