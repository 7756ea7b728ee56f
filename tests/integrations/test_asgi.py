"""``naiad.asgi`` under uvicorn: the bare app, and examples/asgi/mounted.py (FastAPI,
naiad under ``/triton``), called with tritonclient.http and httpx."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import psutil
import pytest
import tritonclient.http as httpclient
from integration_helpers import serving, stop
from support.bombs import gzip_bomb
from support.processes import alive, children, free_port
from tritonclient.utils import InferenceServerException

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SRC = ROOT / "src"

Served = tuple[str, subprocess.Popen, Path]


def _uvicorn(module: str, app_dir: Path, port: int) -> list[str]:
    return [sys.executable, "-m", "uvicorn", module, "--app-dir", str(app_dir),
            "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip


def _env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, PYTHONPATH=path)


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """uvicorn serving ``create_app(model_repository=examples/model_repository)``."""
    folder = tmp_path_factory.mktemp("asgi")
    (folder / "triton_app.py").write_text(
        "import naiad.asgi\n"
        f"app = naiad.asgi.create_app({str(EXAMPLES / 'model_repository')!r},\n"
        "    model_control_mode='explicit', load_models=('*',))\n"
    )
    port = free_port()
    url = f"127.0.0.1:{port}"
    log = folder / "uvicorn.log"
    command = _uvicorn("triton_app:app", folder, port)
    with serving(command, f"http://{url}/v2/health/ready", log, env=_env()) as proc:
        yield url, proc, log


@pytest.fixture(scope="module")
def mounted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """examples/asgi/mounted.py over a repository of add_sub alone."""
    folder = tmp_path_factory.mktemp("mounted")
    shutil.copytree(EXAMPLES / "model_repository" / "add_sub", folder / "models" / "add_sub")
    port = free_port()
    url = f"127.0.0.1:{port}"
    env = dict(_env(), NAIAD_MODEL_REPOSITORY=str(folder / "models"))
    command = _uvicorn("mounted:app", EXAMPLES / "asgi", port)
    with serving(command, f"http://{url}/hello", folder / "uvicorn.log", env=env) as proc:
        yield url, proc, folder / "uvicorn.log"


def _add_sub_inputs(binary: bool) -> tuple[list[httpclient.InferInput], np.ndarray, np.ndarray]:
    a = np.arange(4, dtype=np.float32)
    b = np.full(4, 0.5, dtype=np.float32)
    inputs = [
        httpclient.InferInput("INPUT0", [4], "FP32"),
        httpclient.InferInput("INPUT1", [4], "FP32"),
    ]
    inputs[0].set_data_from_numpy(a, binary_data=binary)
    inputs[1].set_data_from_numpy(b, binary_data=binary)
    return inputs, a, b


def test_health_metadata_and_config(bare: Served) -> None:
    client = httpclient.InferenceServerClient(bare[0])
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("add_sub")
    assert client.get_server_metadata()["name"] == "triton"
    metadata = client.get_model_metadata("add_sub")
    assert [t["name"] for t in metadata["inputs"]] == ["INPUT0", "INPUT1"]
    assert client.get_model_config("add_sub")["platform"] == "onnxruntime_onnx"


@pytest.mark.parametrize("binary", [False, True])
def test_infer_answers_as_the_model_computes(bare: Served, binary: bool) -> None:
    client = httpclient.InferenceServerClient(bare[0])
    inputs, a, b = _add_sub_inputs(binary)
    outputs = [
        httpclient.InferRequestedOutput(n, binary_data=binary) for n in ("OUTPUT0", "OUTPUT1")
    ]
    result = client.infer("add_sub", inputs, outputs=outputs)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)


def test_binary_output_headers_and_compression(bare: Served) -> None:
    url = f"http://{bare[0]}/v2/models/add_sub/infer"
    doc = {
        "inputs": [
            {"name": "INPUT0", "datatype": "FP32", "shape": [4], "data": [1, 2, 3, 4]},
            {"name": "INPUT1", "datatype": "FP32", "shape": [4], "data": [1, 1, 1, 1]},
        ],
        "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}],
    }
    answer = httpx.post(url, json=doc)
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/octet-stream"
    header_length = int(answer.headers["inference-header-content-length"])
    header = json.loads(answer.content[:header_length])
    assert header["outputs"][0]["parameters"]["binary_data_size"] == 16
    np.testing.assert_array_equal(
        np.frombuffer(answer.content[header_length:], np.float32), [2, 3, 4, 5]
    )
    # a gzip request body, and a gzip answer when the client prefers it
    client = httpclient.InferenceServerClient(bare[0])
    inputs, a, b = _add_sub_inputs(True)
    result = client.infer(
        "add_sub", inputs, request_compression_algorithm="gzip",
        response_compression_algorithm="gzip",
    )  # fmt: skip
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
    raw = httpx.post(url, content=gzip.compress(json.dumps(doc).encode()),
                     headers={"Content-Encoding": "gzip", "Accept-Encoding": "gzip"})  # fmt: skip
    assert raw.status_code == 200 and raw.headers["content-encoding"] == "gzip"


def test_a_gzip_bomb_is_refused_at_the_limit(bare: Served) -> None:
    """1 MB of gzip that inflates to 1 GiB: the app inflates one body's worth (64 MiB),
    answers Triton's 400 and keeps serving (before: it inflated the whole gigabyte)."""
    proc = psutil.Process(bare[1].pid)
    before = proc.memory_info().rss
    answer = httpx.post(
        f"http://{bare[0]}/v2/models/add_sub/infer", content=gzip_bomb(),
        headers={"Content-Encoding": "gzip"}, timeout=60,
    )  # fmt: skip
    assert answer.status_code == 400
    assert answer.json()["error"].startswith("decompressed request body exceeds the maximum")
    peak = int(Path(f"/proc/{proc.pid}/status").read_text().split("VmHWM:")[1].split()[0]) * 1024
    assert peak - before < 300 << 20
    assert httpx.get(f"http://{bare[0]}/v2/health/ready").status_code == 200


def test_bad_requests_get_tritons_errors_and_the_app_stays_up(bare: Served) -> None:
    base = f"http://{bare[0]}"
    client = httpclient.InferenceServerClient(bare[0])
    inputs, _, _ = _add_sub_inputs(False)
    with pytest.raises(InferenceServerException) as caught:
        client.infer("no_such_model", inputs)
    # Triton answers an unknown model 404 NOT_FOUND (observed on 2.51)
    assert caught.value.status() == "404"
    assert "Request for unknown model: 'no_such_model'" in caught.value.message()
    unknown = httpx.post(f"{base}/v2/models/no_such_model/infer", json={"inputs": []})
    assert unknown.status_code == 404 and "no_such_model" in unknown.json()["error"]
    malformed = httpx.post(f"{base}/v2/models/add_sub/infer", content=b"{not json")
    assert malformed.status_code == 400 and malformed.json()["error"]
    wrong_shape = httpx.post(f"{base}/v2/models/add_sub/infer", json={"inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": [3], "data": [1, 2, 3]},
        {"name": "INPUT1", "datatype": "FP32", "shape": [4], "data": [1, 1, 1, 1]}]})  # fmt: skip
    assert wrong_shape.status_code == 400 and "shape" in wrong_shape.json()["error"]
    assert httpx.get(f"{base}/v2/nowhere").status_code == 404
    assert httpx.delete(f"{base}/v2/models/add_sub").status_code == 405
    assert client.is_server_ready()


def test_repository_index_unload_and_load(bare: Served) -> None:
    client = httpclient.InferenceServerClient(bare[0])
    index = {m["name"]: m for m in client.get_model_repository_index()}
    assert index["add_sub"]["state"] == "READY" and "identity" in index
    client.unload_model("identity")
    assert not client.is_model_ready("identity")
    client.load_model("identity")
    assert client.is_model_ready("identity")
    data = np.array([[1.5, -2.0]], dtype=np.float32)
    request = httpclient.InferInput("INPUT0", list(data.shape), "FP32")
    request.set_data_from_numpy(data)
    metadata = client.get_model_metadata("identity")
    result = client.infer("identity", [request])
    np.testing.assert_array_equal(result.as_numpy(metadata["outputs"][0]["name"]), data)


def test_generate_and_a_streamed_decoupled_model(bare: Served) -> None:
    base = f"http://{bare[0]}/v2/models"
    one = httpx.post(f"{base}/add_sub/generate", json={"INPUT0": [1, 2, 3, 4], "INPUT1": [1] * 4})
    assert one.status_code == 200 and one.json()["OUTPUT0"] == [2, 3, 4, 5]
    events = []
    with httpx.stream("POST", f"{base}/repeat/generate_stream", json={"IN": [7, 8, 9]}) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        for line in answer.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[len("data: ") :]))
    assert [(e["OUT"], e["IDX"]) for e in events] == [(7, 0), (8, 1), (9, 2)]
    bad = httpx.post(f"{base}/repeat/generate_stream", json={"IN": "x"})
    assert bad.status_code == 400 and bad.json()["error"]


def test_metrics_route(bare: Served) -> None:
    client = httpclient.InferenceServerClient(bare[0])
    inputs, _, _ = _add_sub_inputs(False)
    client.infer("add_sub", inputs)
    metrics = httpx.get(f"http://{bare[0]}/metrics")
    assert metrics.status_code == 200 and metrics.headers["content-type"].startswith("text/plain")
    assert 'nv_inference_request_success{model="add_sub",version="1"}' in metrics.text


def test_mounted_under_a_prefix_beside_the_apps_own_routes(mounted: Served) -> None:
    url = mounted[0]
    hello = httpx.get(f"http://{url}/hello")
    assert hello.json() == {"hello": "world", "models_ready": True}
    client = httpclient.InferenceServerClient(f"{url}/triton")
    assert client.is_server_ready() and client.is_model_ready("add_sub")
    inputs, a, b = _add_sub_inputs(True)
    result = client.infer("add_sub", inputs)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)
    missing = httpx.get(f"http://{url}/triton/v2/models/nothing")
    assert missing.status_code == 404 and "nothing" in missing.json()["error"]
    assert httpx.get(f"http://{url}/v2/models/add_sub").status_code == 404  # FastAPI's own 404
    assert "nv_inference_count" in httpx.get(f"http://{url}/triton/metrics").text


def test_shutdown_stops_the_server(bare: Served, mounted: Served) -> None:
    for _, proc, log in (bare, mounted):
        stubs = children(proc.pid)  # the Python models' stub processes (bare only)
        assert stubs or proc is mounted[1]
        assert stop(proc) in (0, -15)
        assert "Application shutdown complete" in log.read_text()
        assert not any(alive(pid) for pid in stubs)
    assert children(bare[1].pid) == set()
