"""Benchmark: the same add_sub ``model.py`` on naiad (process and thread mode) and Triton.

Not a test (pytest does not collect it).  Needs the reference tools
(``scripts/setup-reference.sh``).  Runs are interleaved per round
and the medians are printed; quote ratios, not absolute numbers::

    python benchmarks/python_backend_bench.py --rounds 3 --concurrency 1 8 32 --protocols http grpc
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from common import (
    ROOT,
    free_port,
    median,
    perf,
    perf_analyzer_missing,
    round_order,
    start_naiad,
    start_triton,
    stop,
    wait_ready,
)

MODEL = ROOT / "examples" / "model_repository" / "add_sub_python"
THREAD = '\nparameters { key: "NAIAD_EXECUTION_MODE" value: { string_value: "thread" } }\n'


def repository(root: Path, thread: bool) -> Path:
    repo = root / ("thread" if thread else "process")
    shutil.copytree(MODEL, repo / "add_sub_python")
    if thread:
        with (repo / "add_sub_python" / "config.pbtxt").open("a") as f:
            f.write(THREAD)
    return repo


def start(kind: str, repo: Path, port: int, log: Path, protocol: str) -> subprocess.Popen:
    return (start_triton if kind == "triton" else start_naiad)(repo, port, log, protocol)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--interval", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--servers", nargs="+", default=["process", "thread", "triton"])
    parser.add_argument("--protocols", nargs="+", default=["http", "grpc"])
    args = parser.parse_args()
    if perf_analyzer_missing():
        return 2
    results: dict[tuple[str, str, int], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repos = {"process": repository(root, False), "thread": repository(root, True)}
        repos["triton"] = repos["process"]
        for r in range(args.rounds):
            order = round_order(args.servers, r)
            for protocol in args.protocols:
                for kind in order:
                    results_of(kind, protocol, repos[kind], root, args, results)
    print(f"{'proto':5s} {'server':8s} {'c':>3s} {'req/s':>8s} {'p50 us':>8s} {'p99 us':>8s}  vs triton")  # fmt: skip
    for protocol in args.protocols:
        for c in args.concurrency:
            base = results.get(("triton", protocol, c))
            for kind in args.servers:
                runs = results[(kind, protocol, c)]
                tp, p50, p99 = (median(runs, key) for key in ("throughput", "p50", "p99"))
                ratio = f"{tp / median(base, 'throughput'):.2f}x" if base and kind != "triton" else ""  # fmt: skip
                print(f"{protocol:5s} {kind:8s} {c:3d} {tp:8.0f} {p50:8.0f} {p99:8.0f}  {ratio}")
    return 0


def results_of(
    kind: str, protocol: str, repo: Path, root: Path, args: argparse.Namespace, results: dict
) -> None:
    """Start one server for ``protocol`` and measure every concurrency against it."""
    port = free_port()
    proc = start(kind, repo, port, root / f"{kind}-{protocol}.log", protocol)
    try:
        wait_ready(port, proc, protocol=protocol)
        extra = ["-i", "grpc"] if protocol == "grpc" else []
        for c in args.concurrency:
            run = perf("add_sub_python", f"127.0.0.1:{port}", c, args.interval, *extra)
            results.setdefault((kind, protocol, c), []).append(run)
    finally:
        stop([proc])


if __name__ == "__main__":
    sys.exit(main())
