"""What a model version holds in memory (engine/memory.py): measured at load, reported in
the statistics extension over HTTP and gRPC and as ``naiad_model_memory_bytes``, gone at
unload.  Loaded one at a time, each model's figure is its own (how the figures of models
loaded side by side are shared out: test_memory_ledger.py)."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from support import onnx_models
from support.onnx_models import write_config
from support.served import Served, naiad_serve

pytestmark = pytest.mark.protocol

MiB = 1 << 20

MODEL_PY = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.table = np.ones({size} // 8, dtype=np.float64)  # written: every page resident

    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            out = pb_utils.Tensor("OUTPUT0", x + np.float32(self.table[0]))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
"""

PYTHON_CONFIG = """
backend: "python"
input [{{ name: "INPUT0" data_type: TYPE_FP32 dims: [4] }}]
output [{{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [4] }}]
{extra}
"""
STUBS = 'parameters { key: "NAIAD_EXECUTION_MODE" value: { string_value: "process" } }'


def python_model(repo: Path, name: str, size: int, extra: str = "") -> None:
    (repo / name / "1").mkdir(parents=True)
    (repo / name / "1" / "model.py").write_text(MODEL_PY.format(size=size))
    (repo / name / "config.pbtxt").write_text(PYTHON_CONFIG.format(extra=extra))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    repo = tmp_path_factory.mktemp("memory")
    python_model(repo, "big", 96 * MiB)  # in the server's process (execution-mode=auto)
    python_model(repo, "small", 1 * MiB)
    python_model(repo, "stubbed", 64 * MiB, STUBS)
    onnx_models.identity(repo / "onnx" / "1" / "model.onnx", shape=["batch", 4])
    write_config(repo / "onnx", 'backend: "onnxruntime"\nmax_batch_size: 8\n')
    flags = ("--model-control-mode", "explicit", "--load-model", "*")
    with naiad_serve(repo, *flags, "--model-load-thread-count", "1") as served:
        yield served


def http_memory(served: Served, model: str) -> list[dict[str, object]]:
    client = httpclient.InferenceServerClient(f"127.0.0.1:{served.http_port}")
    try:
        stats = client.get_inference_statistics(model)["model_stats"]
    finally:
        client.close()
    assert len(stats) == 1
    return list(stats[0]["memory_usage"])


def host_bytes(served: Served, model: str) -> int:
    usage = http_memory(served, model)
    assert [(u["type"], u["id"]) for u in usage] == [("CPU", 0)], usage
    return int(usage[0]["byte_size"])  # type: ignore[call-overload]


def test_each_version_reports_the_memory_it_took(server: Served) -> None:
    big, small, stubbed = (host_bytes(server, m) for m in ("big", "small", "stubbed"))
    assert big >= 96 * MiB  # its table, in the server's own memory
    assert stubbed >= 64 * MiB  # its table, in its stub process
    assert small < 32 * MiB  # loaded after (or before) "big": none of big's table
    assert host_bytes(server, "onnx") >= 0  # measured, whatever the session took


def test_grpc_reports_the_same_figures(server: Served) -> None:
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    try:
        for model in ("big", "stubbed"):
            stats = client.get_inference_statistics(model).model_stats
            usage = [(m.type, m.id, m.byte_size) for m in stats[0].memory_usage]
            assert usage == [("CPU", 0, host_bytes(server, model))]
    finally:
        client.close()


def metrics(served: Served) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{served.ports['metrics']}/metrics") as resp:
        return str(resp.read().decode())


def gauge(text: str, model: str) -> float | None:
    pattern = rf'^naiad_model_memory_bytes{{model="{model}",type="CPU",version="1"}} (\S+)$'
    match = re.search(pattern, text, re.MULTILINE)
    return None if match is None else float(match.group(1))


def test_the_gauge_follows_the_statistics_and_goes_at_unload(server: Served) -> None:
    text = metrics(server)
    assert "# TYPE naiad_model_memory_bytes gauge" in text
    assert gauge(text, "stubbed") == host_bytes(server, "stubbed")
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    try:
        client.unload_model("small")
        assert gauge(metrics(server), "small") is None
        client.load_model("small")
        assert gauge(metrics(server), "small") == host_bytes(server, "small")
        x = httpclient.InferInput("INPUT0", [4], "FP32")
        x.set_data_from_numpy(np.zeros(4, np.float32))
        result = client.infer("small", [x])  # the model still answers after it all
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), np.ones(4, np.float32))
    finally:
        client.close()


GPU_CONFIG = """
backend: "pytorch"
input [{ name: "INPUT__0" data_type: TYPE_FP32 dims: [4] }]
output [{ name: "OUTPUT__0" data_type: TYPE_FP32 dims: [4] }]
instance_group [{ kind: KIND_GPU gpus: [0] }]
"""


@pytest.mark.filterwarnings(r"ignore:`torch\.jit\.(script|save)` is deprecated:Warning")
def test_a_model_on_a_gpu_reports_its_gpu_memory(tmp_path: Path) -> None:
    """Needs a CUDA device, torch and naiad[gpu] (NVML); skipped without them."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    pynvml = pytest.importorskip("pynvml")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        pytest.skip(f"NVML cannot be used here: {exc}")

    class Weights(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(64 << 20))  # 256 MiB of FP32

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.weight[0]

    model_dir = tmp_path / "models" / "weights"
    (model_dir / "1").mkdir(parents=True)
    torch.jit.script(Weights()).save(str(model_dir / "1" / "model.pt"))
    (model_dir / "config.pbtxt").write_text(GPU_CONFIG)
    with naiad_serve(tmp_path / "models") as served:
        usage = {(u["type"], u["id"]): int(u["byte_size"]) for u in http_memory(served, "weights")}
        assert usage[("GPU", 0)] >= 256 * MiB
        assert ("CPU", 0) in usage
        text = metrics(served)
        pattern = (
            r'^naiad_model_memory_bytes{gpu="0",model="weights",type="GPU",version="1"} (\S+)$'
        )
        match = re.search(pattern, text, re.MULTILINE)
        assert match is not None and float(match.group(1)) == usage[("GPU", 0)]
