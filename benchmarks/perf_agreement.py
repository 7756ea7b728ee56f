"""``naiad perf`` against NVIDIA perf_analyzer: the same server, the same model, in turns.

The issue's bar for naiad perf: on the same server and machine its
throughput and latency agree with perf_analyzer's within 10% at concurrency
1 and 8.  Both tools measure a naiad server serving an ONNX add_sub model
(FP32 [4]) over HTTP and gRPC, interleaved (the order flips every round),
each with three windows of ``--interval`` ms; medians of ``--rounds``.

    python benchmarks/perf_agreement.py [--rounds 5] [--interval 2000] [--concurrency 1 8]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from common import (
    NAIAD_CLI,
    ServeProcess,
    checkout_env,
    free_port,
    log_lines,
    naiad_perf,
    perf_analyzer_missing,
    round_order,
    stop,
    wait_ready,
)
from common import perf as perf_analyzer

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--interval", type=int, default=2000, help="window, ms")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    args = parser.parse_args()
    if perf_analyzer_missing():
        return 2
    sys.path.insert(0, str(ROOT / "tests"))
    from support import onnx_models

    results: dict[tuple[str, str, int], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="naiad-perf-agreement-") as tmp:
        repo = Path(tmp) / "models"
        onnx_models.add_sub(repo / "add_sub" / "1" / "model.onnx", shape=(4,))
        (repo / "add_sub" / "config.pbtxt").write_text('platform: "onnxruntime_onnx"\n')
        http, grpc = free_port(), free_port()
        server = ServeProcess(
            [sys.executable, "-c", NAIAD_CLI, "serve", "--model-repository", str(repo),
             "--http-port", str(http), "--grpc-port", str(grpc), "--allow-metrics", "false"],
            env=checkout_env(), on_line=log_lines(Path(tmp) / "naiad.log"),
        )  # fmt: skip
        try:
            wait_ready(http, server)
            for rnd in range(args.rounds):
                for protocol, port in (("http", http), ("grpc", grpc)):
                    url = f"127.0.0.1:{port}"
                    for c in args.concurrency:
                        for tool in round_order(["perf_analyzer", "naiad perf"], rnd):
                            if tool == "perf_analyzer":
                                r = perf_analyzer("add_sub", url, c, args.interval, "-i", protocol)
                            else:
                                r = naiad_perf("add_sub", url, c, args.interval, "-i", protocol)
                            results.setdefault((tool, protocol, c), []).append(r)
                            print(f"round {rnd + 1} {protocol:4} c={c:<2} {tool:13} "
                                  f"{r['throughput']:8.0f} infer/s  p50 {r['p50']:5.0f} us",
                                  flush=True)  # fmt: skip
        finally:
            stop([server])
    print(f"\nmedians of {args.rounds} rounds (naiad perf / perf_analyzer in brackets)\n")
    print("| protocol | c | perf_analyzer infer/s | naiad perf infer/s | perf_analyzer p50 us "
          "| naiad perf p50 us | perf_analyzer avg us | naiad perf avg us |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    keys = ("throughput", "p50", "avg")
    for protocol in ("http", "grpc"):
        for c in args.concurrency:
            t = [statistics.median(r[k] for r in results[("perf_analyzer", protocol, c)])
                 for k in keys]  # fmt: skip
            o = [statistics.median(r[k] for r in results[("naiad perf", protocol, c)])
                 for k in keys]  # fmt: skip
            cells = [f"{t[i]:.0f} | {o[i]:.0f} ({o[i] / t[i]:.2f})" for i in range(3)]
            print(f"| {protocol} | {c} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
