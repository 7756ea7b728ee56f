"""naiad and the reference Triton beside bare Python servers: the machine's ceiling today.

On a shared 2-core machine absolute figures, and even naiad/Triton ratios,
move by tens of percent from hour to hour.  This script adds the bare
servers of ``bare_servers.py`` (identity echo, no naiad code) to the same
interleaved perf_analyzer run, so a table says both how naiad compares with
Triton and how much of the bare stack's speed naiad keeps:

* HTTP: naiad, Triton, asyncio + httptools (``http``);
* gRPC: naiad, Triton, ``grpc.aio`` (``grpc-aio``) and, where the ``h2``
  package is installed, HTTP/2 framed by ``h2`` in the event loop (``grpc-h2``).

Same models and caveat as ``http_bench.py``: naiad serves the ONNX identity
model, Triton (CPU build, Python backend only) the Python-backend one.

    python benchmarks/ceiling_bench.py [--rounds 2] [--interval 2000] [--concurrency 1 8]
"""

from __future__ import annotations

import argparse
import importlib.util
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import (
    TRITONSERVER,
    checkout_env,
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
from http_bench import build_repositories

BARE = Path(__file__).with_name("bare_servers.py")


def start_bare(kind: str, port: int, log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(BARE), kind, str(port)],
        stdout=log.open("w"), stderr=subprocess.STDOUT, env=checkout_env(),
    )  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--interval", type=int, default=2000, help="measurement window, ms")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--protocols", nargs="+", default=["http", "grpc"])
    args = parser.parse_args()
    if perf_analyzer_missing():
        return 2
    results: dict[tuple[str, str, int], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="naiad-ceiling-") as tmp:
        naiad_repo, triton_repo = build_repositories(Path(tmp))
        for protocol in args.protocols:
            servers = _start(protocol, naiad_repo, triton_repo, Path(tmp))
            try:
                for rnd in range(args.rounds):
                    for c in args.concurrency:
                        for name in round_order(servers, rnd):
                            extra = ["-i", "grpc"] if protocol == "grpc" else []
                            r = perf("identity_fp32", f"127.0.0.1:{servers[name][1]}", c,
                                     args.interval, *extra)  # fmt: skip
                            results.setdefault((protocol, name, c), []).append(r)
                            print(f"round {rnd + 1} {protocol:4} {name:9} c={c:<3} "
                                  f"{r['throughput']:9.1f} infer/s  p99 {r['p99']:8.0f} us",
                                  flush=True)  # fmt: skip
            finally:
                stop(proc for proc, _ in servers.values())
    report(results, args)
    return 0


def _start(
    protocol: str, naiad_repo: Path, triton_repo: Path, tmp: Path
) -> dict[str, tuple[subprocess.Popen, int]]:
    servers: dict[str, tuple[subprocess.Popen, int]] = {}
    bare = ["http"] if protocol == "http" else ["grpc-aio"]
    if protocol == "grpc" and importlib.util.find_spec("h2") is not None:
        bare.append("grpc-h2")
    try:
        port = free_port()
        servers["naiad"] = (start_naiad(naiad_repo, port, tmp / "naiad.log", protocol), port)
        if TRITONSERVER.exists():
            port = free_port()
            proc = start_triton(triton_repo, port, tmp / "triton.log", protocol)
            servers["triton"] = (proc, port)
        for kind in bare:
            port = free_port()
            servers[kind] = (start_bare(kind, port, tmp / f"{kind}.log"), port)
        for name, (proc, port) in servers.items():
            if name in bare:  # answers only what perf_analyzer asks: no health endpoint
                _wait_listening(name, proc, port)
            else:
                wait_ready(port, proc, protocol=protocol)
    except BaseException:
        stop(proc for proc, _ in servers.values())
        raise
    return servers


def _wait_listening(name: str, proc: subprocess.Popen, port: int) -> None:
    deadline = time.monotonic() + 30
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} is not listening on {port}") from None
            time.sleep(0.1)


def report(
    results: dict[tuple[str, str, int], list[dict[str, float]]], args: argparse.Namespace
) -> None:
    print()
    print("Medians of", args.rounds, "rounds; x Triton = throughput / Triton's throughput.")
    print()
    print("| protocol | server | c | infer/s | p99 us | x Triton | x bare |")
    print("|---|---|---|---|---|---|---|")
    for protocol in args.protocols:
        bare = "http" if protocol == "http" else "grpc-aio"
        for c in args.concurrency:
            triton = results.get((protocol, "triton", c))
            base = results.get((protocol, bare, c))
            for (p, name, cc), runs in results.items():
                if p != protocol or cc != c:
                    continue
                tp = median(runs, "throughput")
                vs_triton = f"{tp / median(triton, 'throughput'):.2f}" if triton else "-"
                vs_bare = f"{tp / median(base, 'throughput'):.2f}" if base else "-"
                print(f"| {protocol} | {name} | {c} | {tp:.0f} | {median(runs, 'p99'):.0f} | "
                      f"{vs_triton} | {vs_bare} |")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
