"""Benchmark: the same add_sub ``model.py`` on naiad (process and thread mode) and Triton.

Not a test (pytest does not collect it).  Needs the reference tools
(``../shared/tools/setup-reference.sh``).  Runs are interleaved per round
and the medians are printed; quote ratios, not absolute numbers::

    python benchmarks/python_backend_bench.py --rounds 3 --concurrency 1 8 32
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REF = Path(os.environ.get("NAIAD_REFERENCE_HOME", Path.home() / ".cache/naiad-reference"))
MODEL = ROOT / "examples" / "model_repository" / "add_sub_python"
NAIAD_MAIN = """
import signal, sys
from naiad import Server
server = Server(model_repository=sys.argv[1], http_port=int(sys.argv[2]))
server.start()
signal.sigwait([signal.SIGTERM, signal.SIGINT])
server.stop()
"""
THREAD = '\nparameters { key: "NAIAD_EXECUTION_MODE" value: { string_value: "thread" } }\n'


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def repository(root: Path, thread: bool) -> Path:
    repo = root / ("thread" if thread else "process")
    shutil.copytree(MODEL, repo / "add_sub_python")
    if thread:
        with (repo / "add_sub_python" / "config.pbtxt").open("a") as f:
            f.write(THREAD)
    return repo


def wait_ready(port: int, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            url = f"http://127.0.0.1:{port}/v2/models/add_sub_python/ready"
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"server on port {port} not ready after {timeout}s")


def start(kind: str, repo: Path, port: int, log: Path) -> subprocess.Popen:
    if kind == "triton":
        cmd = [str(REF / "bin" / "tritonserver"), "--model-repository", str(repo),
               "--http-address", "127.0.0.1", "--http-port", str(port),
               "--allow-grpc", "false", "--allow-metrics", "false"]  # fmt: skip
    else:
        cmd = [sys.executable, "-c", NAIAD_MAIN, str(repo), str(port)]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env)


def perf(port: int, concurrency: int, interval_ms: int) -> dict[str, float]:
    cmd = [str(REF / "bin" / "perf_analyzer"), "-m", "add_sub_python", "-u", f"127.0.0.1:{port}",
           "--concurrency-range", str(concurrency), "-p", str(interval_ms),
           "--stability-percentage", "100000", "--max-trials", "10"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    out = done.stdout + done.stderr
    if done.returncode != 0:
        raise RuntimeError(f"perf_analyzer failed:\n{out}")
    num = r"([0-9.]+)"
    return {
        "throughput": float(re.findall(r"Throughput: " + num, out)[-1]),
        "p50": float(re.findall(r"p50 latency: " + num, out)[-1]),
        "p99": float(re.findall(r"p99 latency: " + num, out)[-1]),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--interval", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--servers", nargs="+", default=["process", "thread", "triton"])
    args = parser.parse_args()
    results: dict[tuple[str, int], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repos = {"process": repository(root, False), "thread": repository(root, True)}
        repos["triton"] = repos["process"]
        for r in range(args.rounds):
            order = args.servers if r % 2 == 0 else list(reversed(args.servers))
            for kind in order:
                port = free_port()
                proc = start(kind, repos[kind], port, root / f"{kind}.log")
                try:
                    wait_ready(port, proc)
                    for c in args.concurrency:
                        results.setdefault((kind, c), []).append(perf(port, c, args.interval))
                finally:
                    proc.send_signal(signal.SIGTERM)
                    try:
                        proc.wait(60)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait()
    print(f"{'server':8s} {'c':>3s} {'req/s':>8s} {'p50 us':>8s} {'p99 us':>8s}  vs triton")
    for c in args.concurrency:
        base = results.get(("triton", c))
        for kind in args.servers:
            runs = results[(kind, c)]
            tp = statistics.median(x["throughput"] for x in runs)
            p50 = statistics.median(x["p50"] for x in runs)
            p99 = statistics.median(x["p99"] for x in runs)
            ratio = ""
            if base and kind != "triton":
                ratio = f"{tp / statistics.median(x['throughput'] for x in base):.2f}x"
            print(f"{kind:8s} {c:3d} {tp:8.0f} {p50:8.0f} {p99:8.0f}  {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
