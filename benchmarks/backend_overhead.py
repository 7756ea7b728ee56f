"""What naiad adds on top of each framework: the library called directly vs naiad serving it.

Every case in ``benchmarks/backends/`` (``<backend>_case.py``, named so that none
shadows its framework's package) builds a small
model into a repository and knows how to run it the library's own way.  For
each, this measures one batch-1 request at a time:

- **direct**: the library's own call (``case.direct``), in this process;
- **embedded**: ``naiad.Server.infer`` on the same repository, in this
  process: naiad's core, scheduler, dynamic batcher and backend, no network;

and reports the medians and their difference, naiad's overhead per request.
With ``--perf`` (and perf_analyzer installed, see ``common.py``) each model
is also served by ``naiad serve`` over HTTP and driven by perf_analyzer at
each ``--concurrency`` with dynamic batching on.

The reference Triton installed by ``scripts/setup-reference.sh`` has only its Python
backend, so there is no Triton column here: the framework backends are read
against their own library (and ONNX Runtime's case against the others).

    python benchmarks/backend_overhead.py [--cases pytorch,onnxruntime] [--requests 2000]
    python benchmarks/backend_overhead.py --perf [--concurrency 1,8]

Quote differences and ratios, not absolute numbers: the machine is shared.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import numpy as np
from common import free_port, perf, perf_analyzer_missing, start_naiad, stop, wait_ready

CASES = Path(__file__).resolve().parent / "backends"
T = TypeVar("T")


def load_case(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"naiad_bench_case_{name}", CASES / f"{name}_case.py"
    )
    assert spec is not None and spec.loader is not None, name
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(call: Callable[[], Any], requests: int) -> dict[str, float]:
    """Median and p99 of ``requests`` calls in µs, after a warm-up of a tenth as many."""
    for _ in range(max(requests // 10, 10)):
        call()
    samples = []
    for _ in range(requests):
        start = time.perf_counter_ns()
        call()
        samples.append(time.perf_counter_ns() - start)
    samples.sort()
    return {
        "p50": statistics.median(samples) / 1000,
        "p99": samples[int(len(samples) * 0.99) - 1] / 1000,
    }


def on_a_thread_of_its_own(work: Callable[[], T]) -> T:
    """``work()`` on a new thread, which ends once it returns.

    Libraries keep state per calling thread: torch's OpenMP pool keeps a team
    of workers per thread that called it, until that thread ends.  Direct
    calls made on the thread that then calls naiad would leave their team
    beside the server's and slow both (``benchmarks/README.md``), which no
    user's program does.
    """
    result: list[T] = []
    thread = threading.Thread(target=lambda: result.append(work()))
    thread.start()
    thread.join()
    return result[0]


def perf_input_data(case: ModuleType, path: Path) -> Path:
    """perf_analyzer's ``--input-data`` for the case's request (batch dimension dropped)."""
    entry = {}
    for name, array in case.inputs().items():
        content = [v.decode() if isinstance(v, bytes) else v for v in array.reshape(-1).tolist()]
        entry[name] = {"content": content, "shape": list(array.shape[1:])}
    path.write_text(json.dumps({"data": [entry]}))
    return path


def measure(name: str, requests: int, concurrency: list[int], with_perf: bool) -> dict[str, Any]:
    from naiad import Server

    case = load_case(name)
    row: dict[str, Any] = {"case": name}
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "models"
        repo.mkdir()
        case.build(repo)
        feed = case.inputs()
        run = case.direct(repo)
        expected = on_a_thread_of_its_own(lambda: run(feed))
        row["direct"] = on_a_thread_of_its_own(lambda: timed(lambda: run(feed), requests))
        server = Server(model_repository=repo).start()
        try:
            got = server.infer(case.MODEL, feed)
            for key, value in expected.items():  # the same answer, or the timing means nothing
                np.testing.assert_allclose(
                    np.ravel(got[key]), np.ravel(value), rtol=1e-4, atol=1e-5
                )
            row["embedded"] = on_a_thread_of_its_own(
                lambda: timed(lambda: server.infer(case.MODEL, feed), requests)
            )
        finally:
            server.stop()
        if with_perf:
            data = perf_input_data(case, Path(tmp) / "input.json")
            port = free_port()
            proc = start_naiad(repo, port, Path(tmp) / "naiad.log")
            try:
                wait_ready(port, proc)
                for c in concurrency:
                    row[f"http c={c}"] = perf(
                        case.MODEL, f"127.0.0.1:{port}", c, 3000, "--input-data", str(data)
                    )
            finally:
                stop([proc])
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    names = sorted(p.stem.removesuffix("_case") for p in CASES.glob("*_case.py"))
    parser.add_argument("--cases", default=",".join(names), help="comma-separated case names")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--perf", action="store_true", help="also perf_analyzer over HTTP")
    parser.add_argument("--concurrency", default="1,8")
    args = parser.parse_args()
    if args.perf and perf_analyzer_missing():
        return 2
    concurrency = [int(c) for c in args.concurrency.split(",")]
    head = "| backend | direct p50 us | naiad embedded p50 us | overhead us | embedded p99 us |"
    if args.perf:
        head += "".join(f" HTTP c={c} infer/s | HTTP c={c} p50 us |" for c in concurrency)
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for name in args.cases.split(","):
        row = measure(name, args.requests, concurrency, args.perf)
        direct, embedded = row["direct"], row["embedded"]
        line = (
            f"| {name} | {direct['p50']:.0f} | {embedded['p50']:.0f} | "
            f"{embedded['p50'] - direct['p50']:.0f} | {embedded['p99']:.0f} |"
        )
        for c in concurrency if args.perf else []:
            result = row[f"http c={c}"]
            line += f" {result['throughput']:.0f} | {result['p50']:.0f} |"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
