"""naiad vs the reference Triton over gRPC, driven by perf_analyzer ``-i grpc``.

Same models and caveat as ``http_bench.py`` (whose repository builder this
reuses): naiad serves an ONNX identity model, the reference Triton (CPU
build, Python backend only) a Python-backend identity model, both FP32
[-1,16] with max_batch_size 8 -- the comparison is of the servers' request
paths, not of the same backend.

Runs are interleaved (naiad, Triton, naiad, ...; the order flips every
round) at each concurrency, and the median of ``--rounds`` rounds is
reported.  ``--streaming`` measures ``ModelStreamInfer`` instead of unary
``ModelInfer``.  On a shared machine the numbers move with whatever else
runs: compare ratios from one run, not absolute numbers across runs.

    python benchmarks/grpc_bench.py [--rounds 3] [--interval 3000] [--concurrency 1 8 32]
                                    [--workers 2]

With ``--workers N`` naiad runs N workers.  The kernel spreads connections,
not requests, over the workers, and a gRPC client multiplexes its calls over
few connections: how evenly the workers share the load depends on how many
connections the client opens.  ``--client naiad-perf`` drives the servers
with ``naiad perf``, which opens one connection per request in flight.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from common import (
    TRITONSERVER,
    free_port,
    naiad_perf,
    perf_analyzer_missing,
    round_order,
    start_naiad,
    start_triton,
    stop,
    table_head,
    table_row,
    wait_ready,
)
from common import perf as perf_analyzer
from http_bench import build_repositories


def perf(
    port: int, concurrency: int, streaming: bool, interval_ms: int, client: str
) -> dict[str, float]:
    extra = ["-i", "grpc", *(["--streaming"] if streaming else [])]
    tool = naiad_perf if client == "naiad-perf" else perf_analyzer
    return tool("identity_fp32", f"127.0.0.1:{port}", concurrency, interval_ms, *extra)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--interval", type=int, default=3000, help="measurement window, ms")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--streaming", action="store_true", help="ModelStreamInfer")
    parser.add_argument("--naiad-only", action="store_true")
    parser.add_argument("--workers", type=int, default=1, help="naiad serve --workers N")
    parser.add_argument(
        "--client",
        choices=("perf_analyzer", "naiad-perf"),
        default="perf_analyzer",
        help="the load generator (naiad perf opens one connection per request in flight)",
    )
    parser.add_argument(
        "--transport",
        choices=("naiad", "grpcio"),
        default="naiad",
        help="naiad's gRPC transport (--grpc-transport): its own HTTP/2 or grpc.aio",
    )
    args = parser.parse_args()
    if perf_analyzer_missing():
        return 2
    with_triton = TRITONSERVER.exists() and not args.naiad_only
    results: dict[tuple[str, int], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="naiad-grpc-bench-") as tmp:
        naiad_repo, triton_repo = build_repositories(Path(tmp))
        servers: dict[str, tuple[subprocess.Popen, int]] = {}
        try:
            port = free_port()
            servers["naiad"] = (
                start_naiad(
                    naiad_repo,
                    port,
                    Path(tmp) / "naiad.log",
                    "grpc",
                    grpc_transport=args.transport,
                    workers=args.workers,
                ),
                port,
            )
            if with_triton:
                port = free_port()
                proc = start_triton(triton_repo, port, Path(tmp) / "triton.log", "grpc")
                servers["triton"] = (proc, port)
            for proc, port in servers.values():
                wait_ready(port, proc, protocol="grpc")
            for rnd in range(args.rounds):
                for c in args.concurrency:
                    for name in round_order(servers, rnd):
                        r = perf(servers[name][1], c, args.streaming, args.interval, args.client)
                        results.setdefault((name, c), []).append(r)
                        print(f"round {rnd + 1} {name:6} c={c:<3} {r['throughput']:9.1f} infer/s  "
                              f"p50 {r['p50']:7.0f} us  p99 {r['p99']:7.0f} us", flush=True)  # fmt: skip
        finally:
            stop(proc for proc, _ in servers.values())
    report(results, args, with_triton)
    return 0


def report(results: dict, args: argparse.Namespace, with_triton: bool) -> None:
    rpc = "ModelStreamInfer" if args.streaming else "ModelInfer"
    print()
    print("CAVEAT: naiad serves an ONNX identity model, the reference Triton (CPU build, Python")
    print(f"backend only) a Python-backend identity model. {rpc}; medians of {args.rounds} rounds.")
    print("Numbers are noisy on a shared machine; compare the ratios of one run.")
    print()
    print(table_head("| c |", with_triton))
    for c in args.concurrency:
        triton = results[("triton", c)] if with_triton else None
        print(table_row(f"| {c} |", results[("naiad", c)], triton))


if __name__ == "__main__":
    sys.exit(main())
