"""examples/runner/fastapi_app.py under uvicorn, called over HTTP with httpx."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from integration_helpers import DIGITS, RUNNER_EXAMPLES, serving, stop
from support.processes import alive, children, free_port

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, subprocess.Popen, Path]]:
    port = free_port()
    log = tmp_path_factory.mktemp("fastapi") / "uvicorn.log"
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "uvicorn", "fastapi_app:app", "--app-dir",
               str(RUNNER_EXAMPLES), "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    env = dict(os.environ, GRADIO_ANALYTICS_ENABLED="False")
    with serving(command, f"{url}/health/ready", log, env=env) as proc:
        yield url, proc, log


def test_endpoints_call_the_models(app):
    url = app[0]
    pair = httpx.post(f"{url}/add_sub", json={"a": [1, 2, 3, 4], "b": [1, 1, 1, 1]})
    assert pair.status_code == 200
    assert pair.json() == {"sum": [2, 3, 4, 5], "difference": [0, 1, 2, 3]}
    top = httpx.post(f"{url}/classify", json={"image": DIGITS["3"], "top_k": 2}).json()
    assert list(top)[0] == "three" and len(top) == 2
    lines = httpx.get(f"{url}/count", params={"upto": 4}).text.splitlines()
    assert [json.loads(line)["value"] for line in lines] == [1, 2, 3, 4]


def test_a_bad_input_is_a_400_with_naiads_message_and_no_traceback(app):
    url, _, log = app
    answer = httpx.post(f"{url}/add_sub", json={"a": [1, 2, 3], "b": [1, 1, 1, 1]})
    assert answer.status_code == 400
    assert (
        "input 'INPUT0' of model 'add_sub' must have shape [4]; got [3]" in answer.json()["error"]
    )
    assert httpx.post(f"{url}/add_sub", json={"a": [1, 2, 3, 4], "b": [0] * 4}).status_code == 200
    assert "Traceback" not in log.read_text()  # a client's error is no server error


def test_health_metrics_and_the_gradio_ui(app):
    url = app[0]
    assert httpx.get(f"{url}/health/live").status_code == 200
    httpx.post(f"{url}/add_sub", json={"a": [1, 2, 3, 4], "b": [1, 1, 1, 1]})
    metrics = httpx.get(f"{url}/metrics")
    assert metrics.headers["content-type"].startswith("text/plain")
    assert 'nv_inference_request_success{model="add_sub",version="1"}' in metrics.text
    assert httpx.get(f"{url}/ui/", follow_redirects=True).status_code == 200


def test_shutdown_closes_the_runner(app):
    url, proc, log = app
    assert httpx.get(f"{url}/count", params={"upto": 1}).status_code == 200
    stubs = children(proc.pid)  # the Python models' stub processes
    assert stubs
    assert stop(proc) in (0, -15)  # uvicorn ends by re-raising the signal it handled
    assert "Application shutdown complete" in log.read_text()
    assert not any(alive(pid) for pid in stubs)
