"""Benchmark: what one ``runner.add_sub.run(a, b)`` costs, next to the alternatives.

Not a test (pytest does not collect it).  Every target answers the same
batch-1 ``add_sub`` ONNX model (two FP32 vectors of 4) one call at a time
from this process; rounds are interleaved and the medians printed:

- ``onnxruntime``: ``InferenceSession.run`` with naiad's session options,
  the floor every other row is measured against;
- ``naiad.Server.infer`` and ``Runner (embedded)``: the core in this
  process (``run``, and ``async_run`` from an event loop);
- ``tritonclient.{http,grpc}``: the synchronous clients against a
  ``naiad serve`` child on loopback, building their inputs per call as a
  user would;
- ``Runner (grpc)`` / ``Runner (http)``: the runner's network modes against
  that same kind of child.

    python benchmarks/runner_bench.py                 # --rounds 5 --calls 20000
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnxruntime as ort

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import naiad  # noqa: E402

REPO = ROOT / "examples" / "model_repository"
ONLY_ADD_SUB = ["--model-control-mode=explicit", "--load-model=add_sub"]
A = np.arange(4, dtype=np.float32)
B = np.ones(4, np.float32)


def onnxruntime_call() -> Callable[[], object]:
    options = ort.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    session = ort.InferenceSession(
        str(REPO / "add_sub" / "1" / "model.onnx"), options, providers=["CPUExecutionProvider"]
    )
    run_options = ort.RunOptions()
    return lambda: session.run(None, {"INPUT0": A, "INPUT1": B}, run_options)


def tritonclient_call(protocol: str, address: str) -> Callable[[], object]:
    if protocol == "http":
        import tritonclient.http as tc
    else:
        import tritonclient.grpc as tc  # type: ignore[no-redef]
    client = tc.InferenceServerClient(address)

    def call() -> object:
        inputs = [tc.InferInput("INPUT0", [4], "FP32"), tc.InferInput("INPUT1", [4], "FP32")]
        inputs[0].set_data_from_numpy(A)
        inputs[1].set_data_from_numpy(B)
        return client.infer("add_sub", inputs).as_numpy("OUTPUT0")

    return call


def timed(call: Callable[[], object], count: int) -> list[float]:
    """Microseconds of each of ``count`` calls."""
    out = []
    clock = time.perf_counter
    for _ in range(count):
        start = clock()
        call()
        out.append((clock() - start) * 1e6)
    return out


def timed_async(model: naiad.RunnerModel, count: int) -> list[float]:
    async def run() -> list[float]:
        out = []
        clock = time.perf_counter
        for _ in range(count):
            start = clock()
            await model.async_run(A, B)
            out.append((clock() - start) * 1e6)
        return out

    return asyncio.run(run())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20000, help="calls per in-process round")
    parser.add_argument("--network-calls", type=int, default=2000, help="calls per network round")
    args = parser.parse_args()

    embedded = naiad.Runner("bench", REPO, cli_args=ONLY_ADD_SUB).start()
    server = naiad.Server(
        model_repository=REPO, model_control_mode="explicit", load_models=("add_sub",)
    ).start()
    grpc_runner = naiad.Runner("bench-grpc", REPO, server_type="grpc", cli_args=ONLY_ADD_SUB)
    http_runner = naiad.Runner("bench-http", REPO, server_type="http", cli_args=ONLY_ADD_SUB)
    grpc_address = grpc_runner.start()._resources.client.address  # type: ignore[union-attr]
    http_address = http_runner.start()._resources.client.address  # type: ignore[union-attr]

    local = args.calls
    remote = args.network_calls
    targets: dict[str, tuple[int, Callable[[int], list[float]]]] = {
        "onnxruntime": (local, lambda n, c=onnxruntime_call(): timed(c, n)),
        "naiad.Server.infer": (
            local,
            lambda n: timed(lambda: server.infer("add_sub", {"INPUT0": A, "INPUT1": B}), n),
        ),
        "Runner (embedded) run": (local, lambda n: timed(lambda: embedded.add_sub.run(A, B), n)),
        "Runner (embedded) async_run": (local, lambda n: timed_async(embedded.add_sub, n)),
        "tritonclient.grpc -> naiad": (
            remote,
            lambda n, c=tritonclient_call("grpc", grpc_address): timed(c, n),
        ),
        "Runner (grpc) run": (remote, lambda n: timed(lambda: grpc_runner.add_sub.run(A, B), n)),
        "tritonclient.http -> naiad": (
            remote,
            lambda n, c=tritonclient_call("http", http_address): timed(c, n),
        ),
        "Runner (http) run": (remote, lambda n: timed(lambda: http_runner.add_sub.run(A, B), n)),
    }
    p50: dict[str, list[float]] = {name: [] for name in targets}
    p99: dict[str, list[float]] = {name: [] for name in targets}
    mean: dict[str, list[float]] = {name: [] for name in targets}
    try:
        for count, measure in targets.values():  # warm-up
            measure(max(count // 10, 100))
        for round_ in range(args.rounds):
            order = list(targets.items())
            if round_ % 2:
                order.reverse()
            for name, (count, measure) in order:
                times = sorted(measure(count))
                p50[name].append(times[len(times) // 2])
                p99[name].append(times[int(len(times) * 0.99)])
                mean[name].append(statistics.fmean(times))
            print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        embedded.close()
        server.stop()
        grpc_runner.close()
        http_runner.close()

    floor = statistics.median(p50["onnxruntime"])
    print(f"\nadd_sub, batch 1, one call at a time; medians of {args.rounds} rounds (us)\n")
    print("| target | p50 | p99 | mean | p50 over onnxruntime |")
    print("|---|---|---|---|---|")
    for name in targets:
        m50, m99, avg = (statistics.median(x[name]) for x in (p50, p99, mean))
        over = "" if name == "onnxruntime" else f"+{m50 - floor:.1f}"
        print(f"| {name} | {m50:.1f} | {m99:.1f} | {avg:.1f} | {over} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
