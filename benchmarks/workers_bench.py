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

On the lent 16-core machine: ``--workers 1 2 4 8 16 --wrk-threads 4`` for the
scaling curve (one wrk thread cannot keep 8 workers busy).

Three more rows, naiad only, at the highest concurrency: ``identity_python``,
Triton's model.py served by naiad (how the Python backend scales with
workers); ``identity_batched``, the ONNX identity with a dynamic batcher, with
the batch sizes the batcher reached (from the statistics extension, summed
over the workers); and ``acc_seq``, a sequence model with implicit state
where every request is a one-step sequence with a new correlation id, so with
N workers (N-1)/N of them are passed to the worker that owns their sequence.
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
import urllib.request
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


#: One-step sequences, each with a correlation id of its own (wrk's Lua API: ``setup``
#: runs once per wrk thread and gives each thread its own range of ids).
SEQUENCE_SCRIPT = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local threads = 0
setup = function(thread)
  threads = threads + 1
  thread:set("first", threads * 1000000000)
end
local n = 0
request = function()
  n = n + 1
  local body = '{"parameters": {"sequence_id": ' .. (first + n) .. ', "sequence_start": true, ' ..
    '"sequence_end": true}, "inputs": [{"name": "INPUT", "shape": [1, 1], ' ..
    '"datatype": "INT32", "data": [1]}]}'
  return wrk.format(nil, nil, nil, body)
end
"""


def add_scheduling_models(repo: Path, triton_repo: Path) -> None:
    """``identity_batched``, ``acc_seq`` and ``identity_python`` (see the module's
    docstring)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from scheduling.sequence_models import acc_state

    python = repo / "identity_python"
    shutil.copytree(triton_repo / "identity_fp32", python)
    config = (python / "config.pbtxt").read_text().replace("identity_fp32", "identity_python")
    (python / "config.pbtxt").write_text(config)

    batched = repo / "identity_batched"
    shutil.copytree(repo / "identity_fp32", batched)
    config = (batched / "config.pbtxt").read_text().replace("identity_fp32", "identity_batched")
    (batched / "config.pbtxt").write_text(config + "dynamic_batching { }\n")
    acc_state(repo, "acc_seq")


def batch_sizes(port: int, model: str) -> str:
    """The batch sizes the model ran, as ``size:executions``, and their mean."""
    url = f"http://127.0.0.1:{port}/v2/models/{model}/stats"
    with urllib.request.urlopen(url, timeout=30) as reply:
        stats = json.loads(reply.read())["model_stats"][0]
    runs = {b["batch_size"]: b["compute_infer"]["count"] for b in stats["batch_stats"]}
    mean = int(stats["inference_count"]) / max(int(stats["execution_count"]), 1)
    return f"mean {mean:.2f} ({', '.join(f'{k}:{v}' for k, v in sorted(runs.items()))})"


def wrk(
    port: int,
    concurrency: int,
    seconds: int,
    script: Path,
    model: str = "identity_fp32",
    threads: int = 1,
) -> float:
    """Requests per second that ``wrk`` reached; every answer must be a 200.

    One wrk thread keeps wrk off the 2-core VM's second core; on a 16-core machine one
    thread cannot keep 8 workers busy (``--wrk-threads``)."""
    url = f"http://127.0.0.1:{port}/v2/models/{model}/infer"
    threads = min(threads, concurrency)
    command = ["wrk", f"-t{threads}", f"-c{concurrency}", f"-d{seconds}s", "-s", str(script), url]
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
    parser.add_argument("--wrk-threads", type=int, default=1, help="wrk's threads")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("wrk not found; run scripts/setup-reference.sh")
        return 2
    results: dict[tuple[str, int], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="naiad-workers-") as tmp:
        naiad_repo, triton_repo = build_repositories(Path(tmp))
        add_scheduling_models(naiad_repo, triton_repo)
        sequence_script = Path(tmp) / "sequence.lua"
        sequence_script.write_text(SEQUENCE_SCRIPT)
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
                        rate = wrk(
                            servers[name][1], c, args.seconds, script, threads=args.wrk_threads
                        )
                        results.setdefault((name, c), []).append(rate)
                        print(f"round {rnd + 1} {name:9} c={c:<3} {rate:9.1f} infer/s", flush=True)
                c = max(args.concurrency)
                for name in round_order([n for n in servers if n != "triton"], rnd):
                    port = servers[name][1]
                    rows = (("identity_python", script), ("identity_batched", script),
                            ("acc_seq", sequence_script))  # fmt: skip
                    for model, lua in rows:
                        rate = wrk(port, c, args.seconds, lua, model, args.wrk_threads)
                        results.setdefault((f"{name} {model}", c), []).append(rate)
                        print(f"round {rnd + 1} {name:9} {model} c={c:<3} {rate:9.1f} infer/s",
                              flush=True)  # fmt: skip
            sizes = {n: batch_sizes(servers[n][1], "identity_batched") for n in servers
                     if n != "triton"}  # fmt: skip
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
    c = max(args.concurrency)
    print(f"\n| c={c} | infer/s identity_python | infer/s identity_batched | batch sizes reached"
          " | infer/s acc_seq |")  # fmt: skip
    for name in names:
        if name != "triton":
            python, batched, sequences = (
                statistics.median(results[(f"{name} {model}", c)])
                for model in ("identity_python", "identity_batched", "acc_seq")
            )
            print(f"| {name} | {python:.0f} | {batched:.0f} | {sizes[name]} | {sequences:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
