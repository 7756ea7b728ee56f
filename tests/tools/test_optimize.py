"""``naiad optimize`` end to end: real models built here, optimised through the CLI,
then served by naiad and asked with tritonclient.

Each check compares the served copy with the original run directly in
onnxruntime (or torch), within the drift the tool itself reported.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import tritonclient.http as httpclient
from onnx import TensorProto, helper, numpy_helper
from support.served import naiad_serve

from naiad.cli import main
from naiad.tools.optimize.speed import FASTER, SLOWER, WITHIN

pytestmark = [pytest.mark.e2e, pytest.mark.frameworks]

SIZE, CLASSES = 64, 10
FAST = ["--requests", "20", "--samples", "8"]


def mlp(path: Path, seed: int = 0) -> Path:
    """A two-layer MLP (MatMul+Add+Relu), big enough that INT8 weights change its answers."""
    rng = np.random.default_rng(seed)
    weights = {
        "W1": (rng.standard_normal((SIZE, SIZE)) * 0.2).astype(np.float32),
        "B1": rng.standard_normal(SIZE).astype(np.float32),
        "W2": (rng.standard_normal((SIZE, CLASSES)) * 0.2).astype(np.float32),
        "B2": rng.standard_normal(CLASSES).astype(np.float32),
    }
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["INPUT0", "W1"], ["h"]),
            helper.make_node("Add", ["h", "B1"], ["h1"]),
            helper.make_node("Relu", ["h1"], ["h2"]),
            helper.make_node("MatMul", ["h2", "W2"], ["o"]),
            helper.make_node("Add", ["o", "B2"], ["OUTPUT0"]),
        ],
        "mlp",
        [helper.make_tensor_value_info("INPUT0", TensorProto.FLOAT, ["batch", SIZE])],
        [helper.make_tensor_value_info("OUTPUT0", TensorProto.FLOAT, ["batch", CLASSES])],
        initializer=[numpy_helper.from_array(v, n) for n, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


CONFIG = f"""name: "mlp"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [{{ name: "INPUT0" data_type: TYPE_FP32 dims: [{SIZE}] }}]
output [{{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [{CLASSES}] }}]
"""


@pytest.fixture
def mlp_repo(repo: Path) -> Path:
    mlp(repo / "mlp" / "1" / "model.onnx")
    (repo / "mlp" / "config.pbtxt").write_text(CONFIG)
    return repo


def original(path: Path, batch: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(["OUTPUT0"], {"INPUT0": batch})[0]


def infer_http(port: int, model: str, batch: np.ndarray, name: str = "INPUT0") -> np.ndarray:
    client = httpclient.InferenceServerClient(f"127.0.0.1:{port}")
    try:
        tensor = httpclient.InferInput(name, list(batch.shape), "FP32")
        tensor.set_data_from_numpy(batch)
        result = client.infer(model, [tensor])
        return result.as_numpy(result.get_response()["outputs"][0]["name"])
    finally:
        client.close()


def tree(repo: Path) -> list[str]:
    return sorted(str(p.relative_to(repo)) for p in repo.rglob("*"))


def test_graph_optimisation_adds_a_served_version(mlp_repo: Path, tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    code = main(["optimize", "mlp", "--model-repository", str(mlp_repo), "--into-repository",
                 "--force", "--report", str(report_path), *FAST])  # fmt: skip
    assert code == 0
    assert (mlp_repo / "mlp" / "2" / "model.onnx").is_file()
    assert (mlp_repo / "mlp" / "config.pbtxt").read_text() == CONFIG  # nothing to change
    report = json.loads(report_path.read_text())
    for version in ("before", "after"):
        latency = report["latency"][version]
        assert latency["p50_us"] > 0 and latency["p99_us"] >= latency["p50_us"]
        assert latency["throughput_infer_per_sec"] > 0 and latency["requests"] == 20
    speed = report["speed"]
    assert speed["rounds"] == 5 and speed["requests_per_round"] == 4
    assert len(speed["round_speedups"]) == 5 and speed["verdict"] in (FASTER, WITHIN, SLOWER)
    low, high = speed["interval_95"]
    assert 0 < low <= speed["speedup"] <= high
    assert report["drift"]["max"] <= 1e-3 and report["drift"]["top1_agreement"]["OUTPUT0"] == 1.0
    assert report["accepted"] and (report["refused"] == "") == (speed["verdict"] == FASTER)
    assert report["written"] == [str(mlp_repo / "mlp" / "2" / "model.onnx")]

    batch = np.random.default_rng(5).standard_normal((3, SIZE)).astype(np.float32)
    with naiad_serve(mlp_repo) as served:  # the default policy serves the newest version
        got = infer_http(served.http_port, "mlp", batch)
    expected = original(mlp_repo / "mlp" / "1" / "model.onnx", batch)
    assert np.abs(got - expected).max() <= max(report["drift"]["max"], 1e-5)


def test_quantisation_over_max_drift_is_refused_and_force_writes_it(
    mlp_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], serve: object
) -> None:
    before = tree(mlp_repo)
    report_path = tmp_path / "refused.json"
    args = ["optimize", "mlp", "--model-repository", str(mlp_repo), "--quantize", "dynamic",
            "--output-model", "mlp_int8", *FAST]  # fmt: skip
    assert main([*args, "--report", str(report_path)]) == 1
    err = capsys.readouterr().err.strip()
    errors = [line for line in err.splitlines() if line.startswith("naiad optimize: error:")]
    assert errors == [err.splitlines()[-1]] and "exceeds --max-drift 0.001" in err, err
    assert tree(mlp_repo) == before and not report_path.exists()

    assert main([*args, "--force", "--report", str(report_path)]) == 0
    report = json.loads(report_path.read_text())
    drift = report["drift"]["max"]
    assert 1e-3 < drift < 1.0, "INT8 weights change the answers, a little"
    assert report["size_bytes"]["after"] < report["size_bytes"]["before"] / 2
    assert (mlp_repo / "mlp_int8" / "config.pbtxt").read_text().startswith('name: "mlp_int8"')

    batch = np.random.default_rng(0).standard_normal((1, SIZE)).astype(np.float32)
    server = serve(mlp_repo, http=True)  # type: ignore[operator]
    got = infer_http(server.http_port, "mlp_int8", batch)
    expected = original(mlp_repo / "mlp" / "1" / "model.onnx", batch)
    # Random samples bound the drift only where they reach; allow the same again.
    assert np.abs(got - expected).max() <= 2 * drift


def test_static_quantisation_calibrated_from_a_perf_analyzer_file(
    mlp_repo: Path, tmp_path: Path
) -> None:
    rng = np.random.default_rng(3)
    data = tmp_path / "data.json"
    entries = [{"INPUT0": {"content": rng.standard_normal(SIZE).tolist(), "shape": [SIZE]}}]
    entries += [{"INPUT0": rng.standard_normal(SIZE).tolist()} for _ in range(7)]
    data.write_text(json.dumps({"data": entries}))
    report_path = tmp_path / "report.json"
    code = main([
        "optimize", "mlp", "--model-repository", str(mlp_repo), "--quantize", "static",
        "--calibration-data", str(data), "--input-data", str(data), "--max-drift", "1",
        "--into-repository", "--output-version", "7", "--report", str(report_path),
        "--requests", "10", "--force",
    ])  # fmt: skip
    assert code == 0
    report = json.loads(report_path.read_text())
    assert report["samples"] == 8 and 0 < report["drift"]["max"] <= 1
    assert (mlp_repo / "mlp" / "7" / "model.onnx").is_file()


def test_a_specific_version_policy_gets_the_new_version(mlp_repo: Path, serve: object) -> None:
    config = CONFIG + "version_policy { specific { versions: [1] } }\n"
    (mlp_repo / "mlp" / "config.pbtxt").write_text(config)
    args = ["--into-repository", "--force", *FAST]
    assert main(["optimize", "mlp", "--model-repository", str(mlp_repo), *args]) == 0
    server = serve(mlp_repo)  # type: ignore[operator]
    assert server.model_ready("mlp", "1") and server.model_ready("mlp", "2")


def test_an_onnx_file_to_an_onnx_file(tmp_path: Path) -> None:
    source = mlp(tmp_path / "in.onnx")
    output = tmp_path / "out.onnx"
    code = main(["optimize", "--onnx", str(source), "--output", str(output), "--level", "basic",
                 "--force", *FAST])  # fmt: skip
    assert code == 0
    batch = np.ones((2, SIZE), np.float32)
    np.testing.assert_allclose(original(output, batch), original(source, batch), atol=1e-5)


NET = """
import torch


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(16, 32)
        self.b = torch.nn.Linear(32, 5)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


def build():
    torch.manual_seed(0)
    return Net()
"""


def test_torch_export_matches_torch_and_serves(
    repo: Path, tmp_path: Path, serve: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch = pytest.importorskip("torch")
    (tmp_path / "net.py").write_text(NET)
    report_path = tmp_path / "report.json"
    code = main([
        "optimize", "--torch", f"{tmp_path / 'net.py'}:build", "--shape", "x:16",
        "--output", str(tmp_path / "net.onnx"), "--model-repository", str(repo),
        "--output-model", "net", "--output-names", "scores", "--report", str(report_path),
    ])  # fmt: skip
    assert code == 0
    report = json.loads(report_path.read_text())
    assert report["drift"]["max"] <= 1e-3 and "latency" not in report
    config = (repo / "net" / "config.pbtxt").read_text()
    assert 'platform: "onnxruntime_onnx"' in config and "max_batch_size: 8" in config

    monkeypatch.syspath_prepend(str(tmp_path))
    import net  # the same factory, for torch's own answer

    batch = np.random.default_rng(9).standard_normal((5, 16)).astype(np.float32)
    with torch.inference_mode():
        expected = net.build().eval()(torch.from_numpy(batch)).numpy()
    np.testing.assert_allclose(original_named(tmp_path / "net.onnx", batch), expected, atol=1e-4)
    server = serve(repo, http=True)  # type: ignore[operator]
    got = infer_http(server.http_port, "net", batch, name="x")
    np.testing.assert_allclose(got, expected, atol=1e-4)


def original_named(path: Path, batch: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: batch})[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], "unknown model 'nope'"),
        (["mlp", "--shape", "INPUT0:x"], "--shape 'INPUT0:x'"),
        (["mlp", "--shape", "INPUT1:4"], "input 'INPUT1', which the model does not have"),
        (["mlp", "--version", "3"], "has no version 3"),
        (["mlp", "--quantize", "static"], "needs --calibration-data"),
        (["mlp", "--output-model", "mlp"], "model 'mlp' already exists"),
        (["mlp", "--output-version", "3"], "--output-version is for --into-repository"),
        (["mlp", "--into-repository", "--output-version", "1"], "already has a version 1"),
        (["mlp", "--requests", "3"], "--requests 3 is fewer than --rounds 5"),
        (["--onnx", "missing.onnx", "--output", "x.onnx"], "missing.onnx does not exist"),
        (["--torch", "missing.pt", "--shape", "x:3", "--output", "x.onnx"], "does not exist"),
        (["--torch", "net.py:build", "--output", "x.onnx"], "--torch needs --shape"),
        (["py"], "is not an ONNX model"),
    ],
)
def test_clear_one_line_errors(
    mlp_repo: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (mlp_repo / "py" / "1").mkdir(parents=True)
    (mlp_repo / "py" / "1" / "model.py").write_text("")
    before = tree(mlp_repo)
    repository = [] if args[0].startswith("--") else ["--model-repository", str(mlp_repo)]
    assert main(["optimize", *args, *repository]) == 2
    # Progress lines may come first; the error is one line, the last, with no traceback.
    *progress, err = capsys.readouterr().err.strip().splitlines()
    assert err.startswith("naiad optimize: error: ") and message in err, err
    assert all(line.startswith("naiad optimize: ") and "error" not in line for line in progress)
    assert tree(mlp_repo) == before


EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "model_repository"


def snapshot(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under ``root`` with its modification time and content."""
    return {
        str(p.relative_to(root)): (p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_the_readme_command_leaves_the_examples_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    serve: object,
) -> None:  # fmt: skip
    """README's command, verbatim, run where a user would: examples/ does not change,
    whatever the verdict; with --force the copy lands in ./optimized/, servable."""
    monkeypatch.chdir(tmp_path)
    before = snapshot(EXAMPLES)
    command = ["optimize", "add_sub", "--model-repository", str(EXAMPLES), "--quantize",
               "dynamic", "--max-drift", "0.05"]  # fmt: skip
    code = main(command)
    out, err = capsys.readouterr()
    assert snapshot(EXAMPLES) == before
    assert "dynamic INT8 quantisation: started" in err and "round 5/5: median latency" in err
    verdict = re.search(r"speed-up [0-9.]+x, 95% interval [0-9.]+x to [0-9.]+x over 5 "
                        r"rounds: (.*)", out)  # fmt: skip
    assert verdict is not None, out
    if verdict.group(1) == FASTER:  # the machine decides; both outcomes are checked
        assert code == 0
        shutil.rmtree(tmp_path / "optimized")
    else:
        assert code == 1 and not (tmp_path / "optimized").exists()
        last = err.strip().splitlines()[-1]
        assert last.startswith("naiad optimize: error: refused: the copy is not faster beyond "
                               "noise: speed-up "), last  # fmt: skip
        assert last.endswith("; nothing written (pass --force to write it anyway)"), last

    assert main([*command, "--force"]) == 0
    assert snapshot(EXAMPLES) == before
    written = tmp_path / "optimized" / "add_sub"
    # The model's golden cases (naiad test) travel with it, to check the copy too.
    assert sorted(str(p.relative_to(written)) for p in written.rglob("*")) == [
        "1", "1/model.onnx", "config.pbtxt",
        "tests", "tests/add_and_subtract.json", "tests/wrong_shape.json",
    ]  # fmt: skip
    assert main(["test", str(tmp_path / "optimized")]) == 0
    server = serve(tmp_path / "optimized", http=True)  # type: ignore[operator]
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    try:
        a, b = np.arange(4, dtype=np.float32), np.ones(4, np.float32)
        inputs = [httpclient.InferInput(n, [4], "FP32") for n in ("INPUT0", "INPUT1")]
        inputs[0].set_data_from_numpy(a)
        inputs[1].set_data_from_numpy(b)
        result = client.infer("add_sub", inputs)
        np.testing.assert_allclose(result.as_numpy("OUTPUT0"), a + b, atol=0.05)
    finally:
        client.close()

    # A second run does not overwrite the first.
    assert main(command) == 2
    assert "optimized/add_sub already exists: remove it, or give another --output-dir" in (
        capsys.readouterr().err
    )
