"""Where the kernel puts a stub: does a lone request to a stub model gain when the
server and its stub share a CPU?

Not a test (pytest does not collect it).  On this project's VM a wake-up across
vCPUs once measured far dearer than one on the same vCPU, and Triton's model
thread and stub were seen on one vCPU where naiad's server and stub were on
two.  This serves the example ``add_sub_python`` in stubs
(``execution-mode=process``) and measures, in interleaved rounds, the same
server unpinned, with server and stub on CPU 0 and perf_analyzer on CPU 1, and
with server and stub on different CPUs (``taskset``, every thread)::

    python benchmarks/stub_placement.py --rounds 3 --protocol http --concurrency 1
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import ROOT, free_port, perf, perf_analyzer_missing, start_naiad, stop, wait_ready
from procstat import children

MODEL = ROOT / "examples/model_repository/add_sub_python"
#: placement -> (the server's CPUs, its stubs' CPUs, perf_analyzer's CPUs or None)
PLACEMENTS: dict[str, tuple[str, str, str | None]] = {
    "unpinned": ("0,1", "0,1", None),
    "together": ("0", "0", "1"),
    "apart": ("0", "1", None),
}


def pin(pids: list[int], cpus: str) -> None:
    for pid in pids:
        subprocess.run(
            ["taskset", "-a", "-p", "-c", cpus, str(pid)], check=True, capture_output=True
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--interval", type=int, default=2000, help="perf_analyzer -p (ms)")
    parser.add_argument("--protocol", choices=["http", "grpc"], default="http")
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args()
    if perf_analyzer_missing():
        return 2
    extra = ["-i", "grpc"] if args.protocol == "grpc" else []
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in PLACEMENTS}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "repo").mkdir()
        (root / "repo" / MODEL.name).symlink_to(MODEL)
        port = free_port()
        settings = {"backend_config": "python,execution-mode=process"}
        proc = start_naiad(root / "repo", port, root / "naiad.log", args.protocol, **settings)
        try:
            wait_ready(port, proc, protocol=args.protocol)
            url = f"127.0.0.1:{port}"
            perf(MODEL.name, url, args.concurrency, 500, *extra)  # warm-up
            stubs = children(proc.pid)
            for rnd in range(args.rounds):
                names = list(PLACEMENTS) if rnd % 2 == 0 else list(PLACEMENTS)[::-1]
                for name in names:
                    server_cpus, stub_cpus, client_cpus = PLACEMENTS[name]
                    pin([proc.pid], server_cpus)
                    pin(stubs, stub_cpus)
                    result = perf(
                        MODEL.name, url, args.concurrency, args.interval, *extra, cpus=client_cpus
                    )
                    runs[name].append(result)
        finally:
            stop([proc])
    print(f"| placement ({args.protocol}, c={args.concurrency}) | infer/s (each round) | p99 us |")
    print("|---|---|---|")
    for name, results in runs.items():
        each = ", ".join(f"{r['throughput']:.0f}" for r in results)
        p99 = statistics.median(r["p99"] for r in results)
        print(f"| {name} | {each} | {p99:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
