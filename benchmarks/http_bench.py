"""naiad vs the reference Triton over HTTP, driven by perf_analyzer.

Both servers run on loopback free ports with an FP32 [-1,16] identity model
(max_batch_size 8).  CAVEAT: the reference Triton here is CPU-only with the
Python backend alone, so naiad serves an ONNX identity model while Triton
serves a Python-backend identity model: the comparison is of the servers'
request paths, not of the same backend.

Runs are interleaved (naiad, Triton, naiad, ...) at each concurrency and
tensor format, and the median of ``--rounds`` rounds is reported.

    python benchmarks/http_bench.py [--rounds 3] [--interval 3000] [--concurrency 1 8 32]
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
REFERENCE = Path(os.environ.get("NAIAD_REFERENCE_HOME", Path.home() / ".cache/naiad-reference"))
PERF_ANALYZER = REFERENCE / "bin" / "perf_analyzer"
TRITONSERVER = REFERENCE / "bin" / "tritonserver"

CONFIG = """name: "identity_fp32"
{platform}
max_batch_size: 8
input [{{ name: "INPUT0" data_type: TYPE_FP32 dims: [16] }}]
output [{{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [16] }}]
instance_group [{{ kind: KIND_CPU count: 1 }}]
"""

PYTHON_MODEL = """import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse(
                [pb_utils.Tensor("OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())]
            )
            for r in requests
        ]
"""

NAIAD_MAIN = """
import signal, sys
from naiad import Server
protocol = sys.argv[3] if len(sys.argv) > 3 else "http"
server = Server(model_repository=sys.argv[1], **{f"{protocol}_port": int(sys.argv[2])})
server.start()
signal.sigwait([signal.SIGTERM, signal.SIGINT])
server.stop()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_repositories(root: Path) -> tuple[Path, Path]:
    sys.path.insert(0, str(ROOT / "tests"))
    from support import onnx_models

    naiad_repo = root / "naiad"
    onnx_models.identity(naiad_repo / "identity_fp32" / "1" / "model.onnx")
    (naiad_repo / "identity_fp32" / "config.pbtxt").write_text(
        CONFIG.format(platform='platform: "onnxruntime_onnx"')
    )
    triton_repo = root / "triton"
    (triton_repo / "identity_fp32" / "1").mkdir(parents=True)
    (triton_repo / "identity_fp32" / "1" / "model.py").write_text(PYTHON_MODEL)
    (triton_repo / "identity_fp32" / "config.pbtxt").write_text(
        CONFIG.format(platform='backend: "python"')
    )
    return naiad_repo, triton_repo


def wait_ready(port: int, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    url = f"http://127.0.0.1:{port}/v2/health/ready"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"server on port {port} not ready after {timeout}s")


def start_naiad(repo: Path, port: int, log: Path, protocol: str = "http") -> subprocess.Popen:
    """naiad in a subprocess with only the ``protocol`` frontend on ``port``."""
    return subprocess.Popen(
        [sys.executable, "-c", NAIAD_MAIN, str(repo), str(port), protocol],
        stdout=log.open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip


def start_triton(repo: Path, port: int, log: Path, protocol: str = "http") -> subprocess.Popen:
    """The reference Triton with only the ``protocol`` endpoint, on loopback ``port``."""
    other = "grpc" if protocol == "http" else "http"
    return subprocess.Popen(
        [str(TRITONSERVER), "--model-repository", str(repo), f"--{protocol}-address",
         "127.0.0.1", f"--{protocol}-port", str(port), f"--allow-{other}", "false",
         "--allow-metrics", "false"],
        stdout=log.open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip


_NUM = r"([0-9.]+)"


def perf(port: int, concurrency: int, json_tensors: bool, interval_ms: int) -> dict[str, float]:
    command = [
        str(PERF_ANALYZER), "-m", "identity_fp32", "-u", f"127.0.0.1:{port}",
        "--concurrency-range", str(concurrency), "-p", str(interval_ms),
        "--stability-percentage", "100000", "--max-trials", "10",
    ]  # fmt: skip
    if json_tensors:
        command += ["--input-tensor-format", "json", "--output-tensor-format", "json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    out = done.stdout + done.stderr
    if done.returncode != 0:
        raise RuntimeError(f"perf_analyzer failed:\n{out}")
    throughput = float(re.findall(r"Throughput: " + _NUM, out)[-1])
    p50 = float(re.findall(r"p50 latency: " + _NUM, out)[-1])
    p99 = float(re.findall(r"p99 latency: " + _NUM, out)[-1])
    return {"throughput": throughput, "p50": p50, "p99": p99}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--interval", type=int, default=3000, help="measurement window, ms")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--formats", nargs="+", default=["binary", "json"])
    parser.add_argument("--naiad-only", action="store_true")
    args = parser.parse_args()
    if not PERF_ANALYZER.exists():
        print(f"perf_analyzer not found at {PERF_ANALYZER}; run shared/tools/setup-reference.sh")
        return 2
    with_triton = TRITONSERVER.exists() and not args.naiad_only
    with tempfile.TemporaryDirectory(prefix="naiad-bench-") as tmp:
        naiad_repo, triton_repo = build_repositories(Path(tmp))
        servers: dict[str, tuple[subprocess.Popen, int]] = {}
        try:
            port = free_port()
            servers["naiad"] = (start_naiad(naiad_repo, port, Path(tmp) / "naiad.log"), port)
            if with_triton:
                port = free_port()
                proc = start_triton(triton_repo, port, Path(tmp) / "triton.log")
                servers["triton"] = (proc, port)
            for proc, port in servers.values():
                wait_ready(port, proc)
            results: dict[tuple[str, str, int], list[dict[str, float]]] = {}
            for rnd in range(args.rounds):
                for fmt in args.formats:
                    for c in args.concurrency:
                        order = list(servers) if rnd % 2 == 0 else list(reversed(servers))
                        for name in order:
                            r = perf(servers[name][1], c, fmt == "json", args.interval)
                            results.setdefault((name, fmt, c), []).append(r)
                            print(f"round {rnd + 1} {name:6} {fmt:6} c={c:<3} "
                                  f"{r['throughput']:9.1f} infer/s  p50 {r['p50']:7.0f} us  "
                                  f"p99 {r['p99']:7.0f} us", flush=True)  # fmt: skip
        finally:
            for proc, _ in servers.values():
                proc.terminate()
            for proc, _ in servers.values():
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
    report(results, args, with_triton)
    return 0


def _median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def report(results: dict, args: argparse.Namespace, with_triton: bool) -> None:
    print()
    print("CAVEAT: naiad serves an ONNX identity model, the reference Triton (CPU build, Python")
    print("backend only) a Python-backend identity model. Medians of", args.rounds, "rounds.")
    print()
    head = "| format | c | naiad infer/s | naiad p50 us | naiad p99 us |"
    if with_triton:
        head += " Triton infer/s | Triton p50 us | Triton p99 us | throughput x | p99 x |"
    print(head)
    print("|" + "---|" * head.count("|")[:-1] if False else "|" + "---|" * (head.count("|") - 1))
    for fmt in args.formats:
        for c in args.concurrency:
            n = results[("naiad", fmt, c)]
            row = (f"| {fmt} | {c} | {_median(n, 'throughput'):.0f} | {_median(n, 'p50'):.0f} "
                   f"| {_median(n, 'p99'):.0f} |")  # fmt: skip
            if with_triton:
                t = results[("triton", fmt, c)]
                ratio = _median(n, "throughput") / _median(t, "throughput")
                p99 = _median(n, "p99") / _median(t, "p99")
                row += (f" {_median(t, 'throughput'):.0f} | {_median(t, 'p50'):.0f} | "
                        f"{_median(t, 'p99'):.0f} | {ratio:.2f} | {p99:.2f} |")  # fmt: skip
            print(row)


if __name__ == "__main__":
    sys.exit(main())
