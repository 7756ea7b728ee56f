"""``naiad export``: the folder it writes serves the same answers on naiad and on the
reference Triton's Python backend (where it is installed), with no naiad there."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from support.reference import needs_triton
from support.served import naiad_serve
from support.triton import triton_serve

from functions.apps import write_app

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("export")
    app = write_app(root / "src")
    (root / "src" / "notes.txt").write_text("kept beside model.py\n")
    repo = root / "repo"
    done = subprocess.run(
        [sys.executable, "-m", "naiad", "export", str(app), "-o", str(repo),
         "--include", str(root / "src" / "notes.txt")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return repo


def test_the_folder_is_whole(exported: Path) -> None:
    assert sorted(p.name for p in exported.iterdir()) == [
        "add_sub", "count", "fail", "greet", "scale", "tally"]  # fmt: skip
    version = exported / "greet" / "1"
    assert sorted(p.name for p in version.iterdir()) == [
        "app.py", "model.py", "naiad_function.json", "notes.txt"]  # fmt: skip
    spec = json.loads((version / "naiad_function.json").read_text())
    assert (spec["file"], spec["object"]) == ("app.py", "greet")  # relative: the folder moves
    assert 'backend: "python"' in (exported / "greet" / "config.pbtxt").read_text()


def _answers(http: int, grpc: int) -> dict[str, object]:
    """What both servers must agree on, asked over HTTP and a gRPC stream."""
    out: dict[str, object] = {}
    with httpclient.InferenceServerClient(f"127.0.0.1:{http}") as client:

        def infer(model: str, name: str, value: np.ndarray, datatype: str) -> object:
            tensor = httpclient.InferInput(name, list(value.shape), datatype)
            tensor.set_data_from_numpy(value)
            return client.infer(model, [tensor])

        out["greet"] = infer("greet", "name", np.array([b"ann"], dtype=object), "BYTES").as_numpy(
            "output").tolist()  # fmt: skip
        tally = infer("tally", "x", np.ones((2, 3), np.float32), "FP32")
        out["tally"] = (tally.as_numpy("output_0").tolist(), tally.as_numpy("output_1").tolist())
        out["scale"] = infer("scale", "x", np.array([1.0, 2.0]), "FP64").as_numpy("output").tolist()
        try:
            infer("fail", "x", np.ones(1, np.float32), "FP32")
        except Exception as exc:  # noqa: BLE001 (the message is what both must say)
            out["fail"] = "ValueError: x is not welcome here" in str(exc)
    answers: queue.Queue[object] = queue.Queue()
    stream = grpcclient.InferenceServerClient(f"127.0.0.1:{grpc}")
    stream.start_stream(callback=lambda result, error: answers.put(error or result))
    n = grpcclient.InferInput("n", [1], "INT64")
    n.set_data_from_numpy(np.array([3], np.int64))
    stream.async_stream_infer("count", [n])
    out["count"] = [answers.get(timeout=60).as_numpy("output").tolist() for _ in range(3)]  # type: ignore[attr-defined]
    stream.stop_stream()
    stream.close()
    return out


EXPECTED = {
    "greet": [b"hello ann"],
    "tally": ([[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]], [[2], [2]]),
    "scale": [3.0, 6.0],
    "fail": True,
    "count": [[0], [10], [20]],
}


def test_naiad_serves_the_export(exported: Path) -> None:
    with naiad_serve(exported) as served:
        assert _answers(served.http_port, served.grpc_port) == EXPECTED


@needs_triton
def test_triton_serves_the_export(exported: Path) -> None:
    with triton_serve(exported) as (http, grpc):
        assert _answers(http, grpc) == EXPECTED


def test_errors_are_one_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "naiad", "export", str(tmp_path / "none.py"),
                           "-o", str(tmp_path / "repo")], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.strip() == f"naiad export: {tmp_path / 'none.py'}: no such file"
