"""Dynamic batching overhead: naiad under perf_analyzer vs ONNX Runtime called directly.

naiad serves an ONNX ``matmul`` model (FP32 [-1,256] @ [256,256],
``max_batch_size: 64``, ``dynamic_batching {}``, ``--instances`` CPU
instances) and perf_analyzer drives it over HTTP at
``--concurrency`` (32).  The statistics extension gives the average batch
size naiad formed (inference_count / execution_count); ONNX Runtime is then
called directly, on as many threads as instances, with batches of that
average size (alternating the two nearest sizes) for the same time.  Target:
naiad's throughput within 10% of the direct one.

``--python`` instead serves the same matmul as a Python-backend model (numpy)
on naiad and on the reference Triton (which only runs Python-backend models
here) and compares the two servers.

On this machine that model is frontend-bound, not compute-bound: ONNX Runtime
multiplies ~100x more vectors per second than even a bare HTTP server here
receives requests, so the ratio to the direct run measures the HTTP path, not
the batcher.  ``--rows 256`` makes each request a 256x256 matrix; the compute
per byte stays the same (a 256x256 matmul does 64 multiply-adds per input
byte), so that variant is bound by moving 512 KiB per request through HTTP.

    python benchmarks/batching_bench.py [--concurrency 32] [--interval 5000] [--rounds 3]
    python benchmarks/batching_bench.py --python

Measure on an idle machine: perf_analyzer, the server and the direct run
compete for the same cores; quote ratios, not absolute numbers.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from common import (  # noqa: E402
    TRITONSERVER,
    free_port,
    perf,
    perf_analyzer_missing,
    round_order,
    start_naiad,
    start_triton,
    stop,
    wait_ready,
)

SIZE = 256
MAX_BATCH = 64

CONFIG = """name: "matmul"
{backend}
max_batch_size: {max_batch}
input [{{ name: "INPUT0" data_type: TYPE_FP32 dims: [{dims}] }}]
output [{{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [{dims}] }}]
dynamic_batching {{ }}
instance_group [{{ kind: KIND_CPU count: {instances} }}]
{extra}"""

#: ONNX Runtime's intra-op threads spin after each run by default; in one process
#: with the server's event loop they take the cores the loop needs (see --no-spin).
NO_SPIN = 'parameters { key: "session.intra_op.allow_spinning" value { string_value: "0" } }\n'

PYTHON_MODEL = """import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        rng = np.random.default_rng(0)
        self.w = rng.standard_normal(({size}, {size})).astype(np.float32)

    def execute(self, requests):
        xs = [pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy() for r in requests]
        y = np.concatenate(xs) @ self.w
        out, start = [], 0
        for x in xs:
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", y[start:start + len(x)])]))
            start += len(x)
        return out
"""


def write_repo(root: Path, python: bool, instances: int, rows: int, extra: str = "") -> Path:
    repo = root / "models"
    version = repo / "matmul" / "1"
    if python:
        version.mkdir(parents=True)
        (version / "model.py").write_text(PYTHON_MODEL.format(size=SIZE))
        backend = 'backend: "python"'
    else:
        from support import onnx_models

        onnx_models.matmul(version / "model.onnx", size=SIZE, rows=rows)
        backend = 'platform: "onnxruntime_onnx"'
    (repo / "matmul" / "config.pbtxt").write_text(
        CONFIG.format(
            backend=backend,
            max_batch=MAX_BATCH,
            dims=f"{rows}, {SIZE}" if rows else SIZE,
            instances=instances,
            extra=extra,
        )
    )
    return repo


def model_stats(port: int) -> tuple[int, int]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/models/matmul/stats") as r:
        s = json.load(r)["model_stats"][0]
    return s["inference_count"], s["execution_count"]


def direct(model: Path, batch: float, rows: int, threads: int, seconds: float) -> float:
    """Batch items per second of ONNX Runtime run directly, batches averaging ``batch``."""
    import numpy as np
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    low, high = math.floor(batch), math.ceil(batch)
    frac = batch - low
    rng = np.random.default_rng(0)
    item = (rows, SIZE) if rows else (SIZE,)
    inputs = {n: rng.standard_normal((n, *item), np.float32) for n in {low, high, 1} if n}
    done = [0] * threads
    stop = time.monotonic() + seconds

    def work(i: int) -> None:
        calls = 0
        while time.monotonic() < stop:
            # A share ``frac`` of the calls use the larger size: the mean is ``batch``.
            n = high if math.floor((calls + 1) * frac) > math.floor(calls * frac) else low
            n = max(n, 1)
            session.run(None, {"INPUT0": inputs[n]})
            done[i] += n
            calls += 1

    start = time.monotonic()
    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return sum(done) / (time.monotonic() - start)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--interval", type=int, default=5000, help="measurement window, ms")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--instances", type=int, default=1)
    parser.add_argument(
        "--rows", type=int, default=0, help="rows of each request's matrix (0: one vector)"
    )
    parser.add_argument("--python", action="store_true", help="Python model: naiad vs Triton")
    parser.add_argument(
        "--no-spin", action="store_true", help="serve with session.intra_op.allow_spinning=0"
    )
    args = parser.parse_args()
    if perf_analyzer_missing():
        return 2
    with tempfile.TemporaryDirectory(prefix="naiad-batching-") as tmp:
        extra = NO_SPIN if args.no_spin and not args.python else ""
        repo = write_repo(Path(tmp), args.python, args.instances, args.rows, extra)
        servers: dict[str, tuple[subprocess.Popen, int]] = {}
        try:
            port = free_port()
            servers["naiad"] = (start_naiad(repo, port, Path(tmp) / "naiad.log"), port)
            if args.python and TRITONSERVER.exists():
                port = free_port()
                servers["triton"] = (start_triton(repo, port, Path(tmp) / "triton.log"), port)
            for proc, port in servers.values():
                wait_ready(port, proc)
            results: dict[str, list[float]] = {}
            batches: list[float] = []
            for rnd in range(args.rounds):
                for name in round_order(servers, rnd):
                    port = servers[name][1]
                    before = model_stats(port)
                    url = f"127.0.0.1:{port}"
                    tput = perf("matmul", url, args.concurrency, args.interval)["throughput"]
                    after = model_stats(port)
                    avg = (after[0] - before[0]) / max(after[1] - before[1], 1)
                    results.setdefault(name, []).append(tput)
                    line = f"round {rnd + 1} {name:6} c={args.concurrency} {tput:9.1f} infer/s"
                    line += f"  average batch {avg:5.2f}"
                    if name == "naiad" and not args.python:
                        batches.append(avg)
                        rate = direct(repo / "matmul" / "1" / "model.onnx", avg, args.rows,
                                      args.instances, args.interval / 1000)  # fmt: skip
                        results.setdefault("direct", []).append(rate)
                        line += (
                            f"  | onnxruntime direct {rate:9.1f} items/s  ratio {tput / rate:.2f}"
                        )
                    print(line, flush=True)
        finally:
            stop(proc for proc, _ in servers.values())
    print()
    for name, values in results.items():
        print(f"{name:7} median {statistics.median(values):9.1f} /s")
    if "direct" in results:
        ratio = statistics.median(results["naiad"]) / statistics.median(results["direct"])
        print(f"naiad / onnxruntime-direct = {ratio:.2f} (target >= 0.90), "
              f"average batch {statistics.median(batches):.2f}")  # fmt: skip
    if "triton" in results:
        ratio = statistics.median(results["naiad"]) / statistics.median(results["triton"])
        print(f"naiad / Triton (Python model) = {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
