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
