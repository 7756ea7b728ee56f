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
import subprocess
import sys
import tempfile
from pathlib import Path

from common import (
    ROOT,
    TRITONSERVER,
    free_port,
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


def perf(port: int, concurrency: int, json_tensors: bool, interval_ms: int) -> dict[str, float]:
    formats = ["--input-tensor-format", "json", "--output-tensor-format", "json"]
    extra = formats if json_tensors else []
    return perf_analyzer("identity_fp32", f"127.0.0.1:{port}", concurrency, interval_ms, *extra)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--interval", type=int, default=3000, help="measurement window, ms")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--formats", nargs="+", default=["binary", "json"])
    parser.add_argument("--naiad-only", action="store_true")
    args = parser.parse_args()
    if perf_analyzer_missing():
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
                        for name in round_order(servers, rnd):
                            r = perf(servers[name][1], c, fmt == "json", args.interval)
                            results.setdefault((name, fmt, c), []).append(r)
                            print(f"round {rnd + 1} {name:6} {fmt:6} c={c:<3} "
                                  f"{r['throughput']:9.1f} infer/s  p50 {r['p50']:7.0f} us  "
                                  f"p99 {r['p99']:7.0f} us", flush=True)  # fmt: skip
        finally:
            stop(proc for proc, _ in servers.values())
    report(results, args, with_triton)
    return 0


def report(results: dict, args: argparse.Namespace, with_triton: bool) -> None:
    print()
    print("CAVEAT: naiad serves an ONNX identity model, the reference Triton (CPU build, Python")
    print("backend only) a Python-backend identity model. Medians of", args.rounds, "rounds.")
    print()
    print(table_head("| format | c |", with_triton))
    for fmt in args.formats:
        for c in args.concurrency:
            triton = results[("triton", fmt, c)] if with_triton else None
            print(table_row(f"| {fmt} | {c} |", results[("naiad", fmt, c)], triton))


if __name__ == "__main__":
    sys.exit(main())
