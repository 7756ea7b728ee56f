"""``naiad serve --workers``: one worker, N workers and the reference Triton, over HTTP.

The identity model of ``http_bench.py`` (ONNX on naiad, Python backend on the
CPU-only reference Triton: the request paths are compared, not the backends),
driven by ``wrk`` (installed with the reference tools) with one JSON request,
runs interleaved and the order flipped every round; medians of ``--rounds``.

wrk rather than perf_analyzer: wrk is a C event loop that costs the two cores
of the development VM little, where perf_analyzer's own threads take a large
share of them (perf_analyzer works against several workers too: the
statistics extension reports the whole server).

    python benchmarks/workers_bench.py [--workers 1 2] [--concurrency 1 8 32] [--rounds 3]

On the lent 16-core machine: ``--workers 1 2 4 8 16`` for the scaling curve.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import (
    TRITONSERVER,
    free_port,
    round_order,
    start_naiad,
    start_triton,
    stop,
    wait_ready,
)
from http_bench import build_repositories

BODY = {
    "inputs": [{"name": "INPUT0", "shape": [1, 16], "datatype": "FP32", "data": list(range(16))}]
}


def wrk(port: int, concurrency: int, seconds: int, script: Path) -> float:
    """Requests per second that ``wrk`` reached; every answer must be a 200."""
    url = f"http://127.0.0.1:{port}/v2/models/identity_fp32/infer"
    command = ["wrk", "-t1", f"-c{concurrency}", f"-d{seconds}s", "-s", str(script), url]
    out = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60).stdout
    if "Non-2xx" in out:
        raise RuntimeError(f"wrk got errors:\n{out}")
    return float(re.findall(r"Requests/sec:\s+([0-9.]+)", out)[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=4, help="measurement window")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("wrk not found; run shared/tools/setup-reference.sh")
        return 2
    results: dict[tuple[str, int], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="naiad-workers-") as tmp:
        naiad_repo, triton_repo = build_repositories(Path(tmp))
        script = Path(tmp) / "post.lua"
        script.write_text(
            'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
            f"wrk.body = '{json.dumps(BODY)}'\n"
        )
        servers: dict[str, tuple[subprocess.Popen, int]] = {}
        try:
            for n in args.workers:
                port = free_port()
                log = Path(tmp) / f"naiad-{n}.log"
                servers[f"naiad x{n}"] = (start_naiad(naiad_repo, port, log, workers=n), port)
            if TRITONSERVER.exists():
                port = free_port()
                servers["triton"] = (start_triton(triton_repo, port, Path(tmp) / "t.log"), port)
            for proc, port in servers.values():
                wait_ready(port, proc)
            for rnd in range(args.rounds):
                for c in args.concurrency:
                    for name in round_order(servers, rnd):
                        rate = wrk(servers[name][1], c, args.seconds, script)
                        results.setdefault((name, c), []).append(rate)
                        print(f"round {rnd + 1} {name:9} c={c:<3} {rate:9.1f} infer/s", flush=True)
        finally:
            stop(proc for proc, _ in servers.values())
    names = list(servers)
    one = f"naiad x{args.workers[0]}"
    print("\n| c | " + " | ".join(f"{n} infer/s" for n in names)
          + "".join(f" | {n} / {one}" for n in names[1:] if n != "triton")
          + "".join(f" | {n} / triton" for n in names if n != "triton" and "triton" in names)
          + " |")  # fmt: skip
    for c in args.concurrency:
        med = {n: statistics.median(results[(n, c)]) for n in names}
        cells = [f"{med[n]:.0f}" for n in names]
        cells += [f"{med[n] / med[one]:.2f}" for n in names[1:] if n != "triton"]
        if "triton" in med:
            cells += [f"{med[n] / med['triton']:.2f}" for n in names if n != "triton"]
        print(f"| {c} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
