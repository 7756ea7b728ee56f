"""What residency costs: the request path of a loaded model, and the wait for a cold one.

1. Request path: perf_analyzer over HTTP against two naiad servers of the example
   ``add_sub`` (ONNX), interleaved, medians of ``--rounds``: ``off`` without residency,
   ``budget`` with ``--model-memory-budget 100%`` (the model loaded, nothing to unload).
   A loaded model's requests never reach residency's code, so the two should be
   within noise.
2. Cold load: one server with a budget too small for two models, asked in turn for
   two models of one kind, so every request unloads one and loads the other; the
   client's latency of those requests against the same model's warm latency, for an
   ONNX model (add_sub) and a Python model holding a 16 MiB table in the server.

    python benchmarks/residency_bench.py [--rounds 3] [--interval 3000] [--cold 30]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import tritonclient.http as httpclient
from common import (
    ROOT,
    free_port,
    median,
    perf,
    perf_analyzer_missing,
    round_order,
    start_naiad,
    stop,
    wait_ready,
)

EXAMPLES = ROOT / "examples" / "model_repository"

PYTHON_MODEL = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.table = np.ones((16 << 20) // 8)

    def execute(self, requests):
        out = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", x + 1)]))
        return out
"""
PYTHON_CONFIG = """
backend: "python"
input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [16] }]
output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [16] }]
"""


def request_path(tmp: Path, rounds: int, interval: int) -> None:
    repo = tmp / "path"
    shutil.copytree(EXAMPLES / "add_sub", repo / "add_sub")
    settings = {"off": {}, "budget": {"model_memory_budget": "100%"}}
    servers = {}
    results: dict[tuple[str, int], list[dict[str, float]]] = {}
    try:
        for name, extra in settings.items():
            port = free_port()
            servers[name] = (start_naiad(repo, port, tmp / f"{name}.log", **extra), port)
        for proc, port in servers.values():
            wait_ready(port, proc)
        for rnd in range(rounds):
            for c in (1, 8):
                for name in round_order(settings, rnd):
                    r = perf("add_sub", f"127.0.0.1:{servers[name][1]}", c, interval)
                    results.setdefault((name, c), []).append(r)
                    print(f"round {rnd + 1} {name:6} c={c:<2} {r['throughput']:9.1f} infer/s"
                          f"  p50 {r['p50']:6.0f} us  p99 {r['p99']:6.0f} us", flush=True)  # fmt: skip
    finally:
        stop(proc for proc, _ in servers.values())
    print("\n| c | off infer/s | budget infer/s | ratio | off p50 / p99 us | budget p50 / p99 us |")
    print("|---|---|---|---|---|---|")
    for c in (1, 8):
        off, on = results[("off", c)], results[("budget", c)]
        ratio = median(on, "throughput") / median(off, "throughput")
        print(f"| {c} | {median(off, 'throughput'):.0f} | {median(on, 'throughput'):.0f} | "
              f"{ratio:.3f} | {median(off, 'p50'):.0f} / {median(off, 'p99'):.0f} | "
              f"{median(on, 'p50'):.0f} / {median(on, 'p99'):.0f} |")  # fmt: skip


def cold_loads(tmp: Path, requests: int) -> None:
    repo = tmp / "cold"
    for name in ("onnx_a", "onnx_b"):
        shutil.copytree(EXAMPLES / "add_sub", repo / name)
        config = repo / name / "config.pbtxt"
        config.write_text(config.read_text().replace('name: "add_sub"', f'name: "{name}"'))
    for name in ("python_a", "python_b"):
        (repo / name / "1").mkdir(parents=True)
        (repo / name / "1" / "model.py").write_text(PYTHON_MODEL)
        (repo / name / "config.pbtxt").write_text(PYTHON_CONFIG)
    port = free_port()
    # A budget no model fits: each request for the other model unloads the one loaded.
    proc = start_naiad(repo, port, tmp / "cold.log", model_memory_budget=1)
    rows = []
    try:
        wait_ready(port, proc)
        client = httpclient.InferenceServerClient(f"127.0.0.1:{port}")
        for kind, inputs, size in (("onnx", ("INPUT0", "INPUT1"), 4), ("python", ("INPUT0",), 16)):
            tensors = []
            for name in inputs:
                tensor = httpclient.InferInput(name, [size], "FP32")
                tensor.set_data_from_numpy(np.ones(size, dtype=np.float32))
                tensors.append(tensor)

            def timed(model: str, tensors: list[httpclient.InferInput] = tensors) -> float:
                start = time.perf_counter()
                client.infer(model, tensors)
                return (time.perf_counter() - start) * 1e3

            cold = [timed(f"{kind}_{'ab'[i % 2]}") for i in range(requests)]
            warm = [timed(f"{kind}_a") for _ in range(requests)]
            rows.append((kind, cold, warm))
        client.close()
    finally:
        stop([proc])
    print("\n| model | cold request p50 / p90 ms | warm request p50 / p90 ms |")
    print("|---|---|---|")
    for kind, cold, warm in rows:
        print(f"| {kind} | {statistics.median(cold):.1f} / {_p90(cold):.1f} | "
              f"{statistics.median(warm):.2f} / {_p90(warm):.2f} |")  # fmt: skip


def _p90(values: list[float]) -> float:
    return sorted(values)[int(len(values) * 0.9) - 1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--interval", type=int, default=3000, help="measurement window, ms")
    parser.add_argument("--cold", type=int, default=30, help="cold requests per model kind")
    args = parser.parse_args()
    if perf_analyzer_missing():
        return 2
    with tempfile.TemporaryDirectory(prefix="naiad-bench-") as tmp:
        request_path(Path(tmp), args.rounds, args.interval)
        cold_loads(Path(tmp), args.cold)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
