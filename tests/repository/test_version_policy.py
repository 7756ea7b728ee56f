"""Which versions a load makes READY, step by step, as the reference Triton 2.51 answers.

One script of explicit loads (the default policy, config overrides of
``version_policy``, a policy that selects nothing, an unload) is run against
naiad over HTTP and gRPC, and against the reference Triton where it is
installed; after each step the repository index and per-version readiness
must equal the table below, which was read off Triton 2.51.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.processes import free_port
from support.reference import TRITONSERVER
from tritonclient.utils import InferenceServerException

pytestmark = pytest.mark.e2e

PYTHON_MODEL = """
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        out = pb_utils.Tensor("OUT", np.array([{version}], np.int32))
        return [pb_utils.InferenceResponse([out]) for _ in requests]
"""
IO = {
    "input": [{"name": "IN", "data_type": "TYPE_INT32", "dims": [1]}],
    "output": [{"name": "OUT", "data_type": "TYPE_INT32", "dims": [1]}],
}
BASE = {"backend": "python", **IO}
NONE_SELECTED = (
    "load failed for model 'm': at least one version must be available under the "
    "version policy of model 'm'"
)
U = "unloaded"

#: (policy of the load, None = the repository's config; error; {version: state})
STEPS: list[tuple[dict[str, Any] | None, str | None, dict[int, str]]] = [
    (None, None, {3: "READY"}),
    ({"all": {}}, None, {1: "READY", 2: "READY", 3: "READY"}),
    ({"specific": {"versions": [1, 3]}}, None, {1: "READY", 2: U, 3: "READY"}),
    ({"latest": {"num_versions": 2}}, None, {1: U, 2: "READY", 3: "READY"}),
    # Nothing selected: the load fails and what serves goes on serving.
    ({"specific": {"versions": [4]}}, NONE_SELECTED, {1: U, 2: "READY", 3: "READY"}),
    # A version that is not on disk is left out.
    ({"specific": {"versions": [2, 4]}}, None, {1: U, 2: "READY", 3: U}),
    # A plain load of an unchanged folder keeps what the last load made of it.
    (None, None, {1: U, 2: "READY", 3: U}),
    ({"latest": {"num_versions": 0}}, NONE_SELECTED, {1: U, 2: "READY", 3: U}),
    ("unload", None, {1: U, 2: U, 3: U}),  # type: ignore[list-item]
    ({"specific": {"versions": [2]}}, None, {1: U, 2: "READY", 3: U}),
]


def make_repository(path: Path) -> Path:
    model = path / "m"
    for version in (1, 2, 3):
        (model / str(version)).mkdir(parents=True)
        (model / str(version) / "model.py").write_text(PYTHON_MODEL.format(version=version))
    (model / "config.pbtxt").write_text(
        'backend: "python"\n'
        'input [{ name: "IN" data_type: TYPE_INT32 dims: [1] }]\n'
        'output [{ name: "OUT" data_type: TYPE_INT32 dims: [1] }]\n'
    )
    return path


def observed(client: Any, protocol: str) -> dict[int, str]:
    """{version: state or reason} from the index, once nothing is UNLOADING any more."""
    deadline = time.monotonic() + 30
    while True:
        index = client.get_model_repository_index()
        if protocol == "grpc":
            rows = [{"version": m.version, "state": m.state, "reason": m.reason}
                    for m in index.models]  # fmt: skip
        else:
            rows = index
        states = {
            int(r["version"]): r["reason"] if r.get("reason") else r["state"]
            for r in rows
            if r.get("version")
        }
        if "UNLOADING" not in states.values() or time.monotonic() > deadline:
            return states
        time.sleep(0.05)


def run_script(client: Any, protocol: str) -> None:
    for step, (policy, error, expected) in enumerate(STEPS):
        try:
            if policy == "unload":
                client.unload_model("m")
            elif policy is None:
                client.load_model("m")
            else:
                client.load_model("m", config=json.dumps({**BASE, "version_policy": policy}))
            answer = None
        except InferenceServerException as exc:
            answer = exc.message().strip()
        assert answer == error, (step, policy, answer)
        assert observed(client, protocol) == expected, (step, policy)
        for version in (1, 2, 3):
            ready = client.is_model_ready("m", str(version))
            assert ready == (expected.get(version) == "READY"), (step, version)
        if "READY" in expected.values():
            newest = max(v for v, s in expected.items() if s == "READY")
            out = client.infer("m", [_input(protocol)]).as_numpy("OUT").tolist()
            assert out == [newest], (step, out)


def _input(protocol: str) -> Any:
    import numpy as np

    module = _module(protocol)
    tensor = module.InferInput("IN", [1], "INT32")
    tensor.set_data_from_numpy(np.array([0], np.int32))
    return tensor


def _module(protocol: str) -> Any:
    import tritonclient.grpc as grpcclient
    import tritonclient.http as httpclient

    return httpclient if protocol == "http" else grpcclient


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_naiad_follows_the_version_policy_as_triton(
    tmp_path: Path, serve: Any, protocol: str
) -> None:
    repo = make_repository(tmp_path / "models")
    server = serve(repo, http=True, grpc=True, model_control_mode="explicit")
    port = server.http_port if protocol == "http" else server.grpc_port
    with _module(protocol).InferenceServerClient(f"127.0.0.1:{port}") as client:
        run_script(client, protocol)


@pytest.fixture
def triton(tmp_path: Path) -> Iterator[int]:
    if not TRITONSERVER.exists():
        pytest.skip(
            "the reference Triton is not installed (scripts/setup-reference.sh installs it)"
        )
    repo = make_repository(tmp_path / "models")
    http = free_port()
    command = [
        str(TRITONSERVER), "--model-repository", str(repo), "--model-control-mode", "explicit",
        "--http-address", "127.0.0.1", "--http-port", str(http), "--allow-grpc", "false",
        "--allow-metrics", "false",
    ]  # fmt: skip
    log = (tmp_path / "triton.log").open("w")
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        import tritonclient.http as httpclient

        deadline = time.monotonic() + 60
        while True:
            try:
                if httpclient.InferenceServerClient(f"127.0.0.1:{http}").is_server_live():
                    break
            except Exception:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "Triton did not start"
            time.sleep(0.2)
        yield http
    finally:
        proc.terminate()
        proc.wait(60)
        log.close()
        shutil.rmtree(repo, ignore_errors=True)


def test_the_table_is_what_triton_answers(triton: int) -> None:
    import tritonclient.http as httpclient

    with httpclient.InferenceServerClient(f"127.0.0.1:{triton}") as client:
        run_script(client, "http")
